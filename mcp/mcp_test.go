package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nextstate-rl/nextstate/gym"
	_ "github.com/nextstate-rl/nextstate/mcp/mcptest" // mcptest-v1, mcpreply-v1
	"github.com/nextstate-rl/nextstate/server"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// bearer adds a token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// mcpConnect connects the SDK's client to a session's MCP endpoint, with
// the server's token; Cleanup closes it.
func (ts *testServer) mcpConnect(session string, opts *sdk.ClientOptions) *sdk.ClientSession {
	ts.tb.Helper()
	cs, _, err := ts.tryMCPConnect(session, opts)
	if err != nil {
		ts.tb.Fatalf("connecting over MCP: %v", err)
	}
	return cs
}

// tryMCPConnect connects and returns the session and a func that closes
// it and its connections, which Cleanup also calls.
func (ts *testServer) tryMCPConnect(session string, opts *sdk.ClientOptions) (*sdk.ClientSession, func(), error) {
	tr := &http.Transport{}
	var rt http.RoundTripper = tr
	if ts.token != "" {
		rt = bearer{ts.token, tr}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "mcptest", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: ts.base + "/v1/sessions/" + session + "/mcp", HTTPClient: &http.Client{Transport: rt}}, nil)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, err
	}
	closeAll := func() {
		cs.Close()
		tr.CloseIdleConnections()
	}
	ts.tb.Cleanup(closeAll)
	return cs, closeAll, nil
}

// httpCreate creates a session over the HTTP mirror.
func (ts *testServer) httpCreate(p gym.CreateRequest) gym.ResetResult {
	ts.tb.Helper()
	code, _, b := ts.do(http.MethodPost, "/v1/sessions", p)
	if code != http.StatusOK {
		ts.tb.Fatalf("creating %+v: HTTP %d: %s", p, code, b)
	}
	var r gym.ResetResult
	mustUnmarshal(ts.tb, b, &r)
	return r
}

func mcpCall(t *testing.T, cs *sdk.ClientSession, name string, args any, meta sdk.Meta) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("tools/call %s(%v): %v", name, args, err)
	}
	return res
}

// texts returns a result's text contents.
func texts(r *sdk.CallToolResult) []string {
	var out []string
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

// outcome decodes a result's _meta "nextstate/step".
func outcome(t *testing.T, r *sdk.CallToolResult) stepOutcome {
	t.Helper()
	v, ok := r.Meta[stepMeta]
	if !ok {
		t.Fatalf("result %+v has no _meta %q", r, stepMeta)
	}
	b, _ := json.Marshal(v)
	var o stepOutcome
	mustUnmarshal(t, b, &o)
	return o
}

func listTools(t *testing.T, cs *sdk.ClientSession) []*sdk.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	return res.Tools
}

func toolNames(ts []*sdk.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

func stepEvents(t *testing.T, ts *testServer, session string) []gym.Event {
	t.Helper()
	evs, err := ts.Store().Events(context.Background(), store.Filter{Session: session, Types: []gym.EventType{gym.EventStep}})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestMCPToolsAndCalls(t *testing.T) {
	ts := startServer(t)
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3"}).Session
	cs := ts.mcpConnect(sess, nil)

	tools := listTools(t, cs)
	if got := toolNames(tools); !slices.Equal(got, []string{"add", "done", "get"}) {
		t.Fatalf("tools = %v, want add, done, get", got)
	}
	for _, tl := range tools {
		if tl.Name != "add" {
			continue
		}
		b, _ := json.Marshal(tl.InputSchema)
		if !strings.Contains(string(b), `"required":["amount"]`) || tl.Description != "Add amount to the counter." {
			t.Errorf("add = %q %s, want its description and schema from the reset info", tl.Description, b)
		}
	}

	r := mcpCall(t, cs, "add", map[string]any{"amount": 2}, nil)
	o := outcome(t, r)
	if r.IsError || !slices.Equal(texts(r), []string{"count=2"}) || o.Step != 1 || o.Episode != 1 || o.Terminated || o.Truncated ||
		!strings.HasPrefix(o.StepID, "mcp_") || o.Session != sess || o.Seq == 0 {
		t.Fatalf("add(2) = %v %v, meta %+v; want count=2 at step 1 of episode 1 with a fresh mcp_ step id", r.IsError, texts(r), o)
	}
	if r := mcpCall(t, cs, "get", nil, nil); r.IsError || !slices.Equal(texts(r), []string{"count=2 notes=0"}) {
		t.Fatalf("get = %v %v, want count=2", r.IsError, texts(r))
	}

	// The agent's mistakes are tool errors that say what was expected, and
	// steps of the episode, as over the gym's protocol.
	r = mcpCall(t, cs, "add", map[string]any{}, nil)
	if !r.IsError || len(texts(r)) != 1 || !strings.Contains(texts(r)[0], `Expected: add {"amount": integer}`) || !strings.Contains(texts(r)[0], "amount") {
		t.Errorf("add() = %v %q, want a tool error naming the missing amount and the expected arguments", r.IsError, texts(r))
	}
	if o := outcome(t, r); o.Step != 3 || o.Info["tool_errors_total"] != float64(1) {
		t.Errorf("add() meta = %+v, want step 3 with one tool error", o)
	}
	r = mcpCall(t, cs, "fly", map[string]any{"to": "moon"}, nil)
	if !r.IsError || !strings.Contains(texts(r)[0], `unknown tool "fly"`) || !strings.Contains(texts(r)[0], "add, done, get") {
		t.Errorf("fly() = %v %q, want a tool error listing the tools", r.IsError, texts(r))
	}
	if r := mcpCall(t, cs, "add", map[string]any{"amount": 0}, nil); !r.IsError || texts(r)[0] != "Error: adding 0 changes nothing" {
		t.Errorf("add(0) = %v %q, want the domain's tool error", r.IsError, texts(r))
	}

	// A step id in _meta makes a retried call answer from the record.
	meta := sdk.Meta{stepIDMeta: "st-add-1"}
	first := mcpCall(t, cs, "add", map[string]any{"amount": 1}, meta)
	again := mcpCall(t, cs, "add", map[string]any{"amount": 1}, meta)
	if o1, o2 := outcome(t, first), outcome(t, again); o1.StepID != "st-add-1" || o1.Replayed || !o2.Replayed || o2.Step != o1.Step ||
		!slices.Equal(texts(again), []string{"count=3"}) {
		t.Errorf("retried call = %+v %v then %+v %v, want the same step replayed", o1, texts(first), o2, texts(again))
	}
	if r := mcpCall(t, cs, "get", nil, nil); texts(r)[0] != "count=3 notes=0" {
		t.Errorf("get after a retried add = %q, want count=3: the retry ran again", texts(r))
	}
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get", Meta: sdk.Meta{stepIDMeta: 7}}); err == nil ||
		!strings.Contains(err.Error(), stepIDMeta) {
		t.Errorf("a step id that is not a string: err = %v, want an error naming %s", err, stepIDMeta)
	}

	// The episode's end: terminated, the verifier's reward.
	r = mcpCall(t, cs, "done", nil, nil)
	if o := outcome(t, r); r.IsError || !o.Terminated || o.Truncated || o.Reward != 1 || o.Info["reward_source"] != "verifier" || o.Info["verifier"] != nil {
		t.Fatalf("done = %v %v, meta %+v; want terminated with the verifier's reward 1 and no verifier details", r.IsError, texts(r), o)
	}
	r = mcpCall(t, cs, "get", nil, nil)
	if !r.IsError || !strings.Contains(texts(r)[0], "episode is over") || !strings.Contains(texts(r)[0], "/v1/sessions/"+sess+"/reset") {
		t.Errorf("a call after the end = %v %q, want a tool error that says to reset through the gym API", r.IsError, texts(r))
	}

	// Every call that ran is one step event; the replay and the call after
	// the end are not.
	evs := stepEvents(t, ts, sess)
	var names []string
	for _, ev := range evs {
		if ev.Action == nil || len(ev.Action.Parts) != 1 || ev.Action.Parts[0].ToolCall == nil {
			t.Fatalf("step event %+v: want one tool_call part", ev)
		}
		names = append(names, ev.Action.Parts[0].ToolCall.Function.Name)
	}
	if want := []string{"add", "get", "add", "fly", "add", "add", "get", "done"}; !slices.Equal(names, want) {
		t.Errorf("step events call %v, want %v", names, want)
	}
	if last := evs[len(evs)-1]; !last.Terminated || last.Reward == nil || *last.Reward != 1 || last.Info["verifier"] == nil {
		t.Errorf("the last step event = %+v, want terminated, reward 1 and the verifier's details", last)
	}
}

// normalized is a step event without what differs between two sessions:
// ids, seqs, times.
func normalized(t *testing.T, ev gym.Event) string {
	t.Helper()
	ev.Seq, ev.Time, ev.Session, ev.StepID, ev.DurationUS = 0, time.Time{}, "", "", 0
	b, _ := json.Marshal(ev)
	var m map[string]any
	mustUnmarshal(t, b, &m)
	for _, p := range m["action"].(map[string]any)["parts"].([]any) {
		p.(map[string]any)["tool_call"].(map[string]any)["id"] = "ID"
	}
	if info, ok := m["info"].(map[string]any); ok {
		if errs, ok := info["tool_errors"].([]any); ok {
			for _, e := range errs {
				e.(map[string]any)["call_id"] = "ID"
			}
		}
	}
	for _, p := range m["observation"].(map[string]any)["parts"].([]any) {
		if tr, ok := p.(map[string]any)["tool_result"].(map[string]any); ok {
			tr["tool_call_id"] = "ID"
		}
	}
	b, _ = json.Marshal(m)
	return string(b)
}

func TestMCPSameEventsAsGymProtocol(t *testing.T) {
	ts := startServer(t)
	viaMCP := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3", Seed: 5}).Session
	viaWS := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3", Seed: 5}).Session
	cs := ts.mcpConnect(viaMCP, nil)
	ws := ts.dial().Attach(viaWS)

	calls := []struct {
		name string
		args string
	}{{"add", `{"amount":3}`}, {"add", `{}`}, {"get", `{}`}, {"done", `{}`}}
	for i, c := range calls {
		var args map[string]any
		mustUnmarshal(t, []byte(c.args), &args)
		mr := mcpCall(t, cs, c.name, args, nil)
		wr, err := ws.StepWithID(t.Context(), fmt.Sprintf("st-%d", i), gym.Action{Parts: []gym.Part{
			{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: fmt.Sprintf("call_%d", i), Type: "function", Function: gym.FunctionCall{Name: c.name, Arguments: c.args}}}}})
		if err != nil {
			t.Fatalf("%s(%s) over WebSocket: %v", c.name, c.args, err)
		}
		o := outcome(t, mr)
		if o.Reward != wr.Reward || o.Terminated != wr.Terminated || o.Truncated != wr.Truncated || o.Step != wr.Step ||
			texts(mr)[0] != wr.Observation.Parts[0].ToolResult.Content || mr.IsError != wr.Observation.Parts[0].ToolResult.IsError {
			t.Errorf("%s(%s): MCP %v %v %+v, WebSocket %+v", c.name, c.args, mr.IsError, texts(mr), o, wr)
		}
	}
	a, b := stepEvents(t, ts, viaMCP), stepEvents(t, ts, viaWS)
	if len(a) != len(calls) || len(b) != len(calls) {
		t.Fatalf("%d step events over MCP, %d over WebSocket; want %d each", len(a), len(b), len(calls))
	}
	for i := range a {
		if x, y := normalized(t, a[i]), normalized(t, b[i]); x != y {
			t.Errorf("step %d differs:\n MCP:       %s\n WebSocket: %s", i+1, x, y)
		}
		if a[i].StepID == "" {
			t.Errorf("step %d over MCP has no step id: late rewards need one", i+1)
		}
	}
}

func TestMCPToolsChangeOnReset(t *testing.T) {
	ts := startServer(t)
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3"}).Session
	changed := make(chan struct{}, 8)
	cs := ts.mcpConnect(sess, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if got := toolNames(listTools(t, cs)); !slices.Equal(got, []string{"add", "done", "get"}) {
		t.Fatalf("tools = %v", got)
	}
	// A reset through the gym API that changes the tools: connected clients
	// are told, without asking.
	if code, _, b := ts.do(http.MethodPost, "/v1/sessions/"+sess+"/reset", map[string]any{"task_id": "mcptest-notes"}); code != http.StatusOK {
		t.Fatalf("reset: HTTP %d: %s", code, b)
	}
	select {
	case <-changed:
	case <-time.After(waitTimeout):
		t.Fatalf("no notifications/tools/list_changed in %s after a reset that changed the tools", waitTimeout)
	}
	if got := toolNames(listTools(t, cs)); !slices.Equal(got, []string{"add", "done", "get", "note"}) {
		t.Fatalf("tools after the reset = %v, want note too", got)
	}
	r := mcpCall(t, cs, "note", map[string]any{"text": "hello"}, nil)
	if o := outcome(t, r); r.IsError || o.Episode != 2 || o.Step != 1 {
		t.Fatalf("note = %v %v %+v, want step 1 of episode 2", r.IsError, texts(r), o)
	}

	// A reset that keeps the tools lists the same ones; the episode goes on
	// over the same MCP session.
	mcpCall(t, cs, "done", nil, nil)
	if code, _, b := ts.do(http.MethodPost, "/v1/sessions/"+sess+"/reset", nil); code != http.StatusOK {
		t.Fatalf("reset: HTTP %d: %s", code, b)
	}
	if got := toolNames(listTools(t, cs)); !slices.Equal(got, []string{"add", "done", "get", "note"}) {
		t.Fatalf("tools after a second reset = %v", got)
	}
	if r := mcpCall(t, cs, "get", nil, nil); r.IsError || outcome(t, r).Episode != 3 || texts(r)[0] != "count=0 notes=0" {
		t.Fatalf("get in episode 3 = %v %v %+v", r.IsError, texts(r), outcome(t, r))
	}
}

func TestMCPReplyAndFailure(t *testing.T) {
	ts := startServer(t)
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcpreply-1"}).Session
	cs := ts.mcpConnect(sess, nil)
	if got := toolNames(listTools(t, cs)); !slices.Equal(got, []string{"ask", "crash"}) {
		t.Fatalf("tools = %v, want ask and crash (a crash tool with no parameters included)", got)
	}
	r := mcpCall(t, cs, "ask", map[string]any{"q": "ok?"}, nil)
	if r.IsError || !slices.Equal(texts(r), []string{"asked", "the user says: fine"}) {
		t.Fatalf("ask = %v %q, want the tool result then the user's reply", r.IsError, texts(r))
	}
	hub := ts.hub
	r = mcpCall(t, cs, "crash", nil, nil)
	o := outcome(t, r)
	if !r.IsError || o.Failure == nil || o.Failure.Fault != gym.FaultInfra || o.Failure.Reason != "backend_died" || !o.Truncated ||
		!strings.Contains(strings.Join(texts(r), "\n"), "the backend died") {
		t.Fatalf("crash = %v %q %+v, want an error result with the infrastructure failure, truncated", r.IsError, texts(r), o)
	}
	// The failure closed the session: its MCP server goes with it.
	waitFor(t, "the closed session's MCP server to be dropped", func() bool { return hub.cached() == 0 })
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ask"}); err == nil {
		t.Errorf("a call on the closed session succeeded")
	}
}

func TestMCPNoTools(t *testing.T) {
	ts := startServer(t)
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "echo-smoke"}).Session
	cs := ts.mcpConnect(sess, nil)
	_, err := cs.ListTools(context.Background(), nil)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != wire.CodeBadRequest || !strings.Contains(je.Message, "echo-v1, which lists no tools") {
		t.Fatalf("tools/list on echo-v1: err = %v, want code %d saying the kind lists no tools", err, wire.CodeBadRequest)
	}
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo"})
	if !errors.As(err, &je) || !strings.Contains(je.Message, "lists no tools") {
		t.Fatalf("tools/call on echo-v1: err = %v, want the same error", err)
	}
	if evs := stepEvents(t, ts, sess); len(evs) != 0 {
		t.Errorf("%d step events, want none", len(evs))
	}
}

// rawMCP posts one JSON-RPC message to an MCP endpoint, as curl would.
func rawMCP(t *testing.T, ts *testServer, url, token, mcpSession, body string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if mcpSession != "" {
		req.Header.Set("Mcp-Session-Id", mcpSession)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := ts.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, b.Bytes()
}

const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

func TestMCPRawHTTP(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.Token = "sekret" })
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3"}).Session
	url := ts.base + "/v1/sessions/" + sess + "/mcp"

	code, _, b := rawMCP(t, ts, url, "", "", mcpInitialize)
	var e struct{ Error *wire.Error }
	if mustUnmarshal(t, b, &e); code != http.StatusUnauthorized || e.Error == nil || e.Error.Code != wire.CodeUnauthorized {
		t.Fatalf("without the token: HTTP %d %s, want 401 with code %d", code, b, wire.CodeUnauthorized)
	}
	code, h, b := rawMCP(t, ts, url, "sekret", "", mcpInitialize)
	mcpSession := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || mcpSession == "" || !strings.Contains(string(b), `"name":"nextstate"`) || !strings.Contains(string(b), `"listChanged":true`) {
		t.Fatalf("initialize: HTTP %d, session %q: %s", code, mcpSession, b)
	}
	if code, _, b := rawMCP(t, ts, url, "sekret", mcpSession, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d %s", code, b)
	}
	code, _, b = rawMCP(t, ts, url, "sekret", mcpSession, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if code != http.StatusOK || !strings.Contains(string(b), `"name":"add"`) || !strings.Contains(string(b), `"inputSchema"`) {
		t.Fatalf("tools/list: HTTP %d %s", code, b)
	}
	code, _, b = rawMCP(t, ts, url, "sekret", mcpSession, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"amount":2}}}`)
	if code != http.StatusOK || !strings.Contains(string(b), `"text":"count=2"`) || !strings.Contains(string(b), `"nextstate/step":{`) {
		t.Fatalf("tools/call: HTTP %d %s", code, b)
	}

	// The SDK's client with the token works; without it, it is refused.
	ts.mcpConnect(sess, nil)
	ts.token = ""
	if _, _, err := ts.tryMCPConnect(sess, nil); err == nil {
		t.Errorf("the SDK client connected without the token")
	}
}

func TestMCPUnknownSession(t *testing.T) {
	ts := startServer(t)
	code, _, b := rawMCP(t, ts, ts.base+"/v1/sessions/s_nope/mcp", "", "", mcpInitialize)
	var r wire.Response
	mustUnmarshal(t, b, &r)
	if code != http.StatusNotFound || r.JSONRPC != "2.0" || r.Error == nil || r.Error.Code != wire.CodeUnknownSession || !strings.Contains(r.Error.Message, `"s_nope"`) {
		t.Fatalf("unknown session: HTTP %d %s, want 404 with a JSON-RPC error %d naming it", code, b, wire.CodeUnknownSession)
	}
	if _, _, err := ts.tryMCPConnect("s_nope", nil); err == nil || !strings.Contains(err.Error(), "s_nope") {
		t.Errorf("the SDK client on an unknown session: err = %v, want one naming it", err)
	}
	if n := ts.hub.cached(); n != 0 {
		t.Errorf("%d MCP servers cached for no session", n)
	}
}

func TestMCPCloseDropsServer(t *testing.T) {
	ts := startServer(t)
	hub := ts.hub
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3"}).Session
	ts.hc.CloseIdleConnections()
	baseline := runtime.NumGoroutine()
	func() {
		cs, closeClient, err := ts.tryMCPConnect(sess, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer closeClient()
		listTools(t, cs)
		if n := hub.cached(); n != 1 {
			t.Fatalf("%d MCP servers cached, want 1", n)
		}
		if code, _, b := ts.do(http.MethodDelete, "/v1/sessions/"+sess, nil); code != http.StatusOK {
			t.Fatalf("closing the session: HTTP %d %s", code, b)
		}
		waitFor(t, "the closed session's MCP server to be dropped", func() bool { return hub.cached() == 0 })
		done := make(chan error, 1)
		go func() { done <- cs.Wait() }()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Fatalf("the MCP client was not told in %s that its session ended", waitTimeout)
		}
	}()
	code, _, b := rawMCP(t, ts, ts.base+"/v1/sessions/"+sess+"/mcp", "", "", mcpInitialize)
	if code != http.StatusNotFound || !strings.Contains(string(b), "unknown session") {
		t.Errorf("MCP on the closed session: HTTP %d %s, want 404", code, b)
	}
	// Nothing of the MCP session is left running: not its server side, not
	// the client's.
	ts.hc.CloseIdleConnections()
	checkGoroutines(t, baseline)
}

func TestMCPShutdownWithClient(t *testing.T) {
	ts := startServer(t)
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3"}).Session
	cs := ts.mcpConnect(sess, nil)
	listTools(t, cs)
	mcpCall(t, cs, "add", map[string]any{"amount": 1}, nil)
	// The client holds a standalone SSE stream open; Shutdown must end it
	// rather than wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with an MCP client connected: %v", err)
	}
	if n := ts.hub.cached(); n != 0 {
		t.Errorf("%d MCP servers cached after Shutdown", n)
	}
}

func TestMCPDraining(t *testing.T) {
	ts := startServer(t)
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3"}).Session
	ts.hub.shutdown() // the server's shutdown hook
	for _, id := range []string{sess, "s_nope"} {
		code, _, b := rawMCP(t, ts, ts.base+"/v1/sessions/"+id+"/mcp", "", "", mcpInitialize)
		var r wire.Response
		mustUnmarshal(t, b, &r)
		if code != http.StatusServiceUnavailable || r.Error == nil || r.Error.Code != wire.CodeShuttingDown {
			t.Errorf("MCP on %s while the server drains: HTTP %d %s, want 503 with code %d", id, code, b, wire.CodeShuttingDown)
		}
	}
}

// The follower reads what it missed from the store when its queue
// overflowed: here, events it was never handed.
func TestMCPResyncAfterLostEvents(t *testing.T) {
	ts := startServer(t)
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3"}).Session
	changed := make(chan struct{}, 8)
	cs := ts.mcpConnect(sess, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	listTools(t, cs)
	ts.hub.mu.Lock()
	f := ts.hub.follow
	ts.hub.mu.Unlock()
	lose := func() {
		f.mu.Lock()
		f.lost = true
		f.mu.Unlock()
		f.nudge()
	}
	f.stop() // from here on the follower is handed nothing
	if code, _, b := ts.do(http.MethodPost, "/v1/sessions/"+sess+"/reset", map[string]any{"task_id": "mcptest-notes"}); code != http.StatusOK {
		t.Fatalf("reset: HTTP %d: %s", code, b)
	}
	lose()
	select {
	case <-changed:
	case <-time.After(waitTimeout):
		t.Fatalf("no notifications/tools/list_changed in %s after a reset the follower read from the store", waitTimeout)
	}
	if code, _, b := ts.do(http.MethodDelete, "/v1/sessions/"+sess, nil); code != http.StatusOK {
		t.Fatalf("closing the session: HTTP %d %s", code, b)
	}
	lose()
	waitFor(t, "the closed session's MCP server to be dropped", func() bool { return ts.hub.cached() == 0 })
}

func TestMCPSessionCap(t *testing.T) {
	ts := startServer(t)
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3"}).Session
	url := ts.base + "/v1/sessions/" + sess + "/mcp"
	var ids []string
	for range maxSessions {
		code, h, b := rawMCP(t, ts, url, "", "", mcpInitialize)
		if code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize %d: HTTP %d %s", len(ids)+1, code, b)
		}
		ids = append(ids, h.Get("Mcp-Session-Id"))
	}
	code, h, b := rawMCP(t, ts, url, "", "", mcpInitialize)
	var r wire.Response
	mustUnmarshal(t, b, &r)
	if code != http.StatusTooManyRequests || r.Error == nil || r.Error.Code != wire.CodeOverCapacity || string(r.ID) != "1" ||
		h.Get("Retry-After") == "" || !strings.Contains(r.Error.Message, "DELETE") {
		t.Fatalf("initialize past the cap: HTTP %d %s, want 429 with code %d for request 1 and a retry hint", code, b, wire.CodeOverCapacity)
	}
	// Ending one MCP session makes room.
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", ids[0])
	resp, err := ts.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d, want 204", resp.StatusCode)
	}
	if code, _, b := rawMCP(t, ts, url, "", "", mcpInitialize); code != http.StatusOK {
		t.Fatalf("initialize after a DELETE: HTTP %d %s", code, b)
	}
	// The nextstate session lives on.
	if code, _, b := ts.do(http.MethodGet, "/v1/sessions/"+sess+"/events", nil); code != http.StatusOK || !strings.Contains(string(b), `"live":true`) {
		t.Errorf("the session after MCP sessions ended: HTTP %d %s", code, b)
	}
}

func TestMCPCallResultParts(t *testing.T) {
	r := callResult(gym.StepResult{Session: "s_1", Episode: 1, Step: 2, Transition: gym.Transition{Observation: gym.Observation{Parts: []gym.Part{
		{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: []byte{1, 2}}},
		{Type: gym.PartFile, File: &gym.File{Path: "out/notes.txt", Blob: gym.Blob{MIME: "text/plain", Data: []byte("hi")}}},
		{Type: gym.PartFile, File: &gym.File{Path: "big.bin", Blob: gym.Blob{MIME: "application/octet-stream", Ref: "sha256:ab", Size: 9}}},
	}}}})
	if len(r.Content) != 3 || r.IsError {
		t.Fatalf("content %+v, want 3 items and no error", r.Content)
	}
	if img, ok := r.Content[0].(*sdk.ImageContent); !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, []byte{1, 2}) {
		t.Errorf("image part = %#v, want image content", r.Content[0])
	}
	if res, ok := r.Content[1].(*sdk.EmbeddedResource); !ok || res.Resource.URI != "file:///out/notes.txt" || res.Resource.Text != "hi" {
		t.Errorf("text file part = %#v, want an embedded text resource", r.Content[1])
	}
	if tc, ok := r.Content[2].(*sdk.TextContent); !ok || !strings.Contains(tc.Text, "sha256:ab") || !strings.Contains(tc.Text, "big.bin") {
		t.Errorf("stored file part = %#v, want a text naming its ref", r.Content[2])
	}
	if r := callResult(gym.StepResult{Transition: gym.Transition{Terminated: true}}); texts(r)[0] != "(no output: the episode is over)" {
		t.Errorf("an empty terminating step = %q", texts(r))
	}
}

// BenchmarkMCPCall measures one tools/call over MCP, a step end to end.
func BenchmarkMCPCall(b *testing.B) {
	ts := startServer(b, func(c *server.Config) { c.Sessions.Limits.MaxSteps = 1 << 30 })
	sess := ts.httpCreate(gym.CreateRequest{TaskID: "mcptest-3"}).Session
	cs := ts.mcpConnect(sess, nil)
	ctx := context.Background()
	for b.Loop() {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get"})
		if err != nil || r.IsError {
			b.Fatalf("get: %v %v", err, r)
		}
	}
}
