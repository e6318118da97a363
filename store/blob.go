package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// RefPrefix starts every blob reference; the rest is the lower-case hex
// SHA-256 of the content.
const RefPrefix = "sha256:"

// ErrBlobNotFound is returned (wrapped) by Blob for a well-formed reference
// the store does not hold.
var ErrBlobNotFound = errors.New("store: blob not found")

// Ref is the reference a blob of data is stored under: "sha256:<hex>".
func Ref(data []byte) string {
	sum := sha256.Sum256(data)
	return RefPrefix + hex.EncodeToString(sum[:])
}

// PutBlob stores data in the blob directory, once per distinct content, and
// returns its reference, "sha256:<hex>". The file is written to a temporary
// name, synced and renamed, so a reader never sees part of it.
func (s *Store) PutBlob(data []byte) (ref string, err error) {
	if s.readOnly {
		return "", ErrReadOnly
	}
	ref = Ref(data)
	hx := strings.TrimPrefix(ref, RefPrefix)
	dir := filepath.Join(s.blobs, hx[:2])
	path := filepath.Join(dir, hx)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		return ref, nil // already stored
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("store: put blob: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-"+hx[:16]+"-*")
	if err != nil {
		return "", fmt.Errorf("store: put blob: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp) //nolint:errcheck // best effort; the write's error is the one to report
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return "", fmt.Errorf("store: put blob %s: %w", ref, err)
	}
	return ref, nil
}

// Blob opens the blob that ref ("sha256:<hex>") names. A missing blob is an
// error wrapping ErrBlobNotFound.
func (s *Store) Blob(ref string) (io.ReadCloser, error) {
	path, err := s.blobPath(ref)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrBlobNotFound, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("store: blob %s: %w", ref, err)
	}
	return f, nil
}

func (s *Store) blobPath(ref string) (string, error) {
	hx, ok := strings.CutPrefix(ref, RefPrefix)
	if !ok || len(hx) != 2*sha256.Size || strings.ToLower(hx) != hx {
		return "", fmt.Errorf("store: malformed blob reference %q (want %s<64 lower-case hex digits>)", ref, RefPrefix)
	}
	if _, err := hex.DecodeString(hx); err != nil {
		return "", fmt.Errorf("store: malformed blob reference %q: %w", ref, err)
	}
	return filepath.Join(s.blobs, hx[:2], hx), nil
}

// Inline puts the data of blob references in ev's Observation and Action
// back inline. It replaces the Observation, Action and the parts it changes
// with copies, so an event shared with others (from OnCommit) is safe to pass.
func (s *Store) Inline(ev *gym.Event) error {
	if err := s.inlineObservation(&ev.Observation); err != nil {
		return fmt.Errorf("store: event %d: %w", ev.Seq, err)
	}
	if err := s.inlineAction(&ev.Action); err != nil {
		return fmt.Errorf("store: event %d: %w", ev.Seq, err)
	}
	return nil
}

// inlineObservation replaces *o by a copy with its blobs' data inline, if
// it has any blob references.
func (s *Store) inlineObservation(o **gym.Observation) error {
	if *o == nil {
		return nil
	}
	parts, err := rewriteBlobs((*o).Parts, s.inlineBlob)
	if parts != nil {
		*o = &gym.Observation{Parts: parts}
	}
	return err
}

// inlineAction is inlineObservation for an action.
func (s *Store) inlineAction(a **gym.Action) error {
	if *a == nil {
		return nil
	}
	parts, err := rewriteBlobs((*a).Parts, s.inlineBlob)
	if parts != nil {
		*a = &gym.Action{Parts: parts}
	}
	return err
}

// inlineBlob is the rewriteBlobs function that reads a reference's data.
func (s *Store) inlineBlob(b *gym.Blob) (*gym.Blob, error) {
	if b.Ref == "" || b.Data != nil {
		return nil, nil
	}
	data, err := s.readBlob(b.Ref)
	if err != nil {
		return nil, err
	}
	nb := *b
	nb.Data = data
	return &nb, nil
}

func (s *Store) readBlob(ref string) ([]byte, error) {
	rc, err := s.Blob(ref)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("store: blob %s: %w", ref, err)
	}
	return data, nil
}

// rewriteBlobs applies f to the Blob of every image and file part. f returns
// a replacement, or nil to keep the blob. rewriteBlobs returns a new parts
// slice holding the replacements, or nil when nothing changed; parts itself
// and the blobs it points to are never modified.
func rewriteBlobs(parts []gym.Part, f func(*gym.Blob) (*gym.Blob, error)) ([]gym.Part, error) {
	var out []gym.Part
	for i := range parts {
		p := &parts[i]
		var b *gym.Blob
		switch {
		case p.Image != nil:
			b = p.Image
		case p.File != nil:
			b = &p.File.Blob
		default:
			continue
		}
		nb, err := f(b)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		if nb == nil {
			continue
		}
		if out == nil {
			out = slices.Clone(parts)
		}
		if p.Image != nil {
			out[i].Image = nb
		} else {
			nf := *p.File
			nf.Blob = *nb
			out[i].File = &nf
		}
	}
	return out, nil
}
