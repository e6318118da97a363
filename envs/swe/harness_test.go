package swe_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/swe"
)

// diffOf returns the diff that edits (file → function of its content;
// a nil function removes the file, a missing file is created from "")
// make to the instance's repository at its base commit.
func diffOf(t testing.TB, in swe.Instance, edits map[string]func(string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("git", "clone", "-q", in.Source, dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", dir, "checkout", "-q", in.BaseCommit).CombinedOutput(); err != nil {
		t.Fatalf("git checkout: %v\n%s", err, out)
	}
	for name, edit := range edits {
		p := filepath.Join(dir, name)
		if edit == nil {
			os.Remove(p)
			continue
		}
		b, _ := os.ReadFile(p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("bash", "-c", `cd "$1" && git add -A && git diff --cached`, "diff", dir).Output()
	if err != nil {
		t.Fatalf("git diff: %v", err)
	}
	return string(out)
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

func harness(t testing.TB, backend string) *swe.Harness {
	t.Helper()
	b := openBackend(t, backend)
	return swe.NewHarness(b, evalOptions(t))
}

// goTestCommands is the test command of each Go test instance: qualified
// names name their package, bare ones the packages, as ./dir patterns,
// whose test files declare them (wordcount's are in subpackages).
var goTestCommands = map[string]string{
	"local__intmath-1":   "go test -json -count=1 -vet=off -timeout 5m0s -run ^(TestAbs|TestClamp|TestReverseASCII)$ example.com/intmath/strs .",
	"local__wordcount-1": "go test -json -count=1 -vet=off -timeout 5m0s -run ^(TestCount|TestEqual|TestWords)$ . ./internal/assert ./internal/split",
}

// Gold resolves every shipped instance; the empty patch resolves none.
func TestGoldResolvesEmptyDoesNot(t *testing.T) {
	h := harness(t, "bwrap")
	all := append(instances(t, "python"), instances(t, "go")...)
	if len(all) < 5 {
		t.Fatalf("%d test instances, want 3 Python and 2 Go", len(all))
	}
	for _, in := range all {
		t.Run(in.InstanceID, func(t *testing.T) {
			gold := evaluate(t, h, in, in.Patch)
			if !gold.Resolved || gold.Reward != 1 || gold.Error != "" {
				t.Errorf("gold: %+v", gold)
			}
			if gold.FailToPass.Fraction != 1 || gold.PassToPass.Fraction != 1 || len(gold.Tests) != len(in.FailToPass)+len(in.PassToPass) {
				t.Errorf("gold counts: %+v %+v %v", gold.FailToPass, gold.PassToPass, gold.Tests)
			}
			empty := evaluate(t, h, in, "")
			if empty.Resolved || empty.Reward != 0 || empty.Error != swe.ErrorEmptyPatch {
				t.Errorf("empty: %+v", empty)
			}
			// At the base commit every FAIL_TO_PASS test fails and every
			// PASS_TO_PASS one passes.
			if empty.FailToPass.Passed != 0 || empty.PassToPass.Fraction != 1 {
				t.Errorf("empty patch: F2P %+v, P2P %+v", empty.FailToPass, empty.PassToPass)
			}
			if want, ok := goTestCommands[in.InstanceID]; in.Language == "go" && (!ok || gold.TestCommand != want) {
				t.Errorf("go test command: %q, want %q", gold.TestCommand, want)
			}
			if gold.Language != in.Language || gold.Timings.TotalMs <= 0 {
				t.Errorf("gold: language %q, timings %+v", gold.Language, gold.Timings)
			}
		})
	}
}

// A patch that edits the tests to make them pass does not count: its
// changes to test_patch's files are dropped, and the real tests judge.
func TestTestEditsDoNotCount(t *testing.T) {
	h := harness(t, "bwrap")
	in := instance(t, "python", "local__textutil-1")
	cheat := diffOf(t, in, map[string]func(string) string{
		"tests/test_text.py": func(s string) string {
			return s + "\n\ndef test_slugify_punctuation():\n    assert True\n"
		},
	})
	r := evaluate(t, h, in, cheat)
	if r.Resolved || r.Reward != 0 || r.Error != swe.ErrorEmptyPatch {
		t.Errorf("a test-only cheat: %+v", r)
	}
	if len(r.DroppedFiles) != 1 || r.DroppedFiles[0] != "tests/test_text.py" {
		t.Errorf("dropped files: %v", r.DroppedFiles)
	}
	// The gold fix with a test edit beside it still resolves: only the
	// test file's changes go.
	both := evaluate(t, h, in, in.Patch+cheat)
	if !both.Resolved || len(both.DroppedFiles) != 1 {
		t.Errorf("gold plus a test edit: %+v", both)
	}
	// A cheat that breaks the test file outright does not stop the real
	// tests either.
	broken := diffOf(t, in, map[string]func(string) string{"tests/test_text.py": nil})
	if r := evaluate(t, h, in, broken); r.Resolved || len(r.DroppedFiles) != 1 {
		t.Errorf("removing the test file: %+v", r)
	}
	// The Go instance: a test edit that skips the failing subtest.
	gin := instance(t, "go", "local__intmath-1")
	gcheat := diffOf(t, gin, map[string]func(string) string{
		"intmath_test.go": replace(`func TestClamp(t *testing.T) {`, "func TestClamp(t *testing.T) {\n\treturn"),
	})
	if r := evaluate(t, h, gin, gcheat); r.Resolved || r.FailToPass.Passed != 0 || len(r.DroppedFiles) != 1 {
		t.Errorf("go test cheat: %+v", r)
	}
	// A new test file the test patch does not touch: a TestMain that prints
	// the lines go test -json reads as passes, and a conftest.py hook that
	// turns failures into passes. Both are dropped.
	fake := "package intmath\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n" +
		"\tfor _, n := range []string{\"TestAbs\", \"TestClamp\", \"TestClamp/below\", \"TestClamp/above\", \"TestClamp/inside\"} {\n" +
		"\t\tfmt.Printf(\"=== RUN   %s\\n--- PASS: %s (0.00s)\\n\", n, n)\n\t}\n\tfmt.Println(\"PASS\")\n\tos.Exit(0)\n}\n"
	faked := diffOf(t, gin, map[string]func(string) string{"zz_cheat_test.go": func(string) string { return fake }})
	if r := evaluate(t, h, gin, faked); r.Resolved || r.Error != swe.ErrorEmptyPatch || len(r.DroppedFiles) != 1 {
		t.Errorf("a faking TestMain: %+v", r)
	}
	hook := "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n" +
		"    outcome = yield\n    outcome.get_result().outcome = \"passed\"\n"
	hooked := diffOf(t, in, map[string]func(string) string{"conftest.py": func(string) string { return hook }})
	if r := evaluate(t, h, in, hooked); r.Resolved || len(r.DroppedFiles) != 1 {
		t.Errorf("a conftest.py that rewrites outcomes: %+v", r)
	}
	// With KeepAgentTests (SWE-bench's rule) the hook stays, and fools
	// pytest: why it is not the default.
	opts := evalOptions(t)
	opts.KeepAgentTests = true
	lax := swe.NewHarness(h.Backend(), opts)
	if r := evaluate(t, lax, in, hooked); !r.Resolved || len(r.DroppedFiles) != 0 {
		t.Errorf("KeepAgentTests: %+v", r)
	}
}

// A patch with a syntax error fails with the compiler's message.
func TestSyntaxErrorReportsCompilerMessage(t *testing.T) {
	h := harness(t, "bwrap")
	py := instance(t, "python", "local__textutil-1")
	bad := diffOf(t, py, map[string]func(string) string{"textutil/core.py": replace("def slugify(text):", "def slugify(text)")})
	r := evaluate(t, h, py, bad)
	if r.Resolved || r.Error != swe.ErrorBuildFailed || !strings.Contains(r.BuildOutput, "SyntaxError") {
		t.Errorf("python syntax error: error %q, build output %q", r.Error, r.BuildOutput)
	}
	if r.FailToPass.Passed != 0 || r.PassToPass.Passed != 0 {
		t.Errorf("python syntax error: tests passed: %v", r.Tests)
	}
	gin := instance(t, "go", "local__intmath-1")
	gbad := diffOf(t, gin, map[string]func(string) string{"intmath.go": replace("\t\treturn lo\n\t}\n\treturn x", "\t\treturn hi\n\t}\n\treturn x +")})
	r = evaluate(t, h, gin, gbad)
	if r.Resolved || r.Error != swe.ErrorBuildFailed || !strings.Contains(r.BuildOutput, "intmath.go:") ||
		!strings.Contains(r.BuildOutput, "syntax error") {
		t.Errorf("go syntax error: error %q, build output %q, message %q", r.Error, r.BuildOutput, r.Message)
	}
	// The other package still builds and its test still passes.
	if st := r.Tests["example.com/intmath/strs.TestReverseASCII"]; st != swe.TestPass {
		t.Errorf("go syntax error: the other package's test is %q", st)
	}
}

// A diff that does not apply is the agent's failure, with the tools'
// words; one that applies only with fuzz is applied by patch.
func TestPatchApply(t *testing.T) {
	h := harness(t, "bwrap")
	in := instance(t, "python", "local__textutil-1")
	bogus := "diff --git a/textutil/core.py b/textutil/core.py\n--- a/textutil/core.py\n+++ b/textutil/core.py\n" +
		"@@ -1,3 +1,3 @@\n-this line is not there\n+nor is this\n context\n"
	r := evaluate(t, h, in, bogus)
	if r.Resolved || r.Error != swe.ErrorPatchNotApplied || !strings.Contains(r.Message, "git apply:") ||
		!strings.Contains(r.Message, "patch:") || r.AppliedWith != "" {
		t.Errorf("a diff that does not apply: %+v", r)
	}
	if r.FailToPass.Total != 1 || r.FailToPass.Passed != 0 || r.Tests["tests/test_text.py::test_slugify_punctuation"] != swe.TestNotRun {
		t.Errorf("a diff that does not apply: counts %+v %v", r.FailToPass, r.Tests)
	}
	fuzzy := strings.Replace(in.Patch, ` """Text helpers: slugs and titles."""`, ` """Text helpers: slugs, titles."""`, 1)
	if fuzzy == in.Patch {
		t.Fatal("the gold patch lost the context line this test changes")
	}
	r = evaluate(t, h, in, fuzzy)
	if !r.Resolved || r.AppliedWith != "patch --fuzz=3" {
		t.Errorf("a diff that applies with fuzz: %+v", r)
	}
}

// The docker backend judges the same way.
func TestDockerGold(t *testing.T) {
	if testing.Short() {
		t.Skip("docker: not in -short")
	}
	h := harness(t, "docker")
	for _, in := range []swe.Instance{instance(t, "python", "local__stats-1"), instance(t, "go", "local__intmath-1")} {
		if r := evaluate(t, h, in, in.Patch); !r.Resolved || r.Backend != "docker" || r.Image != swe.DefaultImage {
			t.Errorf("docker gold %s: %+v", in.InstanceID, r)
		}
		if r := evaluate(t, h, in, ""); r.Resolved {
			t.Errorf("docker empty %s: %+v", in.InstanceID, r)
		}
	}
}

// Go instances built by `nextstate swe build-go` (envs/swe/gobuild):
// NEXTSTATE_SWE_GO_INSTANCES names their instances.jsonl, and
// NEXTSTATE_SWE_GOMODCACHE their module cache (default the builder's).
func TestGoldResolvesBuiltGoInstances(t *testing.T) {
	file := os.Getenv("NEXTSTATE_SWE_GO_INSTANCES")
	if file == "" {
		t.Skip("set NEXTSTATE_SWE_GO_INSTANCES to an instances.jsonl of `nextstate swe build-go` (and NEXTSTATE_SWE_GOMODCACHE)")
	}
	ins, err := swe.LoadInstances(file)
	if err != nil {
		t.Fatal(err)
	}
	opts := evalOptions(t)
	opts.GoModCache = os.Getenv("NEXTSTATE_SWE_GOMODCACHE")
	h := swe.NewHarness(openBackend(t, "bwrap"), opts)
	for _, in := range ins {
		t.Run(in.InstanceID, func(t *testing.T) {
			if r := evaluate(t, h, in, in.Patch); !r.Resolved {
				t.Errorf("gold: %s %s\n%s\n%s F2P %+v P2P %+v", r.Error, r.Message, r.BuildOutput, r.Output, r.FailToPass, r.PassToPass)
			}
			if r := evaluate(t, h, in, ""); r.Resolved {
				t.Errorf("empty: resolved")
			}
		})
	}
}
