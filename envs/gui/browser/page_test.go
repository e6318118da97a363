package browser

import (
	"bytes"
	"context"
	"errors"
	"image/color"
	"image/png"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/gym"
)

// pageLog is testdata/page.html's record of events, cleared after each
// read.
func pageLog(t *testing.T, pg *Page) []string {
	t.Helper()
	var log []string
	if err := pg.Eval(t.Context(), "(() => { const l = window.log; window.log = []; return l; })()", &log); err != nil {
		t.Fatal(err)
	}
	return log
}

func evalT[T any](t *testing.T, pg *Page, expr string) T {
	t.Helper()
	var v T
	if err := pg.Eval(t.Context(), expr, &v); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func wantLog(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: events %q, want %q", what, got, want)
	}
}

func TestPageActions(t *testing.T) {
	p := newPool(t, Options{})
	pg := openPage(t, p)
	ctx := t.Context()

	if err := pg.Click(ctx, 20, 40, "left", 1); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "click", pageLog(t, pg), "mousedown:btn:b0:d1", "mouseup:btn:b0:d1", "click:btn:b0:d1")

	if err := pg.Click(ctx, 20, 40, "left", 2); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "double click", pageLog(t, pg), "mousedown:btn:b0:d1", "mouseup:btn:b0:d1", "click:btn:b0:d1",
		"mousedown:btn:b0:d2", "mouseup:btn:b0:d2", "click:btn:b0:d2", "dblclick:btn:b0:d2")

	if err := pg.Click(ctx, 20, 40, "right", 1); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "right click", pageLog(t, pg), "mousedown:btn:b2:d1", "contextmenu:btn:b2", "mouseup:btn:b2:d1")

	if err := pg.Move(ctx, 123, 77); err != nil {
		t.Fatal(err)
	}
	if m := evalT[[]int](t, pg, "window.moves[window.moves.length-1]"); !slices.Equal(m, []int{123, 77, 0}) {
		t.Errorf("move: last mousemove %v, want [123 77 0]", m)
	}

	if err := pg.Drag(ctx, 160, 160, 100, 180); err != nil {
		t.Fatal(err)
	}
	if d := evalT[[]int](t, pg, "window.drag"); !slices.Equal(d, []int{160, 160, 100, 180}) {
		t.Errorf("drag: pressed and released at %v, want [160 160 100 180]", d)
	}
	if n := evalT[int](t, pg, "window.moves.filter(m => m[2] === 1).length"); n < dragSteps {
		t.Errorf("drag: %d moves with the button down, want %d", n, dragSteps)
	}
	pageLog(t, pg)

	// Type into the text box: key events per character, and text no key
	// types is inserted.
	if err := pg.Click(ctx, 30, 68, "left", 1); err != nil {
		t.Fatal(err)
	}
	pageLog(t, pg)
	if err := pg.Type(ctx, "Hi é!"); err != nil {
		t.Fatal(err)
	}
	if v := evalT[string](t, pg, "document.getElementById('txt').value"); v != "Hi é!" {
		t.Errorf("type: value %q, want %q", v, "Hi é!")
	}
	log := pageLog(t, pg)
	if !slices.Contains(log, "keydown:txt:H") || !slices.Contains(log, "keyup:txt:!") {
		t.Errorf("type: events %q lack keydown H and keyup !", log)
	}

	// ctrl+a selects all, so typing replaces it.
	if err := pg.Key(ctx, "ctrl+a"); err != nil {
		t.Fatal(err)
	}
	if err := pg.Type(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if v := evalT[string](t, pg, "document.getElementById('txt').value"); v != "x" {
		t.Errorf("ctrl+a then type x: value %q, want %q", v, "x")
	}
	if err := pg.Key(ctx, "BackSpace"); err != nil {
		t.Fatal(err)
	}
	if v := evalT[string](t, pg, "document.getElementById('txt').value"); v != "" {
		t.Errorf("Backspace: value %q, want empty", v)
	}
	pageLog(t, pg)
	if err := pg.Key(ctx, "shift+Tab"); err != nil {
		t.Fatal(err)
	}
	if id := evalT[string](t, pg, "document.activeElement.id"); id != "btn" {
		t.Errorf("shift+Tab from the text box focused %q, want btn", id)
	}
	if err := pg.Key(ctx, "Enter"); err != nil {
		t.Fatal(err)
	}
	if log := pageLog(t, pg); !slices.Contains(log, "keydown:btn:Enter") || !slices.Contains(log, "click:btn:b0") {
		t.Errorf("Enter on the button: events %q, want a keydown Enter and a click", log)
	}
	if err := pg.Key(ctx, "ctrl+nosuchkey"); !errors.Is(err, ErrBadKey) {
		t.Errorf("a bad key: got %v, want ErrBadKey", err)
	}

	if err := pg.Scroll(ctx, 50, 50, 0, 300); err != nil {
		t.Fatal(err)
	}
	if y := evalT[float64](t, pg, "window.scrollY"); y != 300 {
		t.Errorf("scroll dy 300: scrollY %v", y)
	}
	if err := pg.Scroll(ctx, 50, 50, 0, -100); err != nil {
		t.Fatal(err)
	}
	if y := evalT[float64](t, pg, "window.scrollY"); y != 200 {
		t.Errorf("scroll dy -100: scrollY %v, want 200", y)
	}

	shot, err := pg.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 200 || b.Dy() != 200 {
		t.Errorf("screenshot is %dx%d, want the viewport's 200x200", b.Dx(), b.Dy())
	}
	if w, h := pg.Size(); w != 200 || h != 200 {
		t.Errorf("Size %dx%d", w, h)
	}
	if err := pg.SetViewport(ctx, 120, 90); err != nil {
		t.Fatal(err)
	}
	shot, _ = pg.Screenshot(ctx)
	if img, err := png.Decode(bytes.NewReader(shot)); err != nil || img.Bounds().Dx() != 120 || img.Bounds().Dy() != 90 {
		t.Errorf("after SetViewport(120, 90) the screenshot is not 120x90 (%v)", err)
	}
}

// TestScreenshotSteady: a focused text box's caret does not blink, so
// screenshots of an unchanged page are the same.
func TestScreenshotSteady(t *testing.T) {
	p := newPool(t, Options{})
	pg := openPage(t, p)
	ctx := t.Context()
	if err := pg.Click(ctx, 30, 68, "left", 1); err != nil {
		t.Fatal(err)
	}
	first, err := pg.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A blinking caret changes every 500ms; look for 1.2s.
	for i := range 8 {
		if err := pg.Eval(ctx, "new Promise(r => setTimeout(r, 150))", nil); err != nil {
			t.Fatal(err)
		}
		s, err := pg.Screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(s, first) {
			t.Fatalf("screenshot %d of an unchanged page differs from the first", i+2)
		}
	}
}

func TestElements(t *testing.T) {
	p := newPool(t, Options{})
	pg := openPage(t, p)
	ctx := t.Context()
	els, err := pg.Elements(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]gui.Element{}
	for _, e := range els {
		if e.ID != "" {
			byID[e.ID] = e
		}
	}
	for _, id := range []string{"query", "btn", "txt", "chk", "sel", "lnk", "plain"} {
		if _, ok := byID[id]; !ok {
			t.Errorf("element #%s is not listed in %+v", id, els)
		}
	}
	for _, id := range []string{"hidden", "far", "drop", "tall"} {
		if _, ok := byID[id]; ok {
			t.Errorf("element #%s is listed: hidden, outside the viewport, or neither interactive nor holding text", id)
		}
	}
	if b := byID["btn"]; b.X != 10 || b.Y != 30 || b.W != 60 || b.H != 20 || b.Text != "Press" || b.Tag != "button" {
		t.Errorf("button: %+v, want box (10,30,60,20), text Press", b)
	}
	if q := byID["query"]; q.Text != "Do the test things." {
		t.Errorf("query text %q", q.Text)
	}
	if txt := byID["txt"]; txt.Type != "text" || txt.Placeholder != "type here" {
		t.Errorf("text box: %+v", txt)
	}
	if l := byID["lnk"]; l.Href != "#x" {
		t.Errorf("link href %q", l.Href)
	}
	var options []gui.Element
	for _, e := range els {
		if e.Tag == "option" {
			options = append(options, e)
		}
	}
	if len(options) != 2 || !options[0].Selected || options[1].Selected || options[1].Text != "Banana" || options[1].Value != "b" {
		t.Errorf("options: %+v, want Apple selected and Banana (value b)", options)
	}

	// Refs stay the same; state shows up.
	cx, cy := byID["chk"].Center()
	if err := pg.Click(ctx, cx, cy, "left", 1); err != nil {
		t.Fatal(err)
	}
	again, err := pg.Elements(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(els) {
		t.Fatalf("second listing has %d elements, the first %d", len(again), len(els))
	}
	for i := range els {
		if again[i].Ref != els[i].Ref {
			t.Errorf("element %d's ref changed from %s to %s", i, els[i].Ref, again[i].Ref)
		}
		if again[i].ID == "chk" && !again[i].Checked {
			t.Errorf("the clicked checkbox is not checked: %+v", again[i])
		}
	}
}

func TestClickElement(t *testing.T) {
	p := newPool(t, Options{})
	pg := openPage(t, p)
	ctx := t.Context()
	els, err := pg.Elements(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(pred func(gui.Element) bool) string {
		for _, e := range els {
			if pred(e) {
				return e.Ref
			}
		}
		t.Fatal("no such element")
		return ""
	}
	pageLog(t, pg)
	if err := pg.ClickElement(ctx, ref(func(e gui.Element) bool { return e.ID == "btn" })); err != nil {
		t.Fatal(err)
	}
	wantLog(t, "click_element on the button", pageLog(t, pg), "mousedown:btn:b0:d1", "mouseup:btn:b0:d1", "click:btn:b0:d1")

	banana := ref(func(e gui.Element) bool { return e.Text == "Banana" })
	if err := pg.ClickElement(ctx, "["+banana+"]"); err != nil {
		t.Fatal(err)
	}
	if v := evalT[string](t, pg, "document.getElementById('sel').value"); v != "b" {
		t.Errorf("click_element on the option Banana: the select's value is %q", v)
	}
	wantLog(t, "choosing an option", pageLog(t, pg), "input:sel", "change:sel")

	for _, bad := range []string{"999", "x", ""} {
		if err := pg.ClickElement(ctx, bad); !errors.Is(err, ErrUnknownRef) {
			t.Errorf("click_element %q: got %v, want ErrUnknownRef", bad, err)
		}
	}
	var fe *gym.FaultError
	if err := pg.ClickElement(ctx, "999"); errors.As(err, &fe) {
		t.Errorf("an unknown ref is labelled %s: it is the agent's recoverable mistake", fe.Fault)
	}
}

// TestScreenshotFresh: a screenshot taken right after an action shows
// what the action changed.
func TestScreenshotFresh(t *testing.T) {
	p := newPool(t, Options{})
	pg := openPage(t, p)
	ctx := t.Context()
	for i := range 6 {
		// A click on the grey box turns it red, then blue, then red...
		if err := pg.Click(ctx, 170, 170, "left", 1); err != nil {
			t.Fatal(err)
		}
		shot, err := pg.Screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatal(err)
		}
		r, _, b, _ := img.At(175, 175).RGBA()
		if red := i%2 == 0; red && (r>>8 != 255 || b != 0) || !red && (b>>8 != 255 || r != 0) {
			t.Fatalf("click %d: the box's pixel is rgb(%d,_,%d), want %s", i+1, r>>8, b>>8, map[bool]string{true: "red", false: "blue"}[red])
		}
	}
}

// TestDialogs: a dialog the page opens is accepted, so it blocks nothing.
func TestDialogs(t *testing.T) {
	p := newPool(t, Options{})
	pg := openPage(t, p)
	pageLog(t, pg)
	if err := pg.Click(t.Context(), 110, 98, "left", 1); err != nil {
		t.Fatal(err)
	}
	if log := pageLog(t, pg); !slices.Contains(log, "confirm:true") {
		t.Errorf("events %q: the confirm dialog was not accepted", log)
	}
}

func TestEvalError(t *testing.T) {
	p := newPool(t, Options{})
	pg := openPage(t, p)
	err := pg.Eval(t.Context(), "(() => { throw new Error('boom') })()", nil)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("a throwing script: got %v, want its error", err)
	}
	var n int
	if err := pg.Eval(t.Context(), "1 + 2", &n); err != nil || n != 3 {
		t.Errorf("1 + 2 = %d (%v)", n, err)
	}
}

// TestWindow: a 100x100 viewport at the top-left of a 300x300 window
// (SetWindow). The page is laid out in the window; the screenshot is the
// viewport where the window is scrolled to; the element list leaves out
// what is in the window but not the viewport; ClickElement scrolls an
// element into the viewport, and refuses one that no scrolling brings in.
func TestWindow(t *testing.T) {
	p := newPool(t, Options{})
	ctx := t.Context()
	pg, err := p.NewPage(ctx, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close(context.Background()) })
	if err := pg.SetWindow(ctx, 100, 100, 50, 300); err == nil || !strings.Contains(err.Error(), "want at least the viewport") {
		t.Errorf("a window narrower than the viewport: %v", err)
	}
	if err := pg.SetWindow(ctx, 100, 100, 300, 300); err != nil {
		t.Fatal(err)
	}
	if err := pg.Navigate(ctx, testServer(t).URL+"/window.html"); err != nil {
		t.Fatal(err)
	}
	if w, h := pg.Size(); w != 100 || h != 100 {
		t.Errorf("Size %dx%d, want the viewport's 100x100", w, h)
	}
	if w, h := pg.Window(); w != 300 || h != 300 {
		t.Errorf("Window %dx%d, want 300x300", w, h)
	}
	if w := evalT[int](t, pg, "window.innerWidth"); w != 300 {
		t.Errorf("the page's innerWidth is %d, want the window's 300", w)
	}
	pixel := func(what string, x, y int, want color.RGBA) {
		t.Helper()
		shot, err := pg.Screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 100 || b.Dy() != 100 {
			t.Fatalf("%s: the screenshot is %dx%d, want the viewport's 100x100", what, b.Dx(), b.Dy())
		}
		r, g, b, _ := img.At(x, y).RGBA()
		if got := (color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}); got != want {
			t.Errorf("%s: pixel (%d,%d) is %v, want %v", what, x, y, got, want)
		}
	}
	pixel("at the top", 50, 50, color.RGBA{255, 0, 0, 255})
	if err := pg.Scroll(ctx, 50, 50, 0, 400); err != nil {
		t.Fatal(err)
	}
	if y := evalT[float64](t, pg, "window.scrollY"); y != 400 {
		t.Fatalf("scroll dy 400: scrollY %v", y)
	}
	pixel("scrolled 400 down", 50, 50, color.RGBA{0, 0, 255, 255})
	if err := pg.Scroll(ctx, 50, 50, 0, -400); err != nil {
		t.Fatal(err)
	}

	els, err := pg.Elements(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range els {
		if e.ID == "beside" || e.ID == "inwindow" {
			t.Errorf("%s is listed, though it is in the window but not the viewport: %+v", e.ID, e)
		}
	}
	// Refs for both, listed with a viewport as large as the window.
	if err := pg.SetWindow(ctx, 300, 300, 300, 300); err != nil {
		t.Fatal(err)
	}
	if els, err = pg.Elements(ctx); err != nil {
		t.Fatal(err)
	}
	refs := map[string]string{}
	for _, e := range els {
		refs[e.ID] = e.Ref
	}
	if refs["beside"] == "" || refs["inwindow"] == "" {
		t.Fatalf("a 300x300 viewport does not list #beside and #inwindow: %+v", els)
	}
	if err := pg.SetWindow(ctx, 100, 100, 300, 300); err != nil {
		t.Fatal(err)
	}
	if err := pg.ClickElement(ctx, refs["inwindow"]); err != nil {
		t.Fatal(err)
	}
	if c := evalT[string](t, pg, "String(window.clicked)"); c != "inwindow" {
		t.Errorf("click_element on #inwindow (window y 150, below the viewport) clicked %q", c)
	}
	if top := evalT[float64](t, pg, "document.getElementById('inwindow').getBoundingClientRect().bottom"); top > 100 {
		t.Errorf("#inwindow's bottom is at %v after click_element, below the 100-pixel viewport", top)
	}
	// The page is as wide as the window: nothing scrolls #beside in.
	if err := pg.ClickElement(ctx, refs["beside"]); !errors.Is(err, ErrUnknownRef) || !strings.Contains(err.Error(), "outside the screen") {
		t.Errorf("click_element on #beside, which no scrolling brings into the viewport: %v, want ErrUnknownRef", err)
	}
}
