package terminal

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/shelltool"
	"github.com/nextstate-rl/nextstate/envs/internal/tools"
)

// Tool names.
const (
	ToolExec     = shelltool.ToolExec
	ToolSendKeys = "shell_send_keys"
	ToolView     = "shell_view"
	ToolWrite    = "write_file"
	ToolSubmit   = shelltool.ToolSubmit
)

// Command timeouts of shell_exec (shelltool.Exec): Terminal-Bench
// tasks run short commands, and an episode's whole agent time is minutes.
const (
	DefaultCommandTimeout = 60 * time.Second
	MaxCommandTimeout     = 10 * time.Minute
)

// MaxKeysWait caps shell_send_keys's wait.
const MaxKeysWait = time.Minute

// MaxWriteBytes caps write_file's content.
const MaxWriteBytes = 8 << 20

// toolset is terminal-v1's tools, checked against their schemas.
var toolset = shelltool.MustTools(shelltool.Exec{
	Description: "Run a shell command in the task's persistent bash shell (cd and exported variables persist " +
		"between calls) and wait for it to finish. Returns its output (stdout and stderr together, cut at 64 KiB " +
		"with a marker) and its exit code. A command still running at the timeout is interrupted with Ctrl-C.",
	Default: DefaultCommandTimeout, Max: MaxCommandTimeout},
	tools.Tool{Name: ToolSendKeys, Description: "Send keystrokes to the terminal, for interactive programs (editors, " +
		"REPLs, prompts). Each item is literal text or a tmux key name such as Enter, Escape, Tab, C-c, C-d, Up, BSpace. " +
		"Returns the screen once it settles (or after wait seconds).",
		Parameters: shelltool.Object(map[string]any{
			"keys": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
				"description": `Keys to send in order, for example ["python3", "Enter"] or ["q"]; a single string is one item.`},
			"wait": map[string]any{"type": "number", "description": fmt.Sprintf("Seconds to wait before reading the screen "+
				"(default: until it stops changing, at most 3; at most %d).", int(MaxKeysWait.Seconds()))},
		}, "keys"),
		Coerce: tools.Coerces(tools.OneOrMany("keys"), tools.Seconds("wait"))},
	tools.Tool{Name: ToolView, Description: "Return the terminal's visible screen, for example to see an interactive " +
		"program's state.", Parameters: shelltool.Object(nil)},
	tools.Tool{Name: ToolWrite, Description: "Write a file, creating its parent directories; an existing file is " +
		"replaced. A relative path is taken from the task's working directory.",
		Parameters: shelltool.Object(map[string]any{
			"path":    map[string]any{"type": "string", "description": "Where to write the file."},
			"content": map[string]any{"type": "string", "description": "The whole content of the file."},
		}, "path", "content")},
	tools.Tool{Name: ToolSubmit, Description: "Finish the task: the episode ends and the task's hidden tests decide " +
		"the outcome. Call it once you are done; nothing runs after it.", Parameters: shelltool.Object(nil)},
)

// OpenAITools is the tool list in the OpenAI "tools" shape
// ([{"type":"function","function":{"name","description","parameters"}}]),
// as given in the reset observation's info under "tools".
func OpenAITools() []map[string]any { return toolset.OpenAI() }

// ToolsJSON is OpenAITools encoded.
func ToolsJSON() json.RawMessage {
	b, _ := json.Marshal(OpenAITools())
	return b
}

// call is a checked call's arguments, decoded (decode).
type call struct {
	shelltool.Call
	Command string
	Timeout time.Duration
	Keys    []string
	Wait    time.Duration
	Path    string
	Content string
}

// decode reads a checked call's arguments; what the schemas cannot say (a
// blank command or path, a wait that is not positive, content over
// MaxWriteBytes) is a *tools.CallError.
func decode(c shelltool.Call) (call, error) {
	d := call{Call: c}
	var err error
	switch c.Name {
	case ToolExec:
		d.Command, d.Timeout, err = toolset.ExecArgs(c)
	case ToolSendKeys:
		var a struct {
			Keys []string `json:"keys"`
			Wait *float64 `json:"wait"`
		}
		if err = toolset.Unmarshal(c, &a); err != nil {
			break
		}
		if len(a.Keys) == 0 {
			return d, toolset.BadArguments(c.Name, `"keys" must be a non-empty array of strings`)
		}
		d.Keys = a.Keys
		d.Wait, err = toolset.Seconds(c, "wait", a.Wait, 0, MaxKeysWait)
	case ToolWrite:
		var a struct{ Path, Content string }
		if err = toolset.Unmarshal(c, &a); err != nil {
			break
		}
		d.Path, d.Content = a.Path, a.Content
		switch {
		case strings.TrimSpace(d.Path) == "":
			err = toolset.BadArguments(c.Name, `"path" is empty`)
		case strings.ContainsRune(d.Path, 0):
			err = toolset.BadArguments(c.Name, `"path" contains a NUL byte`)
		case len(d.Content) > MaxWriteBytes:
			err = toolset.BadArguments(c.Name, fmt.Sprintf(`"content" is %d bytes, more than the %d allowed; write it in parts with shell_exec`,
				len(d.Content), MaxWriteBytes))
		}
	}
	return d, err
}
