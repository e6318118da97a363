package swe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// TestStatus is a test's result: TestPass, TestFail, TestSkip or
// TestNotRun.
type TestStatus string

// Test results.
const (
	TestPass TestStatus = "pass"
	TestFail TestStatus = "fail"
	TestSkip TestStatus = "skip"
	// TestNotRun: the run reported no result for the test. Its package
	// did not build, the test binary died before the test started (a
	// panic, os.Exit) or while it waited at t.Parallel, or it does not
	// exist. As in SWE-bench's harness, it is not a failure of the test
	// itself, and not a pass either: a listed test that did not run
	// leaves the instance unresolved.
	TestNotRun TestStatus = "not_run"
)

// Go test names.
//
// A Go test is named as `go test -json` reports it: "TestName", or
// "TestName/subtest" for a subtest (the testing package's form: spaces
// become underscores). That bare name is what FAIL_TO_PASS and
// PASS_TO_PASS list, as SWE-bench Go datasets (Multi-SWE-bench,
// SWE-bench-extra) do. Where the same bare name exists in two packages of
// one module, the lists carry the qualified name instead: the package's
// import path, a dot, and the bare name, "github.com/o/r/pkg.TestName/sub"
// (QualifiedTestName). The instance builder (envs/swe/gobuild) applies this
// rule over every package of the module, so a bare name in a list is unique
// in the module.
//
// GoTestRun.Tests holds every test under both names: the qualified one, and
// the bare one. A bare name that more than one package reported holds the
// worst of their results (fail over pass over skip), so a dataset that
// lists ambiguous bare names is judged strictly. A test that does not
// appear did not run (GoTestRun.Status says TestNotRun).
//
// A test binary that dies (a panic, os.Exit, the -timeout panic) ends the
// tests it was running: those count as failed (the panicking test, its
// parents, the test that hung). The tests paused at t.Parallel, waiting
// for their turn, and those it never reached did not run, as SWE-bench's
// harness counts them (its log parser sees no "--- FAIL" line for them):
// they are absent from GoTestRun.Tests.

// GoTestEnv is the environment a Go instance's tests run with, offline:
// modules come only from modCache (GOMODCACHE, filled when the instance was
// built; GOPROXY=off, GOSUMDB=off: the cache was verified when it was
// filled), -mod=mod lets go.mod and go.sum be completed from that cache,
// the local toolchain is used (GOTOOLCHAIN=local), no workspace file
// applies (GOWORK=off) and cgo is off (CGO_ENABLED=0), as in the SWE
// sandboxes (GoEnv). buildCache is GOCACHE (it must be writable; a warm
// one makes runs fast); empty leaves GOCACHE unset.
func GoTestEnv(modCache, buildCache string) map[string]string {
	env := map[string]string{
		"GOMODCACHE":  modCache,
		"GOFLAGS":     "-mod=mod -buildvcs=false",
		"GOPROXY":     "off",
		"GOSUMDB":     "off",
		"GOTOOLCHAIN": "local",
		"GOWORK":      "off",
		"GOTELEMETRY": "off",
		"CGO_ENABLED": "0",
	}
	if buildCache != "" {
		env["GOCACHE"] = buildCache
	}
	return env
}

// GoTestArgs is the command line that runs Go tests for judging:
// "go test -json -count=1 -vet=off [-timeout T] [-run RUN] PKGS...". -count=1
// defeats the test result cache; -vet=off keeps a newer toolchain's vet
// checks from failing an old module's packages. run is a -run pattern
// (GoTestTargets makes one); timeout is a go duration ("10m"), empty for
// go test's default.
func GoTestArgs(run, timeout string, pkgs []string) []string {
	args := []string{"go", "test", "-json", "-count=1", "-vet=off"}
	if timeout != "" {
		args = append(args, "-timeout", timeout)
	}
	if run != "" {
		args = append(args, "-run", run)
	}
	return append(args, pkgs...)
}

// GoTestTargets finds where the named tests (bare or qualified) live in the
// Go module at dir: the packages to test, as "./rel/dir" patterns, and a
// -run pattern that selects the tests' top-level functions
// ("^(TestA|TestB)$"; subtests run with their parent). Bare names are
// found by reading the module's *_test.go files for top-level functions of
// that name (testdata, vendor, hidden directories and nested modules are
// not searched). A name found nowhere is an error naming it.
func GoTestTargets(dir string, names []string) (pkgs []string, run string, err error) {
	modPath, err := GoModulePath(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, "", err
	}
	want := map[string]bool{}   // top-level functions wanted anywhere
	pkgSet := map[string]bool{} // ./rel patterns
	tops := map[string]bool{}
	for _, name := range names {
		pkg, test := SplitTestName(name)
		top, _, _ := strings.Cut(test, "/")
		tops[top] = true
		if pkg == "" {
			want[top] = true
			continue
		}
		rel, ok := strings.CutPrefix(pkg, modPath)
		if !ok || rel != "" && rel[0] != '/' {
			return nil, "", fmt.Errorf("test %s: package %s is not in module %s", name, pkg, modPath)
		}
		pkgSet["."+rel] = true
	}
	if len(want) > 0 {
		found, err := GoTestFuncs(dir)
		if err != nil {
			return nil, "", err
		}
		var missing []string
		for top := range want {
			if len(found[top]) == 0 {
				missing = append(missing, top)
			}
			for _, rel := range found[top] {
				pkgSet[rel] = true
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return nil, "", fmt.Errorf("tests not found in any *_test.go of %s: %s", dir, strings.Join(missing, ", "))
		}
	}
	for p := range pkgSet {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var topList []string
	for t := range tops {
		topList = append(topList, t)
	}
	sort.Strings(topList)
	if len(topList) > 0 {
		run = "^(" + strings.Join(topList, "|") + ")$"
	}
	return pkgs, run, nil
}

// goModulePath reads the module path from a go.mod file.
func GoModulePath(goMod string) (string, error) {
	b, err := os.ReadFile(goMod)
	if err != nil {
		return "", fmt.Errorf("reading the module's go.mod: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			mod := strings.Trim(strings.TrimSpace(strings.Split(rest, "//")[0]), `"`)
			if mod != "" {
				return mod, nil
			}
		}
	}
	return "", fmt.Errorf("%s: no module line", goMod)
}

// GoTestFuncs maps each top-level Test, Fuzz, Example and Benchmark
// function of the Go module at root to the package directories ("./rel",
// "." for the root) whose *_test.go files declare it. testdata, vendor,
// hidden and "_" directories and nested modules are not searched; a file
// that does not parse is skipped.
func GoTestFuncs(root string) (map[string][]string, error) {
	found := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // a nested module
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil // a file that does not parse declares nothing go test can run
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := "./" + filepath.ToSlash(rel)
		if rel == "." {
			pkg = "."
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if ok && fn.Recv == nil && isTestFunc(fn.Name.Name) && !slices.Contains(found[fn.Name.Name], pkg) {
				found[fn.Name.Name] = append(found[fn.Name.Name], pkg)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding tests under %s: %w", root, err)
	}
	return found, nil
}

// QualifiedTestName is a test's name qualified by its package's import
// path: "example.com/m/pkg.TestName/sub".
func QualifiedTestName(pkg, test string) string { return pkg + "." + test }

// SplitTestName splits a test name into its package import path (empty for
// a bare name) and its bare name. It reads the qualified form that
// QualifiedTestName writes: the package is everything before the dot that
// precedes the top-level test function's name (Test, Fuzz, Example or
// Benchmark followed by the rest of a Go identifier, then the end or "/").
func SplitTestName(name string) (pkg, test string) {
	top, _, _ := strings.Cut(name, "/")
	if !strings.Contains(top, ".") {
		return "", name
	}
	for i := 0; i < len(name); i++ {
		if name[i] != '.' {
			continue
		}
		rest := name[i+1:]
		fn, _, _ := strings.Cut(rest, "/")
		if isTestFunc(fn) && !strings.Contains(fn, ".") {
			return name[:i], rest
		}
	}
	return "", name
}

func isTestFunc(s string) bool {
	for _, p := range []string{"Test", "Fuzz", "Example", "Benchmark"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// ErrNoGoTestEvents: the stream held no `go test -json` event (go test
// failed before it ran anything, e.g. a broken go.mod; its message is in
// GoTestRun.Other).
var ErrNoGoTestEvents = errors.New("no go test -json events in the output")

// MaxTestOutput caps the output GoTestRun keeps per test, per package and
// per build failure; what is cut is marked.
const MaxTestOutput = 16 << 10

// GoTestRun is what one `go test -json` run reported.
type GoTestRun struct {
	// Tests is every test's result, under its qualified and its bare name
	// (see the naming rule above).
	Tests map[string]TestStatus
	// Packages is each package's own result, by import path: fail when any
	// of its tests failed, it did not build, it crashed or timed out.
	Packages map[string]TestStatus
	// BuildFailures holds, for each package whose test binary did not
	// build, the compiler's output (which may name the package it depends
	// on that failed). Such a package reports no test: its tests did not
	// run.
	BuildFailures map[string]string
	// Output is each test's output ("=== RUN" lines and assertion
	// messages, panics), by qualified name, and each package's output not
	// inside a test, by import path.
	Output map[string]string
	// Other is the input that was not a test2json event (go's own error
	// messages when stderr is merged in).
	Other string
	// Events counts the events read.
	Events int
}

// Status is a test's result by bare or qualified name; a test the run did
// not report is TestNotRun.
func (r *GoTestRun) Status(name string) TestStatus {
	if s, ok := r.Tests[name]; ok {
		return s
	}
	return TestNotRun
}

// Failed is the qualified names of the tests that failed, sorted.
func (r *GoTestRun) Failed() []string {
	var out []string
	for name, s := range r.Tests {
		if s == TestFail {
			if pkg, _ := SplitTestName(name); pkg != "" {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// testEvent is one line of `go test -json` (cmd/test2json's TestEvent, and
// the build events go test adds since Go 1.24).
type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

// ParseGoTestJSON reads `go test -json` output (stdout; stderr may be
// merged in) and returns each test's result by qualified and bare name (see
// the naming rule above). Tests of a package that failed to build, and
// tests that did not run, are not in the map: look a name up with
// GoTestRun.Status, or treat a missing name as not run. Use ParseGoTestRun
// for the build failures and the output.
func ParseGoTestJSON(r io.Reader) (map[string]TestStatus, error) {
	run, err := ParseGoTestRun(r)
	if err != nil {
		return nil, err
	}
	return run.Tests, nil
}

// ParseGoTestRun reads `go test -json` output into a GoTestRun. Events of
// different packages and of parallel tests may interleave. A test that
// was running when its package ended, or the stream did, without ending
// itself (the test binary timed out, panicked in another goroutine or
// exited) is failed; one paused at t.Parallel then never ran, and is left
// out. It returns ErrNoGoTestEvents (with the
// run, whose Other says why) when the input holds no event, and an error
// when reading fails.
func ParseGoTestRun(r io.Reader) (*GoTestRun, error) {
	p := &goTestParser{
		run: &GoTestRun{
			Tests:         map[string]TestStatus{},
			Packages:      map[string]TestStatus{},
			BuildFailures: map[string]string{},
			Output:        map[string]string{},
		},
		results:  map[string]map[string]TestStatus{},
		running:  map[string]map[string]bool{},
		paused:   map[string]map[string]bool{},
		outputs:  map[string]*capped{},
		builds:   map[string]*capped{},
		failedBy: map[string]string{},
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var other capped
	for sc.Scan() {
		line := sc.Bytes()
		var ev testEvent
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Action == "" {
			other.write(string(line) + "\n")
			continue
		}
		p.run.Events++
		p.event(ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading go test -json output: %w", err)
	}
	p.finish()
	p.run.Other = other.String()
	if p.run.Events == 0 {
		return p.run, ErrNoGoTestEvents
	}
	return p.run, nil
}

type goTestParser struct {
	run      *GoTestRun
	results  map[string]map[string]TestStatus // package → test → status
	running  map[string]map[string]bool       // package → tests started, not ended
	paused   map[string]map[string]bool       // package → tests of running paused at t.Parallel
	outputs  map[string]*capped               // qualified test or package → output
	builds   map[string]*capped               // build ImportPath → compiler output
	failedBy map[string]string                // package → FailedBuild
}

func (p *goTestParser) event(ev testEvent) {
	switch ev.Action {
	case "build-output":
		p.buf(p.builds, ev.ImportPath).write(ev.Output)
		return
	case "build-fail":
		p.buf(p.builds, ev.ImportPath)
		return
	}
	pkg := ev.Package
	if pkg == "" {
		return
	}
	if ev.Test == "" {
		switch ev.Action {
		case "output":
			p.buf(p.outputs, pkg).write(ev.Output)
		case "pass", "fail", "skip":
			p.run.Packages[pkg] = TestStatus(ev.Action)
			if ev.FailedBuild != "" {
				p.failedBy[pkg] = ev.FailedBuild
			}
			p.endRunning(pkg)
		}
		return
	}
	q := QualifiedTestName(pkg, ev.Test)
	switch ev.Action {
	case "run":
		if p.running[pkg] == nil {
			p.running[pkg] = map[string]bool{}
		}
		p.running[pkg][ev.Test] = true
	case "pause":
		if p.paused[pkg] == nil {
			p.paused[pkg] = map[string]bool{}
		}
		p.paused[pkg][ev.Test] = true
	case "cont":
		delete(p.paused[pkg], ev.Test)
	case "output":
		p.buf(p.outputs, q).write(ev.Output)
	case "pass", "fail", "skip":
		delete(p.running[pkg], ev.Test)
		delete(p.paused[pkg], ev.Test)
		p.set(pkg, ev.Test, TestStatus(ev.Action))
	}
}

// endRunning ends the tests of pkg that have not ended when it did (or
// the stream did): those that were running died with the test binary and
// failed; those paused at t.Parallel never ran and get no result.
func (p *goTestParser) endRunning(pkg string) {
	for t := range p.running[pkg] {
		if !p.paused[pkg][t] {
			p.set(pkg, t, TestFail)
		}
	}
	delete(p.running, pkg)
	delete(p.paused, pkg)
}

func (p *goTestParser) set(pkg, test string, s TestStatus) {
	if p.results[pkg] == nil {
		p.results[pkg] = map[string]TestStatus{}
	}
	p.results[pkg][test] = s
}

func (p *goTestParser) buf(m map[string]*capped, key string) *capped {
	b := m[key]
	if b == nil {
		b = &capped{}
		m[key] = b
	}
	return b
}

// finish ends the tests that never ended (the stream was cut), fills the
// bare names and the build failures.
func (p *goTestParser) finish() {
	for pkg := range p.running {
		p.endRunning(pkg)
		if _, ok := p.run.Packages[pkg]; !ok {
			p.run.Packages[pkg] = TestFail
		}
	}
	for pkg, tests := range p.results {
		for t, s := range tests {
			p.run.Tests[QualifiedTestName(pkg, t)] = s
			if old, ok := p.run.Tests[t]; !ok || rank(s) > rank(old) {
				p.run.Tests[t] = s
			}
		}
	}
	for key, b := range p.outputs {
		p.run.Output[key] = b.String()
	}
	for pkg, failed := range p.failedBy {
		msg := ""
		if b := p.builds[failed]; b != nil {
			msg = b.String()
		}
		if msg == "" {
			// Setup failures (a missing module) are reported in the
			// package's own output.
			msg = p.run.Output[pkg]
		}
		p.run.BuildFailures[pkg] = msg
	}
}

func rank(s TestStatus) int {
	switch s {
	case TestFail:
		return 2
	case TestPass:
		return 1
	}
	return 0
}

// capped is a string builder that keeps MaxTestOutput bytes and counts the
// rest.
type capped struct {
	b       strings.Builder
	dropped int
}

func (c *capped) write(s string) {
	if room := MaxTestOutput - c.b.Len(); room < len(s) {
		if room > 0 {
			c.b.WriteString(s[:room])
		}
		c.dropped += len(s) - max(room, 0)
		return
	}
	c.b.WriteString(s)
}

func (c *capped) String() string {
	if c.dropped > 0 {
		return c.b.String() + fmt.Sprintf("\n[... %d bytes truncated ...]\n", c.dropped)
	}
	return c.b.String()
}
