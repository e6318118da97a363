package swe_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/swe"
	"github.com/nextstate-rl/nextstate/sandbox"
	_ "github.com/nextstate-rl/nextstate/sandbox/bwrap"
	_ "github.com/nextstate-rl/nextstate/sandbox/docker"
)

// tmpRoot holds what the tests share (built instances, the module cache,
// the work directory); TestMain removes it.
var tmpRoot string

func TestMain(m *testing.M) {
	var err error
	tmpRoot, err = os.MkdirTemp("", "swe-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmpRoot)
	os.Exit(code)
}

var (
	buildMu  sync.Mutex
	builtDir = map[string]string{}
)

// instances builds the test instances of testdata/<which> ("python",
// "go") once per test binary, with testdata/build.sh, and loads them.
func instances(t testing.TB, which string) []swe.Instance {
	t.Helper()
	for _, tool := range []string{"git", "python3", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("building the test instances needs %s: %v", tool, err)
		}
	}
	buildMu.Lock()
	dir, ok := builtDir[which]
	if !ok {
		dir = filepath.Join(tmpRoot, "instances-"+which)
		out, err := exec.Command("bash", "testdata/build.sh", filepath.Join("testdata", which), dir).CombinedOutput()
		if err != nil {
			buildMu.Unlock()
			t.Fatalf("testdata/build.sh %s: %v\n%s", which, err, out)
		}
		builtDir[which] = dir
	}
	buildMu.Unlock()
	ins, err := swe.LoadInstances(filepath.Join(dir, "instances.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

// instance returns the test instance with id.
func instance(t testing.TB, which, id string) swe.Instance {
	t.Helper()
	for _, in := range instances(t, which) {
		if in.InstanceID == id {
			return in
		}
	}
	t.Fatalf("no test instance %s in testdata/%s", id, which)
	return swe.Instance{}
}

// goModCache is an empty module cache: the test Go instance needs no
// module beyond the standard library.
func goModCache(t testing.TB) string {
	t.Helper()
	d := filepath.Join(tmpRoot, "gomod")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if swe.DefaultGoRoot() == "" {
		t.Skip("no Go toolchain on this host (go env GOROOT)")
	}
	return d
}

// evalOptions are the harness options of the tests: their own work
// directory (and so evaluation build cache) and module cache.
func evalOptions(t testing.TB) swe.EvalOptions {
	return swe.EvalOptions{WorkDir: filepath.Join(tmpRoot, "work"), SandboxConfig: swe.SandboxConfig{GoModCache: goModCache(t)},
		TestTimeout: 5 * time.Minute}
}

// openBackend opens a sandbox backend for a test, or skips when it is
// unavailable here; it is closed, and checked to have left nothing, when
// the test ends.
func openBackend(t testing.TB, name string) sandbox.Backend {
	t.Helper()
	opts := sandbox.Options{}
	var dir string
	if name == "bwrap" {
		dir = t.TempDir()
		opts.Dir = dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := sandbox.Open(ctx, name, opts)
	if errors.Is(err, sandbox.ErrUnavailable) {
		if name == "docker" {
			t.Skipf("the docker sandbox is unavailable here: %v (start dockerd; build the image with `nextstate image build`)", err)
		}
		t.Skipf("the bwrap sandbox is unavailable here: %v (apt-get install -y bubblewrap, and run as root)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if name == "docker" {
		probe, err := b.Create(ctx, sandbox.Spec{Image: swe.DefaultImage})
		if err != nil {
			b.Close(ctx)
			t.Skipf("the docker sandbox cannot start %s: %v (build it with `nextstate image build`)", swe.DefaultImage, err)
		}
		probe.Close(ctx)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("closing the backend: %v", err)
		}
		if dir != "" {
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("sandboxes left behind in %s: %d entries", dir, len(left))
			}
		}
		if o, ok := b.(interface{ Owner() string }); ok && name == "docker" {
			out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+sandbox.LabelOwner+"="+o.Owner()).Output()
			if err == nil && len(strings.TrimSpace(string(out))) > 0 {
				t.Errorf("containers left behind: %s", out)
			}
		}
	})
	return b
}

// evaluate runs one evaluation and fails the test on an error.
func evaluate(t testing.TB, h *swe.Harness, in swe.Instance, diff string) swe.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := h.Evaluate(ctx, &in, diff)
	if err != nil {
		t.Fatalf("Evaluate %s: %v", in.InstanceID, err)
	}
	return r
}
