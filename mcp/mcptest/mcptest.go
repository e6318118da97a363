// Package mcptest registers two small tool-call kinds for the tests and
// benchmarks of MCP and of the server, as gym/testenvs does for text kinds:
//
//   - mcptest-v1: the toolcall env over a counter domain. Tools add
//     {amount}, get, done and, when the task asks for notes, note {text};
//     the verifier gives 1 when the counter reached the task's target.
//     Tasks: mcptest-3 (bring the counter to 3) and mcptest-notes (to 1,
//     with notes), whose tools differ.
//   - mcpreply-v1: a kind of its own (not toolcall) whose tool results come
//     with a user's reply, and whose "crash" tool fails the env with an
//     infrastructure fault. Task: mcpreply-1.
//
// Import it for its side effect: import _ "github.com/nextstate-rl/nextstate/mcp/mcptest".
package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/gym"
)

func init() {
	gym.Register(toolcall.NewKind(toolcall.Config{
		Name:        "mcptest-v1",
		Description: "A counter to bring to a target (the MCP tests' domain).",
		Tasks: []gym.Task{
			{ID: "mcptest-3", Env: "mcptest-v1", Instruction: "Bring the counter to 3, then call done.", Data: json.RawMessage(`{"target":3}`)},
			{ID: "mcptest-notes", Env: "mcptest-v1", Instruction: "Bring the counter to 1 and take notes.", Data: json.RawMessage(`{"target":1,"notes":true}`)},
		},
	}, counterDomain{}))
	gym.Register(replyKind{})
}

type counterDomain struct{}

type counterTask struct {
	Target int  `json:"target"`
	Notes  bool `json:"notes"`
}

func (counterDomain) Start(_ context.Context, task *gym.Task, _ int64, _ gym.Options) (toolcall.Episode, error) {
	var ct counterTask
	if err := json.Unmarshal(task.Data, &ct); err != nil {
		return nil, gym.AgentFault("bad_task", fmt.Errorf("task data: want {\"target\": N, \"notes\"?: bool}: %w", err))
	}
	return &counterEpisode{task: ct}, nil
}

type counterEpisode struct {
	task  counterTask
	count int
	notes []string
}

func (e *counterEpisode) Tools() []toolcall.Tool {
	ts := []toolcall.Tool{
		{Name: "add", Description: "Add amount to the counter.", Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`)},
		{Name: "get", Description: "Read the counter.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: "done", Description: "End the episode.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	if e.task.Notes {
		ts = append(ts, toolcall.Tool{Name: "note", Description: "Write a note.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)})
	}
	return ts
}

func (e *counterEpisode) Opening() string {
	return fmt.Sprintf("Bring the counter to %d, then call done.", e.task.Target)
}

func (e *counterEpisode) Call(_ context.Context, name string, args json.RawMessage) (toolcall.Result, error) {
	switch name {
	case "add":
		var a struct{ Amount int }
		if err := json.Unmarshal(args, &a); err != nil {
			return toolcall.Result{}, err
		}
		if a.Amount == 0 {
			return toolcall.Result{}, toolcall.Errorf("Error: adding 0 changes nothing")
		}
		e.count += a.Amount
		return toolcall.Result{Content: fmt.Sprintf("count=%d", e.count)}, nil
	case "get":
		return toolcall.Result{Content: fmt.Sprintf("count=%d notes=%d", e.count, len(e.notes))}, nil
	case "note":
		var a struct{ Text string }
		if err := json.Unmarshal(args, &a); err != nil {
			return toolcall.Result{}, err
		}
		e.notes = append(e.notes, a.Text)
		return toolcall.Result{Content: fmt.Sprintf("%d notes", len(e.notes))}, nil
	case "done":
		return toolcall.Result{Content: "done", End: true}, nil
	}
	return toolcall.Result{}, fmt.Errorf("counter: no tool %q", name)
}

func (e *counterEpisode) Say(context.Context, string) (string, bool, error) {
	return "", false, toolcall.Errorf("nobody is listening: use the tools")
}

func (e *counterEpisode) Verify(context.Context) (float64, gym.Info, error) {
	r := 0.0
	if e.count == e.task.Target {
		r = 1
	}
	return r, gym.Info{"count": e.count, "target": e.task.Target}, nil
}

func (e *counterEpisode) Close(context.Context) error { return nil }

type replyKind struct{}

func (replyKind) Spec() gym.Spec {
	return gym.Spec{
		Name:              "mcpreply-v1",
		Description:       "Tool results with a user's reply; the crash tool fails the env (the MCP tests' kind).",
		ActionSchema:      gym.PartsSchema(1, 4, gym.PartToolCall),
		ObservationSchema: gym.PartsSchema(0, 8, gym.PartText, gym.PartToolResult),
		Tasks:             []gym.Task{{ID: "mcpreply-1", Env: "mcpreply-v1", Instruction: "Ask."}},
	}
}

func (replyKind) New(context.Context) (gym.Env, error) { return replyEnv{}, nil }

type replyEnv struct{}

var replyTools = []map[string]any{
	{"type": "function", "function": map[string]any{"name": "ask", "description": "Ask the user.",
		"parameters": map[string]any{"properties": map[string]any{"q": map[string]any{"type": "string"}}}}},
	{"type": "function", "function": map[string]any{"name": "crash", "description": "Break the env."}},
}

func (replyEnv) Reset(context.Context, *gym.Task, int64, gym.Options) (gym.Observation, gym.Info, error) {
	return gym.TextObservation("Ask."), gym.Info{"tools": replyTools}, nil
}

func (replyEnv) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	var tr gym.Transition
	for _, p := range a.Parts {
		if p.ToolCall.Function.Name == "crash" {
			return tr, gym.InfraFault("backend_died", errors.New("the backend died"))
		}
		tr.Observation.Parts = append(tr.Observation.Parts,
			gym.Part{Type: gym.PartToolResult, ToolResult: &gym.ToolResult{CallID: p.ToolCall.ID, Name: "ask", Content: "asked"}},
			gym.TextPart("the user says: fine"))
	}
	return tr, nil
}

func (replyEnv) Close(context.Context) error { return nil }
