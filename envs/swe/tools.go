package swe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// Tool names.
const (
	ToolExec   = "shell_exec"
	ToolEditor = "str_replace_based_edit_tool"
	ToolSubmit = "submit"
)

// Editor commands.
const (
	EditView       = "view"
	EditCreate     = "create"
	EditStrReplace = "str_replace"
	EditInsert     = "insert"
	EditUndo       = "undo_edit"
)

var editCommands = []string{EditView, EditCreate, EditStrReplace, EditInsert, EditUndo}

// shell_exec's command timeouts.
const (
	DefaultCommandTimeout = 3 * time.Minute
	MaxCommandTimeout     = 15 * time.Minute
)

// MaxCallsPerStep bounds the parts of one action (parallel tool calls).
const MaxCallsPerStep = 32

// toolSpec is one tool in the OpenAI tools shape.
type toolSpec struct {
	Name, Desc string
	Params     map[string]any
	Required   []string
}

var toolSpecs = []toolSpec{
	{ToolExec, "Run a bash command in the repository's sandbox, in a persistent shell (cd and exported variables " +
		"persist between calls; it starts in " + Workdir + "), and wait for it. Returns its output (stdout and stderr " +
		"together, cut at 64 KiB with a marker) and its exit code. There is no network. A command still running at " +
		"the timeout is interrupted with Ctrl-C.",
		map[string]any{
			"command": map[string]any{"type": "string", "description": "The bash command line to run."},
			"timeout": map[string]any{"type": "number", "description": fmt.Sprintf(
				"Seconds to wait before interrupting it (default %d, at most %d).",
				int(DefaultCommandTimeout.Seconds()), int(MaxCommandTimeout.Seconds()))},
		}, []string{"command"}},
	{ToolEditor, "View, create and edit files. Paths are absolute (the repository is " + Workdir + "). " +
		"view: a file with line numbers (cat -n), or lines view_range [start, end] of it (end -1: to the end of the " +
		"file); a directory: its files two levels deep, hidden ones left out. create: a new file holding file_text " +
		"(an existing file is not overwritten). str_replace: replace old_str, which must occur exactly once in the " +
		"file (whitespace included), by new_str (empty: delete it). insert: insert new_str after line insert_line " +
		"(0: at the top). undo_edit: undo the last create, str_replace or insert of the file.",
		map[string]any{
			"command": map[string]any{"type": "string", "enum": editCommands, "description": "The editing command."},
			"path":    map[string]any{"type": "string", "description": "Absolute path of a file or directory, e.g. " + Workdir + "/setup.py."},
			"file_text": map[string]any{"type": "string",
				"description": "create: the content of the new file."},
			"old_str":     map[string]any{"type": "string", "description": "str_replace: the exact text to replace."},
			"new_str":     map[string]any{"type": "string", "description": "str_replace: the text to put instead; insert: the text to insert."},
			"insert_line": map[string]any{"type": "integer", "description": "insert: the line after which new_str goes (0: the top)."},
			"view_range": map[string]any{"type": "array", "items": map[string]any{"type": "integer"},
				"description": "view: [start, end] lines of a file, from 1; end -1 is the last line."},
		}, []string{"command", "path"}},
	{ToolSubmit, "Finish: your changes to the repository (git diff against the base commit, new files included) " +
		"are submitted, the episode ends, and hidden tests decide the outcome. Nothing runs after it.",
		map[string]any{}, []string{}},
}

// OpenAITools is the tool list in the OpenAI "tools" shape, as the reset
// info gives it under "tools".
func OpenAITools() []map[string]any {
	out := make([]map[string]any, 0, len(toolSpecs))
	for _, t := range toolSpecs {
		out = append(out, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Desc,
			"parameters": map[string]any{"type": "object", "properties": t.Params, "required": t.Required, "additionalProperties": false},
		}})
	}
	return out
}

func toolNames() string { return ToolExec + ", " + ToolEditor + ", " + ToolSubmit }

// EditArgs are the editor's parameters, as the tool call carries them;
// which are required depends on Command (see the tool's description).
type EditArgs struct {
	Command    string  `json:"command"`
	Path       string  `json:"path"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	ViewRange  []int   `json:"view_range"`
}

// call is one parsed action item, or the mistake to answer it with.
type call struct {
	ID   string
	Name string
	Text bool // a plain text part: a shell command
	// shell_exec
	Command string
	Timeout time.Duration
	// the editor
	Edit EditArgs
	// Err is the agent's mistake, answered as an error tool result.
	Err string
}

// parseAction turns an action's parts into calls. Text parts beside tool
// calls are the model's words and are skipped; an action of text parts
// only is one shell_exec per part.
func parseAction(a gym.Action) []call {
	hasTool := false
	for _, p := range a.Parts {
		hasTool = hasTool || p.Type == gym.PartToolCall
	}
	var out []call
	for _, p := range a.Parts {
		switch {
		case p.Type == gym.PartToolCall:
			out = append(out, parseToolCall(p.ToolCall))
		case p.Type == gym.PartText && !hasTool:
			c := call{Name: ToolExec, Text: true, Command: p.Text, Timeout: DefaultCommandTimeout}
			if strings.TrimSpace(p.Text) == "" {
				c.Err = "an empty text action: send a shell command as text, or call a tool (" + toolNames() + ")"
			}
			out = append(out, c)
		}
	}
	return out
}

// parseToolCall checks a call's arguments; every mistake is answered with
// what the tool expects.
func parseToolCall(tc *gym.ToolCall) call {
	c := call{ID: tc.ID, Name: tc.Function.Name}
	var spec *toolSpec
	for i := range toolSpecs {
		if toolSpecs[i].Name == c.Name {
			spec = &toolSpecs[i]
		}
	}
	if spec == nil {
		c.Err = fmt.Sprintf("unknown tool %q: the tools are %s", c.Name, toolNames())
		return c
	}
	raw := strings.TrimSpace(tc.Function.Arguments)
	if raw == "" || raw == "null" {
		raw = "{}"
	}
	var args map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader([]byte(raw)))
	if err := d.Decode(&args); err != nil || args == nil || d.More() {
		c.Err = fmt.Sprintf("%s: arguments are not one JSON object; want %s", c.Name, signature(spec))
		return c
	}
	var unknown []string
	for k := range args {
		if _, ok := spec.Params[k]; !ok {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		c.Err = fmt.Sprintf("%s: unknown parameter %s; want %s", c.Name, strings.Join(unknown, ", "), signature(spec))
		return c
	}
	for _, r := range spec.Required {
		if v, ok := args[r]; !ok || string(v) == "null" {
			c.Err = fmt.Sprintf("%s: missing required parameter %q; want %s", c.Name, r, signature(spec))
			return c
		}
	}
	switch c.Name {
	case ToolExec:
		if json.Unmarshal(args["command"], &c.Command) != nil || strings.TrimSpace(c.Command) == "" {
			c.Err = fmt.Sprintf("%s: \"command\" must be a non-empty string; want %s", c.Name, signature(spec))
			return c
		}
		c.Timeout = DefaultCommandTimeout
		if v, ok := args["timeout"]; ok && string(v) != "null" {
			var f float64
			if json.Unmarshal(v, &f) != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				c.Err = fmt.Sprintf("%s: \"timeout\" must be a positive number of seconds; want %s", c.Name, signature(spec))
				return c
			}
			c.Timeout = min(time.Duration(f*float64(time.Second)), MaxCommandTimeout)
		}
	case ToolEditor:
		if err := json.Unmarshal([]byte(raw), &c.Edit); err != nil {
			c.Err = fmt.Sprintf("%s: %v; want %s", c.Name, err, signature(spec))
			return c
		}
		c.Err = checkEdit(&c.Edit)
	}
	return c
}

// checkEdit says what is wrong with an editor call, "" when nothing is.
func checkEdit(e *EditArgs) string {
	p := ToolEditor + " " + e.Command
	switch {
	case !contains(editCommands, e.Command):
		return fmt.Sprintf("%s: unknown command %q; the commands are %s", ToolEditor, e.Command, strings.Join(editCommands, ", "))
	case !strings.HasPrefix(e.Path, "/"):
		return fmt.Sprintf("%s: the path %q is not absolute; did you mean %s/%s?", p, e.Path, Workdir, strings.TrimPrefix(e.Path, "./"))
	case strings.ContainsRune(e.Path, 0):
		return p + ": the path contains a NUL byte"
	}
	need := func(name string, ok bool) string {
		if !ok {
			return fmt.Sprintf("%s: parameter %q is required for this command", p, name)
		}
		return ""
	}
	switch e.Command {
	case EditView:
		if e.ViewRange != nil && len(e.ViewRange) != 2 {
			return p + ": view_range must be two integers [start, end]"
		}
	case EditCreate:
		if m := need("file_text", e.FileText != nil); m != "" {
			return m
		}
		if len(*e.FileText) > MaxFileBytes {
			return fmt.Sprintf("%s: file_text is %d bytes, more than the %d allowed", p, len(*e.FileText), MaxFileBytes)
		}
	case EditStrReplace:
		if m := need("old_str", e.OldStr != nil); m != "" {
			return m
		}
		if *e.OldStr == "" {
			return p + ": old_str is empty; give the exact text to replace"
		}
	case EditInsert:
		if m := need("insert_line", e.InsertLine != nil); m != "" {
			return m
		}
		if m := need("new_str", e.NewStr != nil); m != "" {
			return m
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// signature describes a tool's parameters for error messages.
func signature(t *toolSpec) string {
	if len(t.Params) == 0 {
		return t.Name + " {} (no parameters)"
	}
	names := make([]string, 0, len(t.Params))
	for n := range t.Params {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := contains(t.Required, names[i]), contains(t.Required, names[j])
		if ri != rj {
			return ri
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		typ := t.Params[n].(map[string]any)["type"]
		opt := "?"
		if contains(t.Required, n) {
			opt = ""
		}
		parts[i] = fmt.Sprintf("%q%s: %v", n, opt, typ)
	}
	return t.Name + " {" + strings.Join(parts, ", ") + "}"
}
