package shelltool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/tools"
	"github.com/nextstate-rl/nextstate/gym"
)

// Tool names both shell kinds have.
const (
	ToolExec   = "shell_exec"
	ToolSubmit = "submit"
)

// Tools is a shell kind's tool list, shell_exec first, checked by a
// tools.Toolset.
type Tools struct {
	set   *tools.Toolset
	list  []tools.Tool
	names string // in declared order, for messages
	exec  Exec
}

// NewTools compiles a kind's tools: its shell_exec, then more. Each
// tool's Coerce runs after dropNulls.
func NewTools(exec Exec, more ...tools.Tool) (*Tools, error) {
	list := append([]tools.Tool{exec.tool()}, more...)
	for i := range list {
		if c := list[i].Coerce; c != nil {
			list[i].Coerce = tools.Coerces(dropNulls, c)
		} else {
			list[i].Coerce = dropNulls
		}
	}
	set, err := tools.NewToolset(list)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(list))
	for i, t := range list {
		names[i] = t.Name
	}
	return &Tools{set: set, list: list, names: strings.Join(names, ", "), exec: exec}, nil
}

// MustTools is NewTools for a kind's declared list, which must compile.
func MustTools(exec Exec, more ...tools.Tool) *Tools {
	t, err := NewTools(exec, more...)
	if err != nil {
		panic(err)
	}
	return t
}

// OpenAI is the tool list in the OpenAI "tools" shape, as a reset info
// gives it under "tools".
func (t *Tools) OpenAI() []map[string]any { return tools.OpenAITools(t.list) }

// BadArguments rejects a call's arguments that the schema admits but the
// tool does not, in the Toolset's words.
func (t *Tools) BadArguments(name, problem string) error { return t.set.BadArguments(name, problem) }

// Object is the JSON Schema of a tool's parameters: an object of props
// (name to schema), those named required, no others.
func Object(props map[string]any, required ...string) json.RawMessage {
	if props == nil {
		props = map[string]any{}
	}
	if required == nil {
		required = []string{}
	}
	b, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	if err != nil {
		panic(err)
	}
	return b
}

// Call is one item of an action: a tool call whose arguments passed its
// schema, a text part (a shell_exec of its text, or submit when text is
// final), or the mistake to answer it with.
type Call struct {
	ID   string
	Name string
	Text bool            // a text part, answered by a text part
	Args json.RawMessage // the checked arguments
	// Err is the agent's mistake: the call is answered with it, not run.
	Err *tools.CallError
}

// Parse turns an action's parts into calls, in order. Text parts next to
// tool calls are the model's words, not commands, and are skipped; an
// action of text parts only is one shell_exec per part, unless textFinal,
// when it ends the episode (a chat model's final answer).
func (t *Tools) Parse(a gym.Action, textFinal bool) []Call {
	hasTool := false
	for _, p := range a.Parts {
		hasTool = hasTool || p.Type == gym.PartToolCall
	}
	var out []Call
	for _, p := range a.Parts {
		switch {
		case p.Type == gym.PartToolCall:
			c := Call{ID: p.ToolCall.ID, Name: p.ToolCall.Function.Name}
			c.Args, c.Err = t.set.Check(p.ToolCall.Function)
			out = append(out, c)
		case p.Type == gym.PartText && !hasTool:
			if textFinal {
				return []Call{{Name: ToolSubmit, Text: true, Args: json.RawMessage("{}")}}
			}
			c := Call{Name: ToolExec, Text: true}
			if strings.TrimSpace(p.Text) == "" {
				c.Err = &tools.CallError{Reason: tools.ReasonBadArguments,
					Message: "an empty text action: send a shell command as text, or call a tool (" + t.names + ")"}
			} else {
				c.Args, _ = json.Marshal(map[string]string{"command": p.Text})
			}
			out = append(out, c)
		}
	}
	return out
}

// Step runs an action's calls (Parse) in order, each answered by one
// part: a tool_result for a tool call, a text part for a text command.
// decode reads a call's checked arguments into what run takes (the kind's
// own reading of them: an error from it, Tools.BadArguments, rejects what
// the schema admits but the tool does not, and the call is answered with
// it, not run). run runs a call and may add to its info: a
// *tools.ToolError is a call that ran and failed in a way the agent can
// act on; any other error fails the step (label it: sbopen.Fault,
// Box.Fault, Box.ToolFault). submit terminates the episode; calls after
// it are not run.
func Step[T any](ctx context.Context, t *Tools, a gym.Action, textFinal bool,
	decode func(Call) (T, error), run func(context.Context, T, gym.Info) (string, error)) (gym.Transition, error) {
	calls := t.Parse(a, textFinal)
	var tr gym.Transition
	tr.Observation.Parts = []gym.Part{}
	infos := make([]gym.Info, 0, len(calls))
	for _, c := range calls {
		var content string
		info := gym.Info{"tool": c.Name}
		isErr := false
		d, bad := decodeCall(c, decode)
		switch {
		case tr.Terminated:
			content, isErr = "not run: submit ended the episode", true
		case bad != "":
			content, isErr = bad, true
			info["error"] = "bad_call"
		default:
			start := time.Now()
			out, err := run(ctx, d, info)
			info["elapsed_ms"] = time.Since(start).Milliseconds()
			if msg, failed := tools.IsToolError(err); failed {
				content, isErr = msg, true
				info["error"] = "tool_failed"
			} else if err != nil {
				return gym.Transition{}, err
			} else {
				content = out
			}
			if c.Name == ToolSubmit {
				tr.Terminated = true
			}
		}
		infos = append(infos, info)
		if c.Text {
			tr.Observation.Parts = append(tr.Observation.Parts, gym.TextPart(content))
			continue
		}
		tr.Observation.Parts = append(tr.Observation.Parts, gym.Part{Type: gym.PartToolResult, ToolResult: &gym.ToolResult{
			CallID: c.ID, Name: c.Name, Content: content, IsError: isErr,
		}})
	}
	if len(calls) == 0 {
		tr.Observation.Parts = append(tr.Observation.Parts, gym.TextPart(
			"nothing to do: the action has no tool call or command (tools: "+t.names+")"))
	}
	tr.Info = gym.Info{"calls": infos}
	return tr, nil
}

// Decode is what Step makes of an action's calls before it runs them:
// each call of Parse decoded by decode, and bad[i] the message call i is
// answered with when Parse or decode rejects it ("" when neither does).
// Tests of a kind's tools read it without a sandbox.
func Decode[T any](t *Tools, a gym.Action, textFinal bool, decode func(Call) (T, error)) (calls []T, bad []string) {
	for _, c := range t.Parse(a, textFinal) {
		d, msg := decodeCall(c, decode)
		calls, bad = append(calls, d), append(bad, msg)
	}
	return calls, bad
}

// decodeCall decodes a parsed call, or says why it is rejected.
func decodeCall[T any](c Call, decode func(Call) (T, error)) (T, string) {
	var zero T
	if c.Err != nil {
		return zero, c.Err.Message
	}
	d, err := decode(c)
	if err != nil {
		return zero, err.Error()
	}
	return d, ""
}

// Unmarshal reads a call's checked arguments into v; what does not fit (a
// number too large) rejects the call.
func (t *Tools) Unmarshal(c Call, v any) error {
	d := json.NewDecoder(bytes.NewReader(c.Args))
	if err := d.Decode(v); err != nil {
		return t.BadArguments(c.Name, err.Error())
	}
	return nil
}

// Seconds reads an optional number-of-seconds argument (nil: absent) as
// a duration, at most max; zero or less rejects the call.
func (t *Tools) Seconds(c Call, name string, v *float64, def, max time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if *v <= 0 {
		return 0, t.BadArguments(c.Name, fmt.Sprintf("%q must be a positive number of seconds", name))
	}
	if *v >= max.Seconds() {
		return max, nil
	}
	return time.Duration(*v * float64(time.Second)), nil
}
