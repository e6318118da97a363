package desktop

import (
	"fmt"
	"image"
	"math/bits"

	"github.com/jezek/xgb/xproto"
)

// pixelFormat is how a ZPixmap image of the root window is laid out: the
// bits per pixel and scanline pad of the root depth's pixmap format, the
// server's image byte order, and the root visual's channel masks.
type pixelFormat struct {
	bpp    int  // bits per pixel: 8, 16, 24 or 32
	pad    int  // scanline pad in bits
	msb    bool // image byte order MSBFirst
	masks  [3]uint32
	shifts [3]int
	widths [3]int // bits per channel
}

// formatOf reads the root window's pixel format from the server's setup.
func formatOf(s *xproto.SetupInfo, scr *xproto.ScreenInfo) (pixelFormat, error) {
	var pf pixelFormat
	for _, f := range s.PixmapFormats {
		if f.Depth == scr.RootDepth {
			pf.bpp, pf.pad = int(f.BitsPerPixel), int(f.ScanlinePad)
		}
	}
	if pf.bpp != 8 && pf.bpp != 16 && pf.bpp != 24 && pf.bpp != 32 {
		return pf, fmt.Errorf("desktop: the root depth %d has %d bits per pixel; want 8, 16, 24 or 32", scr.RootDepth, pf.bpp)
	}
	pf.msb = s.ImageByteOrder == xproto.ImageOrderMSBFirst
	var vis *xproto.VisualInfo
	for _, d := range scr.AllowedDepths {
		for i := range d.Visuals {
			if d.Visuals[i].VisualId == scr.RootVisual {
				vis = &d.Visuals[i]
			}
		}
	}
	if vis == nil || (vis.Class != xproto.VisualClassTrueColor && vis.Class != xproto.VisualClassDirectColor) {
		return pf, fmt.Errorf("desktop: the root visual is not TrueColor; start the X server with depth 24")
	}
	pf.masks = [3]uint32{vis.RedMask, vis.GreenMask, vis.BlueMask}
	for i, m := range pf.masks {
		if m == 0 {
			return pf, fmt.Errorf("desktop: the root visual has an empty channel mask")
		}
		pf.shifts[i] = bits.TrailingZeros32(m)
		pf.widths[i] = bits.OnesCount32(m)
	}
	return pf, nil
}

// stride is the bytes of one scanline of width pixels.
func (pf *pixelFormat) stride(width int) int {
	return (width*pf.bpp + pf.pad - 1) / pf.pad * pf.pad / 8
}

// fastBGRX reports whether pixels are 32-bit little-endian 0x00RRGGBB,
// the layout of Xvfb and of most X servers, which has a fast path.
func (pf *pixelFormat) fastBGRX() bool {
	return pf.bpp == 32 && !pf.msb && pf.masks == [3]uint32{0xff0000, 0xff00, 0xff}
}

// pixel reads the pixel value at byte offset o.
func (pf *pixelFormat) pixel(row []byte, o int) uint32 {
	switch pf.bpp {
	case 8:
		return uint32(row[o])
	case 16:
		if pf.msb {
			return uint32(row[o])<<8 | uint32(row[o+1])
		}
		return uint32(row[o]) | uint32(row[o+1])<<8
	case 24:
		if pf.msb {
			return uint32(row[o])<<16 | uint32(row[o+1])<<8 | uint32(row[o+2])
		}
		return uint32(row[o]) | uint32(row[o+1])<<8 | uint32(row[o+2])<<16
	default:
		if pf.msb {
			return uint32(row[o])<<24 | uint32(row[o+1])<<16 | uint32(row[o+2])<<8 | uint32(row[o+3])
		}
		return uint32(row[o]) | uint32(row[o+1])<<8 | uint32(row[o+2])<<16 | uint32(row[o+3])<<24
	}
}

// channel scales channel c of pixel v to 8 bits.
func (pf *pixelFormat) channel(v uint32, c int) byte {
	x := (v & pf.masks[c]) >> pf.shifts[c]
	w := pf.widths[c]
	switch {
	case w == 8:
		return byte(x)
	case w > 8:
		return byte(x >> (w - 8))
	default:
		return byte(x * 255 / (1<<w - 1))
	}
}

// rowRGB writes scanline y of data as packed RGB into dst (3 bytes per
// pixel, len(dst)/3 pixels).
func (pf *pixelFormat) rowRGB(dst, data []byte, y int) {
	w := len(dst) / 3
	s := pf.stride(w)
	row := data[y*s : y*s+s]
	if pf.fastBGRX() {
		row = row[:4*w]
		for x := 0; x < w; x++ {
			p := row[4*x : 4*x+3 : 4*x+3]
			q := dst[3*x : 3*x+3 : 3*x+3]
			q[0], q[1], q[2] = p[2], p[1], p[0]
		}
		return
	}
	bpp := pf.bpp / 8
	for x := 0; x < w; x++ {
		v := pf.pixel(row, x*bpp)
		dst[3*x], dst[3*x+1], dst[3*x+2] = pf.channel(v, 0), pf.channel(v, 1), pf.channel(v, 2)
	}
}

// toRGBA converts a whole capture into img, whose size is the capture's.
func (pf *pixelFormat) toRGBA(img *image.RGBA, data []byte) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	rgb := make([]byte, 3*w)
	for y := 0; y < h; y++ {
		pf.rowRGB(rgb, data, y)
		out := img.Pix[y*img.Stride : y*img.Stride+4*w]
		for x := 0; x < w; x++ {
			out[4*x], out[4*x+1], out[4*x+2], out[4*x+3] = rgb[3*x], rgb[3*x+1], rgb[3*x+2], 0xff
		}
	}
}
