package bfcl_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/toolcall/bfcl"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

func call(name, args string) gym.Part {
	return gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "c1", Type: "function",
		Function: gym.FunctionCall{Name: name, Arguments: args}}}
}

func oracleAction(t *testing.T, task *gym.Task) gym.Action {
	t.Helper()
	o, err := gym.OracleFor(task)
	if err != nil {
		t.Fatalf("%s: %v", task.ID, err)
	}
	a, done, err := o.Next(gym.Observation{}, nil)
	if err != nil || done {
		t.Fatalf("%s: oracle: %v %v", task.ID, done, err)
	}
	if _, done, _ := o.Next(gym.Observation{}, nil); !done {
		t.Errorf("%s: the oracle has a second action; want one", task.ID)
	}
	return a
}

// TestConformance runs the gym's checks on the smoke tasks: generated
// actions, and each task's oracle answer, a message, and a bad call.
func TestConformance(t *testing.T) {
	gymtest.CheckKind(t, bfcl.KindName)
	spec, err := gym.Lookup(bfcl.KindName)
	if err != nil {
		t.Fatal(err)
	}
	var cases []gymtest.Case
	for i := range spec.Tasks {
		task := &spec.Tasks[i]
		for _, a := range []gym.Action{oracleAction(t, task), gym.TextAction("I cannot help."),
			{Parts: []gym.Part{call("nope", "{not json")}}} {
			cases = append(cases, gymtest.Case{Task: task, Seed: 3, Actions: []gym.Action{a}})
		}
	}
	gymtest.CheckKind(t, bfcl.KindName, cases...)
}

type harness struct {
	t   *testing.T
	m   *gym.Manager
	mem *gymtest.Memory
}

func newHarness(t *testing.T) *harness {
	mem := &gymtest.Memory{}
	m := gym.NewManager(gym.Config{Recorder: mem, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return &harness{t: t, m: m, mem: mem}
}

// play resets a session on task, sends one action, and returns the reset,
// the step, and the verifier's info from the step's record.
func (h *harness) play(task gym.Task, a gym.Action) (gym.ResetResult, gym.StepResult, gym.Info) {
	h.t.Helper()
	ctx := h.t.Context()
	s, reset, err := h.m.Create(ctx, gym.CreateRequest{Task: &task})
	if err != nil {
		h.t.Fatalf("%s: %v", task.ID, err)
	}
	defer s.Close(ctx)
	res, err := s.Step(ctx, "", a)
	if err != nil {
		h.t.Fatalf("%s: step: %v", task.ID, err)
	}
	if !res.Terminated || res.Truncated {
		h.t.Errorf("%s: terminated %v truncated %v; want a one-shot episode", task.ID, res.Terminated, res.Truncated)
	}
	if _, leaked := res.Info["verifier"]; leaked {
		h.t.Errorf("%s: the agent sees the verifier's info", task.ID)
	}
	for _, ev := range h.mem.Session(s.ID) {
		if ev.Type == gym.EventStep {
			if info, ok := ev.Info["verifier"].(gym.Info); ok {
				return reset, res, info
			}
		}
	}
	h.t.Fatalf("%s: no verifier info in the step's record", task.ID)
	return reset, res, nil
}

// TestSmokeSessions plays each smoke task in a real session: the oracle's
// answer earns 1, a changed one 0 with its reason, and the reset shows the
// question and the tools as offered.
func TestSmokeSessions(t *testing.T) {
	h := newHarness(t)
	tasks := bfcl.SmokeTasks()
	if len(tasks) != 6 {
		t.Fatalf("%d smoke tasks; want 6", len(tasks))
	}
	cats := map[string]bool{}
	for _, task := range tasks {
		cats[task.Labels["category"]] = true
		reset, res, info := h.play(task, oracleAction(t, &task))
		if res.Reward != 1 {
			t.Errorf("%s: oracle reward %v (%v); want 1", task.ID, res.Reward, info)
		}
		if got := reset.Observation.Parts[0].Text; got != task.Instruction || got == "" {
			t.Errorf("%s: opening %q; want the question %q", task.ID, got, task.Instruction)
		}
		var tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		raw, _ := json.Marshal(reset.Info["tools"])
		var data struct{ Function []json.RawMessage }
		json.Unmarshal(task.Data, &data)
		if err := json.Unmarshal(raw, &tools); err != nil || len(tools) != len(data.Function) || len(tools) == 0 {
			t.Errorf("%s: tools %s (%v); want one per function", task.ID, raw, err)
		}
		for _, tool := range tools {
			if tool.Type != "function" || strings.ContainsAny(tool.Function.Name, ". ") || !strings.Contains(string(tool.Function.Parameters), `"type":"object"`) {
				t.Errorf("%s: tool %s %s: want an OpenAI function with a safe name and an object schema", task.ID, tool.Function.Name, tool.Function.Parameters)
			}
		}
		if info["category"] != task.Labels["category"] || info["valid"] != true {
			t.Errorf("%s: verifier info %v", task.ID, info)
		}
	}
	for _, c := range []string{"simple_python", "multiple", "parallel", "irrelevance", "simple_java", "simple_javascript"} {
		if !cats[c] {
			t.Errorf("no smoke task of %s", c)
		}
	}

	byID := map[string]gym.Task{}
	for _, task := range tasks {
		byID[task.ID] = task
	}
	for _, tc := range []struct {
		id     string
		action gym.Action
		reason string
	}{
		{"bfcl-smoke-1", gym.Action{Parts: []gym.Part{call("kiln_fire_schedule", `{"clay_body": "stoneware", "cone": 6, "hold_minutes": 10}`)}}, bfcl.ReasonStringMismatch},
		{"bfcl-smoke-1", gym.Action{Parts: []gym.Part{call("kiln_fire_schedule", `{"clay_body": "porcelain", "cone": 6.0, "hold_minutes": 10}`)}}, bfcl.ReasonTypeError},
		{"bfcl-smoke-1", gym.Action{Parts: []gym.Part{call("kiln_fire_schedule", `{"clay_body": "porcelain", "cone": `)}}, bfcl.ReasonDecoderFailed},
		{"bfcl-smoke-1", gym.TextAction("Cone 6, ten minutes."), bfcl.ReasonDecoderFailed},
		{"bfcl-smoke-2", gym.Action{Parts: []gym.Part{call("weather_sunrise", `{"city": "Port Isaac", "date": "2025-06-01"}`)}}, bfcl.ReasonWrongFuncName},
		{"bfcl-smoke-3", gym.Action{Parts: []gym.Part{call("unit_convert_length", `{"value": 12, "from_unit": "ft", "to_unit": "m"}`)}}, bfcl.ReasonWrongCount},
		{"bfcl-smoke-4", gym.Action{Parts: []gym.Part{call("bicycle_tire_pressure", `{"rider_weight_kg": 70, "tire_width_mm": 28}`)}}, bfcl.ReasonIrrelevanceCall},
		{"bfcl-smoke-5", gym.Action{Parts: []gym.Part{call("InventoryLedger_adjustStock", `{"sku": "AX-42", "delta": -3, "allowBackorder": "true", "warehouses": "new ArrayList<>(Arrays.asList(\"north\", \"east\"))"}`)}}, bfcl.ReasonJavaTypeError},
		{"bfcl-smoke-6", gym.Action{Parts: []gym.Part{call("scheduleReminder", `{"message": "stretch your legs", "delayMs": "90000", "channels": "['phone', 'desktop']"}`)}}, bfcl.ReasonListMismatch},
	} {
		_, res, info := h.play(byID[tc.id], tc.action)
		if res.Reward != 0 || info["reason"] != tc.reason || info["detail"] == "" {
			t.Errorf("%s: reward %v, verifier %v; want 0 for %s", tc.id, res.Reward, info, tc.reason)
		}
	}
	// Both names reach the same function: the offered one and BFCL's.
	_, res, info := h.play(byID["bfcl-smoke-2"], gym.Action{Parts: []gym.Part{call("tide.high_water", `{"harbour": "port isaac", "date": "2025-06-01"}`)}})
	if res.Reward != 1 {
		t.Errorf("BFCL's own function name: reward %v (%v)", res.Reward, info)
	}
}

func dataDir(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	for dir := wd; filepath.Dir(dir) != dir; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared", "data", "bfcl")
			if _, err := os.Stat(d); err != nil {
				t.Skipf("BFCL data not found at %s (the project's ../shared/data/bfcl)", d)
			}
			return d
		}
	}
	t.Fatal("no go.mod above " + wd)
	return ""
}

// TestSuiteFormat loads BFCL's data folder as a suite, as serve --tasks
// does, and plays a sample of every category through sessions.
func TestSuiteFormat(t *testing.T) {
	dir := dataDir(t)
	if !bfcl.Detect(dir) || bfcl.Detect(filepath.Join(dir, "possible_answer")) {
		t.Fatal("Detect: want the data folder, not its possible_answer folder")
	}
	suite, err := gym.LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(suite.Tasks) != 1590 {
		t.Fatalf("%d tasks; want 1390 single-turn and 200 multi-turn", len(suite.Tasks))
	}
	h := newHarness(t)
	per := map[string]int{}
	for i := range suite.Tasks {
		task := suite.Tasks[i]
		cat := task.Labels["category"]
		kind := bfcl.KindName
		if cat == "multi_turn_base" {
			kind = bfcl.MultiKindName
		}
		if task.Env != kind || cat == "" || !strings.HasPrefix(task.ID, cat+"_") {
			t.Fatalf("task %s: env %s, labels %v", task.ID, task.Env, task.Labels)
		}
		if per[cat]++; per[cat] > 6 || task.ID == "simple_java_36" {
			continue
		}
		if kind == bfcl.MultiKindName {
			steps, info := h.playTurns(task, oracleActions(t, &task))
			if last := steps[len(steps)-1]; !last.Terminated || last.Reward != 1 {
				t.Errorf("%s: oracle reward %v (%v)", task.ID, last.Reward, info)
			}
			continue
		}
		_, res, info := h.play(task, oracleAction(t, &task))
		if res.Reward != 1 {
			t.Errorf("%s: oracle reward %v (%v)", task.ID, res.Reward, info)
		}
	}
	// The public task keeps the question and functions, not the answer.
	pub := suite.Tasks[0].Public()
	if pub.Verifier != nil || !strings.Contains(string(pub.Data), `"function"`) {
		t.Errorf("public task: %s / %s", pub.Data, pub.Verifier)
	}
}

func TestBadTasks(t *testing.T) {
	h := newHarness(t)
	for name, task := range map[string]gym.Task{
		"no data":     {ID: "x", Env: bfcl.KindName},
		"no category": {ID: "x", Env: bfcl.KindName, Data: json.RawMessage(`{"question": "q", "function": []}`)},
		"no truth": {ID: "x", Env: bfcl.KindName, Data: json.RawMessage(`{"question": "q", "function": []}`),
			Verifier: json.RawMessage(`{"category": "multiple"}`)},
		"multi-turn": {ID: "x", Env: bfcl.KindName, Data: json.RawMessage(`{"question": "q", "function": []}`),
			Labels: map[string]string{"category": "multi_turn_base"}},
	} {
		_, _, err := h.m.Create(t.Context(), gym.CreateRequest{Task: &task})
		var fe *gym.FaultError
		if err == nil || !errors.As(err, &fe) {
			t.Errorf("%s: %v; want a labelled failure", name, err)
		}
	}
	if _, err := gym.OracleFor(&gym.Task{ID: "r", Env: bfcl.KindName, Data: json.RawMessage(`{"question": "q", "function": []}`),
		Labels: map[string]string{"category": "live_relevance"}}); !errors.Is(err, gym.ErrNoOracle) {
		t.Errorf("relevance oracle: %v; want ErrNoOracle", err)
	}
}
