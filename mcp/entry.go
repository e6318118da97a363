package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// entry is the MCP server of one gym session.
type entry struct {
	h       *Hub
	sess    *gym.Session
	server  *sdk.Server
	handler *sdk.StreamableHTTPHandler

	mu       sync.Mutex
	resetSeq int64  // the seq of the reset whose tools are served
	listed   bool   // that reset's info lists tools
	toolsErr string // why its "tools" could not be read
	tools    []byte // the tools served, encoded, to see changes
	names    []string

	state     sync.Mutex
	closed    bool // the session closed, or the server shuts down
	answering int  // requests being answered, GET streams aside
}

func newEntry(h *Hub, sess *gym.Session) *entry {
	e := &entry{h: h, sess: sess}
	e.server = sdk.NewServer(&sdk.Implementation{Name: "nextstate", Title: "nextstate session " + sess.ID + " (" + sess.Kind + ")", Version: h.cfg.Version},
		&sdk.ServerOptions{
			Logger:       h.log,
			Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
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
	e.handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return e.server }, &sdk.StreamableHTTPOptions{
		JSONResponse:        true,
		Logger:              h.log,
		SessionTimeout:      h.cfg.SessionTimeout,
		MaxRequestBodyBytes: int64(h.cfg.MaxBodyBytes),
	})
	return e
}

func (e *entry) isClosed() bool {
	e.state.Lock()
	defer e.state.Unlock()
	return e.closed
}

func (e *entry) sessions() int {
	n := 0
	for range e.server.Sessions() {
		n++
	}
	return n
}

// begin and end bracket a request being answered, other than a GET
// stream, so that closing the entry waits for its answer to be written.
func (e *entry) begin() {
	e.state.Lock()
	e.answering++
	e.state.Unlock()
}

func (e *entry) end() {
	e.state.Lock()
	e.answering--
	e.state.Unlock()
}

// close marks the entry closed and closes its MCP sessions, now if no
// request is being answered, else once the last one has been (closeIfDone):
// a closing MCP session writes no more answers, and the call whose step
// closed the session is still being answered. Each session's close waits
// for its requests in flight. Never call it from an MCP handler.
func (e *entry) close() {
	e.state.Lock()
	e.closed = true
	e.state.Unlock()
	e.closeIfDone()
}

// closeIfDone closes the MCP sessions of a closed entry that answers no
// request.
func (e *entry) closeIfDone() {
	e.state.Lock()
	done := e.closed && e.answering == 0
	e.state.Unlock()
	if done {
		for ss := range e.server.Sessions() {
			ss.Close()
		}
	}
}

// middleware answers tools/list from the session's latest reset and runs
// every tools/call as a step, unknown tool names included: the env answers
// those as the agent's mistakes, as it does over the gym's own protocol.
func (e *entry) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/list":
			e.mu.Lock()
			err := e.syncLocked(ctx)
			listed := e.listed
			e.mu.Unlock()
			if err != nil {
				return nil, rpcError(wire.FromError(gym.InfraFault("store", fmt.Errorf("reading the session's tools: %w", err))))
			}
			if !listed {
				return nil, e.noTools()
			}
		case "tools/call":
			if r, ok := req.(*sdk.CallToolRequest); ok {
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

func (e *entry) noTools() error {
	e.mu.Lock()
	why := e.toolsErr
	e.mu.Unlock()
	if why == "" {
		why = `its latest reset's info has no "tools"`
	}
	return rpcError(wire.Errorf(wire.CodeBadRequest, "session %s runs %s, which lists no tools (%s): its actions are not tool calls, so MCP cannot drive it; step it with session.step (docs/protocol.md)",
		e.sess.ID, e.sess.Kind, why))
}

// syncLocked applies the resets recorded since the one whose tools are
// served. e.mu is held.
func (e *entry) syncLocked(ctx context.Context) error {
	var last *gym.Event
	err := e.h.srv.Store().Scan(ctx, store.Filter{Session: e.sess.ID, Types: []gym.EventType{gym.EventReset}, AfterSeq: e.resetSeq, Public: true},
		func(ev *gym.Event) error { last = ev; return nil })
	if err != nil {
		return err
	}
	if last != nil {
		e.apply(last)
	}
	return nil
}

// apply serves the tools of a reset event (in its public form) newer than
// the one served. The SDK tells connected clients when the list changed.
// e.mu is held.
func (e *entry) apply(ev *gym.Event) {
	if ev.Seq <= e.resetSeq {
		return
	}
	e.resetSeq = ev.Seq
	tools, listed, err := mcpTools(ev.Info)
	e.listed, e.toolsErr = listed && err == nil, ""
	if err != nil {
		e.toolsErr = err.Error()
		e.h.log.Warn("mcp: the reset info's tools cannot be served", "session", e.sess.ID, "kind", e.sess.Kind, "err", err)
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
			e.h.log.Warn("mcp: a tool of the reset info cannot be served", "session", e.sess.ID, "tool", t.Name, "err", err)
			continue
		}
		e.names = append(e.names, t.Name)
	}
}

// addTool is Server.AddTool, which panics on a schema it cannot take.
func addTool(s *sdk.Server, t *sdk.Tool, h sdk.ToolHandler) (err error) {
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
func mcpTools(info gym.Info) (tools []*sdk.Tool, listed bool, err error) {
	list, listed, err := info.Tools()
	if !listed || err != nil {
		return nil, listed, err
	}
	tools = []*sdk.Tool{}
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
		tools = append(tools, &sdk.Tool{Name: f.Name, Description: f.Description, InputSchema: schema})
	}
	return tools, true, nil
}
