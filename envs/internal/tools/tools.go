// Package tools is the one mechanism of tools in the OpenAI
// function-calling shape that every tool-using env kind shares
// (tool-call domains through envs/toolcall, terminal-v1 and swe-v1
// through envs/internal/shelltool): a Tool declares a function with a JSON
// Schema of its parameters; a Toolset checks each call against it before
// the call reaches its tool and says, in one style, what was wrong and what
// the tool takes:
//
//	Error: unknown tool "rm". The tools are: shell_exec, submit.
//	Error: the arguments of put are not valid JSON (unexpected EOF). Send a JSON object: put {"key": string}.
//	Error: the arguments of put must be a JSON object, not an array. Expected: put {"key": string}.
//	Error: bad arguments for put: at /: missing property 'key'. Expected: put {"key": string}.
//
// Empty arguments, and null, are no arguments ("{}"). A Tool's Coerce
// takes what models commonly send for a parameter in another shape than
// the schema states (a "90s" for a number of seconds) before the check. A
// check the schema cannot state (a command that is only blanks) is
// rejected with Toolset.BadArguments, in the same words. A call that was
// run and failed in a way the agent can act on is a *ToolError (Errorf).
// These are the agent's mistakes, answered as an is_error tool result
// while the episode goes on.
package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// MaxCallsPerStep bounds the parts of one action (parallel tool calls) of
// the kinds that take tool calls.
const MaxCallsPerStep = 32

// Tool is one function an agent may call, in the OpenAI function-calling
// shape: Parameters is a JSON Schema object.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Coerce, when set, rewrites a call's decoded arguments (numbers as
	// json.Number) before they are checked: the forms a model commonly
	// sends for a parameter in another shape than Parameters states, which
	// the tool accepts (see Seconds, OneOrMany). The checked arguments are
	// then the rewritten ones.
	Coerce func(args map[string]any) `json:"-"`
}

// OpenAI returns the tool in the OpenAI "tools" array shape:
// {"type":"function","function":{"name","description","parameters"}}.
func (t Tool) OpenAI() map[string]any {
	params := t.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return map[string]any{"type": "function", "function": map[string]any{
		"name": t.Name, "description": t.Description, "parameters": params,
	}}
}

// OpenAITools returns tools in the OpenAI "tools" array shape.
func OpenAITools(tools []Tool) []map[string]any {
	out := make([]map[string]any, len(tools))
	for i, t := range tools {
		out[i] = t.OpenAI()
	}
	return out
}

// Toolset checks tool calls against their tools' schemas.
type Toolset struct {
	tools  []Tool
	byName map[string]*checked
}

type checked struct {
	tool   Tool
	schema *gym.Schema
	sig    string
}

// NewToolset compiles the tools' parameter schemas. Names must be unique.
func NewToolset(tools []Tool) (*Toolset, error) {
	s := &Toolset{tools: tools, byName: make(map[string]*checked, len(tools))}
	for _, t := range tools {
		if t.Name == "" {
			return nil, errors.New("tools: a tool has no name")
		}
		if _, dup := s.byName[t.Name]; dup {
			return nil, fmt.Errorf("tools: tool %q is declared twice", t.Name)
		}
		sch, err := gym.CompileSchema(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tools: tool %q: parameters schema: %w", t.Name, err)
		}
		s.byName[t.Name] = &checked{tool: t, schema: sch, sig: signature(t)}
	}
	return s, nil
}

// Tools returns the tools in their declared order.
func (s *Toolset) Tools() []Tool { return s.tools }

// Names returns the tool names, sorted.
func (s *Toolset) Names() []string {
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Reasons a call is rejected before it reaches its tool. They are the
// agent's mistakes: the agent reads the message and the episode goes on.
const (
	ReasonUnknownTool  = "unknown_tool"
	ReasonBadJSON      = "bad_json"
	ReasonBadArguments = "bad_arguments"
)

// CallError is a call the Toolset rejected: Reason is one of the Reason
// constants, Message says what was wrong and what the tool accepts.
type CallError struct {
	Reason  string
	Message string
}

func (e *CallError) Error() string { return e.Message }

// Check validates one call: the tool exists, its arguments are a JSON
// object, and they match the tool's parameter schema (required parameters,
// types, enums) once the tool's Coerce has run. It returns the arguments
// ("{}" for empty or null ones) or a *CallError.
func (s *Toolset) Check(call gym.FunctionCall) (json.RawMessage, *CallError) {
	c, ok := s.byName[call.Name]
	if !ok {
		return nil, &CallError{Reason: ReasonUnknownTool, Message: fmt.Sprintf(
			"Error: unknown tool %q. The tools are: %s.", call.Name, strings.Join(s.Names(), ", "))}
	}
	args := bytes.TrimSpace([]byte(call.Arguments))
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		if err == nil {
			err = errors.New("text after the JSON value")
		}
		return nil, &CallError{Reason: ReasonBadJSON, Message: fmt.Sprintf(
			"Error: the arguments of %s are not valid JSON (%v). Send a JSON object: %s.", call.Name, err, c.sig)}
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return nil, &CallError{Reason: ReasonBadJSON, Message: fmt.Sprintf(
			"Error: the arguments of %s must be a JSON object, not %s. Expected: %s.", call.Name, jsonKind(v), c.sig)}
	}
	if c.tool.Coerce != nil {
		c.tool.Coerce(obj)
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, &CallError{Reason: ReasonBadJSON, Message: fmt.Sprintf(
				"Error: the arguments of %s do not encode as JSON (%v). Expected: %s.", call.Name, err, c.sig)}
		}
		args = b
	}
	if err := c.schema.ValidateValue(v); err != nil {
		var se *gym.SchemaError
		msg := err.Error()
		if errors.As(err, &se) {
			msg = strings.Join(se.Problems, "; ")
		}
		return nil, s.BadArguments(call.Name, msg)
	}
	return json.RawMessage(args), nil
}

// BadArguments is the rejection of arguments of tool name that its schema
// admits but the tool does not (an empty command), said as Check says a
// schema's problems: "Error: bad arguments for NAME: PROBLEM. Expected:
// SIGNATURE.".
func (s *Toolset) BadArguments(name, problem string) *CallError {
	sig := name + " {...}"
	if c, ok := s.byName[name]; ok {
		sig = c.sig
	}
	return &CallError{Reason: ReasonBadArguments, Message: fmt.Sprintf(
		"Error: bad arguments for %s: %s. Expected: %s.", name, problem, sig)}
}

// Seconds is a Coerce of number-of-seconds parameters: a string holding a
// number ("30") or a Go duration ("90s", "1m") becomes that number. Other
// values are left for the schema to reject.
func Seconds(params ...string) func(map[string]any) {
	return func(args map[string]any) {
		for _, p := range params {
			s, ok := args[p].(string)
			if !ok {
				continue
			}
			s = strings.TrimSpace(s)
			if _, err := strconv.ParseFloat(s, 64); err == nil {
				args[p] = json.Number(s)
			} else if d, err := time.ParseDuration(s); err == nil {
				args[p] = json.Number(strconv.FormatFloat(d.Seconds(), 'g', -1, 64))
			}
		}
	}
}

// OneOrMany is a Coerce of array parameters: one value other than an
// array (a single string) becomes an array of it.
func OneOrMany(params ...string) func(map[string]any) {
	return func(args map[string]any) {
		for _, p := range params {
			if v, ok := args[p]; ok && v != nil {
				if _, isArray := v.([]any); !isArray {
					args[p] = []any{v}
				}
			}
		}
	}
}

// Coerces runs each coerce in order.
func Coerces(cs ...func(map[string]any)) func(map[string]any) {
	return func(args map[string]any) {
		for _, c := range cs {
			c(args)
		}
	}
}

// ToolError is a tool's failure that the agent reads as the call's result
// and can act on (an order that does not exist, a file it cannot write, a
// shell it broke), as tau2's tools raise errors ("Error: order not
// found"): the episode goes on.
type ToolError struct{ Message string }

func (e *ToolError) Error() string { return e.Message }

// Errorf returns a *ToolError.
func Errorf(format string, args ...any) error {
	return &ToolError{Message: fmt.Sprintf(format, args...)}
}

// IsToolError reports whether err is (or wraps) a *ToolError, and its message.
func IsToolError(err error) (string, bool) {
	var te *ToolError
	if errors.As(err, &te) {
		return te.Message, true
	}
	return "", false
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// signature describes a tool's parameters for error messages, as in
// get_order {"order_id": string, "verbose"?: boolean}.
func signature(t Tool) string {
	var sch struct {
		Properties map[string]struct {
			Type  any   `json:"type"`
			Enum  []any `json:"enum"`
			Items *struct {
				Type any `json:"type"`
			} `json:"items"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(t.Parameters, &sch); err != nil || len(sch.Properties) == 0 {
		return t.Name + " {} (no parameters)"
	}
	req := map[string]bool{}
	for _, r := range sch.Required {
		req[r] = true
	}
	names := make([]string, 0, len(sch.Properties))
	for n := range sch.Properties {
		names = append(names, n)
	}
	// Required parameters first, each group sorted.
	sort.Slice(names, func(i, j int) bool {
		if req[names[i]] != req[names[j]] {
			return req[names[i]]
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	b.WriteString(t.Name + " {")
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		p := sch.Properties[n]
		typ := fmt.Sprint(p.Type)
		if p.Type == nil {
			typ = "any"
		}
		if typ == "array" && p.Items != nil && p.Items.Type != nil {
			typ = fmt.Sprintf("array of %v", p.Items.Type)
		}
		if len(p.Enum) > 0 {
			vals := make([]string, len(p.Enum))
			for k, e := range p.Enum {
				b, _ := json.Marshal(e)
				vals[k] = string(b)
			}
			typ = "one of " + strings.Join(vals, ", ")
		}
		opt := ""
		if !req[n] {
			opt = "?"
		}
		fmt.Fprintf(&b, "%q%s: %s", n, opt, typ)
	}
	b.WriteString("}")
	return b.String()
}
