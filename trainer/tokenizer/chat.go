package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Message is one chat message in the OpenAI shape. A null content is the
// empty string here.
type Message struct {
	Role             string     `json:"role"`
	Content          string     `json:"content"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	Name             string     `json:"name,omitempty"`
}

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names a function and its arguments: a JSON string holding
// the arguments' JSON (OpenAI's shape), or the arguments' JSON object itself.
type FunctionCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ChatOptions are the template's variables besides messages and tools.
type ChatOptions struct {
	AddGenerationPrompt bool
	// EnableThinking false appends an empty think block after the generation
	// prompt; nil or true leave the template's default (thinking on).
	EnableThinking *bool
}

// The fixed texts of Qwen3's chat template (tokenizer_config.json).
const (
	toolsHeader = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	toolsFooter = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
)

// ApplyChatTemplate renders messages and tools (OpenAI tool objects, each
// kept as its JSON) as Qwen3's chat template does, statement by statement;
// JSON is written as Python's json.dumps writes it there (", " and ": ",
// keys in their order, non-ASCII kept).
func ApplyChatTemplate(messages []Message, tools []json.RawMessage, opt ChatOptions) (string, error) {
	if len(messages) == 0 {
		return "", errors.New("chat template: no messages")
	}
	var b strings.Builder
	if len(tools) > 0 {
		b.WriteString("<|im_start|>system\n")
		if messages[0].Role == "system" {
			b.WriteString(messages[0].Content + "\n\n")
		}
		b.WriteString(toolsHeader)
		for _, t := range tools {
			js, err := PythonJSON(t)
			if err != nil {
				return "", fmt.Errorf("chat template: tool: %w", err)
			}
			b.WriteString("\n" + js)
		}
		b.WriteString(toolsFooter)
	} else if messages[0].Role == "system" {
		b.WriteString("<|im_start|>system\n" + messages[0].Content + "<|im_end|>\n")
	}
	multiStepTool, lastQuery := true, len(messages)-1
	for i := len(messages) - 1; i >= 0; i-- {
		m := messages[i]
		if multiStepTool && m.Role == "user" && !(strings.HasPrefix(m.Content, "<tool_response>") && strings.HasSuffix(m.Content, "</tool_response>")) {
			multiStepTool, lastQuery = false, i
		}
	}
	for i, m := range messages {
		last := i == len(messages)-1
		switch {
		case m.Role == "user" || (m.Role == "system" && i > 0):
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case m.Role == "assistant":
			content, reasoning := m.Content, ""
			if m.ReasoningContent != nil {
				reasoning = *m.ReasoningContent
			} else if strings.Contains(m.Content, "</think>") {
				parts := strings.Split(m.Content, "</think>")
				content = strings.TrimLeft(parts[len(parts)-1], "\n")
				r := strings.Split(strings.TrimRight(parts[0], "\n"), "<think>")
				reasoning = strings.TrimLeft(r[len(r)-1], "\n")
			}
			if i > lastQuery && (last || reasoning != "") {
				b.WriteString("<|im_start|>" + m.Role + "\n<think>\n" + strings.Trim(reasoning, "\n") + "\n</think>\n\n" + strings.TrimLeft(content, "\n"))
			} else {
				b.WriteString("<|im_start|>" + m.Role + "\n" + content)
			}
			for j, tc := range m.ToolCalls {
				if (j == 0 && content != "") || j > 0 {
					b.WriteString("\n")
				}
				args, err := renderArguments(tc.Function.Arguments)
				if err != nil {
					return "", fmt.Errorf("chat template: message %d: tool call %q: %w", i, tc.Function.Name, err)
				}
				b.WriteString("<tool_call>\n{\"name\": \"" + tc.Function.Name + "\", \"arguments\": " + args + "}\n</tool_call>")
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || messages[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if last || messages[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		}
	}
	if opt.AddGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
		if opt.EnableThinking != nil && !*opt.EnableThinking {
			b.WriteString("<think>\n\n</think>\n\n")
		}
	}
	return b.String(), nil
}

// renderArguments is the template's `arguments if arguments is string else
// arguments | tojson`.
func renderArguments(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "{}", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	return PythonJSON(raw)
}

// PythonJSON re-writes a JSON value as Python's json.dumps(x,
// ensure_ascii=False) does: ", " between items, ": " after keys, keys in
// their order, numbers as written, and only ", \, and control characters
// escaped in strings.
func PythonJSON(raw json.RawMessage) (string, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var b strings.Builder
	if err := pyValue(d, &b); err != nil {
		return "", err
	}
	if _, err := d.Token(); err != io.EOF {
		return "", errors.New("json: trailing data")
	}
	return b.String(), nil
}

func pyValue(d *json.Decoder, b *strings.Builder) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			b.WriteByte('{')
			for first := true; d.More(); first = false {
				if !first {
					b.WriteString(", ")
				}
				k, err := d.Token()
				if err != nil {
					return err
				}
				pyString(b, k.(string))
				b.WriteString(": ")
				if err := pyValue(d, b); err != nil {
					return err
				}
			}
			d.Token()
			b.WriteByte('}')
		case '[':
			b.WriteByte('[')
			for first := true; d.More(); first = false {
				if !first {
					b.WriteString(", ")
				}
				if err := pyValue(d, b); err != nil {
					return err
				}
			}
			d.Token()
			b.WriteByte(']')
		}
	case string:
		pyString(b, v)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	}
	return nil
}

func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else if r == utf8.RuneError {
				b.WriteRune(r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// Answer is a model's output split as Qwen3 writes it: reasoning inside
// <think>...</think>, then text, then zero or more <tool_call> blocks.
type Answer struct {
	Reasoning string // without the think tags; empty when there is none
	Content   string // the text outside think and tool-call blocks, trimmed
	ToolCalls []ToolCall
}

// ParseAnswer splits generated text into reasoning, content and tool calls.
// Each <tool_call> block must hold {"name": ..., "arguments": {...}}; when a
// block is unterminated or not such JSON, the text is all content and no
// call is returned (as vLLM's hermes parser does). Arguments come back as a
// JSON string of compact JSON, the OpenAI shape; ids are call_0, call_1, ...
func ParseAnswer(text string) Answer {
	var a Answer
	if i := strings.Index(text, "</think>"); i >= 0 {
		r := text[:i]
		if j := strings.Index(r, "<think>"); j >= 0 {
			r = r[j+len("<think>"):]
		}
		a.Reasoning = strings.Trim(r, "\n")
		text = text[i+len("</think>"):]
	}
	first := strings.Index(text, "<tool_call>")
	if first < 0 {
		a.Content = strings.TrimSpace(text)
		return a
	}
	rest := text[first:]
	var calls []ToolCall
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == "" {
			break
		}
		if !strings.HasPrefix(rest, "<tool_call>") {
			break
		}
		end := strings.Index(rest, "</tool_call>")
		if end < 0 {
			a.Content = strings.TrimSpace(text)
			return a
		}
		body := strings.TrimSpace(rest[len("<tool_call>"):end])
		var call struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(body), &call); err != nil || call.Name == "" {
			a.Content = strings.TrimSpace(text)
			return a
		}
		args := []byte("{}")
		if len(call.Arguments) > 0 && string(call.Arguments) != "null" {
			var buf bytes.Buffer
			if err := json.Compact(&buf, call.Arguments); err == nil {
				args = buf.Bytes()
			}
		}
		quoted, _ := json.Marshal(string(args))
		calls = append(calls, ToolCall{ID: fmt.Sprintf("call_%d", len(calls)), Type: "function", Function: FunctionCall{Name: call.Name, Arguments: quoted}})
		rest = rest[end+len("</tool_call>"):]
	}
	a.Content = strings.TrimSpace(text[:first] + rest)
	a.ToolCalls = calls
	return a
}
