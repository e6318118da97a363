package agent

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

// A demonstration of an episode gives the prompts the Agent sent while
// playing it, turn by turn, and the replies it took its actions from: in
// plain text (guess-v1) and with tool calls (the calc domain).
func TestDemonstrationMatchesPlay(t *testing.T) {
	c := gymServer(t)
	for _, tc := range []struct {
		task   string
		policy func(llmRequest) llmReply
	}{
		{"guess-1-100", bisectPolicy},
		{"calc-2-3", calcPolicy("native")},
	} {
		llm := newScripted(t, false, tc.policy)
		cfg := Config{BaseURL: llm.URL(), Model: "scripted", Logger: quietLog()}
		ep := play(t, c, mustAgent(t, cfg), tc.task, 4)
		turns, err := Demonstration(cfg, ep.Reset, ep.Steps)
		if err != nil {
			t.Fatal(err)
		}
		sent := llm.raw
		if len(turns) != len(sent) || len(turns) < 2 {
			t.Fatalf("%s: %d demonstration turns for %d requests", tc.task, len(turns), len(sent))
		}
		for i, turn := range turns {
			want := canonical(t, sent[i]["messages"])
			var got any
			json.Unmarshal(turn.Messages, &got)
			g := canonical(t, got)
			if !bytes.Equal(g, want) {
				t.Errorf("%s turn %d: the demonstration's prompt\n%s\nthe agent sent\n%s", tc.task, i+1, g, want)
			}
			if ep.Steps[i].Response != turn.Response && tc.task == "guess-1-100" {
				t.Errorf("%s turn %d: response %q, the agent's %q", tc.task, i+1, turn.Response, ep.Steps[i].Response)
			}
		}
	}
}

// canonical is messages as JSON with each tool call's arguments compacted
// (a demonstration writes them as compact JSON, a model as it likes).
func canonical(t *testing.T, messages any) []byte {
	t.Helper()
	ms, _ := messages.([]any)
	for _, m := range ms {
		calls, _ := m.(map[string]any)["tool_calls"].([]any)
		for _, c := range calls {
			fn := c.(map[string]any)["function"].(map[string]any)
			var b bytes.Buffer
			if s, ok := fn["arguments"].(string); ok && json.Compact(&b, []byte(s)) == nil {
				fn["arguments"] = b.String()
			}
		}
	}
	out, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// An oracle names its calls its own way ("oracle_1"); the Agent names
// them by turn. The demonstration still shows each recorded result as
// the answer to its call, as the Agent would have seen it in play.
func TestDemonstrationShowsResultsOfRenamedCalls(t *testing.T) {
	call := &gym.ToolCall{ID: "oracle_1", Type: "function",
		Function: gym.FunctionCall{Name: "code_interpreter", Arguments: `{"code":"print(51 + 29)"}`}}
	reset := gym.ResetResult{
		Observation: gym.Observation{Parts: []gym.Part{{Type: gym.PartText, Text: "What is 51 + 29?"}}},
		Info: gym.Info{"tools": []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "code_interpreter", "parameters": map[string]any{"type": "object"}}}}},
	}
	steps := []rundir.Step{
		{Step: 1, Action: gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: call}}},
			Observation: gym.Observation{Parts: []gym.Part{{Type: gym.PartToolResult,
				ToolResult: &gym.ToolResult{CallID: "oracle_1", Name: "code_interpreter", Content: "80\n"}}}}},
		{Step: 2, Action: gym.TextAction(`The answer is \boxed{80}`), Terminated: true},
	}
	turns, err := Demonstration(Config{}, reset, steps)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 {
		t.Fatalf("%d turns, want 2", len(turns))
	}
	var msgs []struct {
		Role       string `json:"role"`
		Content    any    `json:"content"`
		ToolCallID string `json:"tool_call_id"`
	}
	if err := json.Unmarshal(turns[1].Messages, &msgs); err != nil {
		t.Fatal(err)
	}
	last := msgs[len(msgs)-1]
	if last.Role != "tool" || last.Content != "80\n" || last.ToolCallID == "oracle_1" {
		t.Errorf("the second turn's prompt ends with %+v, want the tool's result 80 answering the agent's own call id", last)
	}
	if steps[0].Observation.Parts[0].ToolResult.CallID != "oracle_1" {
		t.Error("the recorded step was changed")
	}
}
