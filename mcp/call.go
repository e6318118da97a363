package mcp

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// stepIDMeta is the _meta key of tools/call params that carries a
// client-chosen step id, and stepMeta the _meta key of a call result that
// carries the step's outcome.
const (
	stepIDMeta = "nextstate/step_id"
	stepMeta   = "nextstate/step"
)

// call runs one tools/call as a step of the session: one tool_call part
// with a fresh call id, through Server.Step like session.step. A step id
// given in _meta "nextstate/step_id" makes a retried call answer from the
// record; without one, the step gets a fresh id of its own.
func (e *entry) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	e.mu.Lock()
	listed := e.listed
	e.mu.Unlock()
	if !listed {
		return nil, e.noTools()
	}
	p := req.Params
	if p == nil || p.Name == "" {
		return nil, rpcError(wire.Errorf(wire.CodeInvalidParams, `tools/call needs "name": one of the tools tools/list gives`))
	}
	var nonce [12]byte
	rand.Read(nonce[:])
	id := hex.EncodeToString(nonce[:])
	stepID := "mcp_" + id
	if v, ok := p.Meta[stepIDMeta]; ok {
		s, isStr := v.(string)
		if !isStr || s == "" {
			return nil, rpcError(wire.Errorf(wire.CodeInvalidParams, `_meta %q must be a non-empty string (a step id of your choosing), got %v`, stepIDMeta, v))
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

	// Like a request over WebSocket or HTTP, a step that started finishes
	// and is recorded even if the client goes away.
	res, werr := e.h.srv.Step(context.WithoutCancel(ctx), "mcp", wire.StepParams{Session: e.sess.ID, StepID: stepID, Action: action})
	if werr != nil {
		switch werr.Code {
		case wire.CodeEpisodeOver:
			return toolError(fmt.Sprintf("The episode is over: session %s takes no more steps until it is reset. "+
				"Reset it through the nextstate API (session.reset, or POST /v1/sessions/%s/reset), then list the tools again: they may change.",
				e.sess.ID, e.sess.ID)), nil
		case wire.CodeBadAction:
			return toolError(werr.Message), nil
		}
		return nil, rpcError(werr)
	}
	return callResult(res), nil
}

// callResult maps a step's answer to a tools/call result: the tool result
// and then the observation's other parts (a user's reply) as content,
// is_error from the tool result or a failure, and the step's outcome in
// _meta "nextstate/step".
func callResult(r gym.StepResult) *sdk.CallToolResult {
	out := &sdk.CallToolResult{Content: []sdk.Content{}}
	for _, p := range r.Observation.Parts {
		switch p.Type {
		case gym.PartToolResult:
			out.Content = append(out.Content, &sdk.TextContent{Text: p.ToolResult.Content})
			out.IsError = out.IsError || p.ToolResult.IsError
		case gym.PartText:
			out.Content = append(out.Content, &sdk.TextContent{Text: p.Text})
		case gym.PartImage:
			out.Content = append(out.Content, blobContent(*p.Image, ""))
		case gym.PartFile:
			out.Content = append(out.Content, blobContent(p.File.Blob, p.File.Path))
		}
	}
	if r.Failure != nil {
		out.IsError = true
		out.Content = append(out.Content, &sdk.TextContent{Text: fmt.Sprintf("The step failed (%s fault, %s): %s", r.Failure.Fault, r.Failure.Reason, r.Failure.Message)})
	}
	if len(out.Content) == 0 {
		text := "(no output)"
		if r.Terminated || r.Truncated {
			text = "(no output: the episode is over)"
		}
		out.Content = append(out.Content, &sdk.TextContent{Text: text})
	}
	out.Meta = sdk.Meta{stepMeta: stepOutcome{Session: r.Session, Episode: r.Episode, Step: r.Step, StepID: r.StepID, Seq: r.Seq,
		Reward: r.Reward, Terminated: r.Terminated, Truncated: r.Truncated, Failure: r.Failure, Info: r.Info, Replayed: r.Replayed}}
	return out
}

// stepOutcome is a call result's _meta "nextstate/step".
type stepOutcome struct {
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
func blobContent(b gym.Blob, path string) sdk.Content {
	if len(b.Data) == 0 {
		return &sdk.TextContent{Text: fmt.Sprintf("[%s %s (%d bytes) is in the store as %s]", cmp.Or(path, "image"), b.MIME, b.Size, b.Ref)}
	}
	if path == "" {
		return &sdk.ImageContent{Data: b.Data, MIMEType: b.MIME}
	}
	rc := &sdk.ResourceContents{URI: "file:///" + strings.TrimPrefix(path, "/"), MIMEType: b.MIME}
	if strings.HasPrefix(b.MIME, "text/") || b.MIME == "application/json" {
		rc.Text = string(b.Data)
	} else {
		rc.Blob = b.Data
	}
	return &sdk.EmbeddedResource{Resource: rc}
}

// toolError is a tools/call result that the agent reads as a failed call.
func toolError(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// rpcError is a wire error as an MCP (JSON-RPC) error, with the same code,
// message and data.
func rpcError(e *wire.Error) error {
	je := &jsonrpc.Error{Code: int64(e.Code), Message: e.Message}
	if e.Data != nil {
		je.Data, _ = json.Marshal(e.Data)
	}
	return je
}
