package rl

import (
	"encoding/json"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// ChatMessage is an OpenAI chat message as agents and chat clients send it:
// content is a string or a list of parts. FromChat turns such messages into
// a sample's Messages.
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []gym.ToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// FromChat converts chat messages to Messages; content given as parts
// keeps its text, with "[image]" for each image (ContentText).
func FromChat(in []ChatMessage) []Message {
	out := make([]Message, 0, len(in))
	for _, m := range in {
		out = append(out, Message{Role: m.Role, Content: ContentText(m.Content), Name: m.Name,
			ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID})
	}
	return out
}

// ContentText reads a chat message's content: a string as it is; a list of
// parts as their text joined, with "[image]" for each image part; anything
// else as its JSON text.
func ContentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, p := range parts {
		switch {
		case p.Type == "text":
			b.WriteString(p.Text)
		case strings.Contains(p.Type, "image"):
			b.WriteString("[image]")
		}
	}
	return b.String()
}

// MessageText is a message as a judge reads it: its content, then each
// tool call on a line of its own as <tool_call>name arguments</tool_call>.
func MessageText(m Message) string {
	s := m.Content
	for _, tc := range m.ToolCalls {
		s += "\n<tool_call>" + tc.Function.Name + " " + tc.Function.Arguments + "</tool_call>"
	}
	return s
}
