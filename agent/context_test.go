package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// history builds a system prompt, a task and n turns: an assistant call
// and its tool result, each about size bytes.
func history(n, size int) []message {
	h := []message{newMessage("system", "sys"), newMessage("user", "the task")}
	for i := range n {
		call := gym.ToolCall{ID: fmt.Sprintf("c%d", i), Type: "function", Function: gym.FunctionCall{Name: "f", Arguments: `{"i":` + fmt.Sprint(i) + `}`}}
		a := message{Role: "assistant", Text: fmt.Sprintf("turn %d ", i) + strings.Repeat("a", size), ToolCalls: []gym.ToolCall{call}}
		a.measure()
		r := message{Role: "tool", ToolCallID: call.ID, Text: fmt.Sprintf("result %d ", i) + strings.Repeat("r", size)}
		r.measure()
		h = append(h, a, r)
	}
	return h
}

func estimate(ms []message) float64 {
	var s float64
	for i := range ms {
		s += raw(&ms[i])
	}
	return s
}

func TestAgentFitKeepsHeadAndTail(t *testing.T) {
	h := history(40, 300) // ~40*2*(100+) tokens
	budget := 2000
	w := fit(h, 0, budget, 0.3, 3, 1)
	if !w.cut || w.dropped == 0 {
		t.Fatalf("a history of ~%v tokens was not cut to %d", estimate(h), budget)
	}
	if got := estimate(w.msgs); got > float64(budget) {
		t.Errorf("kept %v tokens, over the budget %d", got, budget)
	}
	// The head: system, task, then the first turns up to ~30%.
	if w.msgs[0].Text != "sys" || !strings.HasPrefix(w.msgs[1].Text, "the task") {
		t.Errorf("head %q %q: want the system prompt and the task", w.msgs[0].Text, w.msgs[1].Text)
	}
	if !strings.Contains(w.msgs[1].Text, "earlier turns were cut") && !strings.Contains(joinTexts(w.msgs), "earlier turns were cut") {
		t.Error("no marker where turns were cut")
	}
	// The tail ends with the last turn, whole.
	n := len(w.msgs)
	if !strings.HasPrefix(w.msgs[n-1].Text, "result 39") || !strings.HasPrefix(w.msgs[n-2].Text, "turn 39") {
		t.Errorf("tail ends %q / %q: want the last turn", clip(w.msgs[n-2].Text, 20), clip(w.msgs[n-1].Text, 20))
	}
	// Every tool message answers the call just before it: no call was
	// separated from its result.
	headTokens, inHead := 0.0, true
	for i, m := range w.msgs {
		if m.Role == "tool" && (i == 0 || w.msgs[i-1].Role != "assistant" || w.msgs[i-1].ToolCalls[0].ID != m.ToolCallID) {
			t.Errorf("message %d: tool result %s without its call", i, m.ToolCallID)
		}
		if m.Role == "user" && i > 1 {
			inHead = false
		}
		if inHead {
			headTokens += raw(&w.msgs[i])
		}
	}
	if headTokens > 0.3*float64(budget)+1 {
		t.Errorf("head keeps %v tokens, over 30%% of %d", headTokens, budget)
	}
	// Under budget: nothing changes.
	if w := fit(history(2, 10), 0, budget, 0.3, 3, 1); w.cut || len(w.msgs) != 6 {
		t.Errorf("a short history was cut: %+v", w)
	}
	// The calibrated scale counts: twice the tokens per estimate cuts more.
	if w2 := fit(h, 0, budget, 0.3, 3, 2); len(w2.msgs) >= len(w.msgs) {
		t.Errorf("scale 2 kept %d messages, scale 1 %d", len(w2.msgs), len(w.msgs))
	}
}

func joinTexts(ms []message) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Text)
	}
	return strings.Join(s, "\n")
}

func TestAgentFitClipsAnOversizedLastTurn(t *testing.T) {
	h := history(1, 20000)
	w := fit(h, 0, 1000, 0.3, 3, 1)
	if !w.cut || estimate(w.msgs) > 1000 {
		t.Fatalf("kept %v tokens of a turn far over the budget", estimate(w.msgs))
	}
	last := w.msgs[len(w.msgs)-1].Text
	if !strings.HasPrefix(last, "result 0 rrr") || !strings.HasSuffix(last, "rrr") || !strings.Contains(last, "bytes cut to fit") {
		t.Errorf("clipped result %q: want its head and tail with a marker", clip(last, 80))
	}
}

func TestAgentLimitImages(t *testing.T) {
	var h []message
	for i := range 5 {
		m := message{Role: "user", Parts: []contentPart{{Type: "text", Text: fmt.Sprint(i)}, {Type: "image_url", URL: "data:x"}}}
		m.measure()
		h = append(h, m)
	}
	out := limitImages(h, 2)
	imgs := 0
	for i, m := range out {
		imgs += m.images
		if i < 3 && m.images != 0 || i >= 3 && m.images != 1 {
			t.Errorf("message %d has %d images; want only the last two kept", i, m.images)
		}
	}
	if h[0].images != 1 {
		t.Error("limitImages changed the history it was given")
	}
	if imgs != 2 {
		t.Errorf("%d images kept, want 2", imgs)
	}
}

// TestAgentCutsToTheBudget plays a long echo episode under a small budget:
// the prompts stay under it, keep the task and the latest turn, and the
// turns say they were cut.
func TestAgentCutsToTheBudget(t *testing.T) {
	long := strings.Repeat("word ", 200)
	llm := newScripted(t, false, func(llmRequest) llmReply { return llmReply{Content: long} })
	a := mustAgent(t, Config{BaseURL: llm.URL(), ContextBudget: 1500, TokenInfo: "off"})
	fs := &fakeSession{end: 12}
	ep, err := a.Play(context.Background(), fs, Start{Reset: echoReset()})
	if err != nil || len(ep.Steps) != 12 {
		t.Fatalf("%d steps, %v", len(ep.Steps), err)
	}
	cut := 0
	for i, r := range llm.requests() {
		ms := r.msgs()
		if ms[0].Role != "system" || !strings.Contains(ms[1].text(), "Say anything.") {
			t.Errorf("request %d lost the head: %+v", i, ms[:2])
		}
		if i > 0 && !strings.HasPrefix(ms[len(ms)-1].text(), "echo word") {
			t.Errorf("request %d does not end with the latest observation", i)
		}
		if fs.turns[i].Truncated {
			cut++
			if !strings.Contains(string(fs.turns[i].Messages), "earlier turns were cut") {
				t.Errorf("turn %d is marked truncated but its prompt has no marker", i)
			}
		}
	}
	if cut == 0 {
		t.Error("no prompt was cut; the budget is far below the history")
	}
}
