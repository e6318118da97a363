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

// ElementsScript is a JavaScript expression whose value is the page's
// element list, in the JSON form of []gui.Element: every element with a
// non-empty box that meets the viewport, is visible, and is interactive
// (a, button, input, select, option, textarea, label, summary, or one with
// onclick, role, tabindex, draggable or contenteditable) or holds text of
// its own. Refs are kept in a data-ns-ref attribute, stable while the
// document lives; boxes are clipped to the viewport. At most 500
// elements; texts are cut at 200 characters. Callers that read other page
// state in the same evaluation embed it.
//
//go:embed elements.js
var ElementsScript string

// Elements lists the page's visible elements (see ElementsScript).
func (p *Page) Elements(ctx context.Context) ([]gui.Element, error) {
	var els []gui.Element
	if err := p.Eval(ctx, ElementsScript, &els); err != nil {
		return nil, err
	}
	return els, nil
}

// ErrUnknownRef is returned by ClickElement for a ref that names no
// visible element of the page.
var ErrUnknownRef = errors.New("browser: no such element")

// clickTargetScript finds the element of a ref, scrolls it into view and
// returns its centre; a drop-down's option is chosen as a user would
// (the select takes its value, then input and change fire), since its
// list is not part of the page's screen.
const clickTargetScript = `((ref) => {
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
  el.scrollIntoView({block: 'nearest', inline: 'nearest'});
  const r = el.getBoundingClientRect();
  if (r.width <= 0 || r.height <= 0) return {found: true, hidden: true};
  const x = Math.min(Math.max(r.left + r.width / 2, 0), window.innerWidth - 1);
  const y = Math.min(Math.max(r.top + r.height / 2, 0), window.innerHeight - 1);
  return {found: true, x: Math.floor(x), y: Math.floor(y)};
})(%s)`

// ClickElement clicks the element a ref names (a ref from Elements; "[12]"
// is read as "12"): it scrolls the element into view and clicks its
// centre with the mouse, as the agent would. An option of a drop-down
// select is chosen instead (its list is not on the screen to click). A
// ref that names no element, or one with no box, is an error wrapping
// ErrUnknownRef.
func (p *Page) ClickElement(ctx context.Context, ref string) error {
	ref = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(ref), "["), "]"))
	if _, err := strconv.ParseUint(ref, 10, 32); err != nil {
		return fmt.Errorf("%w: ref %q is not a number from the element list", ErrUnknownRef, ref)
	}
	var t struct {
		Found, Hidden, Disabled, Chosen bool
		X, Y                            int
	}
	if err := p.Eval(ctx, fmt.Sprintf(clickTargetScript, strconv.Quote(ref)), &t); err != nil {
		return err
	}
	switch {
	case !t.Found:
		return fmt.Errorf("%w: ref %s is not on the page (refs come from the latest element list)", ErrUnknownRef, ref)
	case t.Hidden:
		return fmt.Errorf("%w: element %s is not visible", ErrUnknownRef, ref)
	case t.Disabled:
		return fmt.Errorf("%w: option %s is disabled", ErrUnknownRef, ref)
	case t.Chosen:
		return nil
	}
	return p.Click(ctx, t.X, t.Y, "left", 1)
}
