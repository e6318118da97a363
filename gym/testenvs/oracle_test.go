package testenvs

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// guess-v1's oracle finds every secret of a small range by bisection.
func TestGuessOracle(t *testing.T) {
	task := &gym.Task{ID: "guess-1-20", Env: "guess-v1", Data: json.RawMessage(`{"low":1,"high":20}`), Limits: gym.Limits{MaxSteps: 5}}
	for seed := range int64(40) {
		o, err := gym.OracleFor(task)
		if err != nil {
			t.Fatal(err)
		}
		env, _ := guessKind{}.New(context.Background())
		obs, info, err := env.Reset(context.Background(), task, seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		solved := false
		for step := 0; step < 5 && !solved; step++ {
			a, done, err := o.Next(obs, info)
			if err != nil || done {
				t.Fatalf("seed %d: the oracle stopped at step %d (%v)", seed, step, err)
			}
			tr, err := env.Step(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			obs, solved = tr.Observation, tr.Terminated && tr.Reward == 1
		}
		if !solved {
			t.Errorf("seed %d: the oracle did not find the secret of 1..20 in 5 guesses", seed)
		}
	}
}
