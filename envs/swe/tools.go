package swe

import (
	"fmt"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/shelltool"
	"github.com/nextstate-rl/nextstate/envs/internal/tools"
)

// Tool names.
const (
	ToolExec   = shelltool.ToolExec
	ToolEditor = "str_replace_based_edit_tool"
	ToolSubmit = shelltool.ToolSubmit
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

// shell_exec's command timeouts (shelltool.Exec): a repository's
// build and test run take minutes, longer than a terminal task's commands.
const (
	DefaultCommandTimeout = 3 * time.Minute
	MaxCommandTimeout     = 15 * time.Minute
)

// MaxCallsPerStep bounds the parts of one action (parallel tool calls).
const MaxCallsPerStep = tools.MaxCallsPerStep

// toolset is swe-v1's tools, checked against their schemas.
var toolset = shelltool.MustTools(shelltool.Exec{
	Description: "Run a bash command in the repository's sandbox, in a persistent shell (cd and exported " +
		"variables persist between calls; it starts in " + Workdir + "), and wait for it. Returns its output (stdout and " +
		"stderr together, cut at 64 KiB with a marker) and its exit code. There is no network. A command still " +
		"running at the timeout is interrupted with Ctrl-C.",
	Default: DefaultCommandTimeout, Max: MaxCommandTimeout},
	tools.Tool{Name: ToolEditor, Description: "View, create and edit files. Paths are absolute (the repository is " + Workdir + "). " +
		"view: a file with line numbers (cat -n), or lines view_range [start, end] of it (end -1: to the end of the " +
		"file); a directory: its files two levels deep, hidden ones left out. create: a new file holding file_text " +
		"(an existing file is not overwritten). str_replace: replace old_str, which must occur exactly once in the " +
		"file (whitespace included), by new_str (empty: delete it). insert: insert new_str after line insert_line " +
		"(0: at the top). undo_edit: undo the last create, str_replace or insert of the file.",
		Parameters: shelltool.Object(map[string]any{
			"command": map[string]any{"type": "string", "enum": editCommands, "description": "The editing command."},
			"path":    map[string]any{"type": "string", "description": "Absolute path of a file or directory, e.g. " + Workdir + "/setup.py."},
			"file_text": map[string]any{"type": "string",
				"description": "create: the content of the new file."},
			"old_str":     map[string]any{"type": "string", "description": "str_replace: the exact text to replace."},
			"new_str":     map[string]any{"type": "string", "description": "str_replace: the text to put instead; insert: the text to insert."},
			"insert_line": map[string]any{"type": "integer", "description": "insert: the line after which new_str goes (0: the top)."},
			"view_range": map[string]any{"type": "array", "items": map[string]any{"type": "integer"},
				"description": "view: [start, end] lines of a file, from 1; end -1 is the last line."},
		}, "command", "path")},
	tools.Tool{Name: ToolSubmit, Description: "Finish: your changes to the repository (git diff against the base commit, " +
		"new files included) are submitted, the episode ends, and hidden tests decide the outcome. Nothing runs after it.",
		Parameters: shelltool.Object(nil)},
)

// OpenAITools is the tool list in the OpenAI "tools" shape, as the reset
// info gives it under "tools".
func OpenAITools() []map[string]any { return toolset.OpenAI() }

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

// call is a checked call's arguments, decoded (decode).
type call struct {
	shelltool.Call
	// shell_exec
	Command string
	Timeout time.Duration
	// the editor
	Edit EditArgs
}

// decode reads a checked call's arguments; what the schemas cannot say (a
// blank command, an editor command's own parameters: checkEdit) is a
// *tools.CallError.
func decode(c shelltool.Call) (call, error) {
	d := call{Call: c}
	var err error
	switch c.Name {
	case ToolExec:
		d.Command, d.Timeout, err = toolset.ExecArgs(c)
	case ToolEditor:
		if err = toolset.Unmarshal(c, &d.Edit); err != nil {
			break
		}
		if msg := checkEdit(&d.Edit); msg != "" {
			err = &tools.CallError{Reason: tools.ReasonBadArguments, Message: msg}
		}
	}
	return d, err
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
