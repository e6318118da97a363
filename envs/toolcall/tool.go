package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// Tool is one function an agent may call, in the OpenAI function-calling
// shape: Parameters is a JSON Schema object.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
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
			return nil, errors.New("toolcall: a tool has no name")
		}
		if _, dup := s.byName[t.Name]; dup {
			return nil, fmt.Errorf("toolcall: tool %q is declared twice", t.Name)
		}
		sch, err := gym.CompileSchema(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("toolcall: tool %q: parameters schema: %w", t.Name, err)
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
// types, enums). It returns the arguments ("{}" for empty ones) or a
// *CallError.
func (s *Toolset) Check(call gym.FunctionCall) (json.RawMessage, *CallError) {
	c, ok := s.byName[call.Name]
	if !ok {
		return nil, &CallError{Reason: ReasonUnknownTool, Message: fmt.Sprintf(
			"Error: unknown tool %q. The tools are: %s.", call.Name, strings.Join(s.Names(), ", "))}
	}
	args := bytes.TrimSpace([]byte(call.Arguments))
	if len(args) == 0 {
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
	if _, isObj := v.(map[string]any); !isObj {
		return nil, &CallError{Reason: ReasonBadJSON, Message: fmt.Sprintf(
			"Error: the arguments of %s must be a JSON object, not %s. Expected: %s.", call.Name, jsonKind(v), c.sig)}
	}
	if err := c.schema.ValidateValue(v); err != nil {
		var se *gym.SchemaError
		msg := err.Error()
		if errors.As(err, &se) {
			msg = strings.Join(se.Problems, "; ")
		}
		return nil, &CallError{Reason: ReasonBadArguments, Message: fmt.Sprintf(
			"Error: bad arguments for %s: %s. Expected: %s.", call.Name, msg, c.sig)}
	}
	return json.RawMessage(args), nil
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
