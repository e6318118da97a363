package bfcl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// dataDir is the BFCL data at ../shared/data/bfcl from the module root;
// tests that need it skip when it is absent.
func dataDir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared", "data", "bfcl")
			if _, err := os.Stat(d); err != nil {
				t.Skipf("BFCL data not found at %s (the project's ../shared/data/bfcl): %v", d, err)
			}
			return d
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above " + wd)
		}
	}
}

func loadData(t testing.TB) *Dataset {
	t.Helper()
	ds, err := Load(dataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := pyval.Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}
