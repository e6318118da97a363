package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/gym"
)

// dragSteps is how many pointer moves a drag makes between press and
// release.
const dragSteps = 10

// Page is one tab in its own browser context. It implements gui.Screen:
// coordinates are CSS pixels of the viewport, which are the screenshot's
// pixels (the device scale factor is 1). The viewport is the top-left
// corner of the window the page is laid out in, the whole window unless
// SetWindow made the window larger. Methods are called from one
// goroutine at a time (a gym.Session's); Close may be called from any.
//
// An operation on a page whose browser died fails with a gym.InfraFault
// "browser_crashed" (a crashed tab: "page_crashed"); other browser errors
// are gym.InfraFault "browser_error". A ctx that ends returns its error.
type Page struct {
	b      *instance
	ctx    context.Context // the tab's chromedp context
	cancel context.CancelFunc
	target *chromedp.Target
	w, h   int // the viewport: the screenshot, action coordinates, the element list
	ww, wh int // the window the page is laid out in; at least w×h

	crashed   atomic.Bool // the tab's renderer crashed
	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
}

// newPage opens a tab in a new browser context of b.
func (b *instance) newPage(ctx context.Context, w, h int) (*Page, error) {
	select {
	case <-b.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if b.err != nil {
		return nil, gym.InfraFault("browser_start", b.err)
	}
	p := &Page{b: b, w: w, h: h, ww: w, wh: h}
	pctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext(),
		chromedp.WithListener(func(ev any) {
			if _, ok := ev.(*inspector.EventTargetCrashed); ok {
				p.crashed.Store(true)
			}
		}))
	p.ctx, p.cancel = pctx, cancel
	// The first Run creates the tab and binds its event loop to pctx, so
	// it runs with pctx itself; ctx bounds the wait.
	done := make(chan error, 1)
	go func() {
		done <- chromedp.Do(pctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			if _, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: steadyCaret}); err != nil {
				return err
			}
			return setViewport(ctx, t, w, h)
		}))
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		cancel()
		<-done
		return nil, ctx.Err()
	case <-b.gone:
		err = errors.New("the browser is gone")
	}
	if err != nil {
		cancel()
		return nil, p.wrap(ctx, "opening a page", err)
	}
	p.target = chromedp.FromContext(pctx).Target
	go p.answerDialogs() // ends with the tab's context
	return p, nil
}

// answerDialogs accepts every JavaScript dialog (alert, confirm, prompt,
// beforeunload) the page opens: a dialog blocks the page, so an action
// would wait on it until its deadline. It returns when the tab closes.
func (p *Page) answerDialogs() {
	for _, err := range cdp.Events(p.ctx, p.target, page.JavascriptDialogOpening) {
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
		cdp.Call(ctx, p.target, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		cancel()
	}
}

// steadyCaret stops the text caret's blinking in every document, so that
// a screenshot does not depend on when it was taken.
const steadyCaret = `(() => {
  try {
    const s = new CSSStyleSheet();
    s.replaceSync('* { caret-animation: manual !important; }');
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, s];
  } catch (e) {}
})()`

func setViewport(ctx context.Context, t cdp.Session, w, h int) error {
	_, err := cdp.Call(ctx, t, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(w), Height: int64(h), DeviceScaleFactor: 1, ScreenWidth: int64(w), ScreenHeight: int64(h)})
	return err
}

// BrowserPID is the pid of the page's browser process.
func (p *Page) BrowserPID() int { return p.b.PID() }

// Size implements gui.Screen: the viewport's size.
func (p *Page) Size() (int, int) { return p.w, p.h }

// SetViewport resizes the viewport (and so the screenshot); the window the
// page is laid out in is the viewport.
func (p *Page) SetViewport(ctx context.Context, width, height int) error {
	return p.SetWindow(ctx, width, height, width, height)
}

// SetWindow lays the page out in a window of windowWidth×windowHeight CSS
// pixels whose top-left width×height corner is the viewport: what the
// screenshot shows, where action coordinates are, and what the element
// list holds. This is how MiniWoB++ runs its tasks (a 500×320 window, the
// screenshot cropped to the 160×210 task), and what its pages are laid
// out for: a page whose script places a widget in the window before it
// sizes it down (a jQuery UI dialog, 300 pixels wide at first) fits the
// window, where a window of the viewport's size would scroll sideways to
// the widget and leave the task out of view. The window is scrolled as a
// whole (a wheel, a focused element); the viewport moves with it. The
// window must be at least the viewport's size.
func (p *Page) SetWindow(ctx context.Context, width, height, windowWidth, windowHeight int) error {
	if width <= 0 || height <= 0 || width > 10000 || height > 10000 {
		return fmt.Errorf("browser: viewport %dx%d: want 1..10000 pixels each way", width, height)
	}
	if windowWidth < width || windowHeight < height || windowWidth > 10000 || windowHeight > 10000 {
		return fmt.Errorf("browser: window %dx%d for a viewport of %dx%d: want at least the viewport and at most 10000 pixels each way",
			windowWidth, windowHeight, width, height)
	}
	err := p.do(ctx, "setting the viewport", func(ctx context.Context) error {
		return setViewport(ctx, p.target, windowWidth, windowHeight)
	})
	if err == nil {
		p.w, p.h, p.ww, p.wh = width, height, windowWidth, windowHeight
	}
	return err
}

// Window is the size of the window the page is laid out in (SetWindow).
func (p *Page) Window() (int, int) { return p.ww, p.wh }

// opCtx is a caller's context that carries the page's chromedp values, so
// that an operation ends with the caller's deadline and chromedp finds
// its tab.
type opCtx struct {
	context.Context
	page context.Context
}

func (c opCtx) Value(k any) any {
	if v := c.page.Value(k); v != nil {
		return v
	}
	return c.Context.Value(k)
}

// do runs f under ctx, with the page's values, and labels its error.
func (p *Page) do(ctx context.Context, op string, f func(ctx context.Context) error) error {
	if err := p.usable(op); err != nil {
		return err
	}
	return p.wrap(ctx, op, f(opCtx{ctx, p.ctx}))
}

// usable fails fast on a closed page or a dead browser.
func (p *Page) usable(op string) error {
	if p.closed.Load() {
		return fmt.Errorf("browser: %s: the page is closed", op)
	}
	if p.b.dead() {
		return p.wrap(context.Background(), op, errors.New("the browser is gone"))
	}
	return nil
}

// wrap labels an operation's error with whose fault it was.
func (p *Page) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	b := p.b
	select {
	case <-b.closing:
		return gym.InfraFault("browser_closed", fmt.Errorf("browser: %s: the pool closed the browser: %w", op, err))
	default:
	}
	if b.dead() || b.crashed.Load() {
		return gym.InfraFault("browser_crashed", fmt.Errorf("browser: %s: the browser process (pid %d) died: %w", op, b.PID(), err))
	}
	if p.crashed.Load() {
		return gym.InfraFault("page_crashed", fmt.Errorf("browser: %s: the tab crashed: %w", op, err))
	}
	if ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("browser: %s: %w", op, err)
	}
	return gym.InfraFault("browser_error", fmt.Errorf("browser: %s: %w", op, err))
}

// Navigate loads url and waits for its load event.
func (p *Page) Navigate(ctx context.Context, url string) error {
	return p.do(ctx, "navigating to "+url, func(ctx context.Context) error {
		return chromedp.Do(ctx, chromedp.Navigate(url))
	})
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its JSON value into out (nil: ignore it). A thrown
// exception is an error that is not labelled: the caller's script failed.
func (p *Page) Eval(ctx context.Context, expr string, out any) error {
	var jsErr error
	err := p.do(ctx, "evaluating a script", func(ctx context.Context) error {
		res, err := cdp.Call(ctx, p.target, runtime.Evaluate, runtime.EvaluateParams{
			Expression: expr, ReturnByValue: ptr(true), AwaitPromise: ptr(true)})
		if err != nil {
			return err
		}
		if d := res.ExceptionDetails; d != nil {
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg = d.Exception.Description
			}
			jsErr = fmt.Errorf("browser: script threw: %s", firstLine(msg))
			return nil
		}
		if out == nil || res.Result == nil || len(res.Result.Value) == 0 {
			return nil
		}
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			jsErr = fmt.Errorf("browser: decoding a script's value: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return jsErr
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func ptr[T any](v T) *T { return &v }

// Screenshot implements gui.Screen: the viewport as PNG (of a window
// larger than the viewport, its top-left corner as it is scrolled).
func (p *Page) Screenshot(ctx context.Context) ([]byte, error) {
	var png []byte
	err := p.do(ctx, "taking a screenshot", func(ctx context.Context) error {
		params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, OptimizeForSpeed: ptr(true)}
		if p.ww != p.w || p.wh != p.h {
			// The clip is in the document's coordinates: the viewport is
			// where the window is scrolled to.
			m, err := cdp.Call(ctx, p.target, page.GetLayoutMetrics, cdp.Empty{})
			if err != nil {
				return err
			}
			var x, y float64
			if vv := m.CSSVisualViewport; vv != nil {
				x, y = vv.PageX, vv.PageY
			}
			params.Clip = &page.Viewport{X: x, Y: y, Width: float64(p.w), Height: float64(p.h), Scale: 1}
		}
		res, err := cdp.Call(ctx, p.target, page.CaptureScreenshot, params)
		png = res.Data
		return err
	})
	return png, err
}

// mouse sends one mouse event.
func (p *Page) mouse(ctx context.Context, typ input.DispatchMouseEventType, x, y int, button input.MouseButton, buttons, count int64) error {
	_, err := cdp.Call(ctx, p.target, input.DispatchMouseEvent, input.DispatchMouseEventParams{
		Type: typ, X: float64(x), Y: float64(y), Button: button, Buttons: buttons, ClickCount: count})
	return err
}

func mouseButton(name string) (input.MouseButton, int64, error) {
	switch name {
	case "left", "":
		return input.MouseButtonLeft, 1, nil
	case "right":
		return input.MouseButtonRight, 2, nil
	case "middle":
		return input.MouseButtonMiddle, 4, nil
	}
	return "", 0, fmt.Errorf("browser: mouse button %q: want left, right or middle", name)
}

// Click implements gui.Screen: the pointer moves to (x, y), then the
// button is pressed and released count times, each press carrying its
// click count (so a double click fires click, click, dblclick).
func (p *Page) Click(ctx context.Context, x, y int, button string, count int) error {
	btn, mask, err := mouseButton(button)
	if err != nil {
		return err
	}
	if count < 1 || count > 3 {
		return fmt.Errorf("browser: click count %d: want 1..3", count)
	}
	return p.do(ctx, "clicking", func(ctx context.Context) error {
		if err := p.mouse(ctx, input.DispatchMouseEventTypeMouseMoved, x, y, input.MouseButtonNone, 0, 0); err != nil {
			return err
		}
		for i := int64(1); i <= int64(count); i++ {
			if err := p.mouse(ctx, input.DispatchMouseEventTypeMousePressed, x, y, btn, mask, i); err != nil {
				return err
			}
			if err := p.mouse(ctx, input.DispatchMouseEventTypeMouseReleased, x, y, btn, 0, i); err != nil {
				return err
			}
		}
		return nil
	})
}

// Move implements gui.Screen.
func (p *Page) Move(ctx context.Context, x, y int) error {
	return p.do(ctx, "moving the pointer", func(ctx context.Context) error {
		return p.mouse(ctx, input.DispatchMouseEventTypeMouseMoved, x, y, input.MouseButtonNone, 0, 0)
	})
}

// Drag implements gui.Screen: press at (x0, y0), dragSteps moves to
// (x1, y1), release there.
func (p *Page) Drag(ctx context.Context, x0, y0, x1, y1 int) error {
	return p.do(ctx, "dragging", func(ctx context.Context) error {
		if err := p.mouse(ctx, input.DispatchMouseEventTypeMouseMoved, x0, y0, input.MouseButtonNone, 0, 0); err != nil {
			return err
		}
		if err := p.mouse(ctx, input.DispatchMouseEventTypeMousePressed, x0, y0, input.MouseButtonLeft, 1, 1); err != nil {
			return err
		}
		for i := 1; i <= dragSteps; i++ {
			x, y := x0+(x1-x0)*i/dragSteps, y0+(y1-y0)*i/dragSteps
			if err := p.mouse(ctx, input.DispatchMouseEventTypeMouseMoved, x, y, input.MouseButtonLeft, 1, 0); err != nil {
				return err
			}
		}
		return p.mouse(ctx, input.DispatchMouseEventTypeMouseReleased, x1, y1, input.MouseButtonLeft, 0, 1)
	})
}

// Type implements gui.Screen: each character is a key press (keydown,
// keypress, input, keyup), a newline is Enter and a tab Tab; characters
// no US key types are inserted as an input method would.
func (p *Page) Type(ctx context.Context, text string) error {
	return p.do(ctx, "typing", func(ctx context.Context) error {
		var pending []rune
		flush := func() error {
			if len(pending) == 0 {
				return nil
			}
			_, err := cdp.Call(ctx, p.target, input.InsertText, input.InsertTextParams{Text: string(pending)})
			pending = pending[:0]
			return err
		}
		for _, r := range text {
			evs := typeEvents(r)
			if evs == nil {
				pending = append(pending, r)
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			if err := p.keys(ctx, evs); err != nil {
				return err
			}
		}
		return flush()
	})
}

func (p *Page) keys(ctx context.Context, evs []input.DispatchKeyEventParams) error {
	for _, ev := range evs {
		if _, err := cdp.Call(ctx, p.target, input.DispatchKeyEvent, ev); err != nil {
			return err
		}
	}
	return nil
}

// ErrBadKey wraps a key combination Key cannot read.
var ErrBadKey = errors.New("browser: bad key combination")

// Key implements gui.Screen: it presses a combination such as "Enter",
// "ctrl+a" or "shift+Tab" (modifiers pressed in order, released in
// reverse). A combination it cannot read is an error wrapping ErrBadKey
// that says what is accepted.
func (p *Page) Key(ctx context.Context, combination string) error {
	c, err := parseCombo(combination)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	return p.do(ctx, "pressing "+combination, func(ctx context.Context) error { return p.keys(ctx, c.events()) })
}

// Scroll implements gui.Screen: a mouse wheel event of (dx, dy) pixels at
// (x, y); dy > 0 scrolls down. It returns once the page has drawn the
// scrolled frame.
func (p *Page) Scroll(ctx context.Context, x, y, dx, dy int) error {
	return p.do(ctx, "scrolling", func(ctx context.Context) error {
		// Both deltas must be sent, also a zero one, which the generated
		// parameters would leave out.
		err := p.target.Call(ctx, input.CommandDispatchMouseEvent, wheelParams{
			Type: input.DispatchMouseEventTypeMouseWheel, X: float64(x), Y: float64(y), DeltaX: float64(dx), DeltaY: float64(dy)}, nil)
		if err != nil {
			return err
		}
		// The wheel scrolls on the compositor; wait for a frame so that
		// what runs next sees it.
		_, err = cdp.Call(ctx, p.target, runtime.Evaluate, runtime.EvaluateParams{
			Expression: "new Promise(r => requestAnimationFrame(() => r()))", AwaitPromise: ptr(true)})
		return err
	})
}

type wheelParams struct {
	Type   input.DispatchMouseEventType `json:"type"`
	X      float64                      `json:"x"`
	Y      float64                      `json:"y"`
	DeltaX float64                      `json:"deltaX"`
	DeltaY float64                      `json:"deltaY"`
}

// Close closes the tab and disposes of its browser context, waiting at
// most until ctx ends. It is idempotent.
func (p *Page) Close(ctx context.Context) error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		done := make(chan struct{})
		go func() { p.cancel(); close(done) }() // closes the tab, bounded by chromedp (5s)
		select {
		case <-done:
		case <-ctx.Done():
			p.closeErr = fmt.Errorf("browser: closing a page: %w", ctx.Err())
		}
		p.b.pool.release(p.b)
	})
	return p.closeErr
}

var _ gui.Screen = (*Page)(nil)
