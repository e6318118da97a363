package desktop

import (
	"bytes"
	"context"
	"image/png"
	"slices"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// benchEnv opens an Env with xterm showing text on a 1280x720 screen.
func benchEnv(b *testing.B) *Env {
	b.Helper()
	task := bareTask("bench", "true", TaskData{App: "xterm " + xtermFlags + ` -e sh -c 'ls -l /usr/bin | head -22; exec cat >/dev/null'`})
	needX(b)
	ctx := context.Background()
	k, err := (&Kind{}).Configure(ctx, gym.Settings{SettingSandbox: "none"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Shutdown(ctx) })
	env, err := k.New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	e := env.(*Env)
	b.Cleanup(func() { e.Close(ctx) })
	if _, _, err := e.Reset(ctx, &task, 0, nil); err != nil {
		b.Fatal(err)
	}
	return e
}

// timed runs f b.N times and reports the p50 and p99 of its durations.
func timed(b *testing.B, f func() error) {
	b.Helper()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(ds[len(ds)/2]), "p50-ms")
	b.ReportMetric(ms(ds[min(len(ds)-1, len(ds)*99/100)]), "p99-ms")
}

// BenchmarkStep is a whole step through Env.Step: the action, the wait
// for the screen to settle and the PNG screenshot. "click" clicks where
// nothing changes; "type" types a character into xterm, which draws it.
func BenchmarkStep(b *testing.B) {
	e := benchEnv(b)
	b.Run("click", func(b *testing.B) {
		a := guiAction(click(900, 600))
		timed(b, func() error {
			_, err := e.Step(context.Background(), a)
			return err
		})
	})
	b.Run("type", func(b *testing.B) {
		if _, err := e.Step(context.Background(), guiAction(click(200, 200))); err != nil {
			b.Fatal(err)
		}
		a := guiAction(typ("x"))
		timed(b, func() error {
			_, err := e.Step(context.Background(), a)
			return err
		})
	})
}

// allDirty marks the whole screen changed, so the next screenshot
// fetches and encodes all of it.
func allDirty(d *Display) {
	marks := make([]bool, len(d.dirty))
	for i := range marks {
		marks[i] = true
	}
	d.redirty(marks)
}

// BenchmarkScreenshot is a screenshot of a 1280x720 screen: all of it
// fetched (GetImage) and PNG-encoded, one strip of it, or nothing changed.
func BenchmarkScreenshot(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	b.Run("full", func(b *testing.B) {
		var size int
		timed(b, func() error {
			allDirty(e.d)
			p, err := e.d.Screenshot(ctx)
			size = len(p)
			return err
		})
		b.ReportMetric(float64(size)/1024, "KiB")
	})
	b.Run("one-strip", func(b *testing.B) {
		timed(b, func() error {
			e.d.markDirty(100, 101)
			_, err := e.d.Screenshot(ctx)
			return err
		})
	})
	b.Run("unchanged", func(b *testing.B) {
		timed(b, func() error {
			_, err := e.d.Screenshot(ctx)
			return err
		})
	})
}

// BenchmarkCapture is the GetImage of the whole screen alone.
func BenchmarkCapture(b *testing.B) {
	e := benchEnv(b)
	all := make([]bool, len(e.d.dirty))
	for i := range all {
		all[i] = true
	}
	timed(b, func() error { return e.d.fetch(context.Background(), all) })
}

// BenchmarkEncode is the PNG encoding of a whole screen alone, against
// image/png's at BestSpeed.
func BenchmarkEncode(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	if _, err := e.d.Screenshot(ctx); err != nil {
		b.Fatal(err)
	}
	w, h := e.d.Size()
	b.Run("fast", func(b *testing.B) {
		var enc pngEncoder
		timed(b, func() error {
			enc.encode(w, h, nil, func(y int, rgb []byte) { e.d.pix.rowRGB(rgb, e.d.fb, y) })
			return nil
		})
	})
	b.Run("image-png-bestspeed", func(b *testing.B) {
		img, err := e.d.Image(ctx)
		if err != nil {
			b.Fatal(err)
		}
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		var buf bytes.Buffer
		timed(b, func() error {
			buf.Reset()
			return enc.Encode(&buf, img)
		})
	})
}

// BenchmarkInput is one XTEST click and the round trip after it.
func BenchmarkInput(b *testing.B) {
	e := benchEnv(b)
	timed(b, func() error { return e.d.Click(context.Background(), 900, 600, "left", 1) })
}
