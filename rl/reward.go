package rl

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/nextstate-rl/nextstate/gym"
)

// Outcome maps: how a verifier's reward becomes the outcome o.
const (
	OutcomeIdentity = "identity" // o = reward
	OutcomeTwoAcc   = "2acc-1"   // o = 2·reward − 1, for a fraction of tests passed: 0 → −1, 1 → 1
)

// Mix says how outcome and process rewards combine, per suite. Its
// defaults are OpenClaw-RL's: C 1, Gamma 1, OutcomeMap "identity". Start
// from DefaultMix (or decode JSON, which starts from it), since the zero
// value weighs the process reward by 0.
//
//	R_t      = o · Gamma^(T−1−t) + C · r_t   (step reward, t = 0 … T−1)
//	sequence = o + C · mean_t(r_t)           (the trajectory's score)
type Mix struct {
	// C weighs the process reward r_t (the judge's mean vote).
	C float64 `json:"c"`
	// Gamma discounts the outcome for steps far from the end, 0 < Gamma ≤ 1.
	Gamma float64 `json:"gamma"`
	// OutcomeMap is OutcomeIdentity or OutcomeTwoAcc.
	OutcomeMap string `json:"outcome_map"`
}

// DefaultMix returns OpenClaw-RL's mixing.
func DefaultMix() Mix { return Mix{C: 1, Gamma: 1, OutcomeMap: OutcomeIdentity} }

// UnmarshalJSON reads a Mix, with DefaultMix's values for absent fields,
// and checks it.
func (m *Mix) UnmarshalJSON(b []byte) error {
	type plain Mix
	v := plain(DefaultMix())
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("reward mix: %w", err)
	}
	if err := Mix(v).Validate(); err != nil {
		return err
	}
	*m = Mix(v)
	return nil
}

// Validate checks the fields' ranges.
func (m Mix) Validate() error {
	if math.IsNaN(m.C) || math.IsInf(m.C, 0) {
		return fmt.Errorf("reward mix: c = %v: want a finite number (default 1)", m.C)
	}
	if !(m.Gamma > 0 && m.Gamma <= 1) {
		return fmt.Errorf("reward mix: gamma = %v: want 0 < gamma ≤ 1 (default 1)", m.Gamma)
	}
	switch m.OutcomeMap {
	case OutcomeIdentity, OutcomeTwoAcc:
		return nil
	}
	return fmt.Errorf("reward mix: outcome_map %q: want %q or %q", m.OutcomeMap, OutcomeIdentity, OutcomeTwoAcc)
}

// MapOutcome turns a verifier's reward into the outcome o. OutcomeTwoAcc
// takes a fraction in [0, 1].
func (m Mix) MapOutcome(reward float64) (float64, error) {
	if math.IsNaN(reward) || math.IsInf(reward, 0) {
		return 0, fmt.Errorf("outcome reward %v is not a finite number", reward)
	}
	switch m.OutcomeMap {
	case OutcomeIdentity, "":
		return reward, nil
	case OutcomeTwoAcc:
		if reward < 0 || reward > 1 {
			return 0, fmt.Errorf("outcome reward %v: the %q map takes a fraction of tests passed, 0 to 1", reward, OutcomeTwoAcc)
		}
		return 2*reward - 1, nil
	}
	return 0, fmt.Errorf("reward mix: outcome_map %q: want %q or %q", m.OutcomeMap, OutcomeIdentity, OutcomeTwoAcc)
}

// StepRewards returns R_t = o·Gamma^(T−1−t) + C·r_t for each of the T steps;
// o is the mapped outcome and r the process rewards (0 for a step that was
// not judged).
func (m Mix) StepRewards(o float64, r []float64) []float64 {
	out := make([]float64, len(r))
	T := len(r)
	for t, rt := range r {
		out[t] = o*math.Pow(m.Gamma, float64(T-1-t)) + m.C*rt
	}
	return out
}

// SequenceScore returns o + C·mean_t(r_t), the trajectory's score; with no
// steps, o.
func (m Mix) SequenceScore(o float64, r []float64) float64 {
	if len(r) == 0 {
		return o
	}
	sum := 0.0
	for _, rt := range r {
		sum += rt
	}
	return o + m.C*sum/float64(len(r))
}

// Trainable reports whether a trajectory that ended with failure may be
// trained on: an infrastructure failure says nothing about the agent, so
// its trajectory is masked out; an agent failure is the agent's to learn
// from; nil is no failure.
func Trainable(failure *gym.Failure) bool {
	return failure == nil || failure.Fault != gym.FaultInfra
}
