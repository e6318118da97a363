package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// The Model Context Protocol endpoint, /v1/sessions/{id}/mcp, serves the
// tools of one session (those its latest reset lists in info "tools", in
// the OpenAI shape) over MCP's streamable HTTP transport, so that an agent
// that speaks MCP can act in an episode without knowing nextstate's own
// protocol. tools/call is one session.step with one tool_call part, run by
// the same code as a step over WebSocket or HTTP: the same events, store
// records, rewards and metrics. What it shows the agent comes from events
// in their public form (gym.Event.Public): the step's answer, and the reset
// events it reads its tools from. docs/protocol.md, section MCP, is the
// contract.
//
// An mcpHub keeps one MCP server (an mcp.Server and its HTTP handler) per
// gym session that has been addressed over MCP. It learns of resets and
// closes from the store: a janitor goroutine runs while any entry is
// cached, every mcpSweepInterval drops the entries of sessions that are no
// longer live (closing their MCP sessions, which ends their streams and
// goroutines) and applies reset events recorded since its last look, so a
// reset through the gym API changes the MCP tool list and connected
// clients get notifications/tools/list_changed. tools/list also reads the
// store itself, so a client that lists after a reset never sees stale
// tools. At shutdown (told by an http.Server shutdown hook) the hub turns
// new requests away and the janitor, which Shutdown waits for, closes every
// MCP session once its tool calls in flight have finished, so that no
// hanging stream holds the drain up.

// mcpSweepInterval is how often the janitor looks for closed sessions and
// new resets.
const mcpSweepInterval = 500 * time.Millisecond

// maxMCPSessions caps the MCP sessions (initialized clients) one gym session
// may have at once.
const maxMCPSessions = 16

// mcpStepIDMeta is the _meta key of tools/call params that carries a
// client-chosen step id, and mcpStepMeta the _meta key of a call result that
// carries the step's outcome.
const (
	mcpStepIDMeta = "nextstate/step_id"
	mcpStepMeta   = "nextstate/step"
)

// mcpHub serves /v1/sessions/{id}/mcp. Lock order: mcpHub.mu, then
// Server.mu; mcpEntry.mu is never held while taking mcpHub.mu.
type mcpHub struct {
	s    *Server
	auth http.Handler // s.auth around serve

	hookOnce sync.Once

	mu      sync.Mutex
	entries map[string]*mcpEntry // by gym session id
	closed  bool                 // the server is shutting down
	janitor bool                 // the janitor goroutine runs
	seen    int64                // the janitor has applied resets up to this seq
	quit    chan struct{}        // closed at shutdown; stops the janitor
}

// newMCPHub returns the handler of /v1/sessions/{id}/mcp, behind s.auth.
func newMCPHub(s *Server) *mcpHub {
	h := &mcpHub{s: s, entries: map[string]*mcpEntry{}, quit: make(chan struct{})}
	h.auth = s.auth(http.HandlerFunc(h.serve))
	return h
}

func (h *mcpHub) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.auth.ServeHTTP(w, r) }

func (h *mcpHub) serve(w http.ResponseWriter, r *http.Request) {
	if h.s.shutting.Load() {
		h.httpError(w, r, wire.FromError(gym.ErrDraining))
		return
	}
	id := r.PathValue("id")
	sess, werr := h.s.session(id)
	if werr != nil {
		if e := h.remove(id, nil); e != nil {
			e.close()
		}
		h.httpError(w, r, werr)
		return
	}
	e, werr := h.entry(r.Context(), sess)
	if werr != nil {
		h.httpError(w, r, werr)
		return
	}
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && e.sessions() >= maxMCPSessions {
		h.httpError(w, r, &wire.Error{Code: wire.CodeOverCapacity, Data: &wire.ErrorData{RetryAfterMS: 1000},
			Message: fmt.Sprintf("session %s already has %d MCP sessions, the most it may have: close one (DELETE with its Mcp-Session-Id header) or reuse it", id, maxMCPSessions)})
		return
	}
	e.handler.ServeHTTP(w, r)
	if e.isClosed() {
		// This request may have initialized an MCP session after the
		// entry's sessions were closed: close it too.
		e.closeSessions()
	}
}

// httpError answers a request the MCP server never saw: a JSON-RPC
// error response with the code's HTTP status, and the id of the request
// the body holds (null if none). Its "error" is the HTTP mirror's, so
// clients of either read it alike.
func (h *mcpHub) httpError(w http.ResponseWriter, r *http.Request, e *wire.Error) {
	id := json.RawMessage("null")
	if r.Method == http.MethodPost && r.Body != nil {
		var req struct{ ID json.RawMessage }
		b, _ := io.ReadAll(io.LimitReader(r.Body, int64(h.s.cfg.MaxFrameBytes)))
		if json.Unmarshal(b, &req) == nil && len(req.ID) > 0 && (req.ID[0] == '"' || req.ID[0] == '-' || (req.ID[0] >= '0' && req.ID[0] <= '9')) {
			id = req.ID
		}
	}
	if e.Data != nil && e.Data.RetryAfterMS > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt((e.Data.RetryAfterMS+999)/1000, 10))
	}
	b, _ := json.Marshal(wire.Response{JSONRPC: "2.0", ID: id, Error: e})
	writeJSONBytes(w, e.HTTPStatus(), b)
}

// entry returns the cached MCP server of sess, making it on first use.
// While any entry is cached the janitor runs: it is started with the first
// one, under s.mu as connections are, so that Shutdown never waits for
// s.work while it starts, and it closes every entry at shutdown.
func (h *mcpHub) entry(ctx context.Context, sess *gym.Session) (*mcpEntry, *wire.Error) {
	h.hookOnce.Do(func() { h.s.http.RegisterOnShutdown(h.shutdown) })
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, wire.FromError(gym.ErrDraining)
	}
	if e := h.entries[sess.ID]; e != nil {
		h.mu.Unlock()
		return e, nil
	}
	if !h.janitor {
		h.s.mu.Lock()
		if h.s.shutting.Load() {
			h.s.mu.Unlock()
			h.mu.Unlock()
			return nil, wire.FromError(gym.ErrDraining)
		}
		h.janitor = true
		h.seen = h.s.broker.last.Load()
		h.s.goTracked(h.sweepLoop)
		h.s.mu.Unlock()
	}
	e := newMCPEntry(h.s, sess)
	e.mu.Lock() // until the first sync: requests to it wait for its tools
	h.entries[sess.ID] = e
	h.mu.Unlock()
	err := e.syncLocked(ctx)
	e.mu.Unlock()
	if err != nil {
		if h.remove(sess.ID, e) != nil {
			e.close()
		}
		return nil, wire.FromError(gym.InfraFault("store", fmt.Errorf("reading the session's tools: %w", err)))
	}
	return e, nil
}

// remove takes the entry of id out of the cache and returns it; with want
// set, only if it is that entry.
func (h *mcpHub) remove(id string, want *mcpEntry) *mcpEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[id]
	if e == nil || (want != nil && e != want) {
		return nil
	}
	delete(h.entries, id)
	return e
}

// cached returns the number of cached MCP servers.
func (h *mcpHub) cached() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// sweepLoop is the janitor. It returns once no entry is left, or at
// shutdown, after closing every entry's MCP sessions (each close waits for
// the session's tool calls in flight), so that no hanging stream holds up
// the server's drain.
func (h *mcpHub) sweepLoop() {
	t := time.NewTicker(mcpSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-h.quit:
		case <-t.C:
			if !h.s.shutting.Load() {
				if !h.sweep() {
					return
				}
				continue
			}
		}
		h.mu.Lock()
		h.closed = true
		entries := h.entries
		h.entries = map[string]*mcpEntry{}
		h.janitor = false
		h.mu.Unlock()
		var wg sync.WaitGroup
		for _, e := range entries {
			wg.Go(e.close)
		}
		wg.Wait()
		return
	}
}

// sweep drops the entries of closed sessions and applies new resets. It
// reports false, and the janitor stops, once no entry is left.
func (h *mcpHub) sweep() bool {
	h.mu.Lock()
	entries := make([]*mcpEntry, 0, len(h.entries))
	for _, e := range h.entries {
		entries = append(entries, e)
	}
	seen := h.seen
	h.mu.Unlock()
	for _, e := range entries {
		if live, err := h.s.mgr.Get(e.sess.ID); err != nil || live != e.sess {
			if h.remove(e.sess.ID, e) != nil {
				e.close()
			}
		}
	}
	if last := h.s.broker.last.Load(); last > seen {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := h.s.store.Scan(ctx, store.Filter{Types: []gym.EventType{gym.EventReset}, AfterSeq: seen, Public: true},
			func(ev *gym.Event) error {
				h.mu.Lock()
				e := h.entries[ev.Session]
				h.mu.Unlock()
				if e != nil {
					e.mu.Lock()
					e.apply(ev)
					e.mu.Unlock()
				}
				return nil
			})
		cancel()
		if err != nil {
			h.s.log.Warn("mcp: reading resets from the store", "err", err)
		} else {
			seen = last
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = seen
	if len(h.entries) == 0 {
		h.janitor = false
		return false
	}
	return true
}

// shutdown is the http.Server shutdown hook: from now on MCP requests are
// turned away, and the janitor closes every MCP session at once rather than
// at its next tick.
func (h *mcpHub) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.quit)
	}
}

// mcpEntry is the MCP server of one gym session.
type mcpEntry struct {
	s       *Server
	sess    *gym.Session
	server  *mcp.Server
	handler *mcp.StreamableHTTPHandler

	mu       sync.Mutex
	resetSeq int64  // the seq of the reset whose tools are served
	listed   bool   // that reset's info lists tools
	toolsErr string // why its "tools" could not be read
	tools    []byte // the tools served, encoded, to see changes
	names    []string
	closed   bool
}

func newMCPEntry(s *Server, sess *gym.Session) *mcpEntry {
	e := &mcpEntry{s: s, sess: sess}
	e.server = mcp.NewServer(&mcp.Implementation{Name: "nextstate", Title: "nextstate session " + sess.ID + " (" + sess.Kind + ")", Version: Version},
		&mcp.ServerOptions{
			Logger:       s.log,
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
			Instructions: "The tools of nextstate session " + sess.ID + ", an episode of " + sess.Kind + ". Each tool call is one step of the episode. " +
				"Once a call answers that the episode is over, reset the session through the nextstate API, then list the tools again.",
			GetSessionID: func() string {
				if e.isClosed() {
					return "" // an ephemeral session, closed after its request
				}
				return rand.Text()
			},
		})
	e.server.AddReceivingMiddleware(e.middleware)
	idle := s.cfg.Sessions.IdleTTL
	if idle <= 0 {
		idle = 10 * time.Minute
	}
	e.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, &mcp.StreamableHTTPOptions{
		JSONResponse:        true,
		Logger:              s.log,
		SessionTimeout:      idle,
		MaxRequestBodyBytes: int64(s.cfg.MaxFrameBytes),
	})
	return e
}

func (e *mcpEntry) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

func (e *mcpEntry) sessions() int {
	n := 0
	for range e.server.Sessions() {
		n++
	}
	return n
}

// close marks the entry closed and closes its MCP sessions; each close
// waits for the session's requests in flight. Never call it from an MCP
// handler.
func (e *mcpEntry) close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.closeSessions()
}

func (e *mcpEntry) closeSessions() {
	for ss := range e.server.Sessions() {
		ss.Close()
	}
}

// middleware answers tools/list from the session's latest reset and runs
// every tools/call as a step, unknown tool names included: the env answers
// those as the agent's mistakes, as it does over the gym's own protocol.
func (e *mcpEntry) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			e.mu.Lock()
			err := e.syncLocked(ctx)
			listed := e.listed
			e.mu.Unlock()
			if err != nil {
				return nil, mcpError(wire.FromError(gym.InfraFault("store", fmt.Errorf("reading the session's tools: %w", err))))
			}
			if !listed {
				return nil, e.noTools()
			}
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				res, err := e.call(ctx, r)
				if err != nil {
					return nil, err
				}
				return res, nil
			}
		}
		return next(ctx, method, req)
	}
}

func (e *mcpEntry) noTools() error {
	e.mu.Lock()
	why := e.toolsErr
	e.mu.Unlock()
	if why == "" {
		why = `its latest reset's info has no "tools"`
	}
	return mcpError(wire.Errorf(wire.CodeBadRequest, "session %s runs %s, which lists no tools (%s): its actions are not tool calls, so MCP cannot drive it; step it with session.step (docs/protocol.md)",
		e.sess.ID, e.sess.Kind, why))
}

// syncLocked applies the resets recorded since the one whose tools are
// served. e.mu is held.
func (e *mcpEntry) syncLocked(ctx context.Context) error {
	var last *gym.Event
	err := e.s.store.Scan(ctx, store.Filter{Session: e.sess.ID, Types: []gym.EventType{gym.EventReset}, AfterSeq: e.resetSeq, Public: true},
		func(ev *gym.Event) error { last = ev; return nil })
	if err != nil {
		return err
	}
	if last != nil {
		e.apply(last)
	}
	return nil
}

// apply serves the tools of a reset event newer than the one served. The
// SDK tells connected clients when the list changed. e.mu is held.
func (e *mcpEntry) apply(ev *gym.Event) {
	if ev.Seq <= e.resetSeq {
		return
	}
	e.resetSeq = ev.Seq
	tools, listed, err := mcpTools(ev.Info)
	e.listed, e.toolsErr = listed && err == nil, ""
	if err != nil {
		e.toolsErr = err.Error()
		e.s.log.Warn("mcp: the reset info's tools cannot be served", "session", e.sess.ID, "kind", e.sess.Kind, "err", err)
	}
	enc, _ := json.Marshal(tools)
	if bytes.Equal(enc, e.tools) {
		return
	}
	e.tools = enc
	keep := map[string]bool{}
	for _, t := range tools {
		keep[t.Name] = true
	}
	var gone []string
	for _, n := range e.names {
		if !keep[n] {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		e.server.RemoveTools(gone...)
	}
	e.names = e.names[:0]
	for _, t := range tools {
		// The middleware runs every call through e.call before the SDK
		// looks for the tool's handler.
		if err := addTool(e.server, t, e.call); err != nil {
			e.s.log.Warn("mcp: a tool of the reset info cannot be served", "session", e.sess.ID, "tool", t.Name, "err", err)
			continue
		}
		e.names = append(e.names, t.Name)
	}
}

// addTool is Server.AddTool, which panics on a schema it cannot take.
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// mcpTools reads a reset info's "tools" (gym.InfoTools, the OpenAI shape)
// as MCP tools. listed is false when the info has no "tools".
func mcpTools(info gym.Info) (tools []*mcp.Tool, listed bool, err error) {
	list, listed, err := info.Tools()
	if !listed || err != nil {
		return nil, listed, err
	}
	tools = []*mcp.Tool{}
	for _, t := range list {
		f := t.Function
		schema := map[string]any{}
		if p := bytes.TrimSpace(f.Parameters); len(p) > 0 && string(p) != "null" {
			if err := json.Unmarshal(p, &schema); err != nil {
				return nil, true, fmt.Errorf(`tool %q: parameters are not a JSON Schema object: %v`, f.Name, err)
			}
		}
		switch typ := schema["type"]; typ {
		case nil:
			schema["type"] = "object"
		case "object":
		default:
			return nil, true, fmt.Errorf(`tool %q: parameters have type %v; MCP needs "object"`, f.Name, typ)
		}
		tools = append(tools, &mcp.Tool{Name: f.Name, Description: f.Description, InputSchema: schema})
	}
	return tools, true, nil
}

// call runs one tools/call as a step of the session: one tool_call part
// with a fresh call id, through Server.step like session.step. A step id
// given in _meta "nextstate/step_id" makes a retried call answer from the
// record; without one, the step gets a fresh id of its own.
func (e *mcpEntry) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	e.mu.Lock()
	listed := e.listed
	e.mu.Unlock()
	if !listed {
		return nil, e.noTools()
	}
	p := req.Params
	if p == nil || p.Name == "" {
		return nil, mcpError(wire.Errorf(wire.CodeInvalidParams, `tools/call needs "name": one of the tools tools/list gives`))
	}
	var nonce [12]byte
	rand.Read(nonce[:])
	id := hex.EncodeToString(nonce[:])
	stepID := "mcp_" + id
	if v, ok := p.Meta[mcpStepIDMeta]; ok {
		s, isStr := v.(string)
		if !isStr || s == "" {
			return nil, mcpError(wire.Errorf(wire.CodeInvalidParams, `_meta %q must be a non-empty string (a step id of your choosing), got %v`, mcpStepIDMeta, v))
		}
		// The call id follows from the step id, so that a retried call
		// is the same action and is answered from the record.
		stepID = s
		sum := sha256.Sum256([]byte(s))
		id = hex.EncodeToString(sum[:12])
	}
	args := strings.TrimSpace(string(p.Arguments))
	if args == "" || args == "null" {
		args = "{}"
	}
	action := gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
		ID: "call_" + id, Type: "function", Function: gym.FunctionCall{Name: p.Name, Arguments: args}}}}}

	start := time.Now()
	e.s.requests.add()
	// Like a request over WebSocket or HTTP, a step that started finishes
	// and is recorded even if the client goes away.
	res, werr := e.s.step(context.WithoutCancel(ctx), wire.StepParams{Session: e.sess.ID, StepID: stepID, Action: action})
	e.s.requests.done()
	e.s.metrics.request(wire.MethodSessionStep, "mcp", start, werr)
	if werr != nil {
		switch werr.Code {
		case wire.CodeEpisodeOver:
			return toolError(fmt.Sprintf("The episode is over: session %s takes no more steps until it is reset. "+
				"Reset it through the nextstate API (session.reset, or POST /v1/sessions/%s/reset), then list the tools again: they may change.",
				e.sess.ID, e.sess.ID)), nil
		case wire.CodeBadAction:
			return toolError(werr.Message), nil
		}
		return nil, mcpError(werr)
	}
	return callResult(res.(gym.StepResult)), nil
}

// callResult maps a step's answer to a tools/call result: the tool result
// and then the observation's other parts (a user's reply) as content,
// is_error from the tool result or a failure, and the step's outcome in
// _meta "nextstate/step".
func callResult(r gym.StepResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: []mcp.Content{}}
	for _, p := range r.Observation.Parts {
		switch p.Type {
		case gym.PartToolResult:
			out.Content = append(out.Content, &mcp.TextContent{Text: p.ToolResult.Content})
			out.IsError = out.IsError || p.ToolResult.IsError
		case gym.PartText:
			out.Content = append(out.Content, &mcp.TextContent{Text: p.Text})
		case gym.PartImage:
			out.Content = append(out.Content, blobContent(*p.Image, ""))
		case gym.PartFile:
			out.Content = append(out.Content, blobContent(p.File.Blob, p.File.Path))
		}
	}
	if r.Failure != nil {
		out.IsError = true
		out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("The step failed (%s fault, %s): %s", r.Failure.Fault, r.Failure.Reason, r.Failure.Message)})
	}
	if len(out.Content) == 0 {
		text := "(no output)"
		if r.Terminated || r.Truncated {
			text = "(no output: the episode is over)"
		}
		out.Content = append(out.Content, &mcp.TextContent{Text: text})
	}
	out.Meta = mcp.Meta{mcpStepMeta: mcpOutcome{Session: r.Session, Episode: r.Episode, Step: r.Step, StepID: r.StepID, Seq: r.Seq,
		Reward: r.Reward, Terminated: r.Terminated, Truncated: r.Truncated, Failure: r.Failure, Info: r.Info, Replayed: r.Replayed}}
	return out
}

// mcpOutcome is a call result's _meta "nextstate/step".
type mcpOutcome struct {
	Session    string       `json:"session"`
	Episode    int          `json:"episode"`
	Step       int          `json:"step"`
	StepID     string       `json:"step_id"`
	Seq        int64        `json:"seq"`
	Reward     float64      `json:"reward"`
	Terminated bool         `json:"terminated"`
	Truncated  bool         `json:"truncated"`
	Failure    *gym.Failure `json:"failure,omitempty"`
	Info       gym.Info     `json:"info,omitempty"`
	Replayed   bool         `json:"replayed,omitempty"`
}

// blobContent is an image part (path "") or a file part as MCP content: an
// image, or an embedded resource; a blob held in the store by reference is
// named, not inlined.
func blobContent(b gym.Blob, path string) mcp.Content {
	if len(b.Data) == 0 {
		return &mcp.TextContent{Text: fmt.Sprintf("[%s %s (%d bytes) is in the store as %s]", cmp.Or(path, "image"), b.MIME, b.Size, b.Ref)}
	}
	if path == "" {
		return &mcp.ImageContent{Data: b.Data, MIMEType: b.MIME}
	}
	rc := &mcp.ResourceContents{URI: "file:///" + strings.TrimPrefix(path, "/"), MIMEType: b.MIME}
	if strings.HasPrefix(b.MIME, "text/") || b.MIME == "application/json" {
		rc.Text = string(b.Data)
	} else {
		rc.Blob = b.Data
	}
	return &mcp.EmbeddedResource{Resource: rc}
}

// toolError is a tools/call result that the agent reads as a failed call.
func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// mcpError is a wire error as an MCP (JSON-RPC) error, with the same code,
// message and data.
func mcpError(e *wire.Error) error {
	je := &jsonrpc.Error{Code: int64(e.Code), Message: e.Message}
	if e.Data != nil {
		je.Data, _ = json.Marshal(e.Data)
	}
	return je
}
