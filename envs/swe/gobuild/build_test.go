package gobuild

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/swe"
)

// The synthetic pair in testdata/synth: module example.com/calc, whose new
// version fixes Abs for negative numbers and adds TestAbs (with a new case
// in testdata/cases.txt), changes a binary file under testdata, renames
// names.go to operations.go, deletes gone.go and edits util/util.go and
// README.md. TestShared exists in both packages, calc and calc/util.

func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
}

func testOptions(t *testing.T) Options {
	t.Helper()
	out := t.TempDir()
	return Options{
		ModCache:    filepath.Join(out, "gomod"),
		Out:         out,
		Instances:   filepath.Join(out, "instances.jsonl"),
		Proxy:       "off", // the synthetic modules need nothing
		TestTimeout: 2 * time.Minute,
	}
}

// variant copies the synthetic pair into a temporary directory and lets
// edit change it.
func variant(t *testing.T, edit func(old, new string)) (string, string) {
	t.Helper()
	dir := t.TempDir()
	old, nw := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	if err := copyTree(filepath.Join("testdata", "synth", "old"), old); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(filepath.Join("testdata", "synth", "new"), nw); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(old, nw)
	}
	return old, nw
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func TestBuildSynthetic(t *testing.T) {
	needTools(t)
	opts := testOptions(t)
	ctx := context.Background()
	old, nw := variant(t, nil)
	res, err := Build(ctx, Spec{OldDir: old, NewDir: nw, Old: "v1.0.0", New: "v1.0.1"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	in := res.Instance
	if in.InstanceID != "example.com__calc-v1.0.1" || in.Repo != "example.com/calc" || in.Language != "go" ||
		in.Version != "v1.0.0" || in.Module != "example.com/calc" || in.Old != "v1.0.0" || in.New != "v1.0.1" {
		t.Errorf("instance fields: %+v", in)
	}
	wantF2P := []string{"TestAbs", "TestAbs/-4"}
	if !slices.Equal(in.FailToPass, wantF2P) {
		t.Errorf("FAIL_TO_PASS = %v, want %v", in.FailToPass, wantF2P)
	}
	// TestShared is in two packages: qualified.
	wantP2P := []string{"TestAbs/0", "TestAbs/1", "TestAdd", "TestDouble",
		"example.com/calc.TestShared", "example.com/calc/util.TestShared"}
	if !slices.Equal(in.PassToPass, wantP2P) {
		t.Errorf("PASS_TO_PASS = %v, want %v", in.PassToPass, wantP2P)
	}
	if !slices.Equal(res.Packages, []string{".", "./util"}) {
		t.Errorf("packages tested: %v, want . and ./util", res.Packages)
	}

	// The split: tests and testdata in test_patch, the rest in patch.
	for _, want := range []string{"diff --git a/calc_test.go b/calc_test.go", "diff --git a/testdata/cases.txt b/testdata/cases.txt",
		"diff --git a/testdata/blob.bin b/testdata/blob.bin", "GIT binary patch"} {
		if !strings.Contains(in.TestPatch, want) {
			t.Errorf("test_patch lacks %q:\n%s", want, in.TestPatch)
		}
	}
	for _, want := range []string{"diff --git a/calc.go b/calc.go", "diff --git a/util/util.go b/util/util.go",
		"rename from names.go", "rename to operations.go", "deleted file mode", "diff --git a/README.md b/README.md"} {
		if !strings.Contains(in.Patch, want) {
			t.Errorf("patch lacks %q:\n%s", want, in.Patch)
		}
	}
	if strings.Contains(in.Patch, "_test.go") || strings.Contains(in.Patch, "testdata/") {
		t.Errorf("patch holds test changes:\n%s", in.Patch)
	}
	if strings.Contains(in.TestPatch, "calc.go b/calc.go") {
		t.Errorf("test_patch holds the fix")
	}

	// The problem statement: synthesized, with the failure and the files.
	for _, want := range []string{"synthesized", "TestAbs", "Abs(-4) = -4, want 4", "calc.go", "example.com/calc v1.0.1"} {
		if !strings.Contains(in.ProblemStatement, want) {
			t.Errorf("problem statement lacks %q:\n%s", want, in.ProblemStatement)
		}
	}
	if strings.Contains(in.ProblemStatement, os.TempDir()) {
		t.Errorf("problem statement shows scratch paths:\n%s", in.ProblemStatement)
	}

	// The repository: the base commit with OLD's files, nothing of NEW.
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", in.Source}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if head := git("rev-parse", "HEAD"); head != in.BaseCommit {
		t.Errorf("HEAD %s, base_commit %s", head, in.BaseCommit)
	}
	if st := git("status", "--porcelain"); st != "" {
		t.Errorf("the repository's work tree is not clean:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(in.Source, "gone.go")); err != nil {
		t.Errorf("OLD's gone.go is not checked out: %v", err)
	}
	if n := git("count-objects", "-v"); strings.Contains(in.Patch, "index ") {
		// NEW's calc.go blob must not be in the repository.
		newBlob := blobOf(t, filepath.Join(nw, "calc.go"))
		cmd := exec.Command("git", "-C", in.Source, "cat-file", "-e", newBlob)
		if cmd.Run() == nil {
			t.Errorf("the repository holds NEW's calc.go (%s); objects: %s", newBlob, n)
		}
	}

	// The instances file holds it, loadable, with the repository found.
	loaded, err := swe.LoadInstances(opts.Instances)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 1 || loaded[0].InstanceID != in.InstanceID || loaded[0].Source != in.Source {
		t.Errorf("instances file: %+v", loaded)
	}

	// The gold patch applies on the test patch at the base commit, and
	// the harness-shaped run judges it: F2P and P2P pass.
	checkGold(t, in, opts)

	// Same pair, same base commit: the hash is reproducible; the file
	// keeps one line per id.
	again, err := Build(ctx, Spec{OldDir: old, NewDir: nw, Old: "v1.0.0", New: "v1.0.1"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Instance.BaseCommit != in.BaseCommit {
		t.Errorf("base commit changed between builds: %s then %s", in.BaseCommit, again.Instance.BaseCommit)
	}
	if loaded, err := swe.LoadInstances(opts.Instances); err != nil || len(loaded) != 1 {
		t.Errorf("after a rebuild the instances file holds %d instances (err %v), want 1", len(loaded), err)
	}
}

func blobOf(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("git", "hash-object", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// checkGold applies test_patch and patch to a checkout of the base commit
// and runs the listed tests as an evaluation would.
func checkGold(t *testing.T, in swe.Instance, opts Options) {
	t.Helper()
	opts, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{opts: opts, log: opts.Log, work: t.TempDir()}
	ctx := context.Background()
	dir := filepath.Join(b.work, "eval")
	if err := b.checkout(ctx, in.Source, in.BaseCommit, dir); err != nil {
		t.Fatal(err)
	}
	if err := b.apply(ctx, dir, in.TestPatch, "test patch"); err != nil {
		t.Fatal(err)
	}
	names := append(slices.Clone(in.FailToPass), in.PassToPass...)
	pkgs, run, err := swe.GoTestTargets(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	before, _, err := b.goTest(ctx, dir, run, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range in.FailToPass {
		if before.Status(n) == swe.TestPass {
			t.Errorf("without the patch, FAIL_TO_PASS %s passes", n)
		}
	}
	if err := b.apply(ctx, dir, in.Patch, "patch"); err != nil {
		t.Fatal(err)
	}
	after, _, err := b.goTest(ctx, dir, run, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if after.Status(n) != swe.TestPass {
			t.Errorf("with the gold patch, %s: %s", n, after.Status(n))
		}
	}
}

func TestBuildRejects(t *testing.T) {
	needTools(t)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		edit   func(old, new string)
		reason string
	}{
		{"no test change", func(old, nw string) {
			copyFile(t, filepath.Join(old, "calc_test.go"), filepath.Join(nw, "calc_test.go"))
			os.RemoveAll(filepath.Join(nw, "testdata"))
			copyTree(filepath.Join(old, "testdata"), filepath.Join(nw, "testdata"))
		}, "changes no *_test.go file"},
		{"only tests change", func(old, nw string) {
			for _, f := range []string{"calc.go", "names.go", "gone.go", "README.md", "util/util.go"} {
				copyFile(t, filepath.Join(old, f), filepath.Join(nw, f))
			}
			os.Remove(filepath.Join(nw, "operations.go"))
		}, "there is no fix"},
		{"nothing fails before", func(old, nw string) {
			copyFile(t, filepath.Join(nw, "calc.go"), filepath.Join(old, "calc.go"))
		}, "no test fails before the fix"},
		{"still failing after", func(old, nw string) {
			copyFile(t, filepath.Join(old, "calc.go"), filepath.Join(nw, "calc.go"))
			writeFile(t, filepath.Join(nw, "extra.go"), "package calc\n\nvar extra = 1\n")
		}, "still fail after it: example.com/calc.TestAbs"},
		{"broken after", func(old, nw string) {
			writeFile(t, filepath.Join(nw, "calc.go"), "package calc\n\nfunc Abs(x int) int { return \"x\" }\n")
		}, "do not build after the fix"},
		{"no test passes after", func(old, nw string) {
			copyFile(t, filepath.Join(old, "calc.go"), filepath.Join(nw, "calc.go"))
			writeFile(t, filepath.Join(nw, "calc_test.go"), "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) { t.Fatal(\"no\") }\n")
			writeFile(t, filepath.Join(nw, "util", "util.go"), "package util\n\nfunc Double(x int) int { return 3 * x }\n")
			writeFile(t, filepath.Join(nw, "util", "util_test.go"), "package util\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatal(\"Double(2) != 4\")\n\t}\n}\n")
		}, "no test passes after the fix"},
	} {
		t.Run(c.name, func(t *testing.T) {
			old, nw := variant(t, c.edit)
			opts := testOptions(t)
			_, err := Build(ctx, Spec{OldDir: old, NewDir: nw}, opts)
			var rej *RejectError
			if !errors.Is(err, ErrRejected) || !errors.As(err, &rej) {
				t.Fatalf("got %v, want a rejection", err)
			}
			if !strings.Contains(rej.Reason, c.reason) {
				t.Errorf("reason %q, want it to say %q", rej.Reason, c.reason)
			}
			if _, err := os.Stat(opts.Instances); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a rejected pair wrote the instances file (%v)", err)
			}
		})
	}
}

// A test added with a function the old version lacks: before the fix the
// package does not build, so every test of it fails before.
func TestBuildCompileFailureBefore(t *testing.T) {
	needTools(t)
	old, nw := variant(t, func(old, nw string) {
		writeFile(t, filepath.Join(nw, "min.go"), "package calc\n\n// Min returns the smaller.\nfunc Min(a, b int) int {\n\tif a < b {\n\t\treturn a\n\t}\n\treturn b\n}\n")
		writeFile(t, filepath.Join(nw, "min_test.go"), "package calc\n\nimport \"testing\"\n\nfunc TestMin(t *testing.T) {\n\tif Min(1, 2) != 1 {\n\t\tt.Fatal(\"Min(1, 2) != 1\")\n\t}\n}\n")
	})
	res, err := Build(context.Background(), Spec{OldDir: old, NewDir: nw}, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	in := res.Instance
	for _, want := range []string{"TestAbs", "TestAdd", "TestMin", "example.com/calc.TestShared"} {
		if !slices.Contains(in.FailToPass, want) {
			t.Errorf("FAIL_TO_PASS %v lacks %s", in.FailToPass, want)
		}
	}
	if !slices.Equal(in.PassToPass, []string{"TestDouble", "example.com/calc/util.TestShared"}) {
		t.Errorf("PASS_TO_PASS = %v", in.PassToPass)
	}
	if !strings.Contains(in.ProblemStatement, "do not build") || !strings.Contains(in.ProblemStatement, "undefined: Min") {
		t.Errorf("problem statement does not show the compiler's message:\n%s", in.ProblemStatement)
	}
}

// A panic before the fix kills the test binary: the tests it did not reach
// are run again, so only the panicking test is FAIL_TO_PASS.
func TestBuildCrashBefore(t *testing.T) {
	needTools(t)
	old, nw := variant(t, func(old, nw string) {
		writeFile(t, filepath.Join(old, "calc.go"), "package calc\n\n// Abs returns the absolute value of x.\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\tvar p *int\n\t\treturn *p\n\t}\n\treturn x\n}\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a + b }\n")
	})
	res, err := Build(context.Background(), Spec{OldDir: old, NewDir: nw}, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	in := res.Instance
	if !slices.Equal(in.FailToPass, []string{"TestAbs", "TestAbs/-4"}) {
		t.Errorf("FAIL_TO_PASS = %v, want TestAbs and TestAbs/-4", in.FailToPass)
	}
	for _, want := range []string{"TestAdd", "example.com/calc.TestShared"} {
		if !slices.Contains(in.PassToPass, want) {
			t.Errorf("PASS_TO_PASS %v lacks %s (not reached by the crashed run)", in.PassToPass, want)
		}
	}
	if !strings.Contains(in.ProblemStatement, "nil pointer dereference") {
		t.Errorf("problem statement lacks the panic:\n%s", in.ProblemStatement)
	}
}

func TestBuildBadInput(t *testing.T) {
	needTools(t)
	ctx := context.Background()
	opts := testOptions(t)
	old, nw := variant(t, nil)
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{OldDir: old}, "give both the OLD and the NEW directory"},
		{Spec{OldDir: old, NewDir: t.TempDir()}, "is not a Go module"},
		{Spec{Module: "example.com/x", Old: "v1.0.0"}, "give a module path and two versions"},
		{Spec{Module: "example.com/x", Old: "v1.0.0", New: "v1.0.0"}, "give two versions"},
	} {
		_, err := Build(ctx, c.spec, opts)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrRejected) {
			t.Errorf("Build(%+v): got %v, want an error saying %q", c.spec, err, c.want)
		}
	}
	_ = nw
}

func TestIsTestPath(t *testing.T) {
	for p, want := range map[string]bool{
		"a_test.go": true, "x/y/a_test.go": true, "testdata/f": true, "x/testdata/y/z.go": true,
		"a.go": false, "testdatafoo/x": false, "x/mytestdata/y": false, "go.mod": false, "test.go": false,
	} {
		if IsTestPath(p) != want {
			t.Errorf("IsTestPath(%q) = %v", p, !want)
		}
	}
}

func TestReadList(t *testing.T) {
	specs, err := ReadList(BuiltinList)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) < 6 {
		t.Errorf("the shipped list has %d entries, want at least 6", len(specs))
	}
	seen := map[string]bool{}
	for _, s := range specs {
		id := InstanceID(s.Module, s.New)
		if seen[id] {
			t.Errorf("%s twice in the list", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "# only a comment\n", `{"module":"m","old":"v1"}`, `{"module":"m","old":"v1","new":"v2","x":1}`, "{"} {
		if _, err := ReadList([]byte(bad)); err == nil {
			t.Errorf("ReadList(%q): no error", bad)
		}
	}
}

func TestWriteInstanceReplacesByID(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "instances.jsonl")
	mk := func(id, ps string) swe.Instance {
		return swe.Instance{InstanceID: id, BaseCommit: "abc", TestPatch: "x", ProblemStatement: ps,
			FailToPass: swe.TestList{"TestA"}, Source: filepath.Join(dir, id)}
	}
	for _, in := range []swe.Instance{mk("a", "first"), mk("b", "b"), mk("a", "second")} {
		if err := WriteInstance(path, in); err != nil {
			t.Fatal(err)
		}
	}
	got, err := swe.LoadInstances(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].InstanceID != "a" || got[0].ProblemStatement != "second" || got[1].InstanceID != "b" {
		t.Fatalf("instances: %+v", got)
	}
	if got[0].Source != filepath.Join(dir, "a") {
		t.Errorf("Source %q, want %q", got[0].Source, filepath.Join(dir, "a"))
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), dir) {
		t.Errorf("Source under the file's directory is not written relative: %s", b)
	}
}
