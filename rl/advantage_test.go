package rl

import (
	"strings"
	"testing"
)

func advNear(t *testing.T, what string, got Advantage, value float64, keep bool) {
	t.Helper()
	if got.Keep != keep || !near(got.Value, value) {
		t.Errorf("%s = %+v, want {Value:%v Keep:%v}", what, got, value, keep)
	}
}

func TestGRPO(t *testing.T) {
	scores := []Score{
		// Group 0: 1, 0, 0, 1 → mean 0.5, sample std √(4·0.25/3) = √(1/3),
		// A = ±0.5/(√(1/3) + 1e-6) = ±0.8660239037870368. The masked 100
		// takes no part.
		{Group: 0, Reward: 1}, {Group: 0, Reward: 0}, {Group: 0, Reward: 0}, {Group: 0, Reward: 1},
		{Group: 0, Reward: 100, Masked: true},
		// Group 1: all equal: dropped.
		{Group: 1, Reward: 1}, {Group: 1, Reward: 1},
		// Group 2: a single member: dropped.
		{Group: 2, Reward: 0.3},
		// Group 3: −1, 0, 2 → mean 1/3, sample std √((16/9 + 1/9 + 25/9)/2) = √(7/3),
		// A_0 = (−4/3)/(√(7/3)+1e-6) = −0.87287099, A_2 = (5/3)/(√(7/3)+1e-6) = 1.09108874.
		{Group: 3, Reward: -1}, {Group: 3, Reward: 0}, {Group: 3, Reward: 2},
	}
	a := GRPO(scores)
	const z = 0.8660239037870368
	advNear(t, "g0[0]", a[0], z, true)
	advNear(t, "g0[1]", a[1], -z, true)
	advNear(t, "g0[2]", a[2], -z, true)
	advNear(t, "g0[3]", a[3], z, true)
	advNear(t, "g0 masked", a[4], 0, false)
	advNear(t, "g1[0]", a[5], 0, false)
	advNear(t, "g1[1]", a[6], 0, false)
	advNear(t, "g2", a[7], 0, false)
	advNear(t, "g3[0]", a[8], -0.8728709895157721, true)
	advNear(t, "g3[1]", a[9], -0.21821774737894303, true)
	advNear(t, "g3[2]", a[10], 1.0910887368947153, true)
}

func TestStepWise(t *testing.T) {
	steps := []StepScore{
		// Bucket (0, 0): 2, 0 → mean 1, population std 1, A = ±1/(1+1e-6).
		{Group: 0, Step: 0, Reward: 2}, {Group: 0, Step: 0, Reward: 0},
		// Bucket (0, 1): one step: its raw reward.
		{Group: 0, Step: 1, Reward: 1.5},
		// Bucket (0, 2): 1, 1: dropped; the masked 7 takes no part.
		{Group: 0, Step: 2, Reward: 1}, {Group: 0, Step: 2, Reward: 1}, {Group: 0, Step: 2, Reward: 7, Masked: true},
		// Bucket (1, 0): another group, same step: 3, 0, 0 → mean 1,
		// population std √((4+1+1)/3) = √2, A = 2/(√2+1e-6), −1/(√2+1e-6).
		{Group: 1, Step: 0, Reward: 3}, {Group: 1, Step: 0, Reward: 0}, {Group: 1, Step: 0, Reward: 0},
	}
	a := StepWise(steps)
	const one = 0.9999990000010001
	advNear(t, "(0,0)[0]", a[0], one, true)
	advNear(t, "(0,0)[1]", a[1], -one, true)
	advNear(t, "(0,1)", a[2], 1.5, true)
	advNear(t, "(0,2)[0]", a[3], 0, false)
	advNear(t, "(0,2)[1]", a[4], 0, false)
	advNear(t, "(0,2) masked", a[5], 0, false)
	advNear(t, "(1,0)[0]", a[6], 1.4142125623738022, true)
	advNear(t, "(1,0)[1]", a[7], -0.7071062811869011, true)
}

func TestPlain(t *testing.T) {
	a := Plain([]Score{{Reward: 0.7}, {Reward: -2, Masked: true}, {Reward: 0}})
	advNear(t, "0", a[0], 0.7, true)
	advNear(t, "masked", a[1], 0, false)
	advNear(t, "zero", a[2], 0, true)
}

func sampleOf(group, index, step int, reward, withOutcome float64, removed bool) Sample {
	return Sample{GroupIndex: group, Index: index, Reward: reward, RemoveSample: removed,
		Metadata: Metadata{StepWise: StepWiseScores{StepScoresWithOutcome: []float64{withOutcome}, StepIndices: []int{step}}}}
}

func TestSampleAdvantages(t *testing.T) {
	// Group 0: trajectory 0 (two turns, score 1) and trajectory 1 (one
	// turn, score 0); trajectory 2 is masked. GRPO sees one score per
	// trajectory: 1, 0 → ±0.5/(√0.5+1e-6).
	samples := []Sample{
		sampleOf(0, 0, 0, 1, 2, false), sampleOf(0, 0, 1, 1, 0, false),
		sampleOf(0, 1, 0, 0, 1, false),
		sampleOf(0, 2, 0, 5, 5, true),
	}
	a, err := SampleAdvantages(samples, EstimatorGRPO)
	if err != nil {
		t.Fatal(err)
	}
	const z = 0.7071057811879616 // 0.5/(√0.5 + 1e-6)
	advNear(t, "traj 0 turn 0", a[0], z, true)
	advNear(t, "traj 0 turn 1", a[1], z, true)
	advNear(t, "traj 1", a[2], -z, true)
	advNear(t, "masked", a[3], 0, false)

	// step_wise: bucket (0, 0) holds 2 and 1 → ±0.5/(0.5+1e-6); (0, 1) holds 0 alone.
	a, err = SampleAdvantages(samples, EstimatorStepWise)
	if err != nil {
		t.Fatal(err)
	}
	advNear(t, "sw (0,0) first", a[0], 0.9999980000039999, true)
	advNear(t, "sw (0,1)", a[1], 0, true)
	advNear(t, "sw (0,0) second", a[2], -0.9999980000039999, true)
	advNear(t, "sw masked", a[3], 0, false)

	a, err = SampleAdvantages(samples, EstimatorPlain)
	if err != nil {
		t.Fatal(err)
	}
	advNear(t, "plain", a[0], 1, true)
	advNear(t, "plain masked", a[3], 0, false)

	bad := []Sample{sampleOf(0, 0, 0, 1, 1, false), sampleOf(0, 0, 1, 2, 1, false)}
	if _, err := SampleAdvantages(bad, EstimatorGRPO); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Errorf("disagreeing rewards: %v", err)
	}
	if _, err := SampleAdvantages([]Sample{{}}, EstimatorStepWise); err == nil || !strings.Contains(err.Error(), "one of each") {
		t.Errorf("no step scores: %v", err)
	}
	if _, err := SampleAdvantages(nil, "ppo"); err == nil || !strings.Contains(err.Error(), `"ppo"`) {
		t.Errorf("unknown estimator: %v", err)
	}
}
