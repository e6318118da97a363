package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/envs/gui/browser"
	_ "github.com/nextstate-rl/nextstate/envs/gui/web"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

func TestAgentNativeToolCalls(t *testing.T) {
	c := gymServer(t)
	llm := newScripted(t, false, calcPolicy("native"))
	a := mustAgent(t, Config{BaseURL: llm.URL()})
	ep := play(t, c, a, "calc-2-3", 1)
	if ep.Reward != 1 || !ep.Terminated || ep.Failure != nil || len(ep.Steps) != 2 {
		t.Fatalf("episode: reward %v terminated %v failure %+v, %d steps; want 1, true, none, 2", ep.Reward, ep.Terminated, ep.Failure, len(ep.Steps))
	}
	reqs := llm.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	if len(reqs[0].Tools) != 4 || !strings.Contains(string(reqs[0].Tools[0]), `"add"`) {
		t.Errorf("tools sent: %s; want the env's 4 tools from the reset info", reqs[0].Tools)
	}
	// The second prompt answers the first call with a tool message of the
	// same id.
	ms := reqs[1].msgs()
	asst, tool := ms[len(ms)-2], ms[len(ms)-1]
	if asst.Role != "assistant" || len(asst.ToolCalls) != 1 || tool.Role != "tool" || tool.ToolCallID != asst.ToolCalls[0].ID || tool.text() != "5" {
		t.Errorf("second prompt ends %+v, %+v; want the add call and its tool result 5", asst, tool)
	}
	if ms[0].Role != "system" || ms[1].Role != "user" || !strings.Contains(ms[1].text(), "Add 2 and 3") {
		t.Errorf("prompt starts %+v %+v; want the system prompt and the task", ms[0], ms[1])
	}
	// No token data came back: the turns carry text only.
	for _, s := range ep.Steps {
		if s.Turn == nil || len(s.Turn.Messages) == 0 || s.Turn.Response == "" || len(s.Turn.Tools) == 0 {
			t.Errorf("step %d turn %+v: want messages, tools and the response", s.Step, s.Turn)
		}
		if s.Turn.PromptIDs != nil || s.Turn.ResponseIDs != nil || s.Turn.LogProbs != nil {
			t.Errorf("step %d turn has token data the endpoint never sent", s.Step)
		}
	}
	if !strings.Contains(ep.Steps[0].Turn.Response, "<tool_call>") || !strings.Contains(ep.Steps[0].Turn.Response, `"add"`) {
		t.Errorf("response text %q: want the native call written out", ep.Steps[0].Turn.Response)
	}
	if ep.PromptTokens == 0 || ep.CompletionTokens == 0 || ep.Turns != 2 {
		t.Errorf("usage %d/%d over %d turns; want the endpoint's counts over 2", ep.PromptTokens, ep.CompletionTokens, ep.Turns)
	}
}

func TestAgentQwenStyleToolCalls(t *testing.T) {
	c := gymServer(t)
	llm := newScripted(t, false, calcPolicy("qwen"))
	a := mustAgent(t, Config{BaseURL: llm.URL()})
	ep := play(t, c, a, "calc-10-4", 3)
	if ep.Reward != 1 || len(ep.Steps) != 2 {
		t.Fatalf("reward %v over %d steps, want 1 over 2 (failure %+v)", ep.Reward, len(ep.Steps), ep.Failure)
	}
	if p := ep.Steps[0].Action.Parts; len(p) != 1 || p[0].ToolCall == nil || p[0].ToolCall.Function.Name != "add" {
		t.Errorf("first action %+v: want one add call parsed from the text (the prose left out)", p)
	}
	// The history gives the call back as a structured tool call, its
	// prose as content, and the result as a tool message.
	ms := llm.requests()[1].msgs()
	asst := ms[len(ms)-2]
	if len(asst.ToolCalls) != 1 || asst.text() != "I will call add." || ms[len(ms)-1].ToolCallID != asst.ToolCalls[0].ID {
		t.Errorf("history %+v: want the parsed call with its prose and the tool result", ms[len(ms)-2:])
	}
}

func TestAgentMalformedCallGoesToTheEnv(t *testing.T) {
	for _, style := range []string{"native", "qwen"} {
		t.Run(style, func(t *testing.T) {
			c := gymServer(t)
			var mu sync.Mutex
			n := 0
			good := calcPolicy(style)
			llm := newScripted(t, false, func(r llmRequest) llmReply {
				mu.Lock()
				n++
				first := n == 1
				mu.Unlock()
				if !first {
					return good(r)
				}
				if style == "qwen" {
					return llmReply{Content: `<tool_call>{"name": "add", "arguments": {"a": 7, "b": }}</tool_call>`}
				}
				return llmReply{ToolCalls: []map[string]any{nativeCall("c1", "add", `{"a": 7, "b": `)}}
			})
			a := mustAgent(t, Config{BaseURL: llm.URL()})
			ep := play(t, c, a, "calc-7-7", 1)
			first := ep.Steps[0]
			if first.Step != 1 || len(first.Observation.Parts) != 1 || first.Observation.Parts[0].ToolResult == nil || !first.Observation.Parts[0].ToolResult.IsError {
				t.Fatalf("first step %+v: want the env to answer the malformed call with an error result", first)
			}
			envErr := first.Observation.Parts[0].ToolResult.Content
			ms := llm.requests()[1].msgs()
			if last := ms[len(ms)-1]; !strings.Contains(last.text(), envErr) {
				t.Errorf("second prompt ends %+v; want the env's error %q", last, envErr)
			}
			if ms[len(ms)-2].Role != "assistant" || len(ms[len(ms)-2].ToolCalls) != 0 || !strings.Contains(ms[len(ms)-2].text(), `"add"`) {
				t.Errorf("the malformed reply goes back as text, got %+v", ms[len(ms)-2])
			}
			if ep.Reward != 1 {
				t.Errorf("reward %v after correcting the call, want 1", ep.Reward)
			}
		})
	}
}

// TestAgentPlainTextKind plays guess-v1 (text actions, no tools) with a
// vLLM-shaped endpoint, and checks that the gym server recorded each
// step's turn with its token ids and log-probs.
func TestAgentPlainTextKind(t *testing.T) {
	c := gymServer(t)
	llm := newScripted(t, true, bisectPolicy)
	a := mustAgent(t, Config{BaseURL: llm.URL()})
	ep := play(t, c, a, "guess-1-100", 42)
	if ep.Reward != 1 || !ep.Terminated {
		t.Fatalf("bisection over guess-1-100: reward %v terminated %v failure %+v, want 1", ep.Reward, ep.Terminated, ep.Failure)
	}
	if len(llm.requests()[0].Tools) != 0 {
		t.Errorf("tools offered to a plain-text kind: %s", llm.requests()[0].Tools)
	}
	res, err := c.Attach(ep.Reset.Session).Resume(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, ev := range res.Events {
		if ev.Type != gym.EventStep {
			continue
		}
		steps++
		tr := ev.Turn
		if tr == nil || len(tr.Messages) == 0 || tr.Response != ev.Action.Text() || len(tr.PromptIDs) == 0 ||
			len(tr.ResponseIDs) == 0 || len(tr.LogProbs) != len(tr.ResponseIDs) || tr.Model != "scripted" {
			t.Errorf("step %d recorded turn %+v; want the prompt, the response and vLLM's token data", ev.Step, tr)
		}
	}
	if steps != len(ep.Steps) || steps == 0 {
		t.Errorf("%d step events for %d steps", steps, len(ep.Steps))
	}
}

// fakeSession records what a Play sends; refuseTurn answers StepTurn as a
// server that does not take "turn" does.
type fakeSession struct {
	mu         sync.Mutex
	refuseTurn bool
	maxTurn    int // refuse turns whose JSON is longer, as the client's frame cap does
	turns      []*gym.Turn
	plain      int
	n          int
	end        int // terminate at this step
}

func (f *fakeSession) Step(_ context.Context, a gym.Action) (gym.StepResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.plain++
	return f.next(a), nil
}

func (f *fakeSession) StepTurn(_ context.Context, a gym.Action, t *gym.Turn) (gym.StepResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuseTurn {
		return gym.StepResult{}, (&wire.Error{Code: wire.CodeInvalidParams,
			Message: `invalid params for session.step: unknown field "turn" (accepted: session, step_id, action)`}).Native()
	}
	if b, _ := json.Marshal(t); f.maxTurn > 0 && len(b) > f.maxTurn {
		return gym.StepResult{}, fmt.Errorf("client: session.step: request of %d bytes is over the %d-byte frame limit: %w", len(b), f.maxTurn, gym.ErrBadRequest)
	}
	f.turns = append(f.turns, t)
	return f.next(a), nil
}

func (f *fakeSession) next(a gym.Action) gym.StepResult {
	f.n++
	r := gym.StepResult{Step: f.n, Transition: gym.Transition{Observation: gym.TextObservation("echo " + a.Text())}}
	if f.n >= f.end {
		r.Terminated, r.Reward = true, 1
	}
	return r
}

func echoReset() gym.ResetResult {
	return gym.ResetResult{Task: "echo-smoke", Instruction: "Say anything.", Observation: gym.TextObservation("Say anything.")}
}

func TestAgentRecordsTokenIDsAndLogProbs(t *testing.T) {
	llm := newScripted(t, true, func(llmRequest) llmReply { return llmReply{Content: "hello there, world"} })
	a := mustAgent(t, Config{BaseURL: llm.URL()})
	fs := &fakeSession{end: 2}
	ep, err := a.Play(context.Background(), fs, Start{Reset: echoReset(), Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.turns) != 2 || fs.plain != 0 {
		t.Fatalf("%d steps with turns, %d without; want 2 with", len(fs.turns), fs.plain)
	}
	for i, tr := range fs.turns {
		if len(tr.PromptIDs) == 0 || len(tr.ResponseIDs) != 5 || len(tr.LogProbs) != 5 || tr.ResponseIDs[0] != 1000 || tr.LogProbs[0] != -0.5 {
			t.Errorf("turn %d: prompt ids %d, response ids %v, logprobs %v; want vLLM's", i, len(tr.PromptIDs), tr.ResponseIDs, tr.LogProbs)
		}
		if tr.Model != "scripted" || tr.Response != "hello there, world" {
			t.Errorf("turn %d: model %q response %q", i, tr.Model, tr.Response)
		}
		if tr.WeightVersion == nil || *tr.WeightVersion != i+7 {
			t.Errorf("turn %d: weight version %v; want the X-Weight-Version header's %d", i, tr.WeightVersion, i+7)
		}
	}
	if ep.Steps[1].Turn != fs.turns[1] {
		t.Error("the episode's steps keep the turns sent")
	}
	raw := llm.raw[0]
	for _, f := range []string{"logprobs", "return_tokens_as_token_ids", "return_token_ids", "return_logprob"} {
		if raw[f] != true {
			t.Errorf("request field %s = %v, want true", f, raw[f])
		}
	}
	if raw["seed"] != float64(6) {
		t.Errorf("seed %v, want the episode seed plus the turn (6)", raw["seed"])
	}
}

func TestAgentSlimsTurnsOverTheFrameLimit(t *testing.T) {
	llm := newScripted(t, false, func(llmRequest) llmReply { return llmReply{Content: "ok"} })
	a := mustAgent(t, Config{BaseURL: llm.URL()})
	fs := &fakeSession{end: 1, maxTurn: 200}
	ep, err := a.Play(context.Background(), fs, Start{Reset: echoReset()})
	if err != nil || ep.Reward != 1 || len(fs.turns) != 1 {
		t.Fatalf("episode %+v, %v, %d turns", ep, err, len(fs.turns))
	}
	if tr := fs.turns[0]; tr.Messages != nil || tr.Response != "ok" || tr.Model != "scripted" {
		t.Errorf("turn sent %+v; want it without its messages, with the response", tr)
	}
	fs = &fakeSession{end: 1, maxTurn: 10}
	if ep, err := a.Play(context.Background(), fs, Start{Reset: echoReset()}); err != nil || ep.Reward != 1 || fs.plain != 1 {
		t.Errorf("a turn too large even slim: %+v, %v, %d plain steps; want the step sent without it", ep, err, fs.plain)
	}
}

func TestAgentFallsBackWithoutTurnAndTokenFields(t *testing.T) {
	var mu sync.Mutex
	refusals := 0
	llm := newScripted(t, false, func(r llmRequest) llmReply {
		if r.TokenIDs {
			mu.Lock()
			refusals++
			mu.Unlock()
			return llmReply{Status: 400, Body: `{"error":{"message":"Unrecognized request argument supplied: return_token_ids","type":"invalid_request_error"}}`}
		}
		return llmReply{Content: "hi"}
	})
	var logged strings.Builder
	a := mustAgent(t, Config{BaseURL: llm.URL(), Logger: newTestLogger(&logged)})
	for range 2 {
		fs := &fakeSession{end: 2, refuseTurn: true}
		ep, err := a.Play(context.Background(), fs, Start{Reset: echoReset()})
		if err != nil || ep.Reward != 1 || fs.plain != 2 {
			t.Fatalf("episode %+v, %v; %d plain steps, want 2 after the server refused the turn", ep, err, fs.plain)
		}
		for _, s := range ep.Steps {
			if s.Turn.ResponseIDs != nil || s.Turn.Response != "hi" {
				t.Errorf("turn %+v: want text only", s.Turn)
			}
		}
	}
	if refusals != 1 {
		t.Errorf("the endpoint refused the token fields %d times; want once, then they are not sent", refusals)
	}
	if n := strings.Count(logged.String(), "does not record a step's turn"); n != 1 {
		t.Errorf("the turn fallback was logged %d times, want once:\n%s", n, logged.String())
	}
}

func TestAgentToolChoiceFallback(t *testing.T) {
	c := gymServer(t)
	qwen := calcPolicy("qwen")
	llm := newScripted(t, false, func(r llmRequest) llmReply {
		if len(r.Tools) > 0 && r.ToolChoice != "none" {
			return llmReply{Status: 400, Body: `{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","code":400}`}
		}
		return qwen(r)
	})
	a := mustAgent(t, Config{BaseURL: llm.URL()})
	ep := play(t, c, a, "calc-2-3", 1)
	if ep.Reward != 1 {
		t.Fatalf("reward %v (failure %+v), want 1 with tool calls read from the text", ep.Reward, ep.Failure)
	}
	reqs := llm.requests()
	if len(reqs) != 3 || reqs[2].ToolChoice != "none" || len(reqs[2].Tools) == 0 {
		t.Errorf("%d requests; want one refused, then tool_choice none with the tools", len(reqs))
	}
}

func TestAgentRejectedActionIsShownToTheModel(t *testing.T) {
	c := gymServer(t)
	llm := newScripted(t, false, func(r llmRequest) llmReply {
		ms := r.msgs()
		if strings.HasPrefix(ms[len(ms)-1].text(), "Your action was rejected") {
			return bisectPolicy(llmRequest{Messages: r.Messages[:2]})
		}
		// Two parts (a call and text) do not fit guess-v1's schema.
		return llmReply{ToolCalls: []map[string]any{nativeCall("x", "guess", `{"n": 50}`)}}
	})
	a := mustAgent(t, Config{BaseURL: llm.URL(), MaxTurns: 2})
	ep := play(t, c, a, "guess-1-100", 7)
	if len(ep.Steps) != 2 || ep.Steps[0].Step != 0 || ep.Steps[0].Failure == nil || ep.Steps[0].Failure.Reason != "bad_action" || ep.Steps[1].Step != 1 {
		t.Fatalf("steps %+v: want a rejected action, then a step", ep.Steps)
	}
	if ep.Failure != nil || !ep.Terminated && (ep.EndReason != "max_turns" || !ep.Truncated) {
		t.Errorf("end %q failure %+v; want the guess answered, then max_turns", ep.EndReason, ep.Failure)
	}

	// Rejected every time: an agent error after MaxRejected.
	llm2 := newScripted(t, false, func(llmRequest) llmReply {
		return llmReply{ToolCalls: []map[string]any{nativeCall("x", "guess", `{}`)}}
	})
	a2 := mustAgent(t, Config{BaseURL: llm2.URL(), MaxRejected: 2})
	ep = play(t, c, a2, "guess-1-100", 7)
	if ep.Failure == nil || ep.Failure.Fault != gym.FaultAgent || ep.Failure.Reason != "bad_action" || len(llm2.requests()) != 2 {
		t.Errorf("failure %+v after %d calls; want an agent bad_action after 2", ep.Failure, len(llm2.requests()))
	}
}

func TestAgentModelFailures(t *testing.T) {
	cases := []struct {
		status int
		body   string
		fault  gym.Fault
		reason string
		fatal  bool
	}{
		{400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"}`, gym.FaultAgent, "context_length", false},
		{500, `{"error":{"message":"engine died"}}`, gym.FaultInfra, "model_unavailable", false},
		{422, `{"error":{"message":"bad"}}`, gym.FaultInfra, "model_rejected", false},
		{401, `{"error":{"message":"bad key"}}`, "", "", true},
	}
	for _, tc := range cases {
		llm := newScripted(t, false, func(llmRequest) llmReply { return llmReply{Status: tc.status, Body: tc.body} })
		a := mustAgent(t, Config{BaseURL: llm.URL(), TokenInfo: "off"})
		ep, err := a.Play(context.Background(), &fakeSession{end: 1}, Start{Reset: echoReset()})
		if tc.fatal {
			if !errors.Is(err, ErrFatal) {
				t.Errorf("status %d: err %v, want ErrFatal", tc.status, err)
			}
			continue
		}
		if err != nil || ep.Failure == nil || ep.Failure.Fault != tc.fault || ep.Failure.Reason != tc.reason {
			t.Errorf("status %d: failure %+v, err %v; want %s %s", tc.status, ep.Failure, err, tc.fault, tc.reason)
		}
	}
}

func TestAgentToolsFor(t *testing.T) {
	guiReset := gym.ResetResult{Observation: gym.TextObservation("a page"), Info: gym.Info{gym.InfoTools: []map[string]any{gui.Tool()}}}
	tools, err := ToolsFor(guiReset)
	if err != nil || !strings.Contains(string(tools), `"computer"`) {
		t.Errorf("GUI kind with the computer tool in its info: %s, %v; want the computer tool", tools, err)
	}
	fileReset := gym.ResetResult{Observation: gym.Observation{Parts: []gym.Part{gym.TextPart("hi"),
		{Type: gym.PartFile, File: &gym.File{Path: "tools.json", Blob: gym.Blob{MIME: "application/json",
			Data: []byte(`[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`)}}}}}}
	tools, err = ToolsFor(fileReset)
	if err != nil || !strings.Contains(string(tools), `"f"`) {
		t.Errorf("tools.json: %s, %v", tools, err)
	}
	tools, err = ToolsFor(gym.ResetResult{})
	if err != nil || tools != nil {
		t.Errorf("plain text kind: %s, %v; want no tools", tools, err)
	}
	_, err = ToolsFor(gym.ResetResult{Info: gym.Info{gym.InfoTools: []any{map[string]any{"type": "function"}}}})
	if err == nil || !strings.Contains(err.Error(), "no function name") {
		t.Errorf("a tool without a name: %v, want an error saying so", err)
	}
}

func TestAgentObserveGUIStep(t *testing.T) {
	png := []byte("\x89PNG fake")
	obs := gym.Observation{Parts: []gym.Part{{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: png, Width: 160, Height: 210}},
		gym.TextPart("Click the button.")}}
	calls := []gym.ToolCall{{ID: "c1", Type: "function", Function: gym.FunctionCall{Name: "computer", Arguments: `{"action":"click","x":1,"y":2}`}}}
	ms := observe(obs, calls, false)
	if len(ms) != 2 || ms[0].Role != "tool" || ms[0].ToolCallID != "c1" || ms[0].Text != "Click the button." || ms[1].Role != "user" || ms[1].images != 1 {
		t.Fatalf("messages %+v: want the call answered by a tool message with the text, and the screenshot in a user message", ms)
	}
	j := string(encodeMessages(ms, false))
	if !strings.Contains(j, `"image_url":{"url":"data:image/png;base64,`) {
		t.Errorf("image not sent as a data URL: %s", j)
	}
	if j := string(encodeMessages(ms, true)); !strings.Contains(j, `"url":"blobs/`) || strings.Contains(j, "base64") {
		t.Errorf("trajectory form keeps the data: %s", j)
	}
}

func TestAgentDecodeReplyShapes(t *testing.T) {
	cases := map[string]struct {
		body     string
		ids, pid []int
		lps      []float64
	}{
		"vllm token_ids": {`{"choices":[{"message":{"content":"ab"},"token_ids":[5,6],"logprobs":{"content":[{"token":"a","logprob":-1},{"token":"b","logprob":-2}]}}],"prompt_token_ids":[1,2,3]}`,
			[]int{5, 6}, []int{1, 2, 3}, []float64{-1, -2}},
		"vllm token_id strings": {`{"choices":[{"message":{"content":"ab"},"logprobs":{"content":[{"token":"token_id:7","logprob":-1},{"token":"token_id:8","logprob":-2}]}}]}`,
			[]int{7, 8}, nil, []float64{-1, -2}},
		"sglang meta_info": {`{"choices":[{"message":{"content":"ab"},"meta_info":{"output_token_logprobs":[[-0.5,9,"a"],[-0.25,10,null]],"input_token_logprobs":[[null,1,null],[-3,2,null]]}}]}`,
			[]int{9, 10}, []int{1, 2}, []float64{-0.5, -0.25}},
		"openai text tokens": {`{"choices":[{"message":{"content":"ab"},"logprobs":{"content":[{"token":"a","logprob":-1}]}}]}`,
			nil, nil, []float64{-1}},
		"mismatched logprobs dropped": {`{"choices":[{"message":{"content":"ab"},"token_ids":[5,6],"logprobs":{"content":[{"token":"a","logprob":-1}]}}]}`,
			[]int{5, 6}, nil, nil},
	}
	for name, tc := range cases {
		r, err := decodeReply([]byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !equal(r.ResponseIDs, tc.ids) || !equal(r.PromptIDs, tc.pid) || !equal(r.LogProbs, tc.lps) {
			t.Errorf("%s: ids %v prompt %v logprobs %v; want %v %v %v", name, r.ResponseIDs, r.PromptIDs, r.LogProbs, tc.ids, tc.pid, tc.lps)
		}
	}
	if _, err := decodeReply([]byte(`{"choices":[]}`)); err == nil || !strings.Contains(err.Error(), "no choices") {
		t.Errorf("no choices: %v", err)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAgentDecideParsesCalls(t *testing.T) {
	d := decide(reply{Content: "<think>plan <tool_call>{\"name\":\"no\"}</tool_call></think>ok <tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"x\\\":1}\"}</tool_call><tool_call>{\"name\":\"b\",\"parameters\":{\"y\":2}}"}, 4)
	if len(d.calls) != 2 || d.calls[0].Function.Name != "a" || d.calls[0].Function.Arguments != `{"x":1}` ||
		d.calls[1].Function.Name != "b" || d.calls[1].Function.Arguments != `{"y":2}` || d.calls[1].ID != "call_4_1" || d.plain {
		t.Errorf("calls %+v (plain %v): want a and b (string arguments unquoted, an unclosed last block read, reasoning skipped)", d.calls, d.plain)
	}
	d = decide(reply{Content: "<tool_call>not json at all</tool_call>"}, 1)
	if len(d.calls) != 1 || d.calls[0].Function.Name != "" || d.calls[0].Function.Arguments != "not json at all" || !d.plain {
		t.Errorf("garbage call %+v: want sent as is (the gym then rejects it)", d.calls)
	}
	d = decide(reply{Content: "  just text  "}, 1)
	if d.action.Text() != "just text" || len(d.calls) != 0 {
		t.Errorf("text reply: %+v", d.action)
	}
}

func TestAgentConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Model: "m"},
		{BaseURL: "localhost:8000", Model: "m"},
		{BaseURL: "http://x/v1"},
		{BaseURL: "http://x/v1", Model: "m", KeepHead: 1.5},
		{BaseURL: "http://x/v1", Model: "m", TokenInfo: "sometimes"},
		{BaseURL: "http://x/v1", Model: "m", Extra: map[string]any{"messages": 1}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
	a, err := New(Config{BaseURL: "http://x/v1", Model: "m", Extra: map[string]any{"top_k": 20}})
	if err != nil || string(a.extra) != `"top_k":20` {
		t.Errorf("extra fields: %q, %v", a.extra, err)
	}
}

func TestAgentSendsExtraFields(t *testing.T) {
	llm := newScripted(t, false, func(llmRequest) llmReply { return llmReply{Content: "x"} })
	a := mustAgent(t, Config{BaseURL: llm.URL(), Extra: map[string]any{"top_k": 20}, TokenInfo: "off"})
	if _, err := a.Play(context.Background(), &fakeSession{end: 1}, Start{Reset: echoReset()}); err != nil {
		t.Fatal(err)
	}
	r := llm.requests()[0]
	if r.TopK == nil || *r.TopK != 20 || r.Logprobs {
		t.Errorf("request %+v: want top_k 20 and no token fields", r)
	}
	var raw map[string]json.RawMessage
	b, _ := json.Marshal(llm.raw[0])
	json.Unmarshal(b, &raw)
	if _, ok := raw["return_token_ids"]; ok {
		t.Error("TokenInfo off still asks for token ids")
	}
}

// TestAgentGUIWebKind plays web-v1 in headless Chromium: the computer tool
// comes from the reset info, screenshots go to the model as image_url
// data URLs, and a call the env answers with a new screen gets a tool
// message before the screenshot.
func TestAgentGUIWebKind(t *testing.T) {
	if err := browser.Available(""); err != nil {
		t.Skipf("no browser: %v", err)
	}
	c := gymServer(t)
	llm := newScripted(t, false, func(r llmRequest) llmReply {
		if len(r.msgs()) <= 2 {
			return llmReply{ToolCalls: []map[string]any{nativeCall("w1", "computer", `{"action":"wait","ms":10}`)}}
		}
		return llmReply{ToolCalls: []map[string]any{nativeCall("d1", "computer", `{"action":"done"}`)}}
	})
	a := mustAgent(t, Config{BaseURL: llm.URL()})
	ep := play(t, c, a, "web-click-button", 3)
	if !ep.Terminated || ep.Failure != nil || len(ep.Steps) != 2 {
		t.Fatalf("episode: terminated %v failure %+v, %d steps; want the done action to end it after 2", ep.Terminated, ep.Failure, len(ep.Steps))
	}
	reqs := llm.requests()
	if len(reqs[0].Tools) != 1 || !strings.Contains(string(reqs[0].Tools[0]), `"computer"`) {
		t.Errorf("tools %s: want the computer tool", reqs[0].Tools)
	}
	if !strings.Contains(string(reqs[0].Messages[1]), `"url":"data:image/png;base64,`) {
		t.Errorf("first user message has no screenshot: %s", clip(string(reqs[0].Messages[1]), 300))
	}
	ms := reqs[1].msgs()
	n := len(ms)
	if ms[n-3].Role != "assistant" || ms[n-2].Role != "tool" || ms[n-2].ToolCallID != "w1" || ms[n-1].Role != "user" ||
		!strings.Contains(string(reqs[1].Messages[n-1]), "image_url") {
		t.Errorf("second prompt ends %+v: want the wait call, its tool message and the new screenshot", ms[n-3:])
	}
}
