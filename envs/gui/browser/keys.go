package browser

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp/kb"
)

// Modifier bits of CDP input events.
const (
	modAlt   = 1
	modCtrl  = 2
	modMeta  = 4
	modShift = 8
)

// keyDef is one physical key as CDP key events name it.
type keyDef struct {
	key  string // the DOM key value: "Enter", "a", "ArrowLeft"
	code string // the DOM code: "Enter", "KeyA"
	vk   int64  // the Windows virtual key code
	text string // what a press types, if anything
	bit  int64  // the modifier bit, for modifier keys
}

var modifierKeys = map[string]keyDef{
	"ctrl":    {key: "Control", code: "ControlLeft", vk: 17, bit: modCtrl},
	"control": {key: "Control", code: "ControlLeft", vk: 17, bit: modCtrl},
	"ctl":     {key: "Control", code: "ControlLeft", vk: 17, bit: modCtrl},
	"shift":   {key: "Shift", code: "ShiftLeft", vk: 16, bit: modShift},
	"alt":     {key: "Alt", code: "AltLeft", vk: 18, bit: modAlt},
	"option":  {key: "Alt", code: "AltLeft", vk: 18, bit: modAlt},
	"meta":    {key: "Meta", code: "MetaLeft", vk: 91, bit: modMeta},
	"cmd":     {key: "Meta", code: "MetaLeft", vk: 91, bit: modMeta},
	"command": {key: "Meta", code: "MetaLeft", vk: 91, bit: modMeta},
	"super":   {key: "Meta", code: "MetaLeft", vk: 91, bit: modMeta},
	"win":     {key: "Meta", code: "MetaLeft", vk: 91, bit: modMeta},
}

// namedKeys are the keys with names, by lower-case name (with the xdotool
// spellings models often use: Return, BackSpace, Page_Up, ...).
var namedKeys = func() map[string]keyDef {
	m := map[string]keyDef{}
	add := func(d keyDef, names ...string) {
		for _, n := range names {
			m[n] = d
		}
	}
	add(keyDef{key: "Enter", code: "Enter", vk: 13, text: "\r"}, "enter", "return", "kp_enter")
	add(keyDef{key: "Tab", code: "Tab", vk: 9}, "tab")
	add(keyDef{key: "Backspace", code: "Backspace", vk: 8}, "backspace", "back_space")
	add(keyDef{key: "Delete", code: "Delete", vk: 46}, "delete", "del")
	add(keyDef{key: "Escape", code: "Escape", vk: 27}, "escape", "esc")
	add(keyDef{key: " ", code: "Space", vk: 32, text: " "}, "space")
	add(keyDef{key: "ArrowUp", code: "ArrowUp", vk: 38}, "arrowup", "up")
	add(keyDef{key: "ArrowDown", code: "ArrowDown", vk: 40}, "arrowdown", "down")
	add(keyDef{key: "ArrowLeft", code: "ArrowLeft", vk: 37}, "arrowleft", "left")
	add(keyDef{key: "ArrowRight", code: "ArrowRight", vk: 39}, "arrowright", "right")
	add(keyDef{key: "Home", code: "Home", vk: 36}, "home")
	add(keyDef{key: "End", code: "End", vk: 35}, "end")
	add(keyDef{key: "PageUp", code: "PageUp", vk: 33}, "pageup", "page_up", "prior")
	add(keyDef{key: "PageDown", code: "PageDown", vk: 34}, "pagedown", "page_down", "next")
	add(keyDef{key: "Insert", code: "Insert", vk: 45}, "insert")
	add(keyDef{key: "ContextMenu", code: "ContextMenu", vk: 93}, "contextmenu", "menu")
	for i := 1; i <= 12; i++ {
		n := "F" + strconv.Itoa(i)
		add(keyDef{key: n, code: n, vk: int64(111 + i)}, strings.ToLower(n))
	}
	return m
}()

// charKey is the key that types the printable ASCII character r, and
// whether it needs Shift.
func charKey(r rune) (keyDef, bool, bool) {
	k, ok := kb.Keys[r]
	if !ok || r > 0x7e || r < 0x20 {
		return keyDef{}, false, false
	}
	return keyDef{key: k.Key, code: k.Code, vk: k.Windows, text: k.Text}, k.Shift, true
}

// combo is a parsed key combination.
type combo struct {
	mods []keyDef
	main *keyDef // nil: modifiers alone ("shift")
}

// parseCombo reads a key combination: names joined by '+', modifiers
// first: "Enter", "ctrl+a", "shift+Tab", "ctrl+shift+ArrowLeft", "+".
// Named keys and modifiers are matched without regard to case; a single
// character is the key that types it ("A" is shift+a).
func parseCombo(s string) (combo, error) {
	var c combo
	if strings.TrimSpace(s) == "" {
		return c, fmt.Errorf("empty key combination")
	}
	var parts []string
	switch {
	case s == "+":
		parts = []string{"+"}
	case strings.HasSuffix(s, "++"):
		parts = append(strings.Split(s[:len(s)-2], "+"), "+")
	default:
		parts = strings.Split(s, "+")
	}
	for i, p := range parts {
		name := strings.TrimSpace(p)
		if p != " " {
			p = name
		}
		last := i == len(parts)-1
		if d, ok := modifierKeys[strings.ToLower(name)]; ok {
			c.mods = append(c.mods, d)
			continue
		}
		if !last {
			return c, fmt.Errorf("%q in %q is not a modifier (ctrl, shift, alt, meta)", p, s)
		}
		d, shift, err := mainKey(p)
		if err != nil {
			return c, err
		}
		if shift {
			c.mods = append(c.mods, modifierKeys["shift"])
		}
		c.main = &d
	}
	return c, nil
}

func mainKey(name string) (keyDef, bool, error) {
	if d, ok := namedKeys[strings.ToLower(name)]; ok {
		return d, false, nil
	}
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		if d, shift, ok := charKey(r); ok {
			return d, shift, nil
		}
	}
	return keyDef{}, false, fmt.Errorf("unknown key %q: want a single character, or one of Enter, Tab, Backspace, Delete, "+
		"Escape, Space, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, Insert, F1..F12, "+
		"after modifiers ctrl, shift, alt, meta joined by '+' (as in ctrl+a)", name)
}

// events are the key events that press and release c.
func (c combo) events() []input.DispatchKeyEventParams {
	var evs []input.DispatchKeyEventParams
	var mods int64
	for _, m := range c.mods {
		mods |= m.bit
		evs = append(evs, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Modifiers: mods,
			Key: m.key, Code: m.code, WindowsVirtualKeyCode: m.vk, NativeVirtualKeyCode: m.vk})
	}
	if k := c.main; k != nil {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Modifiers: mods,
			Key: k.key, Code: k.code, WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk}
		if k.text != "" && mods&^modShift == 0 {
			// Only a key that types text gets a keyDown with text (and
			// then a keypress and an input); ctrl+a selects, types no a.
			down.Type, down.Text, down.UnmodifiedText = input.DispatchKeyEventTypeKeyDown, k.text, k.text
			if mods&modShift != 0 && len(k.text) == 1 && k.text[0] >= 'a' && k.text[0] <= 'z' {
				down.Text = strings.ToUpper(k.text)
				down.Key = down.Text
			}
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		evs = append(evs, down, up)
	}
	for i := len(c.mods) - 1; i >= 0; i-- {
		m := c.mods[i]
		mods &^= m.bit
		evs = append(evs, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Modifiers: mods,
			Key: m.key, Code: m.code, WindowsVirtualKeyCode: m.vk, NativeVirtualKeyCode: m.vk})
	}
	return evs
}

// typeEvents are the key events that type r, or nil for a character no
// key types (sent with Input.insertText instead).
func typeEvents(r rune) []input.DispatchKeyEventParams {
	var c combo
	switch r {
	case '\n', '\r':
		d := namedKeys["enter"]
		c.main = &d
	case '\t':
		d := namedKeys["tab"]
		c.main = &d
	default:
		d, shift, ok := charKey(r)
		if !ok {
			return nil
		}
		if shift {
			c.mods = []keyDef{modifierKeys["shift"]}
		}
		c.main = &d
	}
	evs := c.events()
	if len(c.mods) > 0 {
		// Typing a capital needs no separate Shift press and release.
		evs = evs[1 : len(evs)-1]
	}
	return evs
}
