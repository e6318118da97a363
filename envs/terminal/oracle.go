package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// OracleScript is where OracleActions writes a task's solution.sh in the
// sandbox before running it.
const OracleScript = "/tmp/nextstate-oracle/solution.sh"

// OracleActions returns the actions that play a task's oracle solution
// through the tools, as an agent would, ending with submit:
//
//   - solution.sh: one step of two parallel calls, write_file of the script
//     to OracleScript and shell_exec "bash OracleScript" (with the agent's
//     timeout, at most MaxCommandTimeout); Terminal-Bench runs it the same
//     way, with bash, in the task's working directory;
//   - solution.yaml: a step per command: shell_exec for block commands (in
//     the persistent shell), shell_send_keys for the others (typed into the
//     terminal, with Enter when append_enter, then min_timeout_sec waited).
func OracleActions(t *gym.Task) ([]gym.Action, error) {
	sol, err := LoadSolution(t)
	if err != nil {
		return nil, err
	}
	agent := DefaultAgentTimeout
	if t.Limits.EpisodeTimeout > 0 {
		agent = time.Duration(t.Limits.EpisodeTimeout)
	}
	timeout := min(agent, MaxCommandTimeout).Seconds()
	var out []gym.Action
	n := 0
	tc := func(name string, args map[string]any) gym.Part {
		n++
		b, _ := json.Marshal(args)
		return gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			ID: fmt.Sprintf("oracle_%d", n), Type: "function", Function: gym.FunctionCall{Name: name, Arguments: string(b)},
		}}
	}
	switch {
	case sol.Script != "":
		out = append(out, gym.Action{Parts: []gym.Part{
			tc(ToolWrite, map[string]any{"path": OracleScript, "content": sol.Script}),
			tc(ToolExec, map[string]any{"command": "bash " + OracleScript, "timeout": timeout}),
		}})
	case len(sol.Steps) > 0:
		for _, st := range sol.Steps {
			if st.Block {
				out = append(out, gym.Action{Parts: []gym.Part{tc(ToolExec, map[string]any{
					"command": st.Command, "timeout": max(st.MinTimeout, timeout)})}})
				continue
			}
			keys := []string{st.Command}
			if st.AppendEnter {
				keys = append(keys, "Enter")
			}
			args := map[string]any{"keys": keys}
			if st.MinTimeout > 0 {
				args["wait"] = st.MinTimeout
			}
			out = append(out, gym.Action{Parts: []gym.Part{tc(ToolSendKeys, args)}})
		}
	default:
		return nil, errors.New("the solution is empty")
	}
	out = append(out, gym.Action{Parts: []gym.Part{tc(ToolSubmit, map[string]any{})}})
	return out, nil
}

// Validation is what Validate found for one task.
type Validation struct {
	Task string `json:"task"`
	// Build is how long the sandbox took to make (the first reset).
	Build gym.Duration `json:"build"`
	// Nothing is the reward for submitting at once; it must be below 1.
	Nothing float64 `json:"nothing"`
	// Oracle is the reward of the oracle solution; it must be 1.
	Oracle float64 `json:"oracle"`
	// OracleTests and NothingTests are the per-test results.
	NothingTests any          `json:"nothing_tests,omitempty"`
	OracleTests  any          `json:"oracle_tests,omitempty"`
	Time         gym.Duration `json:"time"`
	// Err says what went wrong; OK is true when the task is valid.
	Err string `json:"error,omitempty"`
	OK  bool   `json:"ok"`
}

// Validator checks tasks: doing nothing must fail and the oracle solution
// must pass. It runs real sessions on a gym.Manager of its own.
type Validator struct {
	m   *gym.Manager
	rec *verdicts
}

// NewValidator starts a Validator whose manager passes settings to the
// kind (gym.Settings: "sandbox", "docker.hosts", "base_image").
func NewValidator(settings gym.Settings) *Validator {
	rec := &verdicts{last: map[string]any{}}
	m := gym.NewManager(gym.Config{Recorder: rec, Settings: settings, Logger: slog.New(slog.DiscardHandler)})
	return &Validator{m: m, rec: rec}
}

// Close shuts the manager down, closing the sandbox backend.
func (v *Validator) Close(ctx context.Context) error { return v.m.Shutdown(ctx) }

// verdicts is a gym.Recorder that keeps the verifier's info of each
// session's last verified step (the session strips it from the answer).
type verdicts struct {
	mu   sync.Mutex
	seq  int64
	last map[string]any
}

func (r *verdicts) Append(_ context.Context, ev *gym.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	ev.Seq = r.seq
	if ev.Type == gym.EventStep {
		if vi, ok := ev.Info["verifier"]; ok {
			r.last[ev.Session] = vi
		}
	}
	return nil
}

func (r *verdicts) take(session string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.last[session]
	delete(r.last, session)
	return v
}

// Validate checks one task: it creates a session (building the task's
// sandbox), submits at once (doing nothing must fail), resets (to the
// initial state again) and plays the oracle solution (which must pass).
func (val *Validator) Validate(ctx context.Context, t *gym.Task) (v Validation) {
	start := time.Now()
	v = Validation{Task: t.ID}
	defer func() { v.Time = gym.Duration(time.Since(start)) }()
	actions, err := OracleActions(t)
	if err != nil {
		v.Err = "oracle: " + err.Error()
		return v
	}
	s, _, err := val.m.Create(ctx, gym.CreateRequest{Task: t, Seed: 1, Labels: map[string]string{"validate": "true"}})
	v.Build = gym.Duration(time.Since(start))
	if err != nil {
		v.Err = "build: " + err.Error()
		return v
	}
	defer s.Close(context.WithoutCancel(ctx))
	submit := actions[len(actions)-1]
	res, err := s.Step(ctx, "", submit)
	if err != nil {
		v.Err = "nothing: " + err.Error()
		return v
	}
	v.NothingTests = val.rec.take(s.ID)
	if res.Failure != nil || !res.Terminated {
		v.Err = fmt.Sprintf("nothing: the episode did not terminate: %+v", res.Failure)
		return v
	}
	v.Nothing = res.Reward
	if _, err := s.Reset(ctx, nil, 1, nil); err != nil {
		v.Err = "reset: " + err.Error()
		return v
	}
	for i, a := range actions {
		res, err := s.Step(ctx, "", a)
		if err != nil {
			v.Err = fmt.Sprintf("oracle step %d: %v", i+1, err)
			return v
		}
		if res.Failure != nil {
			v.Err = fmt.Sprintf("oracle step %d: %s: %s", i+1, res.Failure.Reason, res.Failure.Message)
			return v
		}
		if res.Terminated || res.Truncated {
			if !res.Terminated || i != len(actions)-1 {
				v.Err = fmt.Sprintf("oracle step %d ended the episode early (truncated %v: %v)", i+1, res.Truncated, res.Info["truncated_by"])
				return v
			}
			v.Oracle = res.Reward
			v.OracleTests = val.rec.take(s.ID)
		}
	}
	switch {
	case v.Nothing >= 1:
		v.Err = "doing nothing passes the tests"
	case v.Oracle < 1:
		v.Err = fmt.Sprintf("the oracle solution scores %.2f, not 1", v.Oracle)
		if info, ok := v.OracleTests.(gym.Info); ok {
			if cause, ok := info["cause"].(string); ok {
				v.Err += ": " + cause
			} else if msg, ok := info["error"].(string); ok {
				v.Err += " (" + msg + ")"
			}
		}
	default:
		v.OK = true
	}
	return v
}
