package terminal

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/shelltool"
	"github.com/nextstate-rl/nextstate/gym"
)

func toolCall(id, name, args string) gym.Part {
	return gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: id, Type: "function",
		Function: gym.FunctionCall{Name: name, Arguments: args}}}
}

// parsed is a call as Step sees it (shelltool.Decode); Err is the
// message a bad call is answered with.
type parsed struct {
	call
	Err string
}

func parseAction(a gym.Action, textFinal bool) []parsed {
	calls, bad := shelltool.Decode(toolset, a, textFinal, decode)
	out := make([]parsed, len(calls))
	for i := range calls {
		out[i] = parsed{calls[i], bad[i]}
	}
	return out
}

func TestParseToolCalls(t *testing.T) {
	a := gym.Action{Parts: []gym.Part{
		gym.TextPart("I will look around first."), // a model's words beside tool calls: not a command
		toolCall("c1", "shell_exec", `{"command":"ls -la","timeout":5}`),
		toolCall("c2", "shell_exec", `{"command":"sleep 1"}`),
		toolCall("c3", "shell_send_keys", `{"keys":["vim","Enter"],"wait":0.5}`),
		toolCall("c4", "shell_send_keys", `{"keys":"q"}`),
		toolCall("c5", "shell_view", ``),
		toolCall("c6", "write_file", `{"path":"a/b.txt","content":"hi\n"}`),
		toolCall("c7", "submit", `{}`),
		toolCall("c8", "shell_exec", `{"command":"x","timeout":"90s"}`),
		toolCall("c9", "shell_exec", `{"command":"x","timeout":100000}`),
	}}
	calls := parseAction(a, false)
	if len(calls) != 9 {
		t.Fatalf("%d calls: %+v", len(calls), calls)
	}
	for _, c := range calls {
		if c.Err != "" {
			t.Errorf("%s %s: %s", c.ID, c.Name, c.Err)
		}
	}
	if c := calls[0]; c.Command != "ls -la" || c.Timeout != 5*time.Second || c.ID != "c1" {
		t.Errorf("c1 %+v", c)
	}
	if c := calls[1]; c.Timeout != DefaultCommandTimeout {
		t.Errorf("c2 default timeout %v", c.Timeout)
	}
	if c := calls[2]; strings.Join(c.Keys, ",") != "vim,Enter" || c.Wait != 500*time.Millisecond {
		t.Errorf("c3 %+v", c)
	}
	if c := calls[3]; len(c.Keys) != 1 || c.Keys[0] != "q" {
		t.Errorf("c4 %+v", c)
	}
	if c := calls[5]; c.Path != "a/b.txt" || c.Content != "hi\n" {
		t.Errorf("c6 %+v", c)
	}
	if calls[7].Timeout != 90*time.Second || calls[8].Timeout != MaxCommandTimeout {
		t.Errorf("timeouts %v %v", calls[7].Timeout, calls[8].Timeout)
	}
}

func TestParseBadToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		says       []string
	}{
		{"rm_rf", `{}`, []string{`unknown tool "rm_rf"`, "shell_exec", "write_file", "submit"}},
		{"shell_exec", `{"command": "ls"`, []string{"not valid JSON", `shell_exec {"command": string, "timeout"?: number}`}},
		{"shell_exec", `["ls"]`, []string{"must be a JSON object, not an array"}},
		{"shell_exec", `{}`, []string{`missing property 'command'`, `"command": string`}},
		{"shell_exec", `{"command": null}`, []string{`missing property 'command'`}},
		{"shell_exec", `{"command": 42}`, []string{`at /command: got number, want string`}},
		{"shell_exec", `{"command": "ls", "timeout": "soon"}`, []string{`at /timeout: got string, want number`}},
		{"shell_exec", `{"command": "ls", "timeout": -1}`, []string{`"timeout" must be a positive number`}},
		{"shell_exec", `{"command": "  "}`, []string{`"command" is empty`}},
		{"shell_exec", `{"cmd": "ls"}`, []string{`additional properties 'cmd' not allowed`, `"command": string`}},
		{"shell_exec", `{"command":"a"} {"command":"b"}`, []string{"text after the JSON value"}},
		{"shell_send_keys", `{"keys": []}`, []string{`"keys" must be a non-empty array`}},
		{"shell_send_keys", `{"keys": [1, 2]}`, []string{`at /keys/0: got number, want string`}},
		{"shell_view", `{"full": true}`, []string{`additional properties 'full' not allowed`, "shell_view {} (no parameters)"}},
		{"write_file", `{"path": "x"}`, []string{`missing property 'content'`, `write_file {"content": string, "path": string}`}},
		{"write_file", `{"path": "", "content": ""}`, []string{`"path" is empty`}},
	} {
		calls := parseAction(gym.Action{Parts: []gym.Part{toolCall("id", tc.name, tc.args)}}, false)
		if len(calls) != 1 || calls[0].Err == "" {
			t.Errorf("%s %s: accepted: %+v", tc.name, tc.args, calls)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(calls[0].Err, s) {
				t.Errorf("%s %s: error %q does not say %q", tc.name, tc.args, calls[0].Err, s)
			}
		}
	}
}

func TestParseTextActions(t *testing.T) {
	calls := parseAction(gym.Action{Parts: []gym.Part{gym.TextPart("cd /tmp"), gym.TextPart("pwd")}}, false)
	if len(calls) != 2 || calls[0].Name != ToolExec || !calls[0].Text || calls[1].Command != "pwd" {
		t.Errorf("%+v", calls)
	}
	if calls := parseAction(gym.TextAction("   "), false); calls[0].Err == "" {
		t.Error("an empty command was accepted")
	}
	calls = parseAction(gym.TextAction("I am done."), true)
	if len(calls) != 1 || calls[0].Name != ToolSubmit {
		t.Errorf("final text: %+v", calls)
	}
	// With tool calls, text is the model's words in either mode.
	calls = parseAction(gym.Action{Parts: []gym.Part{gym.TextPart("thinking"), toolCall("c", "shell_view", "{}")}}, true)
	if len(calls) != 1 || calls[0].Name != ToolView {
		t.Errorf("text beside a tool call: %+v", calls)
	}
}

func TestOpenAITools(t *testing.T) {
	var got []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(ToolsJSON(), &got); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, g := range got {
		if g.Type != "function" || g.Function.Parameters["type"] != "object" {
			t.Errorf("%+v", g)
		}
		// Each tool's parameters compile as a JSON Schema.
		b, _ := json.Marshal(g.Function.Parameters)
		if _, err := gym.CompileSchema(b); err != nil {
			t.Errorf("%s: %v", g.Function.Name, err)
		}
		names = append(names, g.Function.Name)
	}
	if strings.Join(names, ",") != "shell_exec,shell_send_keys,shell_view,write_file,submit" {
		t.Errorf("tools %v", names)
	}
}
