package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCappedBufferUnderCap(t *testing.T) {
	b := NewCappedBuffer(10)
	b.Write([]byte("abc"))
	b.Write([]byte("defghij"))
	if got := b.String(); got != "abcdefghij" || b.Truncated() || b.Len() != 10 {
		t.Errorf("%q truncated %v len %d", got, b.Truncated(), b.Len())
	}
}

// TestCappedBufferAgainstReference writes random chunks and compares with
// the head and tail of everything written.
func TestCappedBufferAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		max := 1 + r.IntN(64)
		b := NewCappedBuffer(max)
		var all bytes.Buffer
		for range r.IntN(20) {
			chunk := make([]byte, r.IntN(3*max))
			for i := range chunk {
				chunk[i] = byte('a' + r.IntN(26))
			}
			b.Write(chunk)
			all.Write(chunk)
		}
		want := all.String()
		if all.Len() > max {
			h := max / 2
			want = want[:h] + fmt.Sprintf(TruncationMarker, all.Len()-max) + want[all.Len()-(max-h):]
		}
		if got := b.String(); got != want {
			t.Fatalf("round %d max %d: got %q, want %q", round, max, got, want)
		}
		if b.Truncated() != (all.Len() > max) || b.Len() != int64(all.Len()) {
			t.Fatalf("round %d: truncated %v len %d", round, b.Truncated(), b.Len())
		}
	}
}

func TestCappedBufferBounded(t *testing.T) {
	b := NewCappedBuffer(1000)
	chunk := bytes.Repeat([]byte("y\n"), 4096)
	for range 2000 { // 16 MB
		b.Write(chunk)
	}
	out := b.Bytes()
	if len(out) > 1000+64 || !b.Truncated() || !bytes.Contains(out, []byte("bytes truncated")) {
		t.Errorf("%d bytes kept", len(out))
	}
	if NewCappedBuffer(0).max != DefaultMaxOutput {
		t.Error("0 is not the default")
	}
}

func TestMarkerScanSplit(t *testing.T) {
	stream := "hello __X__:notmine\n__X_world__X__:42\nafter"
	for split := 1; split < len(stream); split++ {
		for split2 := split; split2 < len(stream); split2++ {
			sc := markerScan{marker: []byte("__X__:")}
			var out bytes.Buffer
			var rest []byte
			rc, found := 0, false
			for _, part := range []string{stream[:split], stream[split:split2], stream[split2:]} {
				if found {
					rest = append(rest, part...)
					continue
				}
				rc, found = sc.feed([]byte(part), &out, &rest)
			}
			// "__X__:notmine" is not a marker line: its number does not parse.
			if !found {
				t.Fatalf("split %d/%d: marker not found", split, split2)
			}
			if rc == -1 {
				continue // the first, bogus marker line was taken; a shell never prints one
			}
			if out.String() != "hello __X__:notmine\n__X_world" || rc != 42 || string(rest) != "after" {
				t.Fatalf("split %d/%d: out %q rc %d rest %q", split, split2, out.String(), rc, rest)
			}
		}
	}
}

func TestAnsiQuote(t *testing.T) {
	for _, s := range []string{"", "a'b", `back\slash`, "new\nline", "tab\t", "ünï", "$HOME `x` \"q\""} {
		q := ansiQuote(s)
		if strings.ContainsAny(q[2:len(q)-1], "\n\t") {
			t.Errorf("%q: raw control characters in %q", s, q)
		}
	}
}

var _ io.Writer = (*CappedBuffer)(nil)
