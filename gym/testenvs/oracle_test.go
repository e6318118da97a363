package testenvs

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// playOracle plays the task's oracle at seed for at most steps steps and
// returns its guesses, whether the episode was solved, and the secret.
func playOracle(t *testing.T, task *gym.Task, seed int64, steps int) (guesses []string, solved bool, secret int) {
	t.Helper()
	o, err := gym.OracleFor(task)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := guessKind{}.New(context.Background())
	obs, info, err := env.Reset(context.Background(), task, seed, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range steps {
		a, done, err := o.Next(obs, info)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if done {
			break
		}
		guesses = append(guesses, a.Text())
		tr, err := env.Step(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		obs = tr.Observation
		if solved = tr.Terminated && tr.Reward == 1; solved {
			break
		}
	}
	return guesses, solved, env.(*guess).secret
}

// guess-v1's oracle finds every secret of a small range by bisection.
func TestGuessOracle(t *testing.T) {
	task := &gym.Task{ID: "guess-1-20", Env: "guess-v1", Data: json.RawMessage(`{"low":1,"high":20}`), Limits: gym.Limits{MaxSteps: 5}}
	for seed := range int64(40) {
		if guesses, solved, secret := playOracle(t, task, seed, 5); !solved {
			t.Errorf("seed %d: the oracle did not find the secret %d of 1..20 in 5 guesses: %v", seed, secret, guesses)
		}
	}
}

// With "oracle": "scan", the demonstrator counts up from low whatever the
// feedback, so it finds a secret only within the step limit; an unknown
// oracle is refused by name.
func TestGuessScanOracle(t *testing.T) {
	task := &gym.Task{ID: "guess-3-9", Env: "guess-v1", Data: json.RawMessage(`{"low":3,"high":9,"oracle":"scan"}`)}
	for seed := range int64(20) {
		guesses, solved, secret := playOracle(t, task, seed, 20)
		if !solved || len(guesses) != secret-2 || guesses[0] != "3" || guesses[len(guesses)-1] != strconv.Itoa(secret) {
			t.Errorf("seed %d, secret %d: guesses %v; want 3 up to the secret", seed, secret, guesses)
		}
	}
	bad := &gym.Task{ID: "guess-x", Env: "guess-v1", Data: json.RawMessage(`{"low":1,"high":9,"oracle":"linear"}`)}
	if _, err := gym.OracleFor(bad); err == nil || !strings.Contains(err.Error(), `oracle "linear": want bisect (the default) or scan`) {
		t.Errorf("an unknown oracle: %v", err)
	}
}
