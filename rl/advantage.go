package rl

import (
	"fmt"
	"math"
)

// Advantage estimators, by name.
const (
	EstimatorGRPO     = "grpo"      // z-score within the task's group of trajectories
	EstimatorStepWise = "step_wise" // z-score within each (group, step index) bucket
	EstimatorPlain    = "plain"     // A = r, for single samples
)

// Eps is added to the standard deviation in z-scores, as slime does.
const Eps = 1e-6

// constantTol is how close rewards must be to count as all equal.
const constantTol = 1e-12

// Score is one trajectory's reward in its group (the samples of one task).
type Score struct {
	Group  int
	Reward float64
	// Masked marks an infrastructure failure: it takes no part in the
	// statistics and is not trained on.
	Masked bool
}

// StepScore is one step's reward R_t, bucketed by group and step index.
type StepScore struct {
	Group  int
	Step   int // the step's index in its trajectory, from 0
	Reward float64
	Masked bool
}

// Advantage is the result for one Score or StepScore, at the same index.
type Advantage struct {
	Value float64
	// Keep is false for what is not trained on: masked entries, and those
	// of a group (or bucket) whose rewards are all equal, where there is
	// nothing to learn. Value is 0 then.
	Keep bool
}

// GRPO z-scores each reward within its group: A = (r − mean)/(std + Eps),
// with the sample standard deviation (n − 1 in the denominator, as
// torch.std and slime's GRPO use). Groups whose unmasked rewards are all
// equal, one-member groups included, are dropped (Keep false).
func GRPO(scores []Score) []Advantage {
	keys := make([]int, len(scores))
	rewards := make([]float64, len(scores))
	masked := make([]bool, len(scores))
	for i, s := range scores {
		keys[i], rewards[i], masked[i] = s.Group, s.Reward, s.Masked
	}
	return zscore(keys, rewards, masked, true, false)
}

// StepWise z-scores each step reward within its (group, step index)
// bucket, with the population standard deviation (n in the denominator),
// as OpenClaw-RL's slime does for its step_wise estimator. A bucket with a
// single step keeps its raw reward (there is nothing to compare it with);
// a bucket of two or more equal rewards is dropped.
func StepWise(steps []StepScore) []Advantage {
	type key struct{ g, s int }
	ids := map[key]int{}
	keys := make([]int, len(steps))
	rewards := make([]float64, len(steps))
	masked := make([]bool, len(steps))
	for i, s := range steps {
		k := key{s.Group, s.Step}
		id, ok := ids[k]
		if !ok {
			id = len(ids)
			ids[k] = id
		}
		keys[i], rewards[i], masked[i] = id, s.Reward, s.Masked
	}
	return zscore(keys, rewards, masked, false, true)
}

// Plain is A = r for every unmasked score: no baseline, for single samples.
func Plain(scores []Score) []Advantage {
	out := make([]Advantage, len(scores))
	for i, s := range scores {
		if !s.Masked {
			out[i] = Advantage{Value: s.Reward, Keep: true}
		}
	}
	return out
}

// zscore normalizes rewards within the buckets named by keys.
func zscore(keys []int, rewards []float64, masked []bool, sampleStd, keepSingles bool) []Advantage {
	type stat struct {
		n        int
		sum, ss  float64
		min, max float64
	}
	stats := map[int]*stat{}
	for i, k := range keys {
		if masked[i] {
			continue
		}
		s := stats[k]
		if s == nil {
			s = &stat{min: rewards[i], max: rewards[i]}
			stats[k] = s
		}
		s.n++
		s.sum += rewards[i]
		s.min, s.max = min(s.min, rewards[i]), max(s.max, rewards[i])
	}
	for i, k := range keys { // second pass: squared deviations
		if !masked[i] {
			s := stats[k]
			d := rewards[i] - s.sum/float64(s.n)
			s.ss += d * d
		}
	}
	out := make([]Advantage, len(keys))
	for i, k := range keys {
		if masked[i] {
			continue
		}
		s := stats[k]
		switch {
		case s.n == 1 && keepSingles:
			out[i] = Advantage{Value: rewards[i], Keep: true}
		case s.max-s.min <= constantTol:
			// all equal (or a single member): dropped
		default:
			d := float64(s.n)
			if sampleStd {
				d--
			}
			mean, std := s.sum/float64(s.n), math.Sqrt(s.ss/d)
			out[i] = Advantage{Value: (rewards[i] - mean) / (std + Eps), Keep: true}
		}
	}
	return out
}

// SampleAdvantages computes the advantage of each sample with the named
// estimator, for a trainer that takes Samples as BuildSamples makes them:
//
//   - grpo: one score per trajectory (samples sharing group_index and
//     index), its Reward (the sequence score), z-scored in the group and
//     given to each of the trajectory's samples;
//   - step_wise: each sample's step_scores_with_outcome[0] (R_t), bucketed
//     by group_index and step_indices[0];
//   - plain: each sample's reward.
//
// Samples with remove_sample set are masked.
func SampleAdvantages(samples []Sample, estimator string) ([]Advantage, error) {
	switch estimator {
	case EstimatorGRPO:
		type traj struct{ g, i int }
		pos := map[traj]int{}
		var scores []Score
		which := make([]int, len(samples))
		for n, s := range samples {
			k := traj{s.GroupIndex, s.Index}
			p, ok := pos[k]
			if !ok {
				p = len(scores)
				pos[k] = p
				scores = append(scores, Score{Group: s.GroupIndex, Reward: s.Reward, Masked: s.RemoveSample})
			} else if scores[p].Reward != s.Reward {
				return nil, fmt.Errorf("grpo: samples %d of trajectory (group %d, index %d) disagree on its reward: %v and %v",
					n, s.GroupIndex, s.Index, scores[p].Reward, s.Reward)
			}
			scores[p].Masked = scores[p].Masked || s.RemoveSample
			which[n] = p
		}
		adv := GRPO(scores)
		out := make([]Advantage, len(samples))
		for n, p := range which {
			out[n] = adv[p]
			if samples[n].RemoveSample {
				out[n] = Advantage{}
			}
		}
		return out, nil
	case EstimatorStepWise:
		steps := make([]StepScore, len(samples))
		for n, s := range samples {
			sw := s.Metadata.StepWise
			if len(sw.StepScoresWithOutcome) != 1 || len(sw.StepIndices) != 1 {
				return nil, fmt.Errorf("step_wise: sample %d has %d step scores and %d step indices: want one of each (one sample per turn)",
					n, len(sw.StepScoresWithOutcome), len(sw.StepIndices))
			}
			steps[n] = StepScore{Group: s.GroupIndex, Step: sw.StepIndices[0], Reward: sw.StepScoresWithOutcome[0], Masked: s.RemoveSample}
		}
		return StepWise(steps), nil
	case EstimatorPlain:
		scores := make([]Score, len(samples))
		for n, s := range samples {
			scores[n] = Score{Group: s.GroupIndex, Reward: s.Reward, Masked: s.RemoveSample}
		}
		return Plain(scores), nil
	}
	return nil, fmt.Errorf("advantage estimator %q: want %q, %q or %q", estimator, EstimatorGRPO, EstimatorStepWise, EstimatorPlain)
}
