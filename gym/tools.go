package gym

import (
	"encoding/json"
	"fmt"
)

// InfoTools is the reset info key under which a kind offers the tools its
// actions call, in the OpenAI "tools" shape: a list of
// {"type": "function", "function": {"name", "description", "parameters"}},
// parameters a JSON Schema object. Any chat model can be given them as
// they are: package agent offers them to its model, MCP lists them, the
// judges take a kind that has them for a tool-calling one. Read them with
// Info.Tools.
const InfoTools = "tools"

// Tool is one entry of a reset info's InfoTools.
type Tool struct {
	Type     string       `json:"type"` // "function"
	Function ToolFunction `json:"function"`
}

// ToolFunction is the function a Tool offers.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Tools reads the tools the info offers (InfoTools), in whatever form they
// were written: the Go values of a kind's own info, or the JSON values of
// one read back from the wire. listed is false when the info offers none
// (no InfoTools, or null); a list that is there but is not a list of
// functions, or names a function without a name, is an error saying so.
func (i Info) Tools() (tools []Tool, listed bool, err error) {
	v, ok := i[InfoTools]
	if !ok || v == nil {
		return nil, false, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, true, fmt.Errorf("info %q does not encode: %w", InfoTools, err)
	}
	if err := json.Unmarshal(b, &tools); err != nil {
		return nil, true, fmt.Errorf(`info %q is not a list of {"type":"function","function":{"name","description","parameters"}}: %v`, InfoTools, err)
	}
	for n, t := range tools {
		if t.Function.Name == "" {
			return nil, true, fmt.Errorf("info %q[%d] has no function name", InfoTools, n)
		}
	}
	return tools, true, nil
}
