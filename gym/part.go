package gym

import "fmt"

// PartType names the kind of a Part. The set is closed: an env kind that needs
// something new gets a new PartType here, with its schema in schema.go.
type PartType string

const (
	PartText       PartType = "text"        // plain text: a shell command, a message, a terminal screen
	PartToolCall   PartType = "tool_call"   // a function call in the OpenAI function-calling shape
	PartToolResult PartType = "tool_result" // the reply to one tool call
	PartGUIAction  PartType = "gui_action"  // a pointer or keyboard action on a screen
	PartImage      PartType = "image"       // a picture, typically a screenshot
	PartFile       PartType = "file"        // a named file's content
)

// PartTypes lists every PartType, in the order the docs present them.
var PartTypes = []PartType{PartText, PartToolCall, PartToolResult, PartGUIAction, PartImage, PartFile}

// Part is one typed piece of an observation or an action. Exactly one of the
// payload fields matching Type is set; the JSON form is flat, for example
//
//	{"type":"text","text":"ls -la"}
//	{"type":"tool_call","tool_call":{"id":"call_1","type":"function","function":{"name":"get_order","arguments":"{\"id\":\"W1\"}"}}}
type Part struct {
	Type       PartType    `json:"type"`
	Text       string      `json:"text,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
	GUIAction  *GUIAction  `json:"gui_action,omitempty"`
	Image      *Blob       `json:"image,omitempty"`
	File       *File       `json:"file,omitempty"`
}

// ToolCall is a function call exactly as OpenAI-compatible chat models emit it,
// so a model's tool_calls array entries can be passed through unchanged.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function half of a ToolCall. Arguments is a JSON text,
// as chat models produce it; it may be malformed, which is the agent's fault.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolResult answers the ToolCall whose ID is CallID.
type ToolResult struct {
	CallID  string `json:"tool_call_id,omitempty"`
	Name    string `json:"name,omitempty"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// GUIAction is one pointer or keyboard action. Action is one of click,
// double_click, right_click, move, drag, type, key, scroll, wait, click_element
// and done; which other fields apply depends on it (see the schema).
type GUIAction struct {
	Action string `json:"action"`
	X      *int   `json:"x,omitempty"`
	Y      *int   `json:"y,omitempty"`
	ToX    *int   `json:"to_x,omitempty"`
	ToY    *int   `json:"to_y,omitempty"`
	Text   string `json:"text,omitempty"`
	Key    string `json:"key,omitempty"`
	DX     int    `json:"dx,omitempty"`
	DY     int    `json:"dy,omitempty"`
	Ms     int    `json:"ms,omitempty"`
	Ref    string `json:"ref,omitempty"`
}

// Blob is binary content, carried inline (Data) or by reference to the
// store's content-addressed blob directory (Ref, "sha256:<hex>"). The store
// moves large inline data to a blob and keeps the reference.
type Blob struct {
	MIME   string `json:"mime"`
	Data   []byte `json:"data,omitempty"` // base64 in JSON
	Ref    string `json:"ref,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
}

// File is a named file's content.
type File struct {
	Path string `json:"path"`
	Blob
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// Observation is what an env shows the agent: a list of parts.
type Observation struct {
	Parts []Part `json:"parts"`
}

// Action is what the agent does: a list of parts. A step may carry several
// parts, for example parallel tool calls.
type Action struct {
	Parts []Part `json:"parts"`
}

// Text joins the text parts of an observation with newlines.
func (o Observation) Text() string { return joinText(o.Parts) }

// Text joins the text parts of an action with newlines.
func (a Action) Text() string { return joinText(a.Parts) }

// TextObservation returns an observation of one text part.
func TextObservation(s string) Observation { return Observation{Parts: []Part{TextPart(s)}} }

// TextAction returns an action of one text part.
func TextAction(s string) Action { return Action{Parts: []Part{TextPart(s)}} }

func joinText(ps []Part) string {
	var n int
	var first string
	for _, p := range ps {
		if p.Type == PartText {
			if n == 0 {
				first = p.Text
			}
			n++
		}
	}
	if n <= 1 {
		return first
	}
	b := make([]byte, 0, 64)
	for _, p := range ps {
		if p.Type == PartText {
			if len(b) > 0 {
				b = append(b, '\n')
			}
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// check verifies the invariant that the payload matches Type. Schemas check
// the same for wire input; this guards parts built in Go.
func (p Part) check() error {
	set := 0
	if p.ToolCall != nil {
		set++
	}
	if p.ToolResult != nil {
		set++
	}
	if p.GUIAction != nil {
		set++
	}
	if p.Image != nil {
		set++
	}
	if p.File != nil {
		set++
	}
	want := 1
	switch p.Type {
	case PartText:
		want = 0
	case PartToolCall:
		if p.ToolCall == nil {
			return fmt.Errorf("part of type %q needs a tool_call field", p.Type)
		}
	case PartToolResult:
		if p.ToolResult == nil {
			return fmt.Errorf("part of type %q needs a tool_result field", p.Type)
		}
	case PartGUIAction:
		if p.GUIAction == nil {
			return fmt.Errorf("part of type %q needs a gui_action field", p.Type)
		}
	case PartImage:
		if p.Image == nil {
			return fmt.Errorf("part of type %q needs an image field", p.Type)
		}
	case PartFile:
		if p.File == nil {
			return fmt.Errorf("part of type %q needs a file field", p.Type)
		}
	default:
		return fmt.Errorf("unknown part type %q (accepted: %v)", p.Type, PartTypes)
	}
	if set != want || (p.Type != PartText && p.Text != "") {
		return fmt.Errorf("part of type %q carries another type's payload", p.Type)
	}
	return nil
}

// orEmpty returns o with a non-nil Parts, so it encodes as {"parts":[]}
// rather than {"parts":null}. Sessions apply it to what envs return.
func (o Observation) orEmpty() Observation {
	if o.Parts == nil {
		o.Parts = []Part{}
	}
	return o
}
