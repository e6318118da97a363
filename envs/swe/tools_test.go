package swe

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/shelltool"
	"github.com/nextstate-rl/nextstate/gym"
)

func tc(name, args string) *gym.ToolCall {
	return &gym.ToolCall{ID: "c1", Type: "function", Function: gym.FunctionCall{Name: name, Arguments: args}}
}

// parsed is a call as Step sees it (shelltool.Decode); Err is the
// message a bad call is answered with.
type parsed struct {
	call
	Err string
}

func parseAction(a gym.Action) []parsed {
	calls, bad := shelltool.Decode(toolset, a, false, decode)
	out := make([]parsed, len(calls))
	for i := range calls {
		out[i] = parsed{calls[i], bad[i]}
	}
	return out
}

func parseToolCall(c *gym.ToolCall) parsed {
	return parseAction(gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: c}}})[0]
}

func TestParseToolCall(t *testing.T) {
	for _, c := range []struct {
		name, args, err string
	}{
		{"shell_exec", `{"command":"ls"}`, ""},
		{"shell_exec", `{"command":"ls","timeout":5}`, ""},
		{"shell_exec", ``, `missing property 'command'`},
		{"shell_exec", `{"command":" "}`, `"command" is empty`},
		{"shell_exec", `{"command":"ls","timeout":-1}`, `"timeout" must be a positive number`},
		{"shell_exec", `{"command":"ls","cwd":"/"}`, `additional properties 'cwd' not allowed`},
		{"shell_exec", `{"command":`, `the arguments of shell_exec are not valid JSON`},
		{"submit", `{}`, ""},
		{"submit", ``, ""},
		{"open_file", `{}`, `unknown tool "open_file". The tools are: shell_exec, str_replace_based_edit_tool, submit`},
		{ToolEditor, `{"command":"view","path":"/testbed"}`, ""},
		{ToolEditor, `{"command":"view"}`, `missing property 'path'`},
		{ToolEditor, `{"command":"view","path":"/a","view_range":[1]}`, "view_range must be two integers"},
		{ToolEditor, `{"command":"view","path":"/a","view_range":["1","2"]}`, "at /view_range/0: got string, want integer"},
		{ToolEditor, `{"command":"insert","path":"/a","new_str":"x"}`, `parameter "insert_line" is required`},
		{ToolEditor, `{"command":"create","path":"/a"}`, `parameter "file_text" is required`},
		{ToolEditor, `{"command":"str_replace","path":"/a","old_str":""}`, "old_str is empty"},
		{ToolEditor, `{"command":"str_replace","path":"src/a.py","old_str":"x"}`, "did you mean /testbed/src/a.py?"},
		{ToolEditor, `{"command":"rename","path":"/a"}`, `at /command: value must be one of 'view', 'create', 'str_replace', 'insert', 'undo_edit'`},
	} {
		got := parseToolCall(tc(c.name, c.args))
		if c.err == "" && got.Err != "" || c.err != "" && !strings.Contains(got.Err, c.err) {
			t.Errorf("%s %s: %q, want %q", c.name, c.args, got.Err, c.err)
		}
	}
	if c := parseToolCall(tc("shell_exec", `{"command":"ls","timeout":99999}`)); c.Timeout != MaxCommandTimeout {
		t.Errorf("timeout cap: %v", c.Timeout)
	}
	if c := parseToolCall(tc("shell_exec", `{"command":"ls","timeout":1.5}`)); c.Timeout != 1500*time.Millisecond {
		t.Errorf("timeout: %v", c.Timeout)
	}
	// Text parts: commands alone, the model's words beside tool calls.
	calls := parseAction(gym.Action{Parts: []gym.Part{gym.TextPart("ls"), gym.TextPart("  ")}})
	if len(calls) != 2 || calls[0].Command != "ls" || !calls[0].Text || calls[1].Err == "" {
		t.Errorf("text parts: %+v", calls)
	}
	calls = parseAction(gym.Action{Parts: []gym.Part{gym.TextPart("I will look"), {Type: gym.PartToolCall, ToolCall: tc("submit", "{}")}}})
	if len(calls) != 1 || calls[0].Name != ToolSubmit {
		t.Errorf("words and a call: %+v", calls)
	}
}

// The tool schemas are the OpenAI tools shape and valid JSON Schema.
func TestOpenAITools(t *testing.T) {
	tools := OpenAITools()
	if len(tools) != 3 {
		t.Fatalf("%d tools", len(tools))
	}
	for _, tool := range tools {
		fn := tool["function"].(map[string]any)
		b, _ := json.Marshal(fn["parameters"])
		if _, err := gym.CompileSchema(b); err != nil {
			t.Errorf("%s: %v", fn["name"], err)
		}
	}
	ed := tools[1]["function"].(map[string]any)
	if ed["name"] != "str_replace_based_edit_tool" || !strings.Contains(ed["description"].(string), "undo_edit") {
		t.Errorf("editor tool: %v", ed)
	}
}
