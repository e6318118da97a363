package desktop

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/nextstate-rl/nextstate/gym"
)

// keymap is the server's keyboard mapping as this client last set or
// read it: which keycode (and shift level) types a keysym, and the spare
// keycodes (mapped to nothing) that a keysym without a key is put on.
type keymap struct {
	min, max xproto.Keycode
	per      int                       // keysyms per keycode
	codes    map[xproto.Keysym]keyCode // the first key of each keysym
	spares   []xproto.Keycode          // keycodes that had no keysym at start
	onSpare  map[xproto.Keysym]int     // keysym -> index in spares
	spareSym []xproto.Keysym           // what each spare carries now (0: nothing)
	next     int                       // the spare to take next (round robin)
}

type keyCode struct {
	code  xproto.Keycode
	shift bool
}

func loadKeymap(c *xgb.Conn) (*keymap, error) {
	s := xproto.Setup(c)
	km := &keymap{min: s.MinKeycode, max: s.MaxKeycode, codes: map[xproto.Keysym]keyCode{}, onSpare: map[xproto.Keysym]int{}}
	r, err := xproto.GetKeyboardMapping(c, km.min, byte(int(km.max)-int(km.min)+1)).Reply()
	if err != nil {
		return nil, err
	}
	km.per = int(r.KeysymsPerKeycode)
	for i := 0; i <= int(km.max-km.min); i++ {
		code := km.min + xproto.Keycode(i)
		syms := r.Keysyms[i*km.per : (i+1)*km.per]
		empty := true
		for col, ks := range syms {
			if ks == 0 {
				continue
			}
			empty = false
			if col > 1 {
				continue // other groups need a group switch
			}
			if old, ok := km.codes[ks]; !ok || (old.shift && col == 0) {
				km.codes[ks] = keyCode{code: code, shift: col == 1}
			}
		}
		if empty {
			km.spares = append(km.spares, code)
		}
	}
	km.spareSym = make([]xproto.Keysym, len(km.spares))
	for _, need := range []xproto.Keysym{ksShiftL, ksControlL} {
		if _, ok := km.codes[need]; !ok {
			return nil, fmt.Errorf("desktop: the keyboard mapping has no Shift_L or Control_L")
		}
	}
	if len(km.spares) == 0 {
		return nil, errors.New("desktop: the keyboard mapping has no spare keycode to type characters without a key")
	}
	return km, nil
}

// Keysyms of the modifiers.
const (
	ksShiftL   xproto.Keysym = 0xffe1
	ksControlL xproto.Keysym = 0xffe3
	ksAltL     xproto.Keysym = 0xffe9
	ksSuperL   xproto.Keysym = 0xffeb
	ksMetaL    xproto.Keysym = 0xffe7
)

// modifiers names the modifiers of a key combination.
var modifiers = map[string]xproto.Keysym{
	"ctrl": ksControlL, "control": ksControlL, "ctl": ksControlL,
	"shift": ksShiftL,
	"alt":   ksAltL, "option": ksAltL, "opt": ksAltL,
	"meta":  ksMetaL,
	"super": ksSuperL, "win": ksSuperL, "windows": ksSuperL, "cmd": ksSuperL, "command": ksSuperL,
}

// keyNames are the named keys, by their X name and common aliases, all
// matched case-insensitively.
var keyNames = map[string]xproto.Keysym{
	"return": 0xff0d, "enter": 0xff0d, "kp_enter": 0xff8d,
	"tab": 0xff09, "iso_left_tab": 0xfe20,
	"backspace": 0xff08, "escape": 0xff1b, "esc": 0xff1b,
	"delete": 0xffff, "del": 0xffff, "insert": 0xff63, "ins": 0xff63,
	"home": 0xff50, "end": 0xff57,
	"left": 0xff51, "up": 0xff52, "right": 0xff53, "down": 0xff54,
	"arrowleft": 0xff51, "arrowup": 0xff52, "arrowright": 0xff53, "arrowdown": 0xff54,
	"page_up": 0xff55, "pageup": 0xff55, "prior": 0xff55, "pgup": 0xff55,
	"page_down": 0xff56, "pagedown": 0xff56, "next": 0xff56, "pgdn": 0xff56,
	"space": 0x20, "menu": 0xff67, "print": 0xff61, "pause": 0xff13,
	"scroll_lock": 0xff14, "num_lock": 0xff7f, "caps_lock": 0xffe5,
	"shift_l": ksShiftL, "shift_r": 0xffe2, "control_l": ksControlL, "control_r": 0xffe4,
	"alt_l": ksAltL, "alt_r": 0xffea, "super_l": ksSuperL, "super_r": 0xffec, "meta_l": ksMetaL,
	"minus": '-', "plus": '+', "equal": '=', "comma": ',', "period": '.', "slash": '/',
	"backslash": '\\', "semicolon": ';', "colon": ':', "apostrophe": '\'', "quotedbl": '"', "grave": '`',
	"bracketleft": '[', "bracketright": ']', "braceleft": '{', "braceright": '}',
	"parenleft": '(', "parenright": ')', "less": '<', "greater": '>', "question": '?',
	"exclam": '!', "at": '@', "numbersign": '#', "dollar": '$', "percent": '%',
	"asciicircum": '^', "ampersand": '&', "asterisk": '*', "underscore": '_', "bar": '|', "asciitilde": '~',
}

func init() {
	for i := 1; i <= 24; i++ {
		keyNames[fmt.Sprintf("f%d", i)] = xproto.Keysym(0xffbe + i - 1)
	}
}

// keysymOf returns the keysym of a character: Latin-1 characters are
// their own keysym, others 0x01000000 + the code point; newline and tab
// are Return and Tab.
func keysymOf(r rune) xproto.Keysym {
	switch {
	case r == '\n' || r == '\r':
		return 0xff0d
	case r == '\t':
		return 0xff09
	case r >= 0x20 && r <= 0x7e || r >= 0xa0 && r <= 0xff:
		return xproto.Keysym(r)
	}
	return xproto.Keysym(0x01000000 + r)
}

// parseCombo reads a key combination such as "ctrl+a", "Enter",
// "shift+Tab" or "ctrl++": modifiers joined by '+', then one key (a
// named key or a single character). An unknown name is the agent's fault.
func parseCombo(combo string) (mods []xproto.Keysym, key xproto.Keysym, err error) {
	s := strings.TrimSpace(combo)
	bad := func(format string, args ...any) error {
		return gym.AgentFault("bad_key", fmt.Errorf("key %q: "+format+
			"; want modifiers (ctrl, shift, alt, super) and a key joined by +, such as Enter, ctrl+a, shift+Tab, ctrl+shift+t, F5, Page_Down",
			append([]any{combo}, args...)...))
	}
	var name string
	var modNames []string
	switch {
	case s == "+":
		name = "+"
	case strings.HasSuffix(s, "++"): // "ctrl++"
		name, modNames = "+", strings.Split(s[:len(s)-2], "+")
	default:
		parts := strings.Split(s, "+")
		name, modNames = strings.TrimSpace(parts[len(parts)-1]), parts[:len(parts)-1]
	}
	for _, p := range modNames {
		m, ok := modifiers[strings.ToLower(strings.TrimSpace(p))]
		if !ok {
			return nil, 0, bad("%q is not a modifier", p)
		}
		mods = append(mods, m)
	}
	if name == "" {
		return nil, 0, bad("no key")
	}
	if m, ok := modifiers[strings.ToLower(name)]; ok && len(mods) == 0 {
		return nil, m, nil // a modifier alone: press and release it
	}
	if ks, ok := keyNames[strings.ToLower(name)]; ok {
		return mods, ks, nil
	}
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		return mods, keysymOf(r), nil
	}
	return nil, 0, bad("unknown key %q", name)
}

// reuseQuiet is how long the screen must be still before a spare keycode
// is given another keysym.
const reuseQuiet = 60 * time.Millisecond

// code returns the key that types ks, mapping it onto a spare keycode
// (both shift levels) when no key carries it. A spare is reused round
// robin once all are taken, after the keystrokes typed so far have had
// time to reach the clients.
func (d *Display) code(ctx context.Context, ks xproto.Keysym) (keyCode, error) {
	km := d.keys
	if kc, ok := km.codes[ks]; ok {
		return kc, nil
	}
	if i, ok := km.onSpare[ks]; ok {
		return keyCode{code: km.spares[i]}, nil
	}
	i := km.next
	km.next = (km.next + 1) % len(km.spares)
	if old := km.spareSym[i]; old != 0 {
		delete(km.onSpare, old)
		// A client may not yet have read the key that used this keycode,
		// and would read it with the new mapping: let the earlier
		// keystrokes through (until the screen, which shows them, has
		// settled) before the mapping changes.
		if err := d.Sync(ctx); err != nil {
			return keyCode{}, err
		}
		if err := d.Settle(ctx, reuseQuiet, time.Second); err != nil {
			return keyCode{}, err
		}
	}
	if err := d.remap(ctx, km.spares[i], ks); err != nil {
		return keyCode{}, err
	}
	km.spareSym[i] = ks
	km.onSpare[ks] = i
	return keyCode{code: km.spares[i]}, nil
}

// remap puts ks on keycode (0: nothing) and waits until the server has
// the new mapping.
func (d *Display) remap(ctx context.Context, code xproto.Keycode, ks xproto.Keysym) error {
	syms := make([]xproto.Keysym, d.keys.per)
	if ks != 0 {
		syms[0] = ks
		if len(syms) > 1 {
			syms[1] = ks
		}
	}
	return d.do(ctx, func() error {
		return xproto.ChangeKeyboardMappingChecked(d.conn, 1, code, byte(d.keys.per), syms).Check()
	})
}

// ResetKeymap gives the spare keycodes back their empty mapping.
func (d *Display) ResetKeymap(ctx context.Context) error {
	km := d.keys
	idx := make([]int, 0, len(km.onSpare))
	for _, i := range km.onSpare {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		if err := d.remap(ctx, km.spares[i], 0); err != nil {
			return err
		}
		km.spareSym[i] = 0
	}
	clear(km.onSpare)
	km.next = 0
	return nil
}

// press sends a key press and release, with shift held when the key
// needs it.
func (d *Display) press(kc keyCode) {
	shift := d.keys.codes[ksShiftL].code
	if kc.shift {
		d.fake(xproto.KeyPress, byte(shift), 0, 0)
	}
	d.fake(xproto.KeyPress, byte(kc.code), 0, 0)
	d.fake(xproto.KeyRelease, byte(kc.code), 0, 0)
	if kc.shift {
		d.fake(xproto.KeyRelease, byte(shift), 0, 0)
	}
}

// Type implements gui.Screen: each character is one keystroke on the key
// that carries it (with shift when needed); characters no key carries are
// put on a spare keycode first. Keyboard input goes to the focused
// window, which without a window manager is the one under the pointer.
func (d *Display) Type(ctx context.Context, text string) error {
	for _, r := range text {
		if r == '\r' {
			continue
		}
		if r == utf8.RuneError || r < 0x20 && r != '\n' && r != '\t' {
			return gym.AgentFault("bad_text", fmt.Errorf("type: the text holds a control character %U; use the key action for keys", r))
		}
		kc, err := d.code(ctx, keysymOf(r))
		if err != nil {
			return err
		}
		d.press(kc)
	}
	return d.Sync(ctx)
}

// Key implements gui.Screen: it presses the modifiers, presses and
// releases the key, and releases the modifiers in reverse order.
func (d *Display) Key(ctx context.Context, combo string) error {
	mods, ks, err := parseCombo(combo)
	if err != nil {
		return err
	}
	var held []xproto.Keycode
	for _, m := range mods {
		kc, err := d.code(ctx, m)
		if err != nil {
			return err
		}
		d.fake(xproto.KeyPress, byte(kc.code), 0, 0)
		held = append(held, kc.code)
	}
	kc, err := d.code(ctx, ks)
	if err == nil {
		// A key that needs shift gets it, unless shift is held already.
		if kc.shift && len(held) > 0 {
			kc.shift = !containsSym(mods, ksShiftL)
		}
		d.press(kc)
	}
	for i := len(held) - 1; i >= 0; i-- {
		d.fake(xproto.KeyRelease, byte(held[i]), 0, 0)
	}
	if err != nil {
		return err
	}
	return d.Sync(ctx)
}

func containsSym(s []xproto.Keysym, k xproto.Keysym) bool {
	for _, x := range s {
		if x == k {
			return true
		}
	}
	return false
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
