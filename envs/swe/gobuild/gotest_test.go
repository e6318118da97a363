package gobuild

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/swe"
)

// The recordings in testdata/gotest are real `go test -json` outputs of a
// small module (example.com/m): packages a (pass, fail, skip, subtests,
// parallel subtests), b (a panic), c (does not compile), d (a TestPass of
// its own, as in a), e (a test that hangs past -timeout), f (imports the
// broken c), s (a dependency missing with GOPROXY=off), and in
// panic-parallel.json p: TestFirst passes; TestParallelA, TestParallelB and
// TestSubs/later pause at t.Parallel; TestSubs/ok passes, then
// TestSubs/boom panics (a nil map), so the paused tests never resume and
// TestSubs/never and TestAfter never start.

func parseRecording(t *testing.T, name string) *swe.GoTestRun {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "gotest", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run, err := swe.ParseGoTestRun(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return run
}

func TestParseGoTestJSONStatuses(t *testing.T) {
	run := parseRecording(t, "mixed.json")
	want := map[string]swe.TestStatus{
		"example.com/m/a.TestPass":         swe.TestPass,
		"example.com/m/a.TestFail":         swe.TestFail,
		"example.com/m/a.TestSkip":         swe.TestSkip,
		"example.com/m/a.TestSub":          swe.TestFail,
		"example.com/m/a.TestSub/ok":       swe.TestPass,
		"example.com/m/a.TestSub/bad_case": swe.TestFail,
		"example.com/m/a.TestPar/x":        swe.TestPass,
		"example.com/m/a.TestPar/y":        swe.TestPass,
		"example.com/m/b.TestOK":           swe.TestPass,
		"example.com/m/b.TestPanic":        swe.TestFail,
		"example.com/m/d.TestPass":         swe.TestPass,
		"TestFail":                         swe.TestFail,
		"TestSkip":                         swe.TestSkip,
		"TestSub/bad_case":                 swe.TestFail,
		"TestSub/ok":                       swe.TestPass,
		"TestPar":                          swe.TestPass,
		"TestPanic":                        swe.TestFail,
		"TestPass":                         swe.TestPass, // in a and d, both pass
	}
	for name, s := range want {
		if got := run.Tests[name]; got != s {
			t.Errorf("%s: got %q, want %q", name, got, s)
		}
	}
	// TestAfter never ran: the panic killed the test binary.
	if _, ok := run.Tests["TestAfter"]; ok {
		t.Errorf("TestAfter reported though it never ran")
	}
	if got := run.Status("TestAfter"); got != swe.TestNotRun {
		t.Errorf("Status of a test that did not run: got %q, want not_run", got)
	}
	// c did not build: its test is unknown and its failure kept.
	if _, ok := run.Tests["TestC"]; ok {
		t.Errorf("TestC of a package that did not build is reported")
	}
	msg, ok := run.BuildFailures["example.com/m/c"]
	if !ok || !strings.Contains(msg, `cannot use "x" (untyped string constant) as int value`) {
		t.Errorf("build failure of c: got %q (present %v)", msg, ok)
	}
	if len(run.BuildFailures) != 1 {
		t.Errorf("build failures: got %v, want only c", run.BuildFailures)
	}
	for pkg, s := range map[string]swe.TestStatus{"example.com/m/a": swe.TestFail, "example.com/m/b": swe.TestFail,
		"example.com/m/c": swe.TestFail, "example.com/m/d": swe.TestPass} {
		if run.Packages[pkg] != s {
			t.Errorf("package %s: got %q, want %q", pkg, run.Packages[pkg], s)
		}
	}
	if out := run.Output["example.com/m/a.TestFail"]; !strings.Contains(out, "got 1, want 2") {
		t.Errorf("TestFail's output lacks its assertion: %q", out)
	}
	if out := run.Output["example.com/m/b.TestPanic"]; !strings.Contains(out, "assignment to entry in nil map") {
		t.Errorf("TestPanic's output lacks the panic: %q", out)
	}
	// Parallel subtests' interleaved output goes to the test each line
	// belongs to.
	if out := run.Output["example.com/m/a.TestPar/y"]; !strings.Contains(out, "=== CONT  TestPar/y") || strings.Contains(out, "TestPar/x") {
		t.Errorf("TestPar/y's output: %q", out)
	}
	failed := run.Failed()
	wantFailed := []string{"example.com/m/a.TestFail", "example.com/m/a.TestSub", "example.com/m/a.TestSub/bad_case", "example.com/m/b.TestPanic"}
	if strings.Join(failed, ",") != strings.Join(wantFailed, ",") {
		t.Errorf("Failed: got %v, want %v", failed, wantFailed)
	}
}

func TestParseGoTestJSONAmbiguousBareName(t *testing.T) {
	// TestPass is in a and d; make d's fail: the bare name takes the worst.
	b, err := os.ReadFile(filepath.Join("testdata", "gotest", "mixed.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `"Action":"pass","Package":"example.com/m/d","Test":"TestPass"`,
		`"Action":"fail","Package":"example.com/m/d","Test":"TestPass"`, 1)
	tests, err := swe.ParseGoTestJSON(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	if tests["TestPass"] != swe.TestFail || tests["example.com/m/a.TestPass"] != swe.TestPass ||
		tests["example.com/m/d.TestPass"] != swe.TestFail {
		t.Errorf("ambiguous TestPass: bare %q, a %q, d %q", tests["TestPass"],
			tests["example.com/m/a.TestPass"], tests["example.com/m/d.TestPass"])
	}
}

// A panicking test fails, with its parent; the tests paused at t.Parallel
// when it panicked, and those the binary never reached, did not run (as
// SWE-bench's harness counts them: they print no "--- FAIL" line).
func TestParseGoTestJSONPanicLeavesTestsNotRun(t *testing.T) {
	run := parseRecording(t, "panic-parallel.json")
	want := map[string]swe.TestStatus{
		"example.com/m/p.TestFirst":      swe.TestPass,
		"example.com/m/p.TestSubs/ok":    swe.TestPass,
		"example.com/m/p.TestSubs/boom":  swe.TestFail,
		"example.com/m/p.TestSubs":       swe.TestFail,
		"TestSubs/boom":                  swe.TestFail,
		"TestParallelA":                  swe.TestNotRun,
		"example.com/m/p.TestParallelB":  swe.TestNotRun,
		"TestParallelB/sub":              swe.TestNotRun,
		"example.com/m/p.TestSubs/later": swe.TestNotRun,
		"TestSubs/never":                 swe.TestNotRun,
		"TestAfter":                      swe.TestNotRun,
	}
	for name, s := range want {
		if got := run.Status(name); got != s {
			t.Errorf("%s: got %q, want %q", name, got, s)
		}
	}
	for name := range run.Tests {
		if _, test := swe.SplitTestName(name); want[name] == swe.TestNotRun || want[test] == swe.TestNotRun {
			t.Errorf("%s did not run, but has a result: %q", name, run.Tests[name])
		}
	}
	if run.Packages["example.com/m/p"] != swe.TestFail {
		t.Errorf("package p: got %q, want fail", run.Packages["example.com/m/p"])
	}
	if failed := strings.Join(run.Failed(), ","); failed != "example.com/m/p.TestSubs,example.com/m/p.TestSubs/boom" {
		t.Errorf("Failed: got %s", failed)
	}
	// test2json files the panic under the parent, whose "--- FAIL" line
	// came last.
	if out := run.Output["example.com/m/p.TestSubs"]; !strings.Contains(out, "assignment to entry in nil map") {
		t.Errorf("TestSubs's output lacks the panic: %q", out)
	}
}

// A test that resumed after t.Parallel and was running when the stream
// ended failed, unlike one still paused.
func TestParseGoTestJSONResumedTestFails(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pause","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"pause","Package":"p","Test":"TestB"}
{"Action":"cont","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p"}
`
	run, err := swe.ParseGoTestRun(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status("p.TestA") != swe.TestFail || run.Status("TestB") != swe.TestNotRun {
		t.Errorf("TestA (resumed) %q, TestB (paused) %q", run.Status("p.TestA"), run.Status("TestB"))
	}
}

func TestParseGoTestJSONTimeout(t *testing.T) {
	run := parseRecording(t, "timeout.json")
	if run.Tests["TestQuick"] != swe.TestPass {
		t.Errorf("TestQuick: got %q, want pass", run.Tests["TestQuick"])
	}
	// TestHang started and never ended: the -timeout panic killed it.
	if run.Tests["TestHang"] != swe.TestFail {
		t.Errorf("TestHang: got %q, want fail", run.Tests["TestHang"])
	}
	if !strings.Contains(run.Output["example.com/m/e.TestHang"]+run.Output["example.com/m/e"], "test timed out") {
		t.Errorf("the timeout panic is not in the output: %v", run.Output)
	}
}

func TestParseGoTestJSONExitAndDependencyBuildFailure(t *testing.T) {
	run := parseRecording(t, "exit-depbuild.json")
	if run.Tests["TestExit"] != swe.TestFail {
		t.Errorf("TestExit (os.Exit in a test): got %q, want fail", run.Tests["TestExit"])
	}
	if msg := run.BuildFailures["example.com/m/f"]; !strings.Contains(msg, "# example.com/m/c") {
		t.Errorf("f fails to build because c does: got %q", msg)
	}
	if _, ok := run.Tests["TestF"]; ok {
		t.Errorf("TestF reported though f did not build")
	}
}

func TestParseGoTestJSONSetupFailure(t *testing.T) {
	run := parseRecording(t, "setup-fail.json")
	if !strings.Contains(run.Other, "go: downloading example.com/nothere") {
		t.Errorf("stderr lines not kept in Other: %q", run.Other)
	}
	if msg := run.BuildFailures["example.com/s"]; !strings.Contains(msg, "module lookup disabled by GOPROXY=off") {
		t.Errorf("setup failure: got %q", msg)
	}
	if run.Packages["example.com/s"] != swe.TestFail {
		t.Errorf("package s: got %q, want fail", run.Packages["example.com/s"])
	}
}

func TestParseGoTestJSONNoEvents(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "gotest", "no-events.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run, err := swe.ParseGoTestRun(f)
	if !errors.Is(err, swe.ErrNoGoTestEvents) {
		t.Fatalf("got %v, want ErrNoGoTestEvents", err)
	}
	if !strings.Contains(run.Other, "errors parsing go.mod") {
		t.Errorf("go's message not kept: %q", run.Other)
	}
	if _, err := swe.ParseGoTestJSON(strings.NewReader("")); !errors.Is(err, swe.ErrNoGoTestEvents) {
		t.Errorf("empty input: got %v, want ErrNoGoTestEvents", err)
	}
}

func TestParseGoTestJSONCutStream(t *testing.T) {
	// The stream ends while a test runs (the process was killed).
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
`
	run, err := swe.ParseGoTestRun(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if run.Tests["TestA"] != swe.TestFail || run.Tests["p.TestA"] != swe.TestFail || run.Packages["p"] != swe.TestFail {
		t.Errorf("cut stream: tests %v, packages %v", run.Tests, run.Packages)
	}
}

func TestParseGoTestJSONOutputCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"Action":"run","Package":"p","Test":"TestBig"}` + "\n")
	line := strings.Repeat("x", 1000)
	for range 40 {
		b.WriteString(`{"Action":"output","Package":"p","Test":"TestBig","Output":"` + line + `\n"}` + "\n")
	}
	b.WriteString(`{"Action":"fail","Package":"p","Test":"TestBig"}` + "\n")
	run, err := swe.ParseGoTestRun(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	out := run.Output["p.TestBig"]
	if len(out) > swe.MaxTestOutput+100 || !strings.Contains(out, "bytes truncated") {
		t.Errorf("output not capped with a marker: %d bytes", len(out))
	}
}

func TestSplitTestName(t *testing.T) {
	for _, c := range []struct{ in, pkg, test string }{
		{"TestA", "", "TestA"},
		{"TestA/sub.case/1.5", "", "TestA/sub.case/1.5"},
		{"example.com/m/a.TestA", "example.com/m/a", "TestA"},
		{"gopkg.in/yaml.v3.TestDecode/x.y", "gopkg.in/yaml.v3", "TestDecode/x.y"},
		{"github.com/o/r.FuzzX", "github.com/o/r", "FuzzX"},
		{"p.TestA", "p", "TestA"},
	} {
		pkg, test := swe.SplitTestName(c.in)
		if pkg != c.pkg || test != c.test {
			t.Errorf("SplitTestName(%q) = %q, %q; want %q, %q", c.in, pkg, test, c.pkg, c.test)
		}
		if c.pkg != "" && swe.QualifiedTestName(pkg, test) != c.in {
			t.Errorf("QualifiedTestName(%q, %q) != %q", pkg, test, c.in)
		}
	}
}
