// Package testenvs registers two small built-in env kinds for tests,
// benchmarks and the demo, so nextstate runs with nothing else installed:
//
//   - guess-v1: guess a secret integer; each next state says "higher" or
//     "lower", so it has both an outcome reward (1 for the right number,
//     given by a verifier from state the agent never sees) and a natural
//     next-state signal. Task data: {"low": 1, "high": 100}. The secret is
//     drawn from the reset seed. Its oracle bisects on the feedback; with
//     "oracle": "scan" in the data it is a weaker demonstrator instead, one
//     that counts up from low and reads nothing but "correct" (it finds
//     the secret only when the step limit reaches it: imperfect
//     demonstrations for a warm start that RL should then improve on). Its
//     step rule (gym.Spec.StepRule) is a process reward from the feedback
//     alone: a guess the feedback ruled out scores -1, one near the middle
//     of what is left 1, with a hint saying what the feedback implied.
//   - echo-v1: answers each text action with the same text. It never ends by
//     itself (an action of "/done" terminates it) and does no work, so it
//     measures the gym and server alone.
//
// Import it for its side effect: import _ "github.com/nextstate-rl/nextstate/gym/testenvs".
package testenvs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

func init() {
	gym.Register(guessKind{})
	gym.Register(echoKind{})
}

// GuessData is guess-v1's task data.
type GuessData struct {
	Low  int `json:"low"`
	High int `json:"high"`
	// Oracle picks the demonstrator of `run --oracle`: "bisect" (the
	// default) or "scan" (low, low+1, ...). The env itself ignores it.
	Oracle string `json:"oracle,omitempty"`
}

type guessKind struct{}

func (guessKind) Spec() gym.Spec {
	return gym.Spec{
		Name:              "guess-v1",
		Description:       "Guess a secret integer in [low, high]; each guess is answered higher, lower or correct.",
		ActionSchema:      gym.PartsSchema(1, 1, gym.PartText),
		ObservationSchema: gym.PartsSchema(1, 1, gym.PartText),
		Limits:            gym.Limits{MaxSteps: 20, StepTimeout: gym.Duration(5 * time.Second), EpisodeTimeout: gym.Duration(10 * time.Minute)},
		StepRule:          guessRule,
		Tasks: []gym.Task{
			guessTask("guess-1-100", 1, 100, 10, "train"),
			guessTask("guess-1-1000", 1, 1000, 12, "train"),
			guessTask("guess-1-50", 1, 50, 8, "test"),
		},
	}
}

func guessTask(id string, lo, hi, steps int, split string) gym.Task {
	d, _ := json.Marshal(GuessData{Low: lo, High: hi})
	return gym.Task{
		ID: id, Env: "guess-v1", Split: split, Data: d,
		Instruction: fmt.Sprintf("Guess the secret integer between %d and %d. Answer with the number alone; "+
			"after each guess you are told whether the secret is higher or lower.", lo, hi),
		Limits: gym.Limits{MaxSteps: steps},
	}
}

func (guessKind) New(context.Context) (gym.Env, error) { return &guess{}, nil }

// Oracle implements gym.OracleKind: binary search on the feedback, from
// the task's range, each guess the middle of what is left; or, with
// "oracle": "scan", every number from low up.
func (guessKind) Oracle(task *gym.Task) (gym.Oracle, error) {
	d := GuessData{Low: 1, High: 100}
	if len(task.Data) > 0 {
		if err := json.Unmarshal(task.Data, &d); err != nil {
			return nil, fmt.Errorf("guess-v1 task %s: %w", task.ID, err)
		}
	}
	switch d.Oracle {
	case "", "bisect":
		return &bisect{lo: d.Low, hi: d.High}, nil
	case "scan":
		return &scan{next: d.Low, hi: d.High}, nil
	}
	return nil, fmt.Errorf("guess-v1 task %s: oracle %q: want bisect (the default) or scan", task.ID, d.Oracle)
}

// scan is guess-v1's weak demonstrator: low, low+1, ... whatever the
// feedback says, until "correct".
type scan struct{ next, hi int }

func (s *scan) Next(obs gym.Observation, _ gym.Info) (gym.Action, bool, error) {
	if strings.TrimSpace(obs.Text()) == "correct" || s.next > s.hi {
		return gym.Action{}, true, nil
	}
	s.next++
	return gym.TextAction(strconv.Itoa(s.next - 1)), false, nil
}

// bisect is guess-v1's oracle.
type bisect struct {
	lo, hi, last int
	started      bool
}

func (b *bisect) Next(obs gym.Observation, _ gym.Info) (gym.Action, bool, error) {
	if b.started {
		switch strings.TrimSpace(obs.Text()) {
		case "higher":
			b.lo = b.last + 1
		case "lower":
			b.hi = b.last - 1
		default:
			return gym.Action{}, true, nil // correct, or nothing left to try
		}
	}
	if b.lo > b.hi {
		return gym.Action{}, true, nil
	}
	b.started = true
	b.last = b.lo + (b.hi-b.lo)/2
	return gym.TextAction(strconv.Itoa(b.last)), false, nil
}

var rangeRE = regexp.MustCompile(`between (-?\d+) and (-?\d+)`)

// guessRule is guess-v1's step rule, a process reward from the feedback
// alone: the range the earlier answers leave (from the instruction's
// range), and whether the guess is in it and near its middle. A guess
// that is not a number, or that the feedback already ruled out, is bad
// (-1); one in the middle half of what is left, or the secret, is good
// (1); the rest of the range is neutral (0). The hint says what the
// feedback implied.
func guessRule(in gym.RuleInput) (int, string) {
	lo, hi := 1, 100
	if m := rangeRE.FindStringSubmatch(in.Instruction); m != nil {
		lo, _ = strconv.Atoi(m[1])
		hi, _ = strconv.Atoi(m[2])
	}
	for _, t := range in.History {
		g, err := strconv.Atoi(strings.TrimSpace(t.Action))
		if err != nil {
			continue
		}
		switch strings.TrimSpace(t.NextState) {
		case "higher":
			lo = max(lo, g+1)
		case "lower":
			hi = min(hi, g-1)
		}
	}
	mid := lo + (hi-lo)/2
	g, err := strconv.Atoi(strings.TrimSpace(in.Action))
	switch {
	case err != nil:
		return -1, fmt.Sprintf("Answer with a whole number alone; the feedback so far puts the secret between %d and %d, so guess %d.", lo, hi, mid)
	case strings.TrimSpace(in.NextState) == "correct":
		return 1, ""
	case g < lo || g > hi:
		return -1, fmt.Sprintf("The feedback so far puts the secret between %d and %d, and %d is outside that range: guess its middle, %d.", lo, hi, g, mid)
	case 4*abs(g-mid) <= hi-lo:
		return 1, ""
	}
	return 0, fmt.Sprintf("The secret is between %d and %d; guess nearer the middle, %d, so that each answer halves what is left.", lo, hi, mid)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

type guess struct {
	data   GuessData
	secret int
	last   int
	hasAny bool
}

func (g *guess) Reset(_ context.Context, task *gym.Task, seed int64, _ gym.Options) (gym.Observation, gym.Info, error) {
	g.data = GuessData{Low: 1, High: 100}
	if len(task.Data) > 0 {
		if err := json.Unmarshal(task.Data, &g.data); err != nil {
			return gym.Observation{}, nil, gym.InfraFault("bad_task", fmt.Errorf("guess-v1 task data: %w (want {\"low\":1,\"high\":100})", err))
		}
	}
	if g.data.High < g.data.Low {
		return gym.Observation{}, nil, gym.InfraFault("bad_task", fmt.Errorf("guess-v1 task data: high %d is below low %d", g.data.High, g.data.Low))
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	g.secret = g.data.Low + r.IntN(g.data.High-g.data.Low+1)
	g.hasAny = false
	instr := task.Instruction
	if instr == "" {
		instr = fmt.Sprintf("Guess the secret integer between %d and %d.", g.data.Low, g.data.High)
	}
	return gym.TextObservation(instr), gym.Info{"low": g.data.Low, "high": g.data.High}, nil
}

func (g *guess) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	s := strings.TrimSpace(a.Text())
	n, err := strconv.Atoi(s)
	if err != nil {
		return gym.Transition{Observation: gym.TextObservation(fmt.Sprintf(
			"%q is not an integer: answer with a whole number between %d and %d.", s, g.data.Low, g.data.High))}, nil
	}
	g.last, g.hasAny = n, true
	switch {
	case n < g.secret:
		return gym.Transition{Observation: gym.TextObservation("higher")}, nil
	case n > g.secret:
		return gym.Transition{Observation: gym.TextObservation("lower")}, nil
	}
	return gym.Transition{Observation: gym.TextObservation("correct"), Reward: 1, Terminated: true}, nil
}

// Verify checks the last guess against the secret, which the agent never saw.
func (g *guess) Verify(context.Context) (float64, gym.Info, error) {
	if g.hasAny && g.last == g.secret {
		return 1, gym.Info{"secret": g.secret}, nil
	}
	return 0, gym.Info{"secret": g.secret}, nil
}

func (g *guess) Close(context.Context) error { return nil }

type echoKind struct{}

func (echoKind) Spec() gym.Spec {
	return gym.Spec{
		Name:              "echo-v1",
		Description:       "Answers each text action with the same text; \"/done\" ends the episode. Measures the gym alone.",
		ActionSchema:      gym.PartsSchema(1, 16, gym.PartText),
		ObservationSchema: gym.PartsSchema(0, 16, gym.PartText),
		Limits:            gym.Limits{MaxSteps: 1 << 20, StepTimeout: gym.Duration(5 * time.Second)},
		Tasks: []gym.Task{{ID: "echo-smoke", Env: "echo-v1", Instruction: "Say anything; say /done to finish.",
			Limits: gym.Limits{MaxSteps: 100}}},
	}
}

func (echoKind) New(context.Context) (gym.Env, error) { return &echo{}, nil }

type echo struct{ n int }

func (e *echo) Reset(_ context.Context, task *gym.Task, _ int64, _ gym.Options) (gym.Observation, gym.Info, error) {
	e.n = 0
	return gym.TextObservation(task.Instruction), nil, nil
}

func (e *echo) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	e.n++
	t := a.Text()
	return gym.Transition{Observation: gym.Observation{Parts: a.Parts}, Terminated: t == "/done", Reward: 0}, nil
}

func (e *echo) Close(context.Context) error { return nil }
