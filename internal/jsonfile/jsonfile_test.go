package jsonfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type rec struct{ N int }

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	var r rec
	if found, err := Read(path, &r); found || err != nil {
		t.Fatalf("no file: found %v, %v", found, err)
	}
	if err := WriteAtomic(path, rec{N: 3}); err != nil {
		t.Fatal(err)
	}
	if found, err := Read(path, &r); !found || err != nil || r.N != 3 {
		t.Fatalf("read back %+v, found %v, %v", r, found, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("a temporary file was left: %v", ents)
	}
}

func TestLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	for i := range 3 {
		if err := Append(path, rec{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"N": 4`) // a crash in the middle of a line
	f.Close()
	got, err := ReadLines[rec](path)
	if err != nil || len(got) != 3 || got[2].N != 2 {
		t.Fatalf("with a last line cut short: %+v, %v", got, err)
	}
	f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n{\"N\": 5}\n")
	f.Close()
	if _, err := ReadLines[rec](path); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("a bad line before the last: %v", err)
	}
}
