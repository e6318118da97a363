package webtasks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/gym"
)

// policy is one episode's scripted solution: given the instruction and the
// page's visible elements, the next action.
type policy = func(instruction string, els []gui.Element) (gym.GUIAction, error)

// NewOracle returns a fresh scripted policy for one episode of the named
// task, and whether the task has one (every built-in task does). The
// policy reads the instruction and the current element list (visible
// elements, boxes in screenshot pixels, as a web kind lists them) and
// returns the next action, the way a person would act: clicks at an
// element's centre, a drag from one box to another, a click into a field
// before typing, scrolls over a scrollable list. It finds its targets by
// the instruction's words and the page's visible text, never by hidden
// state. It keeps state between calls (which screen it is on, what it has
// typed), so use one per episode, and returns {Action: "done"} once it has
// nothing more to do. It returns an error when the page does not show
// what it needs, which means the page or the element list is broken.
func NewOracle(name string) (func(instruction string, els []gui.Element) (gym.GUIAction, error), bool) {
	mk, ok := oracles[name]
	if !ok {
		return nil, false
	}
	return mk(), true
}

var oracles = map[string]func() policy{
	"click-button":        clickText("button"),
	"click-link":          clickText("a"),
	"click-checkboxes":    clickCheckboxes,
	"choose-radio":        chooseRadio,
	"click-tab":           clickTab,
	"double-click":        doubleClick,
	"right-click-menu":    rightClickMenu,
	"enter-text":          enterText,
	"copy-text":           copyText,
	"enter-date":          enterDate,
	"login-form":          loginForm,
	"choose-dropdown":     chooseDropdown,
	"search-select":       searchSelect,
	"toggle-switch":       toggleSwitch,
	"slider-set":          sliderSet,
	"drag-box":            dragBox,
	"scroll-find":         scrollFind,
	"multi-page-checkout": checkout,
}

// ---------------------------------------------------------------------------
// Actions.

func clickAt(x, y int) gym.GUIAction { return gym.GUIAction{Action: "click", X: &x, Y: &y} }

func click(e gui.Element) gym.GUIAction { return clickAt(e.Center()) }

func doubleClickOn(e gui.Element) gym.GUIAction {
	a := click(e)
	a.Action = "double_click"
	return a
}

func rightClickOn(e gui.Element) gym.GUIAction {
	a := click(e)
	a.Action = "right_click"
	return a
}

func dragFromTo(from, to gui.Element) gym.GUIAction {
	x0, y0 := from.Center()
	x1, y1 := to.Center()
	return gym.GUIAction{Action: "drag", X: &x0, Y: &y0, ToX: &x1, ToY: &y1}
}

func scrollOver(e gui.Element, dy int) gym.GUIAction {
	x, y := e.Center()
	return gym.GUIAction{Action: "scroll", X: &x, Y: &y, DY: dy}
}

func typeText(s string) gym.GUIAction { return gym.GUIAction{Action: "type", Text: s} }

func pressKey(k string) gym.GUIAction { return gym.GUIAction{Action: "key", Key: k} }

func done() gym.GUIAction { return gym.GUIAction{Action: "done"} }

// ---------------------------------------------------------------------------
// Reading the instruction and the page.

var quotedRE = regexp.MustCompile(`"([^"]*)"`)

// quoted returns the instruction's quoted phrases, in order; at least n.
func quoted(instr string, n int) ([]string, error) {
	var out []string
	for _, m := range quotedRE.FindAllStringSubmatch(instr, -1) {
		out = append(out, m[1])
	}
	if len(out) < n {
		return nil, fmt.Errorf("instruction %q: want %d quoted phrases, found %d", instr, n, len(out))
	}
	return out, nil
}

// norm collapses white space, as a reader of the text would.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

func hasTag(e gui.Element, tags ...string) bool {
	if len(tags) == 0 {
		return true
	}
	for _, t := range tags {
		if strings.EqualFold(e.Tag, t) {
			return true
		}
	}
	return false
}

func hasClass(e gui.Element, class string) bool {
	return slices.Contains(strings.Fields(e.Classes), class)
}

func isInput(e gui.Element, typ string) bool {
	return hasTag(e, "input") && strings.EqualFold(e.Type, typ)
}

// inside reports whether the centre of a lies within b's box.
func inside(a, b gui.Element) bool {
	x, y := a.Center()
	return x >= b.X && x < b.X+b.W && y >= b.Y && y < b.Y+b.H
}

// sameRow reports whether a and b overlap vertically by at least half the
// shorter one's height.
func sameRow(a, b gui.Element) bool {
	top, bottom := max(a.Y, b.Y), min(a.Y+a.H, b.Y+b.H)
	return 2*(bottom-top) >= min(a.H, b.H)
}

// page drops the instruction (#query and what lies in it) from the list,
// so that the instruction's own words are not mistaken for the page's.
func page(els []gui.Element) []gui.Element {
	var q *gui.Element
	for i := range els {
		if els[i].ID == "query" {
			q = &els[i]
			break
		}
	}
	out := make([]gui.Element, 0, len(els))
	for _, e := range els {
		if q != nil && (e.ID == "query" || inside(e, *q)) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// all returns the page's elements with one of the tags (any tag if none)
// that satisfy keep, in list order.
func all(els []gui.Element, keep func(gui.Element) bool, tags ...string) []gui.Element {
	var out []gui.Element
	for _, e := range page(els) {
		if hasTag(e, tags...) && (keep == nil || keep(e)) {
			out = append(out, e)
		}
	}
	return out
}

// smallest returns the element of least area: the innermost of elements
// that share a text.
func smallest(es []gui.Element) (gui.Element, bool) {
	if len(es) == 0 {
		return gui.Element{}, false
	}
	return slices.MinFunc(es, func(a, b gui.Element) int { return a.W*a.H - b.W*b.H }), true
}

// withText finds the innermost page element, of one of the tags, whose
// visible text is exactly text.
func withText(els []gui.Element, text string, tags ...string) (gui.Element, bool) {
	return smallest(all(els, func(e gui.Element) bool { return norm(e.Text) == text }, tags...))
}

// mustText is withText with an error naming what is missing.
func mustText(els []gui.Element, text string, tags ...string) (gui.Element, error) {
	if e, ok := withText(els, text, tags...); ok {
		return e, nil
	}
	what := "element"
	if len(tags) > 0 {
		what = "<" + strings.Join(tags, "> or <") + ">"
	}
	return gui.Element{}, fmt.Errorf("no visible %s with the text %q", what, text)
}

// first returns the first page element of the tags satisfying keep.
func first(els []gui.Element, what string, keep func(gui.Element) bool, tags ...string) (gui.Element, error) {
	if es := all(els, keep, tags...); len(es) > 0 {
		return es[0], nil
	}
	return gui.Element{}, fmt.Errorf("no visible %s", what)
}

// textMatch finds the first page text that re matches, and its groups.
func textMatch(els []gui.Element, re *regexp.Regexp) ([]string, bool) {
	for _, e := range page(els) {
		if m := re.FindStringSubmatch(norm(e.Text)); m != nil {
			return m, true
		}
	}
	return nil, false
}

// ---------------------------------------------------------------------------
// Building blocks shared by several tasks.

// steps runs a fixed list of moves, one per call, then says done. Each move
// sees the current page.
type move func(instr string, els []gui.Element) (gym.GUIAction, error)

func steps(moves ...move) policy {
	n := 0
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		if n >= len(moves) {
			return done(), nil
		}
		n++
		return moves[n-1](instr, els)
	}
}

// clickOn clicks the element find returns.
func clickOn(find func(instr string, els []gui.Element) (gui.Element, error)) move {
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		e, err := find(instr, els)
		if err != nil {
			return gym.GUIAction{}, err
		}
		return click(e), nil
	}
}

// typeValue types the text value returns.
func typeValue(value func(instr string, els []gui.Element) (string, error)) move {
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		v, err := value(instr, els)
		if err != nil {
			return gym.GUIAction{}, err
		}
		return typeText(v), nil
	}
}

// button finds the button labelled label.
func button(label string) func(string, []gui.Element) (gui.Element, error) {
	return func(_ string, els []gui.Element) (gui.Element, error) { return mustText(els, label, "button") }
}

// textBox finds the i-th visible text input.
func textBox(i int) func(string, []gui.Element) (gui.Element, error) {
	return func(_ string, els []gui.Element) (gui.Element, error) {
		es := all(els, func(e gui.Element) bool { return isInput(e, "text") })
		if i >= len(es) {
			return gui.Element{}, fmt.Errorf("want text box %d, the page shows %d", i+1, len(es))
		}
		return es[i], nil
	}
}

// submitChecked clicks the button labelled label once the i-th text box
// holds value: the check catches keystrokes that went astray.
func submitChecked(label string, i int, value func(string, []gui.Element) (string, error)) move {
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		want, err := value(instr, els)
		if err != nil {
			return gym.GUIAction{}, err
		}
		box, err := textBox(i)(instr, els)
		if err != nil {
			return gym.GUIAction{}, err
		}
		if box.Value != want {
			return gym.GUIAction{}, fmt.Errorf("the text box holds %q after typing %q", box.Value, want)
		}
		return clickOn(button(label))(instr, els)
	}
}

// typeInto clicks the i-th text box, types value, checks it and clicks the
// button labelled label.
func typeInto(i int, value func(string, []gui.Element) (string, error), label string) policy {
	return steps(clickOn(textBox(i)), typeValue(value), submitChecked(label, i, value))
}

// nthQuoted returns the instruction's i-th quoted phrase.
func nthQuoted(i int) func(string, []gui.Element) (string, error) {
	return func(instr string, _ []gui.Element) (string, error) {
		q, err := quoted(instr, i+1)
		if err != nil {
			return "", err
		}
		return q[i], nil
	}
}
