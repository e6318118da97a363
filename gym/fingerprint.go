package gym

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// fingerprint returns a digest of a's content, for the step log: two
// actions have the same fingerprint exactly when they have the same parts
// with the same fields, which is when they encode to the same JSON (for
// strings that are UTF-8, as every action read from JSON is). It encodes
// nothing: each field goes into the digest in a fixed order, a string or
// byte slice with its length before it, a pointer with whether it is set.
// A field added to Part or to what it points to goes in appendPart too; a
// test fails until it does.
func (a *Action) fingerprint() [32]byte {
	bp := fingerprintBufs.Get().(*[]byte)
	b := binary.AppendUvarint((*bp)[:0], uint64(len(a.Parts)))
	for i := range a.Parts {
		b = appendPart(b, &a.Parts[i])
	}
	sum := sha256.Sum256(b)
	if cap(b) <= maxPooledFingerprint {
		*bp = b
		fingerprintBufs.Put(bp)
	}
	return sum
}

// fingerprintBufs holds the buffers fingerprint lays actions out in; one
// larger than maxPooledFingerprint (an action with a big file) is dropped.
var fingerprintBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledFingerprint = 64 << 10

func appendPart(b []byte, p *Part) []byte {
	b = appendString(b, string(p.Type))
	b = appendString(b, p.Text)
	if b = appendSet(b, p.ToolCall != nil); p.ToolCall != nil {
		c := p.ToolCall
		b = appendString(b, c.ID)
		b = appendString(b, c.Type)
		b = appendString(b, c.Function.Name)
		b = appendString(b, c.Function.Arguments)
	}
	if b = appendSet(b, p.ToolResult != nil); p.ToolResult != nil {
		r := p.ToolResult
		b = appendString(b, r.CallID)
		b = appendString(b, r.Name)
		b = appendString(b, r.Content)
		b = appendSet(b, r.IsError)
	}
	if b = appendSet(b, p.GUIAction != nil); p.GUIAction != nil {
		g := p.GUIAction
		b = appendString(b, g.Action)
		for _, v := range [...]*int{g.X, g.Y, g.ToX, g.ToY} {
			if b = appendSet(b, v != nil); v != nil {
				b = binary.AppendVarint(b, int64(*v))
			}
		}
		b = appendString(b, g.Text)
		b = appendString(b, g.Key)
		b = binary.AppendVarint(b, int64(g.DX))
		b = binary.AppendVarint(b, int64(g.DY))
		b = binary.AppendVarint(b, int64(g.Ms))
		b = appendString(b, g.Ref)
	}
	if b = appendSet(b, p.Image != nil); p.Image != nil {
		b = appendBlob(b, p.Image)
	}
	if b = appendSet(b, p.File != nil); p.File != nil {
		b = appendString(b, p.File.Path)
		b = appendBlob(b, &p.File.Blob)
	}
	return b
}

func appendBlob(b []byte, x *Blob) []byte {
	b = appendString(b, x.MIME)
	b = binary.AppendUvarint(b, uint64(len(x.Data)))
	b = append(b, x.Data...)
	b = appendString(b, x.Ref)
	b = binary.AppendVarint(b, x.Size)
	b = binary.AppendVarint(b, int64(x.Width))
	return binary.AppendVarint(b, int64(x.Height))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendSet(b []byte, set bool) []byte {
	if set {
		return append(b, 1)
	}
	return append(b, 0)
}
