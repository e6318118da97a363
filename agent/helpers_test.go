package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/envs/gui/browser"
	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/gym"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs"
	"github.com/nextstate-rl/nextstate/server"
)

// calcKind is a small tool-call kind for these tests: add two numbers
// with the add tool, then submit the sum. Its verifier checks the
// submitted answer. The tool "crash" fails as the infrastructure would,
// and "flaky" does so the first time it is called for a task id.
const calcKind = "agenttest-calc-v1"

func init() {
	gym.Register(toolcall.NewKind(toolcall.Config{
		Name: calcKind, Description: "add two numbers, then submit the sum",
		Limits: gym.Limits{MaxSteps: 20, StepTimeout: gym.Duration(10 * time.Second)},
		Tasks:  []gym.Task{calcTask("calc-2-3", 2, 3), calcTask("calc-10-4", 10, -4), calcTask("calc-7-7", 7, 7)},
	}, calcDomain{}))
}

func calcTask(id string, a, b int) gym.Task {
	return gym.Task{ID: id, Env: calcKind, Instruction: fmt.Sprintf("Add %d and %d with the add tool, then submit the sum.", a, b),
		Data: json.RawMessage(fmt.Sprintf(`{"a":%d,"b":%d}`, a, b)), Verifier: json.RawMessage(strconv.Itoa(a + b))}
}

type calcDomain struct{}

var flaky sync.Map // task id -> already failed once

type calcEpisode struct {
	task   *gym.Task
	a, b   int
	answer *float64
}

func (calcDomain) Start(_ context.Context, task *gym.Task, _ int64, _ gym.Options) (toolcall.Episode, error) {
	var d struct{ A, B int }
	if err := json.Unmarshal(task.Data, &d); err != nil {
		return nil, gym.InfraFault("bad_task", err)
	}
	return &calcEpisode{task: task, a: d.A, b: d.B}, nil
}

// Oracle implements gym.OracleKind: add, then submit the verifier's sum.
func (calcDomain) Oracle(task *gym.Task) (gym.Oracle, error) {
	var d struct{ A, B int }
	json.Unmarshal(task.Data, &d)
	if len(task.Verifier) == 0 {
		return nil, gym.ErrNoOracle
	}
	call := func(id, name, args string) gym.Action {
		return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: id, Type: "function",
			Function: gym.FunctionCall{Name: name, Arguments: args}}}}}
	}
	return gym.ScriptOracle([]gym.Action{
		call("o1", "add", fmt.Sprintf(`{"a":%d,"b":%d}`, d.A, d.B)),
		call("o2", "submit", `{"answer":`+string(task.Verifier)+`}`),
	}), nil
}

func (e *calcEpisode) Tools() []toolcall.Tool {
	num := `{"type":"object","required":["a","b"],"properties":{"a":{"type":"number"},"b":{"type":"number"}}}`
	return []toolcall.Tool{
		{Name: "add", Description: "Add a and b.", Parameters: json.RawMessage(num)},
		{Name: "submit", Description: "Submit the answer; ends the episode.", Parameters: json.RawMessage(
			`{"type":"object","required":["answer"],"properties":{"answer":{"type":"number"}}}`)},
		{Name: "crash", Description: "Fail as the infrastructure would.", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "flaky", Description: "Fail once per task, as the infrastructure would.", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
}

func (e *calcEpisode) Opening() string { return e.task.Instruction }

func (e *calcEpisode) Call(_ context.Context, name string, args json.RawMessage) (toolcall.Result, error) {
	switch name {
	case "add":
		var a struct{ A, B float64 }
		json.Unmarshal(args, &a)
		return toolcall.Result{Content: strconv.FormatFloat(a.A+a.B, 'f', -1, 64)}, nil
	case "submit":
		var a struct{ Answer float64 }
		json.Unmarshal(args, &a)
		e.answer = &a.Answer
		return toolcall.Result{Content: "submitted", End: true}, nil
	case "flaky":
		if _, failed := flaky.LoadOrStore(e.task.ID, true); !failed {
			return toolcall.Result{}, gym.InfraFault("flaky", fmt.Errorf("the flaky tool failed for %s", e.task.ID))
		}
		return toolcall.Result{Content: "fine this time"}, nil
	}
	return toolcall.Result{}, gym.InfraFault("crashed", fmt.Errorf("the %s tool crashed", name))
}

func (e *calcEpisode) Say(_ context.Context, msg string) (string, bool, error) {
	return "Please use the tools.", false, nil
}

func (e *calcEpisode) Verify(context.Context) (float64, gym.Info, error) {
	want, _ := strconv.ParseFloat(string(e.task.Verifier), 64)
	if e.answer != nil && *e.answer == want {
		return 1, gym.Info{"answer": *e.answer}, nil
	}
	return 0, gym.Info{"want": want}, nil
}

func (e *calcEpisode) Close(context.Context) error { return nil }

// TestMain checks, after the package's tests, that no browser process or
// profile directory of this test process is left (the web-v1 test starts
// Chromium through the gym server).
func TestMain(m *testing.M) {
	code := m.Run()
	if pids, dirs := browser.Leftovers("", browser.OwnerPrefix()); len(pids)+len(dirs) > 0 {
		fmt.Fprintf(os.Stderr, "leak: the tests left browser processes %v and directories %v\n", pids, dirs)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// gymServer starts a nextstate server in process and returns a client.
func gymServer(t testing.TB) *client.Client {
	t.Helper()
	srv, err := server.New(server.Config{DataDir: t.TempDir(), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, "ws://"+ln.Addr().String(), client.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-served
	})
	return c
}

// llmRequest is what the scripted endpoint read of a request.
type llmRequest struct {
	Model      string            `json:"model"`
	Messages   []json.RawMessage `json:"messages"`
	Tools      []json.RawMessage `json:"tools"`
	ToolChoice string            `json:"tool_choice"`
	Seed       *int64            `json:"seed"`
	Logprobs   bool              `json:"logprobs"`
	TokenIDs   bool              `json:"return_token_ids"`
	AsIDs      bool              `json:"return_tokens_as_token_ids"`
	TopK       *int              `json:"top_k"`
}

// msg is a request message, decoded.
type msg struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct{ Name, Arguments string }
	} `json:"tool_calls"`
}

func (r llmRequest) msgs() []msg {
	out := make([]msg, len(r.Messages))
	for i, m := range r.Messages {
		json.Unmarshal(m, &out[i])
	}
	return out
}

// text is a message's content as text.
func (m msg) text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case []any:
		var s []string
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok && pm["type"] == "text" {
				s = append(s, pm["text"].(string))
			}
		}
		return strings.Join(s, "\n")
	}
	return ""
}

// llmReply is what the scripted policy answers; Status > 0 answers an
// error with Body.
type llmReply struct {
	Content   string
	ToolCalls []map[string]any
	Status    int
	Body      string
}

func nativeCall(id, name, args string) map[string]any {
	return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}
}

// scripted is an OpenAI-compatible endpoint that plays a fixed policy.
// With vllm set it answers token ids and log-probs as vLLM does when asked.
type scripted struct {
	*httptest.Server
	policy func(r llmRequest) llmReply
	vllm   bool
	mu     sync.Mutex
	reqs   []llmRequest
	raw    []map[string]any
	calls  atomic.Int64
}

func newScripted(t testing.TB, vllm bool, policy func(r llmRequest) llmReply) *scripted {
	s := &scripted{policy: policy, vllm: vllm}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *scripted) URL() string { return s.Server.URL + "/v1" }

func (s *scripted) requests() []llmRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llmRequest(nil), s.reqs...)
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"no such path"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req llmRequest
	var raw map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	json.Unmarshal(body, &raw)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.raw = append(s.raw, raw)
	nreq := len(s.reqs)
	s.mu.Unlock()
	rep := s.policy(req)
	w.Header().Set("Content-Type", "application/json")
	if s.vllm {
		// as nextstate's trainer servers do: the answer's weight version
		w.Header().Set(WeightVersionHeader, strconv.Itoa(nreq+6))
	}
	if rep.Status > 0 {
		w.WriteHeader(rep.Status)
		io.WriteString(w, rep.Body)
		return
	}
	message := map[string]any{"role": "assistant", "content": rep.Content}
	if len(rep.ToolCalls) > 0 {
		message["tool_calls"] = rep.ToolCalls
	}
	choice := map[string]any{"index": 0, "message": message, "finish_reason": "stop"}
	ntok := len(rep.Content)/4 + 1
	pt := len(body) / 4
	out := map[string]any{"id": "x", "object": "chat.completion", "model": req.Model, "choices": []any{choice},
		"usage": map[string]any{"prompt_tokens": pt, "completion_tokens": ntok}}
	if s.vllm && req.Logprobs {
		var lp []any
		var ids []int
		for i := range ntok {
			ids = append(ids, 1000+i)
			tok := "t"
			if req.AsIDs {
				tok = "token_id:" + strconv.Itoa(1000+i)
			}
			lp = append(lp, map[string]any{"token": tok, "logprob": -0.5 - float64(i)/10, "bytes": []int{}})
		}
		choice["logprobs"] = map[string]any{"content": lp}
		if req.TokenIDs {
			choice["token_ids"] = ids
			prompt := make([]int, pt)
			for i := range prompt {
				prompt[i] = i % 50000
			}
			out["prompt_token_ids"] = prompt
		}
	}
	json.NewEncoder(w).Encode(out)
}

var numRE = regexp.MustCompile(`-?\d+`)

// calcPolicy plays calc tasks: add the two numbers of the instruction,
// then submit the tool's result. style is "native" (tool_calls) or
// "qwen" (<tool_call> blocks in the text).
func calcPolicy(style string) func(r llmRequest) llmReply {
	return func(r llmRequest) llmReply {
		ms := r.msgs()
		last := ms[len(ms)-1]
		call := func(name, args string) llmReply {
			if style == "qwen" {
				return llmReply{Content: "I will call " + name + ".\n<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>"}
			}
			return llmReply{ToolCalls: []map[string]any{nativeCall("", name, args)}}
		}
		if last.Role == "tool" {
			return call("submit", `{"answer": `+strings.TrimSpace(last.text())+`}`)
		}
		var user string
		for _, m := range ms {
			if m.Role == "user" {
				user = m.text()
				break
			}
		}
		n := numRE.FindAllString(user, 2)
		return call("add", `{"a": `+n[0]+`, "b": `+n[1]+`}`)
	}
}

// bisectPolicy plays guess-v1 in plain text: binary search on the
// "higher"/"lower" answers in the history.
func bisectPolicy(r llmRequest) llmReply {
	ms := r.msgs()
	lo, hi := 1, 100
	if n := numRE.FindAllString(ms[1].text(), 2); len(n) == 2 {
		lo, _ = strconv.Atoi(n[0])
		hi, _ = strconv.Atoi(n[1])
	}
	for i := 2; i+1 < len(ms); i += 2 {
		g, _ := strconv.Atoi(ms[i].text())
		switch ms[i+1].text() {
		case "higher":
			lo = g + 1
		case "lower":
			hi = g - 1
		}
	}
	return llmReply{Content: strconv.Itoa((lo + hi) / 2)}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func mustAgent(t testing.TB, cfg Config) *Agent {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "scripted"
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLog()
	}
	cfg.Retries = -1
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// play runs one episode of a task on the gym server c.
func play(t testing.TB, c *client.Client, a *Agent, taskID string, seed int64) *Episode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, res, err := c.Create(ctx, gym.CreateRequest{TaskID: taskID, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	tools, err := ToolsFor(res)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := a.Play(ctx, s, Start{Reset: res, Tools: tools, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}
