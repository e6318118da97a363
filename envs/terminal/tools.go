package terminal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// Tool names.
const (
	ToolExec     = "shell_exec"
	ToolSendKeys = "shell_send_keys"
	ToolView     = "shell_view"
	ToolWrite    = "write_file"
	ToolSubmit   = "submit"
)

// Command timeouts of shell_exec.
const (
	DefaultCommandTimeout = 60 * time.Second
	MaxCommandTimeout     = 10 * time.Minute
)

// MaxKeysWait caps shell_send_keys's wait.
const MaxKeysWait = time.Minute

// MaxWriteBytes caps write_file's content.
const MaxWriteBytes = 8 << 20

// param is one tool parameter.
type param struct {
	Name     string
	Type     string // JSON Schema type: "string", "number", "array"
	Required bool
	Desc     string
	// Items is the item type of an array; OneOf lets a parameter be a
	// string or an array of strings.
	StringOrArray bool
}

type tool struct {
	Name   string
	Desc   string
	Params []param
}

var tools = []tool{
	{ToolExec, "Run a shell command in the task's persistent bash shell (cd and exported variables persist " +
		"between calls) and wait for it to finish. Returns its output (stdout and stderr together, cut at 64 KiB " +
		"with a marker) and its exit code. A command still running at the timeout is interrupted with Ctrl-C.",
		[]param{
			{Name: "command", Type: "string", Required: true, Desc: "The bash command line to run."},
			{Name: "timeout", Type: "number", Desc: fmt.Sprintf("Seconds to wait before interrupting it (default %d, at most %d).",
				int(DefaultCommandTimeout.Seconds()), int(MaxCommandTimeout.Seconds()))},
		}},
	{ToolSendKeys, "Send keystrokes to the terminal, for interactive programs (editors, REPLs, prompts). Each " +
		"item is literal text or a tmux key name such as Enter, Escape, Tab, C-c, C-d, Up, BSpace. Returns the " +
		"screen once it settles (or after wait seconds).",
		[]param{
			{Name: "keys", Type: "array", Required: true, StringOrArray: true,
				Desc: `Keys to send in order, for example ["python3", "Enter"] or ["q"]; a single string is one item.`},
			{Name: "wait", Type: "number", Desc: fmt.Sprintf("Seconds to wait before reading the screen (default: until it "+
				"stops changing, at most 3; at most %d).", int(MaxKeysWait.Seconds()))},
		}},
	{ToolView, "Return the terminal's visible screen, for example to see an interactive program's state.", nil},
	{ToolWrite, "Write a file, creating its parent directories; an existing file is replaced. A relative path " +
		"is taken from the task's working directory.",
		[]param{
			{Name: "path", Type: "string", Required: true, Desc: "Where to write the file."},
			{Name: "content", Type: "string", Required: true, Desc: "The whole content of the file."},
		}},
	{ToolSubmit, "Finish the task: the episode ends and the task's hidden tests decide the outcome. Call it " +
		"once you are done; nothing runs after it.", nil},
}

func findTool(name string) *tool {
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i]
		}
	}
	return nil
}

// schema returns a tool's parameters as a JSON Schema object.
func (t *tool) schema() map[string]any {
	props := map[string]any{}
	req := []string{}
	for _, p := range t.Params {
		var s map[string]any
		if p.StringOrArray {
			s = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		} else {
			s = map[string]any{"type": p.Type}
		}
		s["description"] = p.Desc
		props[p.Name] = s
		if p.Required {
			req = append(req, p.Name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

// signature describes a tool's parameters for error messages:
// shell_exec {"command": string, "timeout"?: number}.
func (t *tool) signature() string {
	if len(t.Params) == 0 {
		return t.Name + " {} (no parameters)"
	}
	var b strings.Builder
	b.WriteString(t.Name + " {")
	for i, p := range t.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		typ := p.Type
		if p.StringOrArray {
			typ = "array of strings"
		}
		opt := ""
		if !p.Required {
			opt = "?"
		}
		fmt.Fprintf(&b, "%q%s: %s", p.Name, opt, typ)
	}
	b.WriteString("}")
	return b.String()
}

// OpenAITools is the tool list in the OpenAI "tools" shape
// ([{"type":"function","function":{"name","description","parameters"}}]),
// as given in the reset observation's info under "tools".
func OpenAITools() []map[string]any {
	out := make([]map[string]any, 0, len(tools))
	for i := range tools {
		t := &tools[i]
		out = append(out, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Desc, "parameters": t.schema(),
		}})
	}
	return out
}

// ToolsJSON is OpenAITools encoded.
func ToolsJSON() json.RawMessage {
	b, _ := json.Marshal(OpenAITools())
	return b
}

// call is one parsed action item: a tool call (or a text part, which is a
// shell_exec), or the error to answer it with.
type call struct {
	ID   string
	Name string
	// Text is set for a plain text action part.
	Text bool
	// Parsed arguments.
	Command string
	Timeout time.Duration
	Keys    []string
	Wait    time.Duration
	Path    string
	Content string
	// Err is the agent's mistake, answered as an error tool result.
	Err string
}

// parseAction turns an action's parts into calls, in order. Text parts
// next to tool calls are the model's words, not commands, and are skipped;
// an action of text parts only is one shell_exec per part, unless
// textFinal, when it ends the episode (a chat model's final answer).
func parseAction(a gym.Action, textFinal bool) []call {
	hasTool := false
	for _, p := range a.Parts {
		if p.Type == gym.PartToolCall {
			hasTool = true
		}
	}
	var out []call
	for _, p := range a.Parts {
		switch p.Type {
		case gym.PartToolCall:
			out = append(out, parseToolCall(p.ToolCall))
		case gym.PartText:
			if hasTool {
				continue
			}
			if textFinal {
				return []call{{Name: ToolSubmit, Text: true}}
			}
			c := call{Name: ToolExec, Text: true, Command: p.Text, Timeout: DefaultCommandTimeout}
			if strings.TrimSpace(p.Text) == "" {
				c.Err = "an empty text action: send a shell command as text, or call a tool (" + toolNames() + ")"
			}
			out = append(out, c)
		}
	}
	return out
}

func toolNames() string {
	var n []string
	for _, t := range tools {
		n = append(n, t.Name)
	}
	return strings.Join(n, ", ")
}

// parseToolCall checks a call against its tool's schema. Every mistake is
// answered with what the tool expects.
func parseToolCall(tc *gym.ToolCall) call {
	c := call{ID: tc.ID, Name: tc.Function.Name}
	t := findTool(c.Name)
	if t == nil {
		c.Err = fmt.Sprintf("unknown tool %q: the tools are %s", c.Name, toolNames())
		return c
	}
	raw := strings.TrimSpace(tc.Function.Arguments)
	if raw == "" || raw == "null" {
		raw = "{}"
	}
	var args map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader([]byte(raw)))
	d.UseNumber()
	if err := d.Decode(&args); err != nil || args == nil {
		c.Err = fmt.Sprintf("%s: arguments are not a JSON object (%s); want %s", c.Name, jsonErr(err), t.signature())
		return c
	}
	if d.More() {
		c.Err = fmt.Sprintf("%s: arguments hold more than one JSON value; want one object: %s", c.Name, t.signature())
		return c
	}
	var unknown []string
	for k := range args {
		known := false
		for _, p := range t.Params {
			known = known || p.Name == k
		}
		if !known {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		c.Err = fmt.Sprintf("%s: unknown parameter %s; want %s", c.Name, strings.Join(unknown, ", "), t.signature())
		return c
	}
	bad := func(p param, want string) call {
		c.Err = fmt.Sprintf("%s: parameter %q must be %s; want %s", c.Name, p.Name, want, t.signature())
		return c
	}
	for _, p := range t.Params {
		v, ok := args[p.Name]
		if !ok || string(v) == "null" {
			if p.Required {
				c.Err = fmt.Sprintf("%s: missing required parameter %q; want %s", c.Name, p.Name, t.signature())
				return c
			}
			continue
		}
		switch {
		case p.StringOrArray:
			var one string
			if json.Unmarshal(v, &one) == nil {
				c.Keys = []string{one}
			} else if json.Unmarshal(v, &c.Keys) != nil {
				return bad(p, "a string or an array of strings")
			}
			if len(c.Keys) == 0 {
				return bad(p, "a non-empty array of strings")
			}
		case p.Type == "number":
			var f float64
			if err := json.Unmarshal(v, &f); err != nil {
				var s string
				if json.Unmarshal(v, &s) == nil {
					if g, err := parseSeconds(s); err == nil {
						f = g
						break
					}
				}
				return bad(p, "a number of seconds")
			}
			if f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return bad(p, "a positive number of seconds")
			}
		case p.Type == "string":
			var s string
			if json.Unmarshal(v, &s) != nil {
				return bad(p, "a string")
			}
		}
	}
	str := func(k string) string {
		var s string
		json.Unmarshal(args[k], &s)
		return s
	}
	switch c.Name {
	case ToolExec:
		c.Command = str("command")
		c.Timeout = DefaultCommandTimeout
		if f, ok := seconds(args["timeout"]); ok {
			c.Timeout = min(time.Duration(f*float64(time.Second)), MaxCommandTimeout)
		}
		if strings.TrimSpace(c.Command) == "" {
			c.Err = fmt.Sprintf("%s: \"command\" is empty; want %s", c.Name, t.signature())
		}
	case ToolSendKeys:
		if f, ok := seconds(args["wait"]); ok {
			c.Wait = min(time.Duration(f*float64(time.Second)), MaxKeysWait)
		}
	case ToolWrite:
		c.Path, c.Content = str("path"), str("content")
		switch {
		case strings.TrimSpace(c.Path) == "":
			c.Err = fmt.Sprintf("%s: \"path\" is empty; want %s", c.Name, t.signature())
		case strings.ContainsRune(c.Path, 0):
			c.Err = fmt.Sprintf("%s: \"path\" contains a NUL byte", c.Name)
		case len(c.Content) > MaxWriteBytes:
			c.Err = fmt.Sprintf("%s: \"content\" is %d bytes, more than the %d allowed; write it in parts with shell_exec", c.Name, len(c.Content), MaxWriteBytes)
		}
	}
	return c
}

// seconds reads a checked number parameter; ok is false when absent.
func seconds(v json.RawMessage) (float64, bool) {
	if len(v) == 0 || string(v) == "null" {
		return 0, false
	}
	var f float64
	if json.Unmarshal(v, &f) != nil {
		var s string
		json.Unmarshal(v, &s)
		f, _ = parseSeconds(s)
	}
	return f, true
}

// parseSeconds reads "30", "30s" or "1m".
func parseSeconds(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, nil
	}
	d, err := time.ParseDuration(s)
	return d.Seconds(), err
}

func jsonErr(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}
