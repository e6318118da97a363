package agent

import (
	"bytes"
	"encoding/json"
	"testing"
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
