package browser

import (
	"strings"
	"testing"
)

func TestParseCombo(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // modifier keys then the main key and its text
	}{
		{"Enter", "Enter/\r"},
		{"return", "Enter/\r"},
		{"ctrl+a", "Control a/a"},
		{"Control+A", "Control Shift A/A"},
		{"shift+Tab", "Shift Tab/"},
		{"ctrl+shift+ArrowLeft", "Control Shift ArrowLeft/"},
		{"alt+F4", "Alt F4/"},
		{"cmd+c", "Meta c/c"},
		{"Page_Down", "PageDown/"},
		{"space", " / "},
		{"+", "Shift +/+"},
		{"ctrl++", "Control Shift +/+"},
		{"shift", "Shift"},
		{"!", "Shift !/!"},
	} {
		cb, err := parseCombo(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		var parts []string
		for _, m := range cb.mods {
			parts = append(parts, m.key)
		}
		if cb.main != nil {
			parts = append(parts, cb.main.key+"/"+cb.main.text)
		}
		if got := strings.Join(parts, " "); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"", "ctrl+", "a+b", "nosuchkey", "ctrl+nope", "é"} {
		if _, err := parseCombo(bad); err == nil {
			t.Errorf("%q: no error", bad)
		} else if !strings.Contains(err.Error(), "want") && !strings.Contains(err.Error(), "empty") && !strings.Contains(err.Error(), "modifier") {
			t.Errorf("%q: the error %q does not say what is accepted", bad, err)
		}
	}
}

func TestComboEvents(t *testing.T) {
	cb, _ := parseCombo("ctrl+shift+a")
	var got []string
	for _, ev := range cb.events() {
		got = append(got, string(ev.Type)+":"+ev.Key+":"+ev.Text)
	}
	want := "rawKeyDown:Control: rawKeyDown:Shift: rawKeyDown:a: keyUp:a: keyUp:Shift: keyUp:Control:"
	if strings.Join(got, " ") != want {
		t.Errorf("ctrl+shift+a events %q, want %q", strings.Join(got, " "), want)
	}
	if evs := typeEvents('A'); len(evs) != 2 || evs[0].Text != "A" || evs[0].Modifiers != modShift {
		t.Errorf("typing A: %+v, want a shifted keyDown with text A and a keyUp", evs)
	}
	if evs := typeEvents('é'); evs != nil {
		t.Errorf("typing é: %+v, want none (inserted as text)", evs)
	}
}
