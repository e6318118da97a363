package desktop

import (
	"bytes"
	"context"
	"errors"
	"hash/adler32"
	"image"
	"image/png"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/nextstate-rl/nextstate/gym"
)

// openEnv configures a private Kind and resets one Env on task; both are
// closed when the test ends.
func openEnv(t *testing.T, settings gym.Settings, task gym.Task, opts gym.Options) (*Env, gym.Observation) {
	t.Helper()
	needX(t)
	ctx := context.Background()
	k, err := (&Kind{}).Configure(ctx, settings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	env, err := k.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := env.(*Env)
	t.Cleanup(func() { e.Close(ctx) })
	obs, _, err := e.Reset(ctx, &task, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e, obs
}

func stepEnv(t *testing.T, e *Env, g gym.GUIAction) gym.Transition {
	t.Helper()
	tr, err := e.Step(context.Background(), guiAction(g))
	if err != nil {
		t.Fatalf("step %s: %v", jsonString(g), err)
	}
	return tr
}

// TestClickRepaints: a click in xedit's text moves its insertion cursor,
// so pixels change; the PNG the step returns is the screen as captured.
func TestClickRepaints(t *testing.T) {
	task := bareTask("click", "true", TaskData{Setup: []string{`printf 'first line\nsecond line\n' > f.txt`},
		App: "xedit -geometry 640x400+0+0 f.txt"})
	e, _ := openEnv(t, nil, task, nil)
	ctx := context.Background()
	before, err := e.d.Image(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tr := stepEnv(t, e, click(17+7*8, 132))
	after, err := e.d.Image(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(before.Pix, after.Pix) {
		t.Fatal("no pixel changed after a click that moves xedit's cursor")
	}
	got, err := png.Decode(bytes.NewReader(tr.Observation.Parts[0].Image.Data))
	if err != nil {
		t.Fatalf("the step's screenshot is not a PNG: %v", err)
	}
	if !sameImage(got, after) {
		t.Error("the step's PNG differs from the screen captured after it")
	}
}

// sameImage compares two images pixel by pixel.
func sameImage(a image.Image, b *image.RGBA) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			r1, g1, b1, a1 := a.At(x, y).RGBA()
			r2, g2, b2, a2 := b.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				return false
			}
		}
	}
	return true
}

// catApp is xterm running cat into out.txt; it touches cat.done when cat
// has ended (at ctrl+d), which catDone, the start of an evaluator, waits
// for (at most 25 s, within the evaluator's 30 s: a loaded machine is slow).
const (
	catApp  = "xterm " + xtermFlags + ` -e sh -c 'cat > out.txt; touch cat.done; exec sleep 1000000'`
	catDone = `for i in $(seq 250); do [ -f cat.done ] && break; sleep 0.1; done; `
)

// TestTypeReachesApp: typed text, with characters the keyboard has no key
// for (typed through a spare keycode) and a key combination, arrives in a
// program running in xterm; the evaluator reads what it wrote.
func TestTypeReachesApp(t *testing.T) {
	want := "Hello, World! ~`|{}<>?\" café ñandú €5 Ωμέγα"
	task := bareTask("type", catDone+"printf '%s\\n' "+shellQuote(want)+" | cmp -s - out.txt",
		TaskData{App: catApp})
	e, _ := openEnv(t, nil, task, nil)
	stepEnv(t, e, click(200, 200))
	stepEnv(t, e, typ(want+"\n"))
	stepEnv(t, e, key("ctrl+d"))
	reward, info, err := e.Verify(context.Background())
	if err != nil || reward != 1 {
		t.Fatalf("verify: reward %v, %v, %v; want 1", reward, err, info)
	}
	if n := len(e.d.keys.onSpare); n == 0 {
		t.Error("no spare keycode was used for the characters without a key")
	}
	// A reset gives the spare keycodes back.
	if _, _, err := e.Reset(context.Background(), &task, 0, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(e.d.keys.onSpare); n != 0 {
		t.Errorf("%d spare keycodes still mapped after a reset", n)
	}
	r, err := xproto.GetKeyboardMapping(e.d.conn, e.d.keys.spares[0], 1).Reply()
	if err != nil || r.Keysyms[0] != 0 {
		t.Errorf("spare keycode %d after a reset: %v %v; want no keysym", e.d.keys.spares[0], r, err)
	}
}

// TestManySpareKeys types more distinct keyless characters than there are
// spare keycodes, so spares are reused.
func TestManySpareKeys(t *testing.T) {
	var want []rune
	for r := 'α'; r <= 'ω'; r++ {
		want = append(want, r)
	}
	text := string(want)
	task := bareTask("spares", catDone+"printf '%s\\n' "+shellQuote(text)+" | cmp -s - out.txt",
		TaskData{App: catApp})
	e, _ := openEnv(t, nil, task, nil)
	if len(want) <= len(e.d.keys.spares) {
		t.Skipf("%d spare keycodes: the test types only %d characters", len(e.d.keys.spares), len(want))
	}
	stepEnv(t, e, click(200, 200))
	stepEnv(t, e, typ(text+"\n"))
	stepEnv(t, e, key("ctrl+d"))
	if reward, info, err := e.Verify(context.Background()); err != nil || reward != 1 {
		t.Fatalf("verify: reward %v, %v, %v; want 1", reward, err, info)
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestParseCombo(t *testing.T) {
	for _, c := range []struct {
		in   string
		mods []xproto.Keysym
		key  xproto.Keysym
	}{
		{"Enter", nil, 0xff0d},
		{"Return", nil, 0xff0d},
		{"ctrl+a", []xproto.Keysym{ksControlL}, 'a'},
		{"Ctrl+Shift+T", []xproto.Keysym{ksControlL, ksShiftL}, 'T'},
		{"shift+Tab", []xproto.Keysym{ksShiftL}, 0xff09},
		{"ctrl++", []xproto.Keysym{ksControlL}, '+'},
		{"+", nil, '+'},
		{"alt+F4", []xproto.Keysym{ksAltL}, 0xffc1},
		{"Page_Down", nil, 0xff56},
		{"pagedown", nil, 0xff56},
		{"super", nil, ksSuperL},
		{"é", nil, 0xe9},
		{"ctrl+minus", []xproto.Keysym{ksControlL}, '-'},
	} {
		mods, k, err := parseCombo(c.in)
		if err != nil || k != c.key || len(mods) != len(c.mods) {
			t.Errorf("parseCombo(%q) = %v, %#x, %v; want %v, %#x", c.in, mods, k, err, c.mods, c.key)
			continue
		}
		for i := range mods {
			if mods[i] != c.mods[i] {
				t.Errorf("parseCombo(%q) modifiers %v, want %v", c.in, mods, c.mods)
			}
		}
	}
	for _, bad := range []string{"", "ctrl+", "hyper+a", "ctrl+nokey", "ctrl+shift"} {
		_, _, err := parseCombo(bad)
		var fe *gym.FaultError
		if !errors.As(err, &fe) || fe.Fault != gym.FaultAgent {
			t.Errorf("parseCombo(%q): got %v, want an agent fault", bad, err)
		}
	}
}

// TestPNGEncoder checks the fast encoder against image/png's decoder on
// random and flat images of odd sizes, then after changing some rows and
// re-encoding only their strips.
func TestPNGEncoder(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, size := range [][2]int{{1, 1}, {7, 3}, {300, 129}, {640, 400}} {
		w, h := size[0], size[1]
		var enc pngEncoder
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for i := range img.Pix {
			if i%4 == 3 {
				img.Pix[i] = 0xff
			} else if i/(4*w) < h/2 {
				img.Pix[i] = byte(rng.Intn(256)) // noise above, flat below
			}
		}
		rows := func(y int, rgb []byte) {
			for x := 0; x < w; x++ {
				copy(rgb[3*x:3*x+3], img.Pix[y*img.Stride+4*x:])
			}
		}
		check := func(b []byte, what string) {
			t.Helper()
			got, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%dx%d %s: %v", w, h, what, err)
			}
			if !sameImage(got, img) {
				t.Errorf("%dx%d %s: the decoded image differs", w, h, what)
			}
		}
		check(enc.encode(w, h, nil, rows), "full")
		// Change one row in the last strip and the rows around the first
		// strip boundary; re-encode only those strips.
		dirty := make([]bool, nstrips(h))
		for _, y := range []int{h - 1, stripRows - 1, stripRows} {
			if y >= h {
				continue
			}
			for x := 0; x < w; x++ {
				img.Pix[y*img.Stride+4*x] ^= 0x5a
			}
			dirty[y/stripRows] = true
		}
		incr := enc.encode(w, h, dirty, rows)
		check(incr, "incremental")
		var fresh pngEncoder
		if full := fresh.encode(w, h, nil, rows); !bytes.Equal(full, incr) {
			t.Errorf("%dx%d: the incremental PNG differs from a full encoding of the same pixels", w, h)
		}
	}
}

func TestAdler32Combine(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, n := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {100, 65521}, {70000, 200000}} {
		a, b := make([]byte, n[0]), make([]byte, n[1])
		rng.Read(a)
		rng.Read(b)
		want := adler32.Checksum(append(append([]byte(nil), a...), b...))
		if got := adler32Combine(adler32.Checksum(a), adler32.Checksum(b), len(b)); got != want {
			t.Errorf("lengths %v: combined %#x, want %#x", n, got, want)
		}
	}
}

func TestPixelFormats(t *testing.T) {
	// 16-bit 565 in both byte orders, and 24-bit packed.
	for _, c := range []struct {
		pf   pixelFormat
		data []byte
	}{
		{pixelFormat{bpp: 16, pad: 32, masks: [3]uint32{0xf800, 0x07e0, 0x001f}, shifts: [3]int{11, 5, 0}, widths: [3]int{5, 6, 5}},
			[]byte{0x1f, 0xf8, 0, 0}},
		{pixelFormat{bpp: 16, pad: 32, msb: true, masks: [3]uint32{0xf800, 0x07e0, 0x001f}, shifts: [3]int{11, 5, 0}, widths: [3]int{5, 6, 5}},
			[]byte{0xf8, 0x1f, 0, 0}},
		{pixelFormat{bpp: 24, pad: 32, masks: [3]uint32{0xff0000, 0xff00, 0xff}, shifts: [3]int{16, 8, 0}, widths: [3]int{8, 8, 8}},
			[]byte{0xff, 0x00, 0xff, 0}},
	} {
		rgb := make([]byte, 3)
		c.pf.rowRGB(rgb, c.data, 0)
		if rgb[0] != 0xff || rgb[1] != 0 || rgb[2] != 0xff {
			t.Errorf("%+v: got %v, want magenta [255 0 255]", c.pf, rgb)
		}
	}
}

// TestIncrementalScreenshots: after actions that redraw parts of the
// screen (typing, scrolling, a window opening and closing), the step's
// PNG, made from the strips DAMAGE marked, equals a fresh capture.
func TestIncrementalScreenshots(t *testing.T) {
	task := bareTask("incr", "true", TaskData{App: xtermShell})
	e, _ := openEnv(t, gym.Settings{SettingSandbox: "none"}, task, nil)
	ctx := context.Background()
	for i, g := range []gym.GUIAction{
		click(200, 200),
		typ("seq 1 100\n"),
		scroll(200, 200, -300),
		scroll(200, 200, 200),
		typ("clear\n"),
		typ("xmessage -geometry +600+300 'a window over the root' &\n"),
		wait(500 * time.Millisecond),
		click(620, 330), // the dialog's okay button: it closes
		wait(300 * time.Millisecond),
		move(10, 10),
	} {
		tr := stepEnv(t, e, g)
		if _, err := png.Decode(bytes.NewReader(tr.Observation.Parts[0].Image.Data)); err != nil {
			t.Fatal(err)
		}
		// Let the screen settle (a wait step has no settle of its own),
		// then compare with a fresh capture of it.
		if err := e.d.Settle(ctx, StepQuiet, StepSettle); err != nil {
			t.Fatal(err)
		}
		shot, err := e.d.Screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		full, err := e.d.Image(ctx)
		if err != nil {
			t.Fatal(err)
		}
		inc, _ := png.Decode(bytes.NewReader(shot))
		if !sameImage(inc, full) {
			t.Errorf("step %d (%s): the incremental screenshot differs from a fresh capture", i+1, jsonString(g))
		}
	}
}
