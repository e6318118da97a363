package webtasks_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/gym"
)

// Wrong play for every task, with the outcome the page must give it: a
// wrong final action ends the episode with -1; an action that is not final
// (a single click on a tile, a drop beside every zone) ends nothing and
// leaves the reward at 0.

type policy = func(instr string, els []gui.Element) (gym.GUIAction, error)

type wrongCase struct {
	task, name string
	play       func() policy
	ends       bool    // the episode ends
	raw        float64 // WOB_RAW_REWARD_GLOBAL afterwards
}

var wrongCases = []wrongCase{
	{"click-button", "another button", once(clickWhere(func(in string, e gui.Element) bool { return isTag(e, "button") && e.Text != q0(in) })), true, -1},
	{"click-link", "another link", once(clickWhere(func(in string, e gui.Element) bool { return isTag(e, "a") && e.Text != q0(in) })), true, -1},
	{"click-checkboxes", "submit at once", once(clickText("Submit")), true, -1},
	{"choose-radio", "submit the preselected one", once(clickText("Submit")), true, -1},
	{"click-tab", "a button of the open tab", once(clickWhere(func(_ string, e gui.Element) bool { return hasClass(e, "item") })), true, -1},
	{"double-click", "another tile", once(func(in string, els []gui.Element) (gym.GUIAction, error) {
		return act("double_click", els, func(e gui.Element) bool { return hasClass(e, "tile") && e.Text != q0(in) })
	}), true, -1},
	{"double-click", "a single click only selects", once(clickWhere(func(in string, e gui.Element) bool { return hasClass(e, "tile") && e.Text == q0(in) })), false, 0},
	{"right-click-menu", "the action on another file", seq(
		func(in string, els []gui.Element) (gym.GUIAction, error) {
			return act("right_click", els, func(e gui.Element) bool { return hasClass(e, "file") && e.Text != q0(in) })
		},
		func(in string, els []gui.Element) (gym.GUIAction, error) {
			return act("click", els, func(e gui.Element) bool { return isTag(e, "button") && e.Text == quotedAll(in)[1] })
		}), true, -1},
	{"enter-text", "submit an empty box", once(clickText("Submit")), true, -1},
	{"copy-text", "a made-up code", seq(clickWhere(isText), typeFixed("ABC-123"), clickText("Submit")), true, -1},
	{"enter-date", "another date", seq(clickWhere(isText), typeFixed("01/01/1900"), clickText("Submit")), true, -1},
	{"login-form", "a wrong password", seq(clickWhere(isText), typeWith(q0), clickWhere(func(_ string, e gui.Element) bool { return e.Type == "password" }),
		typeFixed("wrong"), func(string, []gui.Element) (gym.GUIAction, error) {
			return gym.GUIAction{Action: "key", Key: "Enter"}, nil
		}), true, -1},
	{"choose-dropdown", "submit without choosing", once(clickText("Submit")), true, -1},
	{"search-select", "a result of the same name", seq(clickWhere(isText),
		typeWith(func(in string) string { n, _, _ := strings.Cut(q0(in), ","); return n }),
		clickWhere(func(in string, e gui.Element) bool { return hasClass(e, "result") && e.Text != q0(in) })), true, -1},
	{"toggle-switch", "save at once", once(clickText("Save")), true, -1},
	{"slider-set", "submit the starting value", once(clickText("Submit")), true, -1},
	{"drag-box", "onto another zone", once(func(in string, els []gui.Element) (gym.GUIAction, error) {
		box, ok := find(els, func(e gui.Element) bool { return hasClass(e, "box") })
		zone, ok2 := find(els, func(e gui.Element) bool { return hasClass(e, "zone") && e.Text != q0(in) })
		if !ok || !ok2 {
			return gym.GUIAction{}, fmt.Errorf("no box or no other zone")
		}
		return drag(box, zone), nil
	}), true, -1},
	{"drag-box", "a drop beside every zone", once(func(_ string, els []gui.Element) (gym.GUIAction, error) {
		box, ok := find(els, func(e gui.Element) bool { return hasClass(e, "box") })
		if !ok {
			return gym.GUIAction{}, fmt.Errorf("no box")
		}
		to := box
		to.Y += 2
		return drag(box, to), nil
	}), false, 0},
	{"scroll-find", "the first entry, without scrolling", once(clickWhere(func(_ string, e gui.Element) bool { return hasClass(e, "entry") })), true, -1},
	{"multi-page-checkout", "the wrong product", seq(
		func(in string, els []gui.Element) (gym.GUIAction, error) {
			other, ok := find(els, func(e gui.Element) bool { return hasClass(e, "pname") && e.Text != q0(in) })
			if !ok {
				return gym.GUIAction{}, fmt.Errorf("no other product")
			}
			return act("click", els, func(e gui.Element) bool {
				return isTag(e, "button") && e.Text == "Add" && e.Y < other.Y+other.H && other.Y < e.Y+e.H
			})
		},
		clickWhere(func(_ string, e gui.Element) bool { return strings.HasPrefix(e.Text, "Cart (") }),
		clickText("Checkout"),
		clickWhere(func(_ string, e gui.Element) bool { return e.ID == "name" }), typeWith(func(in string) string { return quotedAll(in)[1] }),
		clickWhere(func(_ string, e gui.Element) bool { return e.ID == "zip" }), typeWith(func(in string) string { return quotedAll(in)[2] }),
		clickText("Place order")), true, -1},
}

// ---------------------------------------------------------------------------
// Small helpers for writing plays.

var quotedRE = regexp.MustCompile(`"([^"]*)"`)

func quotedAll(instr string) []string {
	var out []string
	for _, m := range quotedRE.FindAllStringSubmatch(instr, -1) {
		out = append(out, m[1])
	}
	return append(out, "", "", "")
}

func q0(instr string) string { return quotedAll(instr)[0] }

func isTag(e gui.Element, tag string) bool { return strings.EqualFold(e.Tag, tag) }

func hasClass(e gui.Element, c string) bool { return slices.Contains(strings.Fields(e.Classes), c) }

func isText(_ string, e gui.Element) bool { return isTag(e, "input") && e.Type == "text" }

func find(els []gui.Element, keep func(gui.Element) bool) (gui.Element, bool) {
	for _, e := range els {
		if e.ID != "query" && keep(e) {
			return e, true
		}
	}
	return gui.Element{}, false
}

func at(action string, e gui.Element) gym.GUIAction {
	x, y := e.Center()
	return gym.GUIAction{Action: action, X: &x, Y: &y}
}

func drag(from, to gui.Element) gym.GUIAction {
	x0, y0 := from.Center()
	x1, y1 := to.Center()
	return gym.GUIAction{Action: "drag", X: &x0, Y: &y0, ToX: &x1, ToY: &y1}
}

func act(action string, els []gui.Element, keep func(gui.Element) bool) (gym.GUIAction, error) {
	e, ok := find(els, keep)
	if !ok {
		return gym.GUIAction{}, fmt.Errorf("no element to %s", action)
	}
	return at(action, e), nil
}

func clickWhere(keep func(instr string, e gui.Element) bool) policy {
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		return act("click", els, func(e gui.Element) bool { return keep(instr, e) })
	}
}

func clickText(text string) policy {
	return clickWhere(func(_ string, e gui.Element) bool { return isTag(e, "button") && e.Text == text })
}

func typeFixed(s string) policy {
	return func(string, []gui.Element) (gym.GUIAction, error) { return gym.GUIAction{Action: "type", Text: s}, nil }
}

func typeWith(f func(instr string) string) policy {
	return func(instr string, _ []gui.Element) (gym.GUIAction, error) {
		return gym.GUIAction{Action: "type", Text: f(instr)}, nil
	}
}

// seq plays its moves in order, one a step, then says done.
func seq(moves ...policy) func() policy {
	return func() policy {
		n := 0
		return func(instr string, els []gui.Element) (gym.GUIAction, error) {
			if n >= len(moves) {
				return gym.GUIAction{Action: "done"}, nil
			}
			n++
			return moves[n-1](instr, els)
		}
	}
}

func once(m policy) func() policy { return seq(m) }
