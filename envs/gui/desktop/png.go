package desktop

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"runtime"
	"sync"
)

// pngEncoder writes 8-bit RGB PNGs of one size fast, and faster again when
// only part of the image changed:
//
//   - every row gets the Sub filter (no per-row filter search, which is
//     most of image/png's time);
//   - the rows are cut into strips of stripRows, each deflated at
//     BestSpeed on its own and ended with a sync flush, so that the
//     strips' streams concatenate into one zlib stream (as pigz does);
//     strips are encoded in parallel;
//   - each strip's deflated bytes and Adler-32 are kept, so an update
//     re-encodes only the strips it is told are dirty, and the zlib
//     checksum is combined from the strips'.
//
// The output depends only on the pixels, not on the CPUs or on which
// strips were redone. One goroutine at a time uses an encoder.
type pngEncoder struct {
	width, height int
	raw           []byte // filtered rows: a filter byte, then 3*width bytes
	strips        []strip
}

type strip struct {
	buf   bytes.Buffer // the strip's deflate stream
	adler uint32       // Adler-32 of the strip's filtered rows
}

// writers are deflate writers at BestSpeed, shared by all encoders (a
// writer holds a few hundred KiB of tables).
var writers = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed) // a valid level: no error
	return w
}}

// stripRows is the rows per strip: enough to compress well, few enough
// that a small change redoes little.
const stripRows = 32

// ftSub is PNG's Sub filter type.
const ftSub = 1

// nstrips is how many strips an image of height rows has.
func nstrips(height int) int { return (height + stripRows - 1) / stripRows }

// encode returns a PNG of a width×height image whose rows row fills with
// packed RGB. dirty lists, per strip, whether its rows changed since the
// last call; nil (and any change of size) means all of them. row is
// called concurrently for rows of different strips.
func (e *pngEncoder) encode(width, height int, dirty []bool, row func(y int, rgb []byte)) []byte {
	rowLen := 1 + 3*width
	n := nstrips(height)
	if e.width != width || e.height != height {
		e.width, e.height = width, height
		e.raw = make([]byte, rowLen*height)
		e.strips = make([]strip, n)
		dirty = nil
	}
	var todo []int
	for i := range n {
		if dirty == nil || dirty[i] {
			todo = append(todo, i)
		}
	}
	work := func(i int) {
		lo, hi := i*stripRows, min(height, (i+1)*stripRows)
		for y := lo; y < hi; y++ {
			r := e.raw[y*rowLen : (y+1)*rowLen]
			r[0] = ftSub
			px := r[1:]
			row(y, px)
			for j := len(px) - 1; j >= 3; j-- {
				px[j] -= px[j-3]
			}
		}
		s := &e.strips[i]
		s.buf.Reset()
		fw := writers.Get().(*flate.Writer)
		fw.Reset(&s.buf)
		data := e.raw[lo*rowLen : hi*rowLen]
		fw.Write(data)
		if i == n-1 {
			fw.Close() // the final block
		} else {
			fw.Flush() // byte-aligned, not final: the next strip follows
		}
		fw.Reset(nil)
		writers.Put(fw)
		s.adler = adler32.Checksum(data)
	}
	parallel(len(todo), func(k int) { work(todo[k]) })
	return e.assemble(rowLen)
}

// parallel runs f(0..n-1) on up to GOMAXPROCS goroutines and waits.
func parallel(n int, f func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() { // joined below
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// assemble writes the PNG from the strips.
func (e *pngEncoder) assemble(rowLen int) []byte {
	size := 2 + 4 // zlib header and checksum
	for i := range e.strips {
		size += e.strips[i].buf.Len()
	}
	out := make([]byte, 0, 8+25+12+size+12)
	out = append(out, "\x89PNG\r\n\x1a\n"...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(e.width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(e.height))
	ihdr[8], ihdr[9] = 8, 2 // 8-bit truecolour; compression, filter and interlace 0
	out = chunk(out, "IHDR", ihdr[:])

	// IDAT: one zlib stream: header 0x78 0x01 (deflate, 32K window,
	// fastest), the strips' deflate data, the Adler-32 of all rows.
	start := len(out)
	out = binary.BigEndian.AppendUint32(out, uint32(size))
	out = append(out, "IDAT"...)
	out = append(out, 0x78, 0x01)
	var sum uint32 = 1
	for i := range e.strips {
		s := &e.strips[i]
		out = append(out, s.buf.Bytes()...)
		n := min(e.height, (i+1)*stripRows) - i*stripRows
		sum = adler32Combine(sum, s.adler, n*rowLen)
	}
	out = binary.BigEndian.AppendUint32(out, sum)
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start+4:]))
	return chunk(out, "IEND", nil)
}

// chunk appends a PNG chunk.
func chunk(out []byte, typ string, data []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	start := len(out)
	out = append(out, typ...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
}

// adler32Combine returns the Adler-32 of A followed by B from the sums of
// A and B and B's length (zlib's adler32_combine).
func adler32Combine(a, b uint32, lenB int) uint32 {
	const base = 65521
	rem := uint32(lenB % base)
	sum1 := a & 0xffff
	sum2 := (rem * sum1) % base
	sum1 += (b & 0xffff) + base - 1
	sum2 += (a >> 16) + (b >> 16) + base - rem
	if sum1 >= base {
		sum1 -= base
	}
	if sum1 >= base {
		sum1 -= base
	}
	if sum2 >= base<<1 {
		sum2 -= base << 1
	}
	if sum2 >= base {
		sum2 -= base
	}
	return sum1 | sum2<<16
}
