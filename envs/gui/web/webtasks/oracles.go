package webtasks

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/gym"
)

// The per-task scripted policies behind NewOracle.

// clickText: click the element of the tag whose text is the instruction's
// quoted phrase (click-button, click-link).
func clickText(tag string) func() policy {
	return func() policy {
		return steps(clickOn(func(instr string, els []gui.Element) (gui.Element, error) {
			q, err := quoted(instr, 1)
			if err != nil {
				return gui.Element{}, err
			}
			return mustText(els, q[0], tag)
		}))
	}
}

// labelledInputs pairs each <label> with the input of type typ drawn inside
// it, by the label's text.
func labelledInputs(els []gui.Element, typ string) (map[string]gui.Element, error) {
	inputs := all(els, func(e gui.Element) bool { return isInput(e, typ) })
	out := map[string]gui.Element{}
	for _, l := range all(els, nil, "label") {
		i := slices.IndexFunc(inputs, func(in gui.Element) bool { return inside(in, l) })
		if i < 0 {
			return nil, fmt.Errorf("label %q has no %s inside it", norm(l.Text), typ)
		}
		out[norm(l.Text)] = inputs[i]
	}
	return out, nil
}

// clickCheckboxes: tick the named boxes and untick the others, one click a
// step, then Submit.
func clickCheckboxes() policy {
	submitted := false
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		if submitted {
			return done(), nil
		}
		want, err := quoted(instr, 1)
		if err != nil {
			return gym.GUIAction{}, err
		}
		boxes, err := labelledInputs(els, "checkbox")
		if err != nil {
			return gym.GUIAction{}, err
		}
		for _, w := range want {
			if _, ok := boxes[w]; !ok {
				return gym.GUIAction{}, fmt.Errorf("no checkbox labelled %q", w)
			}
		}
		names := make([]string, 0, len(boxes))
		for n := range boxes {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if boxes[n].Checked != slices.Contains(want, n) {
				return click(boxes[n]), nil
			}
		}
		submitted = true
		return clickOn(button("Submit"))(instr, els)
	}
}

// chooseRadio: click the named radio button unless it is chosen, then Submit.
func chooseRadio() policy {
	submitted := false
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		if submitted {
			return done(), nil
		}
		q, err := quoted(instr, 1)
		if err != nil {
			return gym.GUIAction{}, err
		}
		radios, err := labelledInputs(els, "radio")
		if err != nil {
			return gym.GUIAction{}, err
		}
		r, ok := radios[q[0]]
		if !ok {
			return gym.GUIAction{}, fmt.Errorf("no radio button labelled %q", q[0])
		}
		if !r.Checked {
			return click(r), nil
		}
		submitted = true
		return clickOn(button("Submit"))(instr, els)
	}
}

var tabRE = regexp.MustCompile(`^Tab \d+$`)

// clickTab: click the button if it shows; else open the next tab not yet
// seen, left to right.
func clickTab() policy {
	seen := map[string]bool{}
	clicked := false
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		if clicked {
			return done(), nil
		}
		q, err := quoted(instr, 1)
		if err != nil {
			return gym.GUIAction{}, err
		}
		if b, ok := withText(els, q[0], "button"); ok {
			clicked = true
			return click(b), nil
		}
		tabs := all(els, func(e gui.Element) bool { return tabRE.MatchString(norm(e.Text)) }, "button")
		slices.SortFunc(tabs, func(a, b gui.Element) int { return a.X - b.X })
		for _, t := range tabs {
			if hasClass(t, "active") {
				seen[norm(t.Text)] = true
			}
		}
		for _, t := range tabs {
			if !seen[norm(t.Text)] {
				seen[norm(t.Text)] = true
				return click(t), nil
			}
		}
		return gym.GUIAction{}, fmt.Errorf("button %q is on none of the %d tabs", q[0], len(tabs))
	}
}

// doubleClick: double-click the named tile.
func doubleClick() policy {
	return steps(func(instr string, els []gui.Element) (gym.GUIAction, error) {
		q, err := quoted(instr, 1)
		if err != nil {
			return gym.GUIAction{}, err
		}
		e, err := mustText(els, q[0])
		if err != nil {
			return gym.GUIAction{}, err
		}
		return doubleClickOn(e), nil
	})
}

// rightClickMenu: right-click the file, then click the action in its menu.
func rightClickMenu() policy {
	return steps(
		func(instr string, els []gui.Element) (gym.GUIAction, error) {
			q, err := quoted(instr, 2)
			if err != nil {
				return gym.GUIAction{}, err
			}
			e, err := mustText(els, q[0])
			if err != nil {
				return gym.GUIAction{}, err
			}
			return rightClickOn(e), nil
		},
		func(instr string, els []gui.Element) (gym.GUIAction, error) {
			q, err := quoted(instr, 2)
			if err != nil {
				return gym.GUIAction{}, err
			}
			return clickOn(button(q[1]))(instr, els)
		})
}

func enterText() policy { return typeInto(0, nthQuoted(0), "Submit") }

var codeRE = regexp.MustCompile(`\b(?:number|code) is ([A-Z0-9]{3}-[A-Z0-9]{3})\b`)

// copyText: read the code off the page and type it.
func copyText() policy {
	code := func(_ string, els []gui.Element) (string, error) {
		if m, ok := textMatch(els, codeRE); ok {
			return m[1], nil
		}
		return "", fmt.Errorf("no code such as ABC-123 on the page")
	}
	return typeInto(0, code, "Submit")
}

var dateRE = regexp.MustCompile(`^Enter (January|February|March|April|May|June|July|August|September|October|November|December) (\d{1,2}), (\d{4})\b`)

var months = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September",
	"October", "November", "December"}

// enterDate: write the instruction's date as MM/DD/YYYY.
func enterDate() policy {
	date := func(instr string, _ []gui.Element) (string, error) {
		m := dateRE.FindStringSubmatch(instr)
		if m == nil {
			return "", fmt.Errorf("instruction %q names no date such as \"Enter March 4, 2021\"", instr)
		}
		day, _ := strconv.Atoi(m[2])
		return fmt.Sprintf("%02d/%02d/%s", slices.Index(months, m[1])+1, day, m[3]), nil
	}
	return typeInto(0, date, "Submit")
}

// loginForm: fill both fields, then press Enter in the password field.
func loginForm() policy {
	password := func(_ string, els []gui.Element) (gui.Element, error) {
		return first(els, "password box", func(e gui.Element) bool { return isInput(e, "password") })
	}
	return steps(
		clickOn(textBox(0)), typeValue(nthQuoted(0)),
		clickOn(password), typeValue(nthQuoted(1)),
		func(instr string, els []gui.Element) (gym.GUIAction, error) {
			u, err := nthQuoted(0)(instr, els)
			if err != nil {
				return gym.GUIAction{}, err
			}
			if box, err := textBox(0)(instr, els); err != nil || box.Value != u {
				return gym.GUIAction{}, fmt.Errorf("the username box holds %q, want %q (%v)", box.Value, u, err)
			}
			return pressKey("Enter"), nil
		})
}

// chooseDropdown: focus the <select> with a click, type the option's text
// (a focused select picks the option it matches), Enter to confirm, check
// the select's value, and Submit.
func chooseDropdown() policy {
	sel := func(_ string, els []gui.Element) (gui.Element, error) {
		return first(els, "<select>", nil, "select")
	}
	return steps(
		clickOn(sel), typeValue(nthQuoted(0)),
		func(string, []gui.Element) (gym.GUIAction, error) { return pressKey("Enter"), nil },
		func(instr string, els []gui.Element) (gym.GUIAction, error) {
			want, err := nthQuoted(0)(instr, els)
			if err != nil {
				return gym.GUIAction{}, err
			}
			s, err := sel(instr, els)
			if err != nil {
				return gym.GUIAction{}, err
			}
			if s.Value != want {
				return gym.GUIAction{}, fmt.Errorf("the menu shows %q after typing %q", s.Value, want)
			}
			return clickOn(button("Submit"))(instr, els)
		})
}

// searchSelect: type the place's name (before the comma) and click the
// result that matches in full.
func searchSelect() policy {
	name := func(instr string, els []gui.Element) (string, error) {
		q, err := nthQuoted(0)(instr, els)
		if err != nil {
			return "", err
		}
		n, _, _ := strings.Cut(q, ",")
		return n, nil
	}
	return steps(clickOn(textBox(0)), typeValue(name), clickOn(func(instr string, els []gui.Element) (gui.Element, error) {
		q, err := quoted(instr, 1)
		if err != nil {
			return gui.Element{}, err
		}
		return mustText(els, q[0], "button")
	}))
}

var switchRE = regexp.MustCompile(`"([^"]+)" (on|off)\b`)

// toggleSwitch: click each named switch whose state differs from the one
// asked, one a step, then Save.
func toggleSwitch() policy {
	saved := false
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		if saved {
			return done(), nil
		}
		asks := switchRE.FindAllStringSubmatch(instr, -1)
		if len(asks) == 0 {
			return gym.GUIAction{}, fmt.Errorf("instruction %q asks for no switch such as \"Wi-Fi\" on", instr)
		}
		switches := all(els, func(e gui.Element) bool { t := norm(e.Text); return t == "On" || t == "Off" }, "button")
		for _, a := range asks {
			label, err := mustText(els, a[1])
			if err != nil {
				return gym.GUIAction{}, err
			}
			i := slices.IndexFunc(switches, func(s gui.Element) bool { return sameRow(s, label) })
			if i < 0 {
				return gym.GUIAction{}, fmt.Errorf("no On/Off switch beside %q", a[1])
			}
			if !strings.EqualFold(norm(switches[i].Text), a[2]) {
				return click(switches[i]), nil
			}
		}
		saved = true
		return clickOn(button("Save"))(instr, els)
	}
}

var (
	sliderGoalRE  = regexp.MustCompile(` to (\d+)\b`)
	sliderRangeRE = regexp.MustCompile(`\(0 to (\d+)\)`)
	readoutRE     = regexp.MustCompile(`^[A-Za-z ]+: (\d+)\b`)
)

// sliderSet: click the track where the value should be, then read the
// readout and step with the arrow keys until it matches; then Submit.
func sliderSet() policy {
	clicked, submitted := false, false
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		if submitted {
			return done(), nil
		}
		m := sliderGoalRE.FindStringSubmatch(instr)
		if m == nil {
			return gym.GUIAction{}, fmt.Errorf("instruction %q names no value such as \"to 7\"", instr)
		}
		goal, _ := strconv.Atoi(m[1])
		slider, err := first(els, "range slider", func(e gui.Element) bool { return isInput(e, "range") })
		if err != nil {
			return gym.GUIAction{}, err
		}
		if !clicked {
			r, ok := textMatch(els, sliderRangeRE)
			if !ok {
				return gym.GUIAction{}, fmt.Errorf("the page shows no range such as \"(0 to 20)\"")
			}
			top, _ := strconv.Atoi(r[1])
			clicked = true
			// The thumb's centre travels the track less half a thumb at each end.
			const thumb = 16
			_, y := slider.Center()
			x := slider.X + thumb/2 + (slider.W-thumb)*goal/max(top, 1)
			return clickAt(x, y), nil
		}
		r, ok := textMatch(els, readoutRE)
		if !ok {
			return gym.GUIAction{}, fmt.Errorf("the page shows no readout such as \"Volume: 5\"")
		}
		now, _ := strconv.Atoi(r[1])
		switch {
		case now < goal:
			return pressKey("ArrowRight"), nil
		case now > goal:
			return pressKey("ArrowLeft"), nil
		}
		submitted = true
		return clickOn(button("Submit"))(instr, els)
	}
}

// dragBox: drag the square's centre onto the labelled zone's centre.
func dragBox() policy {
	return steps(func(instr string, els []gui.Element) (gym.GUIAction, error) {
		q, err := quoted(instr, 1)
		if err != nil {
			return gym.GUIAction{}, err
		}
		zone, err := mustText(els, q[0])
		if err != nil {
			return gym.GUIAction{}, err
		}
		box, err := first(els, "square to drag", func(e gui.Element) bool { return hasClass(e, "box") })
		if err != nil {
			return gym.GUIAction{}, err
		}
		return dragFromTo(box, zone), nil
	})
}

// scrollFind: scroll the list down until the entry shows inside it, then
// click it.
func scrollFind() policy {
	clicked, scrolls := false, 0
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		if clicked {
			return done(), nil
		}
		q, err := quoted(instr, 1)
		if err != nil {
			return gym.GUIAction{}, err
		}
		list, err := first(els, "scrollable list", func(e gui.Element) bool { return hasClass(e, "list") })
		if err != nil {
			return gym.GUIAction{}, err
		}
		if e, ok := withText(els, q[0], "button"); ok && inside(e, list) {
			clicked = true
			return click(e), nil
		}
		if scrolls++; scrolls > 12 {
			return gym.GUIAction{}, fmt.Errorf("%q did not show after %d scrolls", q[0], scrolls-1)
		}
		return scrollOver(list, 60), nil
	}
}

var cartRE = regexp.MustCompile(`^Cart \((\d+)\)$`)

// checkout: on the shop screen add the product (the Add button in its row)
// and open the cart; in the cart remove anything else and check out; on the
// delivery screen fill both fields and place the order. The screen is told
// by the buttons it shows.
func checkout() policy {
	var form []move // the delivery screen's moves, made on arrival
	return func(instr string, els []gui.Element) (gym.GUIAction, error) {
		q, err := quoted(instr, 3)
		if err != nil {
			return gym.GUIAction{}, err
		}
		product := q[0]
		if form != nil {
			if len(form) == 0 {
				return done(), nil
			}
			m := form[0]
			form = form[1:]
			return m(instr, els)
		}
		if _, ok := withText(els, "Place order", "button"); ok {
			form = []move{
				clickOn(textBox(0)), typeValue(nthQuoted(1)),
				clickOn(textBox(1)), typeValue(nthQuoted(2)),
				submitChecked("Place order", 1, nthQuoted(2)),
			}
			m := form[0]
			form = form[1:]
			return m(instr, els)
		}
		if co, ok := withText(els, "Checkout", "button"); ok {
			removes := all(els, func(e gui.Element) bool { return norm(e.Text) == "Remove" }, "button")
			names := all(els, func(e gui.Element) bool { return hasClass(e, "pname") })
			have := 0
			for _, n := range names {
				i := slices.IndexFunc(removes, func(r gui.Element) bool { return sameRow(r, n) })
				if i < 0 {
					return gym.GUIAction{}, fmt.Errorf("cart line %q has no Remove button", norm(n.Text))
				}
				if norm(n.Text) != product || have > 0 {
					return click(removes[i]), nil
				}
				have++
			}
			if have == 0 {
				return clickOn(button("Back"))(instr, els)
			}
			if co.Disabled {
				return gym.GUIAction{}, fmt.Errorf("checkout is disabled with %q in the cart", product)
			}
			return click(co), nil
		}
		cart, err := first(els, "Cart button", func(e gui.Element) bool { return cartRE.MatchString(norm(e.Text)) }, "button")
		if err != nil {
			return gym.GUIAction{}, err
		}
		if norm(cart.Text) != "Cart (0)" {
			return click(cart), nil
		}
		name, err := mustText(els, product)
		if err != nil {
			return gym.GUIAction{}, err
		}
		adds := all(els, func(e gui.Element) bool { return norm(e.Text) == "Add" && sameRow(e, name) }, "button")
		if len(adds) == 0 {
			return gym.GUIAction{}, fmt.Errorf("no Add button beside %q", product)
		}
		return click(adds[0]), nil
	}
}
