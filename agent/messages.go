package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

// message is one chat message in the OpenAI shape. Content is text, or a
// list of parts when it holds images.
type message struct {
	Role       string
	Text       string
	Parts      []contentPart // set when the content has images
	ToolCalls  []gym.ToolCall
	ToolCallID string
	// nullContent sends "content": null (an assistant message that only
	// calls tools).
	nullContent bool
	// chars and images feed the token estimate.
	chars, images int
}

// contentPart is a text or image_url part of a message's content.
type contentPart struct {
	Type string // "text" or "image_url"
	Text string
	URL  string // a data: URL
	Ref  string // the image's blob path in a run directory, "blobs/<sha>.<ext>"
	W, H int
}

func newMessage(role, text string) message {
	m := message{Role: role, Text: text}
	m.measure()
	return m
}

// measure counts what the estimate needs.
func (m *message) measure() {
	m.chars, m.images = len(m.Text), 0
	for _, p := range m.Parts {
		if p.Type == "image_url" {
			m.images++
		} else {
			m.chars += len(p.Text)
		}
	}
	for _, c := range m.ToolCalls {
		m.chars += len(c.Function.Name) + len(c.Function.Arguments) + 16
	}
}

// encode writes the message as JSON; refs writes images as their blob
// paths instead of data URLs (for trajectory files).
func (m *message) encode(b *bytes.Buffer, refs bool) {
	b.WriteString(`{"role":`)
	writeString(b, m.Role)
	b.WriteString(`,"content":`)
	switch {
	case m.Parts != nil:
		b.WriteByte('[')
		for i, p := range m.Parts {
			if i > 0 {
				b.WriteByte(',')
			}
			if p.Type == "image_url" {
				u := p.URL
				if refs && p.Ref != "" {
					u = p.Ref
				}
				b.WriteString(`{"type":"image_url","image_url":{"url":`)
				writeString(b, u)
				b.WriteString(`}}`)
				continue
			}
			b.WriteString(`{"type":"text","text":`)
			writeString(b, p.Text)
			b.WriteByte('}')
		}
		b.WriteByte(']')
	case m.nullContent:
		b.WriteString("null")
	default:
		writeString(b, m.Text)
	}
	if len(m.ToolCalls) > 0 {
		b.WriteString(`,"tool_calls":`)
		j, _ := json.Marshal(m.ToolCalls) // plain strings: never fails
		b.Write(j)
	}
	if m.ToolCallID != "" {
		b.WriteString(`,"tool_call_id":`)
		writeString(b, m.ToolCallID)
	}
	b.WriteByte('}')
}

func writeString(b *bytes.Buffer, s string) {
	j, _ := json.Marshal(s)
	b.Write(j)
}

// encodeMessages writes a JSON array of messages.
func encodeMessages(ms []message, refs bool) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		ms[i].encode(&b, refs)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func imagePart(b *gym.Blob) contentPart {
	if len(b.Data) == 0 {
		return contentPart{Type: "text", Text: fmt.Sprintf("[image %s not included: it is stored as %s]", b.MIME, b.Ref)}
	}
	return contentPart{
		Type: "image_url", URL: "data:" + b.MIME + ";base64," + base64.StdEncoding.EncodeToString(b.Data),
		Ref: rundir.BlobPath(b.MIME, b.Data), W: b.Width, H: b.Height,
	}
}

// userMessage makes a user message of an observation's text, image and
// file parts (tool results are handled by observe). The tools.json file
// is left out: its tools go in the request's tools.
func userMessage(prefix string, parts []gym.Part) (message, bool) {
	var cps []contentPart
	hasImage := false
	if prefix != "" {
		cps = append(cps, contentPart{Type: "text", Text: prefix})
	}
	for _, p := range parts {
		switch p.Type {
		case gym.PartText:
			if p.Text != "" {
				cps = append(cps, contentPart{Type: "text", Text: p.Text})
			}
		case gym.PartImage:
			cps = append(cps, imagePart(p.Image))
			hasImage = true
		case gym.PartFile:
			if p.File.Path == "tools.json" {
				continue
			}
			cps = append(cps, contentPart{Type: "text", Text: fileText(p.File)})
		case gym.PartToolResult:
			r := p.ToolResult
			cps = append(cps, contentPart{Type: "text", Text: resultText(r)})
		}
	}
	if len(cps) == 0 {
		return message{}, false
	}
	m := message{Role: "user"}
	if hasImage {
		m.Parts = cps
	} else {
		texts := make([]string, len(cps))
		for i, c := range cps {
			texts[i] = c.Text
		}
		m.Text = strings.Join(texts, "\n\n")
	}
	m.measure()
	return m, true
}

func resultText(r *gym.ToolResult) string {
	head := "Result of " + r.Name
	if r.CallID != "" {
		head += " (" + r.CallID + ")"
	}
	if r.IsError {
		head += ", an error"
	}
	return head + ":\n" + r.Content
}

// fileText shows a file part: its text when it is text, else its name,
// type and size.
func fileText(f *gym.File) string {
	if len(f.Data) > 0 && utf8.Valid(f.Data) && !bytes.ContainsRune(f.Data, 0) {
		return "File " + f.Path + ":\n" + string(f.Data)
	}
	size := f.Size
	if size == 0 {
		size = int64(len(f.Data))
	}
	return fmt.Sprintf("[file %s, %s, %d bytes]", f.Path, f.MIME, size)
}

// observe turns a step's observation into the messages that follow the
// assistant message that acted. calls are that message's tool calls; each
// is answered by a tool message: its tool_result part, else (a GUI env
// answers with a new screen) the observation's text. Images go in a user
// message after the tool messages, where chat APIs accept them. With
// plain set the assistant message was written as text, and results are
// shown in a user message.
func observe(obs gym.Observation, calls []gym.ToolCall, plain bool) []message {
	if plain || len(calls) == 0 {
		m, ok := userMessage("", obs.Parts)
		if !ok {
			m = newMessage("user", "(the environment showed nothing new)")
		}
		return []message{m}
	}
	results := map[string]*gym.ToolResult{}
	var inOrder []*gym.ToolResult
	var rest []gym.Part
	for _, p := range obs.Parts {
		if p.Type == gym.PartToolResult {
			results[p.ToolResult.CallID] = p.ToolResult
			inOrder = append(inOrder, p.ToolResult)
			continue
		}
		rest = append(rest, p)
	}
	var out []message
	usedText := false
	for i, c := range calls {
		r := results[c.ID]
		if r == nil && len(results) == 0 && i < len(inOrder) {
			r = inOrder[i]
		}
		var content string
		switch {
		case r != nil:
			content = r.Content
			if r.IsError && !strings.HasPrefix(strings.ToLower(content), "error") {
				content = "Error: " + content
			}
		case !usedText:
			content = textOf(rest)
			usedText = true
			if content == "" {
				content = "Done; the new state follows."
			}
		default:
			content = "Done; the new state follows."
		}
		m := message{Role: "tool", Text: content, ToolCallID: c.ID}
		m.measure()
		out = append(out, m)
	}
	if usedText {
		rest = withoutText(rest)
	}
	if m, ok := userMessage("", rest); ok {
		out = append(out, m)
	}
	return out
}

func textOf(parts []gym.Part) string {
	var s []string
	for _, p := range parts {
		if p.Type == gym.PartText && p.Text != "" {
			s = append(s, p.Text)
		}
	}
	return strings.Join(s, "\n")
}

func withoutText(parts []gym.Part) []gym.Part {
	var out []gym.Part
	for _, p := range parts {
		if p.Type != gym.PartText {
			out = append(out, p)
		}
	}
	return out
}

// firstMessage is the user message that opens an episode: the reset
// observation, led by the instruction when the observation has no text.
func firstMessage(reset gym.ResetResult) message {
	prefix := ""
	if textOf(reset.Observation.Parts) == "" {
		prefix = reset.Instruction
	}
	m, ok := userMessage(prefix, reset.Observation.Parts)
	if !ok {
		return newMessage("user", "Begin.")
	}
	return m
}

// ToolsFor returns the tools to offer a model in an episode, in the
// OpenAI "tools" shape: the reset info's (gym.InfoTools), else a
// tools.json file in the reset observation. Nil means the model acts in
// plain text.
func ToolsFor(reset gym.ResetResult) (json.RawMessage, error) {
	tools, listed, err := reset.Info.Tools()
	if err != nil {
		return nil, fmt.Errorf("reset info: %w", err)
	}
	if listed {
		return json.Marshal(tools)
	}
	for _, p := range reset.Observation.Parts {
		if p.Type == gym.PartFile && p.File.Path == "tools.json" && len(p.File.Data) > 0 {
			if _, _, err := (gym.Info{gym.InfoTools: json.RawMessage(p.File.Data)}).Tools(); err != nil {
				return nil, fmt.Errorf("tools.json in the reset observation: %w", err)
			}
			return json.RawMessage(p.File.Data), nil
		}
	}
	return nil, nil
}

// decision is what the agent makes of one model reply.
type decision struct {
	action    gym.Action
	calls     []gym.ToolCall
	assistant message // the reply as it goes into the history
	plain     bool    // the assistant message is written as text
	response  string  // Turn.Response
}

var (
	toolCallRE = regexp.MustCompile(`(?s)<tool_call>(.*?)(?:</tool_call>|\z)`)
	nameRE     = regexp.MustCompile(`"name"\s*:\s*"((?:[^"\\]|\\.)*)"`)
)

// decide turns a reply into an action: the native tool_calls; else the
// <tool_call>{"name":..., "arguments":...}</tool_call> blocks in the text
// (Qwen and Hermes style); else the text itself. A call's arguments go to
// the env as the model wrote them, malformed or not, for the env to
// answer with its error. Call ids the model left out are assigned
// (call_<turn>_<i>) so tool messages can answer them.
func decide(r reply, turn int) decision {
	visible := stripThink(r.Content)
	var d decision
	text := visible
	native := len(r.ToolCalls) > 0
	if native {
		for _, c := range r.ToolCalls {
			d.calls = append(d.calls, gym.ToolCall{ID: c.ID, Type: "function",
				Function: gym.FunctionCall{Name: c.Function.Name, Arguments: c.arguments()}})
		}
	} else if locs := toolCallRE.FindAllStringSubmatchIndex(visible, -1); len(locs) > 0 {
		var rest strings.Builder
		prev := 0
		for _, l := range locs {
			rest.WriteString(visible[prev:l[0]])
			prev = l[1]
			d.calls = append(d.calls, parseTextCall(visible[l[2]:l[3]]))
		}
		rest.WriteString(visible[prev:])
		text = rest.String()
	}
	text = strings.TrimSpace(text)
	for i := range d.calls {
		if d.calls[i].ID == "" {
			d.calls[i].ID = "call_" + strconv.Itoa(turn) + "_" + strconv.Itoa(i)
		}
	}
	d.response = r.Content
	if native {
		d.response = strings.TrimRight(r.Content, "\n") + hermes(d.calls)
	}
	if len(d.calls) == 0 {
		d.action = gym.TextAction(text)
		d.assistant = newMessage("assistant", text)
		return d
	}
	for _, c := range d.calls {
		d.action.Parts = append(d.action.Parts, gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			ID: c.ID, Type: "function", Function: c.Function}})
		if c.Function.Name == "" || !isObject(c.Function.Arguments) {
			d.plain = true
		}
	}
	if d.plain {
		// Calls that are not well formed cannot go back to a chat server
		// as structured tool_calls: keep the reply as the text it was.
		d.assistant = newMessage("assistant", strings.TrimSpace(stripThink(d.response)))
		return d
	}
	d.assistant = message{Role: "assistant", Text: text, ToolCalls: d.calls, nullContent: text == ""}
	d.assistant.measure()
	return d
}

// parseTextCall reads the inside of a <tool_call> block. Malformed JSON
// still makes a call, with the name if one can be found and the raw text
// as its arguments, so that the env answers with its error.
func parseTextCall(inner string) gym.ToolCall {
	inner = strings.TrimSpace(inner)
	var c struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(inner), &c); err == nil && c.Name != "" {
		args := c.Arguments
		if len(args) == 0 {
			args = c.Parameters
		}
		return gym.ToolCall{Type: "function", Function: gym.FunctionCall{Name: c.Name, Arguments: argText(args)}}
	}
	name := ""
	if m := nameRE.FindStringSubmatch(inner); m != nil {
		name, _ = strconv.Unquote(`"` + m[1] + `"`)
	}
	return gym.ToolCall{Type: "function", Function: gym.FunctionCall{Name: name, Arguments: inner}}
}

// argText is a call's arguments as JSON text: a JSON string is unquoted
// (some models write the arguments as a string), anything else compacted.
func argText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

func isObject(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "{") && json.Valid([]byte(s))
}

// hermes writes native tool calls as Hermes-style text, so that a turn's
// response text shows them.
func hermes(calls []gym.ToolCall) string {
	var b strings.Builder
	for _, c := range calls {
		args := json.RawMessage(c.Function.Arguments)
		if !json.Valid(args) {
			j, _ := json.Marshal(c.Function.Arguments)
			args = j
		}
		j, _ := json.Marshal(struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{c.Function.Name, args})
		b.WriteString("\n<tool_call>\n")
		b.Write(j)
		b.WriteString("\n</tool_call>")
	}
	return b.String()
}

// stripThink removes reasoning written in the content: <think>...</think>
// blocks, and everything up to a lone </think> (templates that open the
// block in the prompt).
func stripThink(s string) string {
	for {
		i := strings.Index(s, "<think>")
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], "</think>")
		if j < 0 {
			return strings.TrimSpace(s[:i])
		}
		s = s[:i] + s[i+j+len("</think>"):]
	}
	if j := strings.Index(s, "</think>"); j >= 0 {
		s = s[j+len("</think>"):]
	}
	return strings.TrimSpace(s)
}
