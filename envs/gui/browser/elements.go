package browser

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/gui"
)

// elementsFunc is a JavaScript function of the viewport's width and
// height whose value is the page's element list (see ElementsExpr).
//
//go:embed elements.js
var elementsFunc string

// ElementsExpr is a JavaScript expression whose value is the element list
// of a page whose viewport is width×height, in the JSON form of
// []gui.Element: every element with a non-empty box that meets the
// viewport, is visible, and is interactive (a, button, input, select,
// option, textarea, label, summary, or one with onclick, role, tabindex,
// draggable or contenteditable) or holds text of its own. Refs are kept
// in a data-ns-ref attribute, stable while the document lives; boxes are
// clipped to the viewport. At most 500 elements; texts are cut at 200
// characters. Callers that read other page state in the same evaluation
// embed it, with the page's Size.
func ElementsExpr(width, height int) string {
	return fmt.Sprintf("%s(%d, %d)", strings.TrimSpace(elementsFunc), width, height)
}

// Elements lists the page's visible elements (see ElementsExpr).
func (p *Page) Elements(ctx context.Context) ([]gui.Element, error) {
	var els []gui.Element
	if err := p.Eval(ctx, ElementsExpr(p.w, p.h), &els); err != nil {
		return nil, err
	}
	return els, nil
}

// ErrUnknownRef is returned by ClickElement for a ref that names no
// visible element of the page.
var ErrUnknownRef = errors.New("browser: no such element")

// clickTargetScript finds the element of a ref, scrolls it into the
// viewport (the W×H top-left corner of the window) and returns its centre;
// a drop-down's option is chosen as a user would (the select takes its
// value, then input and change fire), since its list is not part of the
// page's screen.
const clickTargetScript = `((ref, W, H) => {
  const el = document.querySelector('[data-ns-ref="' + ref + '"]');
  if (!el || !el.isConnected) return {found: false};
  const sel = el.tagName === 'OPTION' ? el.closest('select') : null;
  if (sel && !(sel.multiple || sel.size > 1)) {
    if (sel.disabled || el.disabled) return {found: true, disabled: true};
    sel.focus();
    if (!el.selected) {
      el.selected = true;
      sel.dispatchEvent(new Event('input', {bubbles: true}));
      sel.dispatchEvent(new Event('change', {bubbles: true}));
    }
    return {found: true, chosen: true};
  }
  // Into the window (and every scrolled box around it), then, where the
  // window is larger than the viewport, the window into the viewport.
  el.scrollIntoView({block: 'nearest', inline: 'nearest'});
  let r = el.getBoundingClientRect();
  if (r.width <= 0 || r.height <= 0) return {found: true, hidden: true};
  const nearest = (lo, hi, size) => lo < 0 ? lo : (hi > size ? Math.min(hi - size, lo) : 0);
  const dx = nearest(r.left, r.right, W), dy = nearest(r.top, r.bottom, H);
  if (dx !== 0 || dy !== 0) {
    window.scrollBy({left: dx, top: dy, behavior: 'instant'});
    r = el.getBoundingClientRect();
  }
  if (r.right <= 0 || r.bottom <= 0 || r.left >= W || r.top >= H) return {found: true, outside: true};
  const x = Math.min(Math.max(r.left + r.width / 2, 0), W - 1);
  const y = Math.min(Math.max(r.top + r.height / 2, 0), H - 1);
  return {found: true, x: Math.floor(x), y: Math.floor(y)};
})(%s, %d, %d)`

// ClickElement clicks the element a ref names (a ref from Elements; "[12]"
// is read as "12"): it scrolls the element into the viewport and clicks
// its centre with the mouse, as the agent would. An option of a drop-down
// select is chosen instead (its list is not on the screen to click). A
// ref that names no element, one with no box, or one that scrolling does
// not bring into the viewport is an error wrapping ErrUnknownRef.
func (p *Page) ClickElement(ctx context.Context, ref string) error {
	ref = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(ref), "["), "]"))
	if _, err := strconv.ParseUint(ref, 10, 32); err != nil {
		return fmt.Errorf("%w: ref %q is not a number from the element list", ErrUnknownRef, ref)
	}
	var t struct {
		Found, Hidden, Outside, Disabled, Chosen bool
		X, Y                                     int
	}
	if err := p.Eval(ctx, fmt.Sprintf(clickTargetScript, strconv.Quote(ref), p.w, p.h), &t); err != nil {
		return err
	}
	switch {
	case !t.Found:
		return fmt.Errorf("%w: ref %s is not on the page (refs come from the latest element list)", ErrUnknownRef, ref)
	case t.Hidden:
		return fmt.Errorf("%w: element %s is not visible", ErrUnknownRef, ref)
	case t.Outside:
		return fmt.Errorf("%w: element %s is outside the screen and scrolling does not bring it in", ErrUnknownRef, ref)
	case t.Disabled:
		return fmt.Errorf("%w: option %s is disabled", ErrUnknownRef, ref)
	case t.Chosen:
		return nil
	}
	return p.Click(ctx, t.X, t.Y, "left", 1)
}
