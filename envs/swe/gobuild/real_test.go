package gobuild

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/swe"
)

// The tests in this file build instances from real modules through the Go
// module proxy. They are opt-in: set NEXTSTATE_SWE_GOBUILD=1 (the network
// and a few minutes on a cold cache; seconds warm). NEXTSTATE_SWE_GOBUILD_SPEC
// ="MODULE OLD NEW" builds that pair alone; NEXTSTATE_SWE_GOMODCACHE names
// the module cache (default the builder's, ~/.cache/nextstate/swe/gomod);
// NEXTSTATE_SWE_GOBUILD_OUT keeps the repositories and instances.jsonl in
// that directory (default a temporary one).

func realOptions(t *testing.T) Options {
	t.Helper()
	if os.Getenv("NEXTSTATE_SWE_GOBUILD") == "" {
		t.Skip("builds real modules through the Go module proxy: set NEXTSTATE_SWE_GOBUILD=1 to run")
	}
	out := os.Getenv("NEXTSTATE_SWE_GOBUILD_OUT")
	if out == "" {
		out = t.TempDir()
	}
	return Options{
		ModCache:  os.Getenv("NEXTSTATE_SWE_GOMODCACHE"),
		Out:       out,
		Instances: filepath.Join(out, "instances.jsonl"),
		Log:       slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestBuildRealSpec(t *testing.T) {
	opts := realOptions(t)
	spec := os.Getenv("NEXTSTATE_SWE_GOBUILD_SPEC")
	if spec == "" {
		t.Skip("NEXTSTATE_SWE_GOBUILD_SPEC=\"MODULE OLD NEW\" not set")
	}
	f := strings.Fields(spec)
	if len(f) != 3 {
		t.Fatalf("NEXTSTATE_SWE_GOBUILD_SPEC=%q: want MODULE OLD NEW", spec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	res, err := Build(ctx, Spec{Module: f[0], Old: f[1], New: f[2]}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("F2P %v\nP2P %d tests\ntimings %+v\npackages %v\n--- problem statement\n%s\n--- test patch %d bytes, patch %d bytes",
		res.Instance.FailToPass, len(res.Instance.PassToPass), res.Timings, res.Packages,
		res.Instance.ProblemStatement, len(res.Instance.TestPatch), len(res.Instance.Patch))
}

// TestBuildRealList builds the shipped list: every entry must give a
// valid instance, and a second pass must reuse them all.
func TestBuildRealList(t *testing.T) {
	opts := realOptions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	specs, err := ReadList(BuiltinList)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) < 6 {
		t.Errorf("the shipped list has %d entries, want at least 6", len(specs))
	}
	results, err := BuildList(ctx, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		t.Logf("%s: F2P %d, P2P %d, %+v", r.Instance.InstanceID, len(r.Instance.FailToPass), len(r.Instance.PassToPass), r.Timings)
	}
	loaded, err := swe.LoadInstances(opts.Instances)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != len(specs) {
		t.Errorf("instances file holds %d instances, want %d", len(loaded), len(specs))
	}
	again, err := BuildList(ctx, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again {
		if !r.Reused {
			t.Errorf("%s rebuilt on the second pass, want reused", r.Instance.InstanceID)
		}
	}
}
