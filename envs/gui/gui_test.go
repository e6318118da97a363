package gui

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func ip(v int) *int { return &v }

func TestParseAction(t *testing.T) {
	part := gym.Part{Type: gym.PartGUIAction, GUIAction: &gym.GUIAction{Action: "click", X: ip(3), Y: ip(4)}}
	g, err := ParseAction(gym.Action{Parts: []gym.Part{part}})
	if err != nil || g.Action != "click" || *g.X != 3 || *g.Y != 4 {
		t.Fatalf("gui_action part: %+v, %v", g, err)
	}
	call := func(name, args string) gym.Action {
		return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			ID: "c", Type: "function", Function: gym.FunctionCall{Name: name, Arguments: args}}}}}
	}
	g, err = ParseAction(call(ToolName, `{"action":"drag","x":1,"y":2,"to_x":30,"to_y":40}`))
	if err != nil || g.Action != "drag" || *g.ToX != 30 {
		t.Fatalf("computer call: %+v, %v", g, err)
	}
	for name, c := range map[string]struct {
		a    gym.Action
		says string
	}{
		"two parts":      {gym.Action{Parts: []gym.Part{part, part}}, "exactly one action part"},
		"other tool":     {call("browser", `{}`), `the only tool is "computer"`},
		"not JSON":       {call(ToolName, `{"action":`), "not a valid action"},
		"unknown field":  {call(ToolName, `{"action":"click","x":1,"y":1,"z":2}`), "not a valid action"},
		"missing coords": {call(ToolName, `{"action":"click"}`), "click needs x and y"},
		"text part":      {gym.TextAction("click"), "got a text part"},
	} {
		_, err := ParseAction(c.a)
		var fe *gym.FaultError
		if err == nil || !errors.As(err, &fe) || fe.Fault != gym.FaultAgent || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: err = %v, want an agent fault saying %q", name, err, c.says)
		}
	}
}

func TestCheck(t *testing.T) {
	good := []gym.GUIAction{
		{Action: "click", X: ip(0), Y: ip(0)}, {Action: "move", X: ip(1), Y: ip(1)},
		{Action: "type", Text: "hi"}, {Action: "key", Key: "ctrl+a"}, {Action: "scroll", DY: 100},
		{Action: "wait", Ms: 500}, {Action: "click_element", Ref: "e1"}, {Action: "done"},
	}
	for _, g := range good {
		if err := Check(g); err != nil {
			t.Errorf("%+v: %v", g, err)
		}
	}
	bad := map[string]gym.GUIAction{
		"drag needs x, y, to_x and to_y": {Action: "drag", X: ip(1), Y: ip(1)},
		"type needs a non-empty text":    {Action: "type"},
		"at most 4096":                   {Action: "type", Text: strings.Repeat("x", MaxTypeLen+1)},
		"key needs":                      {Action: "key"},
		"scroll needs dx or dy":          {Action: "scroll"},
		"want 0..10000":                  {Action: "wait", Ms: 20000},
		"click_element needs a ref":      {Action: "click_element"},
		`unknown action "jump"`:          {Action: "jump"},
	}
	for says, g := range bad {
		if err := Check(g); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%+v: err = %v, want %q", g, err, says)
		}
	}
}

func TestGridAndBounds(t *testing.T) {
	g := ToPixels(gym.GUIAction{Action: "drag", X: ip(0), Y: ip(999), ToX: ip(500), ToY: ip(250)}, 160, 210)
	if *g.X != 0 || *g.Y != 209 || *g.ToX != 80 || *g.ToY != 52 {
		t.Errorf("grid to pixels: (%d,%d)->(%d,%d)", *g.X, *g.Y, *g.ToX, *g.ToY)
	}
	if g := ToPixels(gym.GUIAction{Action: "type", Text: "a"}, 10, 10); g.X != nil {
		t.Error("an action without coordinates got some")
	}
	if err := InBounds(gym.GUIAction{Action: "click", X: ip(159), Y: ip(209)}, 160, 210); err != nil {
		t.Error(err)
	}
	if err := InBounds(gym.GUIAction{Action: "click", X: ip(160), Y: ip(0)}, 160, 210); err == nil || !strings.Contains(err.Error(), "outside the 160x210 screen") {
		t.Errorf("off screen: %v", err)
	}
}

func TestElementsFrom(t *testing.T) {
	els := []Element{{Ref: "e1", Tag: "button", Text: "OK", X: 10, Y: 20, W: 30, H: 10}}
	if got := ElementsFrom(gym.Info{InfoElements: els}); len(got) != 1 || got[0].Ref != "e1" {
		t.Errorf("in process: %+v", got)
	}
	// From the wire: decoded JSON.
	b, _ := json.Marshal(gym.Info{InfoElements: els})
	var info gym.Info
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	got := ElementsFrom(info)
	if len(got) != 1 || got[0].Text != "OK" {
		t.Fatalf("from JSON: %+v", got)
	}
	if x, y := got[0].Center(); x != 25 || y != 25 {
		t.Errorf("center = (%d,%d)", x, y)
	}
	if ElementsFrom(gym.Info{}) != nil {
		t.Error("no elements gave some")
	}
}

func TestToolSchemaCompiles(t *testing.T) {
	fn := Tool()["function"].(map[string]any)
	if _, err := gym.CompileSchema(fn["parameters"].(json.RawMessage)); err != nil {
		t.Fatal(err)
	}
	if _, err := gym.CompileSchema(ActionSchema()); err != nil {
		t.Fatal(err)
	}
}
