package swe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// maxArgBytes bounds the test names put on a command line; past it the
// whole packages (go) or test files (pytest) run and unlisted results are
// ignored.
const maxArgBytes = 96 << 10

// runGo runs the listed Go tests with go test -json and reads their
// results into res.
func (h *Harness) runGo(ctx context.Context, sb sandbox.Sandbox, in *Instance, res *Result) error {
	names := append(append([]string(nil), in.FailToPass...), in.PassToPass...)
	pkgs, funcs := map[string]bool{}, map[string]bool{}
	bare := false
	for _, n := range names {
		pkg, test := SplitTestName(n)
		if pkg == "" {
			bare = true
		} else {
			pkgs[pkg] = true
		}
		top, _, _ := strings.Cut(test, "/")
		funcs[regexp.QuoteMeta(top)] = true
	}
	pattern := "^(" + strings.Join(sortedKeys(funcs), "|") + ")$"
	if len(pattern) >= maxArgBytes {
		pattern = ""
	}
	targets := sortedKeys(pkgs)
	if bare {
		dirs, err := testDirs(ctx, sb, bareFuncs(names))
		if err != nil {
			return err
		}
		if dirs == nil {
			targets = []string{"./..."}
		} else {
			targets = append(targets, dirs...)
		}
	}
	args := GoTestArgs(pattern, h.opts.TestTimeout.String(), targets)
	res.TestCommand = strings.Join(args, " ")
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: args, Dir: Workdir, Timeout: h.opts.TestTimeout + time.Minute, MaxOutput: 64 << 20})
	if err != nil {
		return err
	}
	if r.ExitCode == 127 || r.ExitCode == 126 {
		return fmt.Errorf("the go command cannot run in the sandbox (exit %d): %s", r.ExitCode, truncate(string(r.Stderr), 2048))
	}
	run, perr := ParseGoTestRun(bytes.NewReader(r.Stdout))
	if perr != nil && !errors.Is(perr, ErrNoGoTestEvents) {
		return perr
	}
	for _, n := range names {
		res.Tests[n] = run.Status(n)
	}
	var build []string
	for _, pkg := range sortedKeys(boolKeys(run.BuildFailures)) {
		build = append(build, strings.TrimSpace(run.BuildFailures[pkg]))
	}
	var outs []string
	for _, n := range names {
		if run.Status(n) != TestPass {
			pkg, test := SplitTestName(n)
			for q, o := range run.Output {
				if p, t := SplitTestName(q); t == test && (pkg == "" || p == pkg) && o != "" {
					outs = append(outs, o)
				}
			}
		}
	}
	res.Output = truncate(strings.Join(dedup(outs), "\n"), MaxTestOutput)
	stderr := strings.TrimSpace(string(r.Stderr) + run.Other)
	switch {
	case r.TimedOut:
		res.Error, res.Message = ErrorTestsTimedOut, fmt.Sprintf("go test ran past %s", h.opts.TestTimeout)
	case len(build) > 0:
		res.Error = ErrorBuildFailed
		res.BuildOutput = truncate(strings.Join(dedup(build), "\n"), MaxTestOutput)
	case run.Events == 0:
		res.Error, res.Message = ErrorTestsDidNotStart, truncate(stderr, MaxTestOutput)
	}
	if res.Error != "" && res.Message == "" && stderr != "" {
		res.Message = truncate(stderr, MaxTestOutput)
	}
	return nil
}

// bareFuncs lists the top-level test functions of the bare names.
func bareFuncs(names []string) []string {
	m := map[string]bool{}
	for _, n := range names {
		if pkg, test := SplitTestName(n); pkg == "" {
			top, _, _ := strings.Cut(test, "/")
			m[top] = true
		}
	}
	return sortedKeys(m)
}

// testDirsScript prints "FILE:func NAME(" for each *_test.go file that
// defines one of the functions $1 ("TestA|TestB").
const testDirsScript = `grep -rHoE --include='*_test.go' --exclude-dir=testdata --exclude-dir=vendor "^func ($1)\\(" . 2>/dev/null; true`

// testDirs finds the packages, as ./dir patterns, whose test files define
// funcs (test function names); files in hidden directories do not count.
// It returns nil when some function is defined nowhere (go test ./...
// then runs, and the test is reported missing).
func testDirs(ctx context.Context, sb sandbox.Sandbox, funcs []string) ([]string, error) {
	if len(funcs) == 0 {
		return []string{}, nil
	}
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"bash", "-c", testDirsScript, "find", strings.Join(funcs, "|")},
		Dir: Workdir, Timeout: 2 * time.Minute, MaxOutput: 16 << 20})
	if err != nil {
		return nil, err
	}
	dirs, found := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(string(r.Stdout), "\n") {
		file, def, ok := strings.Cut(strings.TrimSpace(l), ":func ")
		pkg := packagePattern(file)
		if !ok || strings.Contains(strings.TrimPrefix(pkg, "."), "/.") {
			continue
		}
		found[strings.TrimSuffix(def, "(")] = true
		dirs[pkg] = true
	}
	for _, f := range funcs {
		if !found[f] {
			return nil, nil
		}
	}
	return sortedKeys(dirs), nil
}

// packagePattern is the go test pattern of the package of file, a path
// relative to the module's root ("./a/b_test.go", "b_test.go"): "." or
// "./a". The "./" matters: go test reads "a/b" as an import path, and an
// import path without a dot in its first element as a standard library
// package ("package internal/assert is not in std").
func packagePattern(file string) string {
	dir := path.Dir(path.Clean(file))
	if dir == "." {
		return "."
	}
	return "./" + dir
}

// runPytest runs the listed pytest node ids with -rA and reads their
// results into res.
func (h *Harness) runPytest(ctx context.Context, sb sandbox.Sandbox, in *Instance, res *Result) error {
	names := append(append([]string(nil), in.FailToPass...), in.PassToPass...)
	args := []string{"python3", "-m", "pytest", "-rA", "--tb=short", "-p", "no:cacheprovider"}
	size := 0
	for _, n := range names {
		size += len(n) + 1
	}
	if size < maxArgBytes {
		args = append(args, dedup(names)...)
	} else {
		files := map[string]bool{}
		for _, n := range names {
			f, _, _ := strings.Cut(n, "::")
			files[f] = true
		}
		args = append(args, sortedKeys(files)...)
	}
	res.TestCommand = strings.Join(args, " ")
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: args, Dir: Workdir, Timeout: h.opts.TestTimeout, MaxOutput: 64 << 20,
		Env: map[string]string{"COLUMNS": "200"}})
	if err != nil {
		return err
	}
	out := string(r.Stdout)
	if r.ExitCode == 127 || strings.Contains(string(r.Stderr), "No module named pytest") {
		return fmt.Errorf("pytest cannot run in the sandbox (exit %d): %s", r.ExitCode, truncate(string(r.Stderr), 2048))
	}
	run := ParsePytest(out)
	for _, n := range names {
		st, ok := run.Tests[n]
		if !ok {
			st = TestNotRun
		}
		res.Tests[n] = st
	}
	failed := false
	for _, n := range names {
		failed = failed || res.Tests[n] != TestPass
	}
	if failed {
		res.Output = truncate(tail(out, MaxTestOutput), MaxTestOutput)
	}
	switch {
	case r.TimedOut:
		res.Error, res.Message = ErrorTestsTimedOut, fmt.Sprintf("pytest ran past %s", h.opts.TestTimeout)
	case len(run.Errors) > 0 && failed:
		res.Error = ErrorBuildFailed
		res.BuildOutput = truncate(strings.Join(run.Errors, "\n")+"\n\n"+run.ErrorsSection, MaxTestOutput)
	case len(run.Tests) == 0 && len(run.Errors) == 0:
		res.Error = ErrorTestsDidNotStart
		res.Message = truncate(strings.TrimSpace(tail(out, MaxTestOutput)+"\n"+string(r.Stderr)), MaxTestOutput)
	}
	return nil
}

// tail is the last n bytes of s, from a line start where it can.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	return "[...]\n" + s
}
