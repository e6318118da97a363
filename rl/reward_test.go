package rl

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func floatsNear(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestStepRewardsDefault(t *testing.T) {
	m := DefaultMix()
	// o = 1, r = [1, −1, 0.5], c = 1, γ = 1: R_t = 1 + r_t.
	r := []float64{1, -1, 0.5}
	if got, want := m.StepRewards(1, r), []float64{2, 0, 1.5}; !floatsNear(got, want) {
		t.Fatalf("StepRewards = %v, want %v", got, want)
	}
	// o + mean(r) = 1 + 0.5/3
	if got := m.SequenceScore(1, r); !near(got, 1+0.5/3) {
		t.Fatalf("SequenceScore = %v, want %v", got, 1+0.5/3)
	}
	if got := m.SequenceScore(-1, nil); got != -1 {
		t.Fatalf("SequenceScore with no steps = %v, want o", got)
	}
	if got := m.StepRewards(1, nil); len(got) != 0 {
		t.Fatalf("StepRewards with no steps = %v", got)
	}
}

func TestStepRewardsDiscounted(t *testing.T) {
	m := Mix{C: 0.5, Gamma: 0.5, OutcomeMap: OutcomeIdentity}
	// T = 3, o = 1, r = [1, 0, −1]:
	//   R_0 = 1·0.5² + 0.5·1    = 0.75
	//   R_1 = 1·0.5¹ + 0.5·0    = 0.5
	//   R_2 = 1·0.5⁰ + 0.5·(−1) = 0.5
	r := []float64{1, 0, -1}
	if got, want := m.StepRewards(1, r), []float64{0.75, 0.5, 0.5}; !floatsNear(got, want) {
		t.Fatalf("StepRewards = %v, want %v", got, want)
	}
	// 1 + 0.5·mean(1, 0, −1) = 1
	if got := m.SequenceScore(1, r); !near(got, 1) {
		t.Fatalf("SequenceScore = %v, want 1", got)
	}
	// c = 0: outcome only.
	m = Mix{C: 0, Gamma: 1, OutcomeMap: OutcomeIdentity}
	if got, want := m.StepRewards(-1, r), []float64{-1, -1, -1}; !floatsNear(got, want) {
		t.Fatalf("c=0: %v, want %v", got, want)
	}
}

func TestMapOutcome(t *testing.T) {
	two := Mix{C: 1, Gamma: 1, OutcomeMap: OutcomeTwoAcc}
	for _, c := range []struct{ in, want float64 }{{0, -1}, {1, 1}, {0.75, 0.5}, {0.5, 0}} {
		if got, err := two.MapOutcome(c.in); err != nil || !near(got, c.want) {
			t.Errorf("2acc-1(%v) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if _, err := two.MapOutcome(1.2); err == nil || !strings.Contains(err.Error(), "0 to 1") {
		t.Errorf("2acc-1(1.2): %v", err)
	}
	if got, err := DefaultMix().MapOutcome(0.3); err != nil || got != 0.3 {
		t.Errorf("identity(0.3) = %v, %v", got, err)
	}
	if _, err := DefaultMix().MapOutcome(math.NaN()); err == nil {
		t.Error("NaN outcome accepted")
	}
	if _, err := (Mix{OutcomeMap: "sigmoid"}).MapOutcome(1); err == nil || !strings.Contains(err.Error(), `"sigmoid"`) {
		t.Errorf("unknown map: %v", err)
	}
}

func TestMixJSON(t *testing.T) {
	var m Mix
	if err := json.Unmarshal([]byte(`{}`), &m); err != nil || m != DefaultMix() {
		t.Fatalf("{} = %+v, %v; want the defaults", m, err)
	}
	if err := json.Unmarshal([]byte(`{"c":0,"outcome_map":"2acc-1"}`), &m); err != nil || m != (Mix{C: 0, Gamma: 1, OutcomeMap: OutcomeTwoAcc}) {
		t.Fatalf("c 0: %+v, %v", m, err)
	}
	for in, want := range map[string]string{
		`{"gamma":0}`:           "gamma",
		`{"gamma":1.5}`:         "gamma",
		`{"outcome_map":"x"}`:   `outcome_map "x"`,
		`{"c":"one"}`:           "reward mix",
		`{"outcome_map":"acc"}`: `"identity" or "2acc-1"`,
	} {
		var m Mix
		if err := json.Unmarshal([]byte(in), &m); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %s", in, err, want)
		}
	}
}

func TestTrainable(t *testing.T) {
	if !Trainable(nil) || !Trainable(&gym.Failure{Fault: gym.FaultAgent, Reason: "timeout"}) ||
		Trainable(&gym.Failure{Fault: gym.FaultInfra, Reason: "sandbox_died"}) {
		t.Fatal("Trainable: want nil and agent faults trainable, infra faults not")
	}
}
