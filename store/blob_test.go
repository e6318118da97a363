package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func bigData(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i) ^ seed
	}
	return b
}

func countBlobs(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(s.blobs, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			if strings.HasPrefix(d.Name(), ".tmp-") {
				t.Errorf("temp file left: %s", path)
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLargeImageMovedToBlob(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	img := bigData(100<<10, 7)
	small := []byte("tiny png")
	file := bigData(DefaultInlineMax+1, 9)
	obs := &gym.Observation{Parts: []gym.Part{
		gym.TextPart("screen"),
		{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: img, Width: 640, Height: 480}},
		{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: small}},
		{Type: gym.PartFile, File: &gym.File{Path: "out.bin", Blob: gym.Blob{MIME: "application/octet-stream", Data: file}}},
	}}
	origParts := obs.Parts
	origImage := obs.Parts[1].Image
	ev := &gym.Event{Type: gym.EventStep, Session: "s1", Env: "gui-v1", Episode: 1, Step: 1, Observation: obs}
	appendT(t, s, ev)

	// The caller's event is untouched but for Seq.
	if ev.Observation != obs || &obs.Parts[0] != &origParts[0] || obs.Parts[1].Image != origImage ||
		!bytes.Equal(origImage.Data, img) || origImage.Ref != "" || obs.Parts[3].File.Data == nil {
		t.Fatal("Append modified the caller's observation")
	}
	if ev.Seq != 1 {
		t.Fatalf("Seq = %d", ev.Seq)
	}

	got, err := s.Events(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	parts := got[0].Observation.Parts
	im := parts[1].Image
	if im.Data != nil || !strings.HasPrefix(im.Ref, RefPrefix) || im.Size != int64(len(img)) ||
		im.Width != 640 || im.MIME != "image/png" {
		t.Fatalf("stored image = %+v (data %d bytes)", im, len(im.Data))
	}
	if !bytes.Equal(parts[2].Image.Data, small) || parts[2].Image.Ref != "" {
		t.Fatalf("small image was not kept inline: %+v", parts[2].Image)
	}
	if f := parts[3].File; f.Data != nil || f.Path != "out.bin" || f.Size != int64(len(file)) || f.Ref == "" {
		t.Fatalf("stored file = %+v", f)
	}
	rc, err := s.Blob(im.Ref)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(data, img) {
		t.Fatalf("Blob(%s) read %d bytes, %v", im.Ref, len(data), err)
	}

	// Reading with ReadBlobs puts the data back.
	got, err = s.Events(ctx, Filter{ReadBlobs: true})
	if err != nil {
		t.Fatal(err)
	}
	parts = got[0].Observation.Parts
	if !bytes.Equal(parts[1].Image.Data, img) || !bytes.Equal(parts[3].File.Data, file) {
		t.Fatal("ReadBlobs did not inline the data")
	}

	// Same content again: deduplicated.
	if n := countBlobs(t, s); n != 2 {
		t.Fatalf("%d blob files, want 2", n)
	}
	obs2 := &gym.Observation{Parts: []gym.Part{{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: bytes.Clone(img)}}}}
	act := &gym.Action{Parts: []gym.Part{{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: bytes.Clone(img)}}}}
	appendT(t, s, &gym.Event{Type: gym.EventStep, Session: "s1", Env: "gui-v1", Observation: obs2, Action: act})
	if n := countBlobs(t, s); n != 2 {
		t.Fatalf("%d blob files after storing the same image again, want 2", n)
	}
	got, err = s.Events(ctx, Filter{AfterSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Observation.Parts[0].Image.Ref != im.Ref || got[0].Action.Parts[0].Image.Ref != im.Ref {
		t.Fatal("same content got a different ref")
	}
}

func TestInlineMaxNegativeKeepsInline(t *testing.T) {
	s := openT(t, t.TempDir(), Options{InlineMax: -1})
	img := bigData(64<<10, 1)
	obs := &gym.Observation{Parts: []gym.Part{{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: img}}}}
	appendT(t, s, &gym.Event{Type: gym.EventReset, Session: "s1", Observation: obs})
	got, err := s.Events(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[0].Observation.Parts[0].Image.Data, img) || countBlobs(t, s) != 0 {
		t.Fatal("InlineMax < 0 moved data to a blob")
	}
}

func TestPutBlobAndBadRefs(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ref, err := s.PutBlob([]byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if ref != "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("ref = %s", ref)
	}
	ref2, err := s.PutBlob([]byte("hello"))
	if err != nil || ref2 != ref {
		t.Fatalf("second PutBlob = %s, %v", ref2, err)
	}
	for _, bad := range []string{"", "sha256:", "md5:abc", "sha256:../../../etc/passwd",
		"sha256:2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824",
		"sha256:zzf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"} {
		if _, err := s.Blob(bad); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("Blob(%q) = %v", bad, err)
		}
	}
	missing := "sha256:" + strings.Repeat("0", 64)
	if _, err := s.Blob(missing); !errors.Is(err, ErrBlobNotFound) {
		t.Errorf("Blob(missing) = %v", err)
	}
	ev := &gym.Event{Observation: &gym.Observation{Parts: []gym.Part{{Type: gym.PartImage, Image: &gym.Blob{Ref: missing}}}}}
	if err := s.Inline(ev); !errors.Is(err, ErrBlobNotFound) {
		t.Errorf("Inline of a missing blob = %v", err)
	}
}
