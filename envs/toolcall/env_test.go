package toolcall_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// notes is a tiny stateful domain: a key-value notebook. The task's
// Verifier names the key and value the notebook must hold at the end.
type notes struct{}

type notesEpisode struct {
	kv   map[string]string
	want struct{ Key, Value string }
	said []string
}

func (notes) Start(_ context.Context, task *gym.Task, _ int64, _ gym.Options) (toolcall.Episode, error) {
	ep := &notesEpisode{kv: map[string]string{}}
	if len(task.Verifier) > 0 {
		if err := json.Unmarshal(task.Verifier, &ep.want); err != nil {
			return nil, gym.InfraFault("bad_task", err)
		}
	}
	return ep, nil
}

func (e *notesEpisode) Tools() []toolcall.Tool {
	return []toolcall.Tool{
		{Name: "put", Description: "Store a note.", Parameters: json.RawMessage(
			`{"type":"object","required":["key","value"],"properties":{"key":{"type":"string"},"value":{"type":"string"},"ttl":{"type":"integer"}}}`)},
		{Name: "get", Description: "Read a note.", Parameters: json.RawMessage(
			`{"type":"object","required":["key"],"properties":{"key":{"type":"string"}}}`)},
		{Name: "finish", Description: "End the episode.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: "crash", Description: "Fail as the infrastructure would.", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
}

func (e *notesEpisode) Opening() string { return "Keep notes." }

func (e *notesEpisode) Call(_ context.Context, name string, args json.RawMessage) (toolcall.Result, error) {
	var a struct{ Key, Value string }
	if err := json.Unmarshal(args, &a); err != nil {
		return toolcall.Result{}, err
	}
	switch name {
	case "put":
		e.kv[a.Key] = a.Value
		return toolcall.Result{Content: "ok"}, nil
	case "get":
		v, ok := e.kv[a.Key]
		if !ok {
			return toolcall.Result{}, toolcall.Errorf("Error: no note %q", a.Key)
		}
		return toolcall.Result{Content: v}, nil
	case "finish":
		return toolcall.Result{Content: "bye", End: true}, nil
	}
	return toolcall.Result{}, errors.New("disk on fire")
}

func (e *notesEpisode) Say(_ context.Context, msg string) (string, bool, error) {
	e.said = append(e.said, msg)
	return "user: noted " + msg, strings.Contains(msg, "goodbye"), nil
}

func (e *notesEpisode) Verify(context.Context) (float64, gym.Info, error) {
	if e.kv[e.want.Key] == e.want.Value {
		return 1, gym.Info{"match": true}, nil
	}
	return 0, gym.Info{"match": false}, nil
}

func (e *notesEpisode) Close(context.Context) error { return nil }

const kindName = "notes-v1"

func init() {
	gym.Register(toolcall.NewKind(toolcall.Config{Name: kindName, Description: "A notebook for tests.", MaxToolErrors: 3}, notes{}))
}

func call(id, name, args string) gym.Part {
	return gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: id, Type: "function",
		Function: gym.FunctionCall{Name: name, Arguments: args}}}
}

func act(parts ...gym.Part) gym.Action { return gym.Action{Parts: parts} }

var task = &gym.Task{ID: "n1", Env: kindName, Instruction: "note a=1", Verifier: json.RawMessage(`{"Key":"a","Value":"1"}`)}

func newSession(t *testing.T, opts gym.Options) (*gym.Manager, *gym.Session, gym.ResetResult) {
	t.Helper()
	m := gym.NewManager(gym.Config{Recorder: &gymtest.Memory{}})
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	s, res, err := m.Create(context.Background(), gym.CreateRequest{Env: kindName, Task: task, Seed: 1, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	return m, s, res
}

func TestResetListsTools(t *testing.T) {
	_, _, res := newSession(t, nil)
	if res.Observation.Text() != "Keep notes." {
		t.Errorf("opening = %q", res.Observation.Text())
	}
	var file *gym.File
	for _, p := range res.Observation.Parts {
		if p.File != nil {
			file = p.File
		}
	}
	if file == nil || file.Path != "tools.json" {
		t.Fatalf("no tools.json part in %+v", res.Observation.Parts)
	}
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(file.Data, &tools); err != nil {
		t.Fatal(err)
	}
	if len(tools) != 4 || tools[0].Type != "function" || tools[0].Function.Name != "put" {
		t.Errorf("tools = %+v", tools)
	}
	if _, ok := res.Info["tools"]; !ok {
		t.Error(`reset info has no "tools"`)
	}
}

func TestParallelCallsAnsweredInOrder(t *testing.T) {
	_, s, _ := newSession(t, nil)
	res, err := s.Step(context.Background(), "", act(
		call("c1", "put", `{"key":"a","value":"1"}`),
		call("c2", "get", `{"key":"a"}`),
		call("c3", "get", `{"key":"zz"}`),
	))
	if err != nil {
		t.Fatal(err)
	}
	ps := res.Observation.Parts
	if len(ps) != 3 {
		t.Fatalf("want 3 results, got %+v", ps)
	}
	want := []struct {
		id, content string
		isErr       bool
	}{{"c1", "ok", false}, {"c2", "1", false}, {"c3", `Error: no note "zz"`, true}}
	for i, w := range want {
		r := ps[i].ToolResult
		if r == nil || r.CallID != w.id || r.Content != w.content || r.IsError != w.isErr {
			t.Errorf("result %d = %+v, want %+v", i, r, w)
		}
	}
	// A domain's own tool error is not a bad call: it does not count.
	if n := res.Info["tool_errors_total"]; n != 0 {
		t.Errorf("tool_errors_total = %v, want 0", n)
	}
}

func TestBadCallsAreObservations(t *testing.T) {
	cases := []struct {
		name, tool, args, reason, says string
	}{
		{"unknown tool", "delete", `{}`, toolcall.ReasonUnknownTool, "The tools are: crash, finish, get, put"},
		{"not JSON", "put", `{"key":`, toolcall.ReasonBadJSON, `put {"key": string, "value": string, "ttl"?: integer}`},
		{"not an object", "put", `["a"]`, toolcall.ReasonBadJSON, "must be a JSON object, not an array"},
		{"missing required", "put", `{"key":"a"}`, toolcall.ReasonBadArguments, "value"},
		{"wrong type", "put", `{"key":"a","value":3}`, toolcall.ReasonBadArguments, "at /value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, s, _ := newSession(t, nil)
			res, err := s.Step(context.Background(), "", act(call("x", c.tool, c.args)))
			if err != nil {
				t.Fatalf("a bad call ended the session: %v", err)
			}
			r := res.Observation.Parts[0].ToolResult
			if r == nil || !r.IsError || !strings.Contains(r.Content, c.says) {
				t.Fatalf("result = %+v, want an error saying %q", r, c.says)
			}
			errs, _ := res.Info["tool_errors"].([]map[string]string)
			if len(errs) != 1 || errs[0]["reason"] != c.reason {
				t.Errorf("info tool_errors = %v, want reason %s", res.Info["tool_errors"], c.reason)
			}
			if res.Terminated || res.Truncated {
				t.Error("one bad call ended the episode")
			}
		})
	}
}

func TestTooManyBadCallsTruncate(t *testing.T) {
	_, s, _ := newSession(t, nil)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		res, err := s.Step(ctx, "", act(call("x", "nope", "{}")))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Truncated; got != (i == 3) {
			t.Fatalf("step %d: truncated = %v", i, got)
		}
		if i == 3 && res.Info["truncated_reason"] != "tool_errors" {
			t.Errorf("truncated_reason = %v", res.Info["truncated_reason"])
		}
	}
	// The limit comes from the reset option too; 0 is no limit.
	_, s, _ = newSession(t, gym.Options{"max_tool_errors": float64(0)})
	for range 5 {
		res, err := s.Step(ctx, "", act(call("x", "nope", "{}")))
		if err != nil || res.Truncated {
			t.Fatalf("max_tool_errors 0 truncated: %v %v", res.Truncated, err)
		}
	}
	m := gym.NewManager(gym.Config{Recorder: &gymtest.Memory{}})
	defer m.Shutdown(ctx)
	_, _, err := m.Create(ctx, gym.CreateRequest{Env: kindName, Task: task, Options: gym.Options{"max_tool_errors": "many"}})
	if err == nil || !strings.Contains(err.Error(), "want a whole number") {
		t.Errorf("bad option: err = %v", err)
	}
}

func TestMessagesAndOutcome(t *testing.T) {
	ctx := context.Background()
	_, s, _ := newSession(t, nil)
	res, err := s.Step(ctx, "", act(call("c1", "put", `{"key":"a","value":"1"}`), gym.TextPart("done, goodbye")))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Terminated || res.Reward != 1 {
		t.Errorf("terminated=%v reward=%v, want true and 1 from the verifier", res.Terminated, res.Reward)
	}
	if got := res.Observation.Parts[1].Text; got != "user: noted done, goodbye" {
		t.Errorf("user reply = %q", got)
	}

	_, s, _ = newSession(t, nil)
	res, err = s.Step(ctx, "", act(call("c1", "put", `{"key":"a","value":"2"}`), call("c2", "finish", "{}")))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Terminated || res.Reward != 0 {
		t.Errorf("wrong value: terminated=%v reward=%v, want true and 0", res.Terminated, res.Reward)
	}
}

func TestInfraFailureEndsSession(t *testing.T) {
	_, s, _ := newSession(t, nil)
	res, err := s.Step(context.Background(), "", act(call("c", "crash", "{}")))
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Failure; f == nil || f.Fault != gym.FaultInfra || !res.Truncated {
		t.Fatalf("failure = %+v, truncated = %v; want an infra failure that ends the episode", f, res.Truncated)
	}
}

func TestNoOracle(t *testing.T) {
	if _, err := gym.OracleFor(task); !errors.Is(err, gym.ErrNoOracle) {
		t.Errorf("OracleFor = %v, want ErrNoOracle", err)
	}
}

func TestConformance(t *testing.T) {
	gymtest.CheckKind(t, kindName,
		gymtest.Case{Task: task, Seed: 3, Actions: []gym.Action{
			act(call("c1", "put", `{"key":"a","value":"1"}`)),
			act(call("c2", "get", `{"key":"a"}`), gym.TextPart("hello")),
			act(call("c3", "bogus", `{`)),
			act(gym.TextPart("goodbye")),
		}})
}

func TestToolsetRejectsBadDeclarations(t *testing.T) {
	for name, tools := range map[string][]toolcall.Tool{
		"no name":    {{Parameters: json.RawMessage(`{"type":"object"}`)}},
		"duplicate":  {{Name: "a"}, {Name: "a"}},
		"bad schema": {{Name: "a", Parameters: json.RawMessage(`{"type":`)}},
	} {
		if _, err := toolcall.NewToolset(tools); err == nil {
			t.Errorf("%s: NewToolset accepted it", name)
		}
	}
}
