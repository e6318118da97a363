package desktop

import (
	"context"
	"fmt"
	"image"
	"time"

	"github.com/jezek/xgb/xproto"
)

// Screenshots are incremental: the event loop marks the strips of rows
// that DAMAGE reports changed, and a screenshot fetches (GetImage) and
// re-encodes only those strips; with nothing changed it returns the last
// PNG as it is. A fence first makes sure every damage event the server
// sent before the screenshot has been counted.

// markDirty marks the strips that rows [y0, y1) touch.
func (d *Display) markDirty(y0, y1 int) {
	y0, y1 = max(0, y0), min(d.height, y1)
	if y0 >= y1 {
		return
	}
	d.dirtyMu.Lock()
	for i := y0 / stripRows; i <= (y1-1)/stripRows; i++ {
		d.dirty[i] = true
	}
	d.dirtyMu.Unlock()
}

// takeDirty returns the dirty marks and clears them.
func (d *Display) takeDirty() []bool {
	d.dirtyMu.Lock()
	defer d.dirtyMu.Unlock()
	out := make([]bool, len(d.dirty))
	copy(out, d.dirty)
	clear(d.dirty)
	return out
}

// redirty marks strips dirty again (after a capture that failed).
func (d *Display) redirty(marks []bool) {
	d.dirtyMu.Lock()
	for i, m := range marks {
		d.dirty[i] = d.dirty[i] || m
	}
	d.dirtyMu.Unlock()
}

// fence waits until the event loop has handled every event the server
// queued for this client before now: it sends this client a ClientMessage
// and waits for it to come back.
func (d *Display) fence(ctx context.Context) error {
	d.fenceSeq++
	token := d.fenceSeq
	ev := xproto.ClientMessageEvent{Format: 32, Window: d.win, Type: xproto.AtomCardinal,
		Data: xproto.ClientMessageDataUnionData32New([]uint32{token, 0, 0, 0, 0})}
	if err := d.alive(); err != nil {
		return err
	}
	xproto.SendEvent(d.conn, false, d.win, 0, string(ev.Bytes()))
	for d.fenced.Load() != token {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.gone:
			return d.alive()
		case <-d.fenceCh:
		}
	}
	return nil
}

// Screenshot implements gui.Screen: the screen as PNG.
func (d *Display) Screenshot(ctx context.Context) ([]byte, error) {
	if err := d.fence(ctx); err != nil {
		return nil, err
	}
	dirty := d.takeDirty()
	any := false
	for _, m := range dirty {
		any = any || m
	}
	if !any && d.png != nil {
		return d.png, nil
	}
	if err := d.fetch(ctx, dirty); err != nil {
		d.redirty(dirty)
		return nil, err
	}
	d.png = d.enc.encode(d.width, d.height, dirty, func(y int, rgb []byte) { d.pix.rowRGB(rgb, d.fb, y) })
	return d.png, nil
}

// fetch reads the dirty strips' rows into fb, one GetImage per run of
// dirty strips, all requests sent before the first reply is read.
func (d *Display) fetch(ctx context.Context, dirty []bool) error {
	type run struct{ y0, y1 int }
	var runs []run
	for i := 0; i < len(dirty); i++ {
		if !dirty[i] {
			continue
		}
		j := i
		for j+1 < len(dirty) && dirty[j+1] {
			j++
		}
		runs = append(runs, run{i * stripRows, min(d.height, (j+1)*stripRows)})
		i = j
	}
	stride := d.pix.stride(d.width)
	return d.do(ctx, func() error {
		cookies := make([]xproto.GetImageCookie, len(runs))
		for k, r := range runs {
			cookies[k] = xproto.GetImage(d.conn, xproto.ImageFormatZPixmap, xproto.Drawable(d.root),
				0, int16(r.y0), uint16(d.width), uint16(r.y1-r.y0), 0xffffffff)
		}
		var err error
		for k, c := range cookies {
			rep, rerr := c.Reply() // every reply is read, even after an error
			if rerr != nil {
				err = rerr
				continue
			}
			r := runs[k]
			if want := stride * (r.y1 - r.y0); len(rep.Data) < want {
				err = fmt.Errorf("desktop: GetImage returned %d bytes for rows %d..%d, want %d", len(rep.Data), r.y0, r.y1, want)
				continue
			}
			copy(d.fb[r.y0*stride:r.y1*stride], rep.Data)
		}
		return err
	})
}

// Image captures the whole screen afresh (not from the incremental
// state) as an RGBA image.
func (d *Display) Image(ctx context.Context) (*image.RGBA, error) {
	var data []byte
	err := d.do(ctx, func() error {
		r, err := xproto.GetImage(d.conn, xproto.ImageFormatZPixmap, xproto.Drawable(d.root),
			0, 0, uint16(d.width), uint16(d.height), 0xffffffff).Reply()
		if err != nil {
			return err
		}
		data = r.Data
		return nil
	})
	if err != nil {
		return nil, err
	}
	if need := d.pix.stride(d.width) * d.height; len(data) < need {
		return nil, fmt.Errorf("desktop: GetImage returned %d bytes for a %dx%d screen, want %d", len(data), d.width, d.height, need)
	}
	img := image.NewRGBA(image.Rect(0, 0, d.width, d.height))
	d.pix.toRGBA(img, data)
	return img, nil
}

// Settle waits until the screen has not changed for quiet (no damage on
// the root window) and at least quiet has passed since the call, or until
// most has passed. It returns early only when ctx ends or the display is
// gone.
func (d *Display) Settle(ctx context.Context, quiet, most time.Duration) error {
	start := time.Now()
	deadline := start.Add(most)
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		last := time.Unix(0, d.lastDamage.Load())
		if last.Before(start) {
			last = start
		}
		now := time.Now()
		if !now.Before(deadline) {
			return nil
		}
		if still := now.Sub(last); still >= quiet {
			// Damage may still be on its way: a fence brings it in.
			n := d.damageCount.Load()
			if err := d.fence(ctx); err != nil {
				return err
			}
			if d.damageCount.Load() == n {
				return nil
			}
			continue
		}
		t.Reset(min(quiet-now.Sub(last), deadline.Sub(now)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.gone:
			return d.alive()
		case <-t.C:
		}
	}
}
