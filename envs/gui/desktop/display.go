package desktop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/nextstate-rl/nextstate/envs/gui"
)

// ErrDisplayGone: the X server went away (it died or was killed), or the
// connection to it broke. A session whose display is gone fails with an
// infrastructure fault.
var ErrDisplayGone = errors.New("the X display is gone")

// Display is a connection to an X server that implements gui.Screen:
// input through XTEST, screenshots through GetImage, and a DAMAGE monitor
// on the root window that tells when the screen has stopped changing.
// Its methods are called from one goroutine at a time; Close may be
// called from any.
type Display struct {
	conn   *xgb.Conn
	raw    net.Conn
	root   xproto.Window
	width  int
	height int
	pix    pixelFormat
	keys   *keymap

	lastDamage  atomic.Int64  // unix nanoseconds of the last damage event
	damageCount atomic.Uint64 // damage events so far
	gone        chan struct{} // closed when the connection has ended
	loop        sync.WaitGroup
	closeOnce   sync.Once

	// fencing: a ClientMessage this client sends itself comes back after
	// every event the server queued before it (see fence).
	win      xproto.Window // an unmapped InputOnly window of ours
	fenceSeq uint32
	fenced   atomic.Uint32 // the last fence token the event loop saw
	fenceCh  chan struct{} // pinged when a fence token arrives

	// The screen as last captured, and which strips of it DAMAGE has
	// marked changed since (see shot.go).
	dirtyMu sync.Mutex
	dirty   []bool // per strip of stripRows rows
	fb      []byte // the capture, in the server's format
	enc     pngEncoder
	png     []byte // the last screenshot
}

var _ gui.Screen = (*Display)(nil)

// xgbLogger routes xgb's logger (a package variable it writes connection
// errors to) to slog at debug level, once.
var xgbLogger sync.Once

type slogWriter struct{}

func (slogWriter) Write(p []byte) (int, error) {
	slog.Debug("xgb: " + string(p))
	return len(p), nil
}

// Dial connects to display :num through its socket, authenticating with
// cookie (MIT-MAGIC-COOKIE-1; nil for a server without access control).
func Dial(ctx context.Context, num int, cookie []byte) (*Display, error) {
	xgbLogger.Do(func() { xgb.Logger = log.New(slogWriter{}, "", 0) })
	var dialer net.Dialer
	raw, err := dialer.DialContext(ctx, "unix", socketPath(num))
	if err != nil {
		return nil, fmt.Errorf("%w: connecting to :%d: %v", ErrDisplayGone, num, err)
	}
	// The handshake has no deadline of its own: ctx bounds it.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Now()) })
	conn, err := xgb.NewConnNet(&authConn{Conn: raw, cookie: cookie})
	if !stop() || err != nil {
		raw.Close()
		if err == nil {
			conn.Close()
			err = ctx.Err()
		}
		return nil, fmt.Errorf("%w: X handshake with :%d: %v", ErrDisplayGone, num, err)
	}
	raw.SetDeadline(time.Time{})
	d := &Display{conn: conn, raw: raw, gone: make(chan struct{}), fenceCh: make(chan struct{}, 1)}
	d.loop.Add(1)
	go d.events() // owned by d: it ends when the connection does (Close)
	if err := d.setup(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// setup reads the screen's geometry and pixel format, initialises XTEST
// and DAMAGE, and reads the keyboard mapping.
func (d *Display) setup(ctx context.Context) error {
	s := xproto.Setup(d.conn)
	if s == nil || len(s.Roots) == 0 {
		return fmt.Errorf("%w: the server's setup has no screen", ErrDisplayGone)
	}
	scr := s.Roots[0]
	d.root = scr.Root
	d.width, d.height = int(scr.WidthInPixels), int(scr.HeightInPixels)
	pf, err := formatOf(s, &scr)
	if err != nil {
		return err
	}
	d.pix = pf
	d.dirty = make([]bool, nstrips(d.height))
	for i := range d.dirty {
		d.dirty[i] = true
	}
	d.fb = make([]byte, pf.stride(d.width)*d.height)
	return d.do(ctx, func() error {
		if err := xtest.Init(d.conn); err != nil {
			return fmt.Errorf("the X server has no XTEST extension: %w", err)
		}
		// Input and screenshots must not wait on a client's server grab.
		xtest.GrabControl(d.conn, true)
		if err := xfixes.Init(d.conn); err != nil {
			return fmt.Errorf("the X server has no XFIXES extension: %w", err)
		}
		if _, err := xfixes.QueryVersion(d.conn, 2, 0).Reply(); err != nil {
			return err
		}
		if err := damage.Init(d.conn); err != nil {
			return fmt.Errorf("the X server has no DAMAGE extension: %w", err)
		}
		if _, err := damage.QueryVersion(d.conn, 1, 1).Reply(); err != nil {
			return err
		}
		id, err := damage.NewDamageId(d.conn)
		if err != nil {
			return err
		}
		if err := damage.CreateChecked(d.conn, id, xproto.Drawable(d.root), damage.ReportLevelRawRectangles).Check(); err != nil {
			return err
		}
		win, err := xproto.NewWindowId(d.conn)
		if err != nil {
			return err
		}
		if err := xproto.CreateWindowChecked(d.conn, 0, win, d.root, -1, -1, 1, 1, 0,
			xproto.WindowClassInputOnly, 0, 0, nil).Check(); err != nil {
			return err
		}
		d.win = win
		km, err := loadKeymap(d.conn)
		if err != nil {
			return err
		}
		d.keys = km
		return nil
	})
}

// events drains the connection's events; damage marks the screen changed.
func (d *Display) events() {
	defer d.loop.Done()
	defer close(d.gone)
	for {
		ev, xerr := d.conn.WaitForEvent()
		switch {
		case ev == nil && xerr == nil:
			return // the connection ended
		case xerr != nil:
			slog.Debug("desktop: X error", "error", xerr)
		default:
			switch ev := ev.(type) {
			case damage.NotifyEvent:
				d.markDirty(int(ev.Area.Y), int(ev.Area.Y)+int(ev.Area.Height))
				d.damageCount.Add(1)
				d.lastDamage.Store(time.Now().UnixNano())
			case xproto.ClientMessageEvent:
				if ev.Window == d.win && ev.Format == 32 {
					d.fenced.Store(ev.Data.Data32[0])
					select {
					case d.fenceCh <- struct{}{}:
					default:
					}
				}
			}
		}
	}
}

// do runs f, which waits on X replies, under ctx: when ctx ends first the
// connection is cut (the Display is then unusable) and ctx's error is
// returned. A connection that ended is ErrDisplayGone.
func (d *Display) do(ctx context.Context, f func() error) error {
	if err := d.alive(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { d.raw.SetDeadline(time.Now()) })
	err := f()
	if !stop() {
		return ctx.Err()
	}
	if err != nil {
		if aerr := d.alive(); aerr != nil || errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: %v", ErrDisplayGone, err)
		}
	}
	return err
}

// alive returns ErrDisplayGone once the connection has ended.
func (d *Display) alive() error {
	select {
	case <-d.gone:
		return fmt.Errorf("%w: the connection to the X server ended", ErrDisplayGone)
	default:
		return nil
	}
}

// Close ends the connection and waits for its event loop. It is
// idempotent.
func (d *Display) Close() error {
	d.closeOnce.Do(func() {
		d.raw.Close()
		d.conn.Close()
		d.loop.Wait()
	})
	return nil
}

// Size implements gui.Screen.
func (d *Display) Size() (int, int) { return d.width, d.height }

// Sync waits until the server has processed every request sent so far
// (a GetInputFocus round trip), so that input has reached the clients'
// queues before anything else is observed.
func (d *Display) Sync(ctx context.Context) error {
	return d.do(ctx, func() error {
		_, err := xproto.GetInputFocus(d.conn).Reply()
		return err
	})
}

// fake sends one XTEST event.
func (d *Display) fake(typ byte, detail byte, x, y int) {
	xtest.FakeInput(d.conn, typ, detail, 0, d.root, int16(x), int16(y), 0)
}

// Move implements gui.Screen.
func (d *Display) Move(ctx context.Context, x, y int) error {
	d.fake(xproto.MotionNotify, 0, x, y)
	return d.Sync(ctx)
}

// buttons maps gui button names to X buttons.
var buttons = map[string]byte{"left": 1, "middle": 2, "right": 3}

// Click implements gui.Screen.
func (d *Display) Click(ctx context.Context, x, y int, button string, count int) error {
	b, ok := buttons[button]
	if !ok {
		return fmt.Errorf("desktop: unknown button %q (left, middle, right)", button)
	}
	d.fake(xproto.MotionNotify, 0, x, y)
	for range max(count, 1) {
		d.fake(xproto.ButtonPress, b, 0, 0)
		d.fake(xproto.ButtonRelease, b, 0, 0)
	}
	return d.Sync(ctx)
}

// dragSteps is how many motion events a drag sends between its ends.
const dragSteps = 12

// Drag implements gui.Screen.
func (d *Display) Drag(ctx context.Context, x0, y0, x1, y1 int) error {
	d.fake(xproto.MotionNotify, 0, x0, y0)
	d.fake(xproto.ButtonPress, 1, 0, 0)
	// Motion reaches the app as the pointer moves; a round trip between
	// steps lets apps that track the drag see each position.
	for i := 1; i <= dragSteps; i++ {
		d.fake(xproto.MotionNotify, 0, x0+(x1-x0)*i/dragSteps, y0+(y1-y0)*i/dragSteps)
		if err := d.Sync(ctx); err != nil {
			d.fake(xproto.ButtonRelease, 1, 0, 0)
			return err
		}
	}
	d.fake(xproto.ButtonRelease, 1, 0, 0)
	return d.Sync(ctx)
}

// ScrollStep is how many pixels of a scroll action make one wheel click.
// How far one click scrolls is the app's business (xterm: a few lines).
const ScrollStep = 100

// maxScrollClicks caps the wheel clicks of one scroll action per axis.
const maxScrollClicks = 50

// clicks converts a scroll distance to wheel clicks: one per ScrollStep
// pixels, at least one.
func clicks(px int) int {
	n := (abs(px) + ScrollStep - 1) / ScrollStep
	return min(n, maxScrollClicks)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// Scroll implements gui.Screen: buttons 4 and 5 scroll up and down, 6 and
// 7 left and right.
func (d *Display) Scroll(ctx context.Context, x, y, dx, dy int) error {
	d.fake(xproto.MotionNotify, 0, x, y)
	wheel := func(b byte, n int) {
		for range n {
			d.fake(xproto.ButtonPress, b, 0, 0)
			d.fake(xproto.ButtonRelease, b, 0, 0)
		}
	}
	switch {
	case dy > 0:
		wheel(5, clicks(dy))
	case dy < 0:
		wheel(4, clicks(dy))
	}
	switch {
	case dx > 0:
		wheel(7, clicks(dx))
	case dx < 0:
		wheel(6, clicks(dx))
	}
	return d.Sync(ctx)
}

// authConn puts the display's cookie into the connection setup request
// that xgb writes first: xgb reads cookies only from $XAUTHORITY, a
// setting of the whole process, and each display has its own.
type authConn struct {
	net.Conn
	cookie []byte
	sent   bool
}

func (c *authConn) Write(b []byte) (int, error) {
	if c.sent || c.cookie == nil {
		return c.Conn.Write(b)
	}
	c.sent = true
	if len(b) < 12 || b[0] != 'l' {
		return 0, errors.New("desktop: unexpected X connection setup request")
	}
	const name = "MIT-MAGIC-COOKIE-1"
	req := make([]byte, 12, 12+pad4(len(name))+pad4(len(c.cookie)))
	copy(req, b[:6])
	req[6], req[7] = byte(len(name)), 0
	req[8], req[9] = byte(len(c.cookie)), 0
	req = append(req, name...)
	req = append(req, make([]byte, pad4(len(name))-len(name))...)
	req = append(req, c.cookie...)
	req = append(req, make([]byte, pad4(len(c.cookie))-len(c.cookie))...)
	if _, err := c.Conn.Write(req); err != nil {
		return 0, err
	}
	return len(b), nil
}

func pad4(n int) int { return (n + 3) &^ 3 }

// Windows counts the root window's viewable children: the top-level
// windows on screen (there is no window manager to reparent them).
func (d *Display) Windows(ctx context.Context) (int, error) {
	n := 0
	err := d.do(ctx, func() error {
		tree, err := xproto.QueryTree(d.conn, d.root).Reply()
		if err != nil {
			return err
		}
		cookies := make([]xproto.GetWindowAttributesCookie, len(tree.Children))
		for i, w := range tree.Children {
			cookies[i] = xproto.GetWindowAttributes(d.conn, w)
		}
		for _, c := range cookies {
			a, err := c.Reply()
			if err != nil {
				continue // the window went away meanwhile
			}
			if a.MapState == xproto.MapStateViewable {
				n++
			}
		}
		return nil
	})
	return n, err
}

// ClearCutBuffers deletes the root window's CUT_BUFFER0..7 properties,
// which clients may set and which outlive them.
func (d *Display) ClearCutBuffers(ctx context.Context) error {
	return d.do(ctx, func() error {
		for i := range 8 {
			xproto.DeleteProperty(d.conn, d.root, xproto.Atom(xproto.AtomCutBuffer0+i))
		}
		_, err := xproto.GetInputFocus(d.conn).Reply()
		return err
	})
}
