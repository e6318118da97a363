package code_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/toolcall/code"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
	"github.com/nextstate-rl/nextstate/sandbox"
	_ "github.com/nextstate-rl/nextstate/sandbox/bwrap"
	_ "github.com/nextstate-rl/nextstate/sandbox/docker"
)

// needBwrap skips the test when the bwrap sandbox cannot run here, and
// returns settings for it: a state directory of the test's own and no
// warm pool (so that every sandbox a test sees is its sessions').
func needBwrap(t testing.TB) gym.Settings {
	t.Helper()
	b, err := sandbox.Open(context.Background(), "bwrap", sandbox.Options{Dir: t.TempDir()})
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("the bwrap sandbox is unavailable here: %v (apt-get install -y bubblewrap python3, and run as root)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b.Close(context.Background())
	return gym.Settings{"sandbox": "bwrap", "sandbox.dir": t.TempDir(), "code.pool": "0"}
}

// needDocker skips the test when no docker engine answers here or the
// base image is missing (`nextstate image build` makes it; `make test`
// does before the tests, so in CI these tests run).
func needDocker(t testing.TB) gym.Settings {
	t.Helper()
	if testing.Short() {
		t.Skip("docker tests are slow: -short")
	}
	b, err := sandbox.Open(context.Background(), "docker", sandbox.Options{})
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no docker engine here: %v (apt-get install -y docker.io and start dockerd)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b.Close(context.Background())
	if out, err := exec.Command("docker", "image", "inspect", code.DefaultBaseImage).CombinedOutput(); err != nil {
		t.Skipf("the base image %s is missing (nextstate image build): %s", code.DefaultBaseImage, strings.TrimSpace(string(out)))
	}
	return gym.Settings{"sandbox": "docker", "code.pool": "0"}
}

// harness runs sessions on a private manager that records every event.
type harness struct {
	m   *gym.Manager
	mem *gymtest.Memory
}

func newHarness(t testing.TB, settings gym.Settings) *harness {
	t.Helper()
	mem := &gymtest.Memory{}
	h := &harness{mem: mem,
		m: gym.NewManager(gym.Config{Recorder: mem, Settings: settings, Logger: slog.New(slog.DiscardHandler)})}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := h.m.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return h
}

func (h *harness) create(t testing.TB, task gym.Task, opts gym.Options) (*gym.Session, gym.ResetResult) {
	t.Helper()
	s, res, err := h.m.Create(context.Background(), gym.CreateRequest{Task: &task, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	return s, res
}

func (h *harness) step(t testing.TB, s *gym.Session, parts ...gym.Part) gym.StepResult {
	t.Helper()
	res, err := s.Step(context.Background(), "", gym.Action{Parts: parts})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure != nil {
		t.Fatalf("step failed: %+v", res.Failure)
	}
	return res
}

// run sends code and returns the one tool result.
func (h *harness) run(t testing.TB, s *gym.Session, src string) gym.ToolResult {
	t.Helper()
	rs := results(t, h.step(t, s, call(src)))
	if len(rs) != 1 {
		t.Fatalf("%d results, want 1", len(rs))
	}
	return rs[0]
}

// verdict returns the verifier's info recorded for session s.
func (h *harness) verdict(s *gym.Session) map[string]any {
	var out map[string]any
	for _, ev := range h.mem.Session(s.ID) {
		if v, ok := ev.Info["verifier"]; ok {
			b, _ := json.Marshal(v)
			json.Unmarshal(b, &out)
		}
	}
	return out
}

var callN int

// call is a code_interpreter call with the given code.
func call(src string) gym.Part {
	b, _ := json.Marshal(map[string]string{"code": src})
	return rawCall(code.ToolCode, string(b))
}

func rawCall(name, args string) gym.Part {
	callN++
	return gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "call_" + name + "_" + strconv.Itoa(callN), Type: "function",
		Function: gym.FunctionCall{Name: name, Arguments: args}}}
}

func results(t testing.TB, res gym.StepResult) []gym.ToolResult {
	t.Helper()
	var out []gym.ToolResult
	for _, p := range res.Observation.Parts {
		if p.Type == gym.PartToolResult {
			out = append(out, *p.ToolResult)
		}
	}
	return out
}

// problemTask is a task with a problem and a reference answer.
func problemTask(id, problem, answer string) gym.Task {
	data, _ := json.Marshal(code.TaskData{Problem: problem})
	ver, _ := json.Marshal(code.VerifierData{Answer: answer, Solution: "print(" + answer + ")"})
	return gym.Task{ID: id, Env: code.KindName, Instruction: problem, Data: data, Verifier: ver}
}

var sumTask = problemTask("sum", "What is 1 + 2 + ... + 100?", "5050")

// playOracle plays a task's oracle through a session and returns the last
// step.
func playOracle(t testing.TB, h *harness, task gym.Task) (*gym.Session, gym.StepResult) {
	t.Helper()
	o, err := gym.OracleFor(&task)
	if err != nil {
		t.Fatal(err)
	}
	s, rr := h.create(t, task, nil)
	obs, info := rr.Observation, rr.Info
	var last gym.StepResult
	for range 5 {
		a, done, err := o.Next(obs, info)
		if err != nil {
			t.Fatalf("%s: oracle: %v", task.ID, err)
		}
		if done {
			break
		}
		last = h.step(t, s, a.Parts...)
		if last.Terminated || last.Truncated {
			return s, last
		}
		obs, info = last.Observation, last.Info
	}
	t.Fatalf("%s: the oracle did not end the episode", task.ID)
	return nil, last
}
