// Package gui holds what the GUI envs share: the one action tool that
// computer-use models emit (click, double_click, right_click, move, drag,
// type, key, scroll, wait, click_element, done), its checking and its
// coordinate grid, the Screen interface both kinds of screen implement (a
// browser page in package gui/browser, an X display in gui/desktop), and
// the Element a page lists for click_element.
//
// An action arrives either as a gym gui_action part or as a tool call of
// the "computer" tool (ToolName) whose arguments are the same fields, so a
// model's tool call goes straight in. Coordinates are the screenshot's
// pixels; a session that asks for the grid (reset option "coords": "grid")
// sends them on a 0..999 grid over the screenshot instead, and ToPixels
// maps them.
package gui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// ToolName is the name of the action tool, for actions sent as tool calls.
const ToolName = "computer"

// GridSize is the grid's extent: grid coordinates are 0..GridSize-1.
const GridSize = 1000

// MaxWait caps a wait action.
const MaxWait = 10 * time.Second

// MaxTypeLen caps a type action's text.
const MaxTypeLen = 4096

// Screen is a surface actions act on. Coordinates are pixels of the
// screenshot. Methods are called from one goroutine at a time.
type Screen interface {
	// Size is the screenshot's size in pixels.
	Size() (width, height int)
	// Click presses and releases a button ("left", "right", "middle")
	// count times at (x, y).
	Click(ctx context.Context, x, y int, button string, count int) error
	// Move moves the pointer.
	Move(ctx context.Context, x, y int) error
	// Drag presses the left button at (x0, y0), moves to (x1, y1) in steps,
	// and releases it.
	Drag(ctx context.Context, x0, y0, x1, y1 int) error
	// Type types text as keystrokes.
	Type(ctx context.Context, text string) error
	// Key presses a combination such as "Enter", "ctrl+a", "shift+Tab".
	Key(ctx context.Context, combo string) error
	// Scroll scrolls by (dx, dy) pixels with the pointer at (x, y).
	Scroll(ctx context.Context, x, y, dx, dy int) error
	// Screenshot returns the screen as PNG.
	Screenshot(ctx context.Context) ([]byte, error)
}

// Element is one visible element of a page, as listed for click_element:
// Ref is what click_element names; the box is in screenshot pixels.
type Element struct {
	Ref         string `json:"ref"`
	Tag         string `json:"tag"`
	ID          string `json:"id,omitempty"`
	Classes     string `json:"classes,omitempty"`
	Type        string `json:"type,omitempty"` // an input's type
	Name        string `json:"name,omitempty"`
	Text        string `json:"text,omitempty"`
	Value       string `json:"value,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
	Href        string `json:"href,omitempty"`
	Checked     bool   `json:"checked,omitempty"`
	Selected    bool   `json:"selected,omitempty"` // an <option>
	Disabled    bool   `json:"disabled,omitempty"`
	X           int    `json:"x"`
	Y           int    `json:"y"`
	W           int    `json:"w"`
	H           int    `json:"h"`
}

// Center is the element's centre.
func (e Element) Center() (int, int) { return e.X + e.W/2, e.Y + e.H/2 }

// Tool returns the action tool in the OpenAI "tools" shape.
func Tool() map[string]any {
	return map[string]any{"type": "function", "function": map[string]any{
		"name": ToolName,
		"description": "Act on the screen. action is one of: click, double_click, right_click, move {x, y}; " +
			"drag {x, y, to_x, to_y}; type {text}; key {key} (a combination such as Enter, ctrl+a, shift+Tab); " +
			"scroll {x, y, dx, dy} (pixels; dy > 0 scrolls down); wait {ms}; click_element {ref} (a ref from the " +
			"element list); done (you are finished). Coordinates are the screenshot's pixels, or a 0..999 grid " +
			"when the session uses the grid.",
		"parameters": json.RawMessage(`{"type":"object","required":["action"],"additionalProperties":false,"properties":{` +
			`"action":{"type":"string","enum":["click","double_click","right_click","move","drag","type","key","scroll","wait","click_element","done"]},` +
			`"x":{"type":"integer"},"y":{"type":"integer"},"to_x":{"type":"integer"},"to_y":{"type":"integer"},` +
			`"text":{"type":"string"},"key":{"type":"string"},"dx":{"type":"integer"},"dy":{"type":"integer"},` +
			`"ms":{"type":"integer","minimum":0},"ref":{"type":"string"}}}`),
	}}
}

// ActionSchema is the action schema of a GUI kind: one gui_action part or
// one tool_call part (the "computer" tool).
func ActionSchema() json.RawMessage {
	return gym.PartsSchema(1, 1, gym.PartGUIAction, gym.PartToolCall)
}

// ParseAction reads the single action of a step, from a gui_action part or
// a "computer" tool call. A wrong tool name or malformed arguments are the
// agent's fault (gym.AgentFault), with a message saying what is accepted.
func ParseAction(a gym.Action) (gym.GUIAction, error) {
	if len(a.Parts) != 1 {
		return gym.GUIAction{}, gym.AgentFault("bad_action", fmt.Errorf("want exactly one action part, got %d", len(a.Parts)))
	}
	p := a.Parts[0]
	switch {
	case p.GUIAction != nil:
		return *p.GUIAction, Check(*p.GUIAction)
	case p.ToolCall != nil:
		if p.ToolCall.Function.Name != ToolName {
			return gym.GUIAction{}, gym.AgentFault("unknown_tool", fmt.Errorf(
				"unknown tool %q: the only tool is %q {action, x, y, ...}", p.ToolCall.Function.Name, ToolName))
		}
		var g gym.GUIAction
		dec := json.NewDecoder(strings.NewReader(p.ToolCall.Function.Arguments))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&g); err != nil {
			return gym.GUIAction{}, gym.AgentFault("bad_arguments", fmt.Errorf(
				"the arguments of %s are not a valid action (%v): want a JSON object such as {\"action\":\"click\",\"x\":10,\"y\":20}", ToolName, err))
		}
		return g, Check(g)
	}
	return gym.GUIAction{}, gym.AgentFault("bad_action", fmt.Errorf("want a gui_action part or a %q tool call, got a %s part", ToolName, p.Type))
}

// Check verifies that an action has the fields its kind needs.
func Check(g gym.GUIAction) error {
	bad := func(format string, args ...any) error {
		return gym.AgentFault("bad_action", fmt.Errorf(format, args...))
	}
	switch g.Action {
	case "click", "double_click", "right_click", "move":
		if g.X == nil || g.Y == nil {
			return bad("%s needs x and y", g.Action)
		}
	case "drag":
		if g.X == nil || g.Y == nil || g.ToX == nil || g.ToY == nil {
			return bad("drag needs x, y, to_x and to_y")
		}
	case "type":
		if g.Text == "" {
			return bad("type needs a non-empty text")
		}
		if len(g.Text) > MaxTypeLen {
			return bad("type's text is %d bytes; at most %d", len(g.Text), MaxTypeLen)
		}
	case "key":
		if g.Key == "" {
			return bad("key needs a key combination such as Enter or ctrl+a")
		}
	case "scroll":
		if g.DX == 0 && g.DY == 0 {
			return bad("scroll needs dx or dy")
		}
	case "wait":
		if g.Ms < 0 || time.Duration(g.Ms)*time.Millisecond > MaxWait {
			return bad("wait's ms is %d; want 0..%d", g.Ms, MaxWait.Milliseconds())
		}
	case "click_element":
		if g.Ref == "" {
			return bad("click_element needs a ref from the element list")
		}
	case "done":
	default:
		return bad("unknown action %q; want one of click, double_click, right_click, move, drag, type, key, scroll, wait, click_element, done", g.Action)
	}
	return nil
}

// ToPixels maps an action's grid coordinates (0..GridSize-1) to pixels of
// a width×height screenshot. Pixel actions pass through unchanged.
func ToPixels(g gym.GUIAction, width, height int) gym.GUIAction {
	scale := func(p *int, extent int) *int {
		if p == nil {
			return nil
		}
		v := *p * extent / GridSize
		v = max(0, min(extent-1, v))
		return &v
	}
	g.X, g.ToX = scale(g.X, width), scale(g.ToX, width)
	g.Y, g.ToY = scale(g.Y, height), scale(g.ToY, height)
	return g
}

// InBounds reports an agent error for coordinates outside the screen.
func InBounds(g gym.GUIAction, width, height int) error {
	for _, p := range [][2]*int{{g.X, g.Y}, {g.ToX, g.ToY}} {
		if p[0] == nil || p[1] == nil {
			continue
		}
		if *p[0] < 0 || *p[1] < 0 || *p[0] >= width || *p[1] >= height {
			return gym.AgentFault("bad_action", fmt.Errorf("point (%d, %d) is outside the %dx%d screen", *p[0], *p[1], width, height))
		}
	}
	return nil
}

// Apply performs a pointer or keyboard action on s: every action but wait,
// click_element and done, which the kinds handle (a wait needs no screen;
// click_element needs the element list). Coordinates are pixels.
func Apply(ctx context.Context, s Screen, g gym.GUIAction) error {
	switch g.Action {
	case "click":
		return s.Click(ctx, *g.X, *g.Y, "left", 1)
	case "double_click":
		return s.Click(ctx, *g.X, *g.Y, "left", 2)
	case "right_click":
		return s.Click(ctx, *g.X, *g.Y, "right", 1)
	case "move":
		return s.Move(ctx, *g.X, *g.Y)
	case "drag":
		return s.Drag(ctx, *g.X, *g.Y, *g.ToX, *g.ToY)
	case "type":
		return s.Type(ctx, g.Text)
	case "key":
		return s.Key(ctx, g.Key)
	case "scroll":
		x, y := 0, 0
		if g.X != nil && g.Y != nil {
			x, y = *g.X, *g.Y
		} else {
			w, h := s.Size()
			x, y = w/2, h/2
		}
		return s.Scroll(ctx, x, y, g.DX, g.DY)
	}
	return fmt.Errorf("gui: Apply does not handle %q", g.Action)
}

// InfoElements is the info key under which a page's elements are listed
// ([]Element), when the session asked for them.
const InfoElements = "elements"

// ElementsFrom reads the element list from an observation's info, whether
// it holds []Element (in process) or decoded JSON (from the wire).
func ElementsFrom(info gym.Info) []Element {
	switch v := info[InfoElements].(type) {
	case nil:
		return nil
	case []Element:
		return v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var out []Element
		if json.Unmarshal(b, &out) != nil {
			return nil
		}
		return out
	}
}
