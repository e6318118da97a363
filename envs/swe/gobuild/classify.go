package gobuild

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/swe"
)

// classify compares the run before the fix (a) with the run after it (b),
// by qualified name: FAIL_TO_PASS are the tests that pass in (b) and fail
// or did not run in (a) (their package did not build, or the binary died
// first); PASS_TO_PASS pass in both. A test skipped in (a) is in neither.
// stillFailing fail (or did not run) in (a) and fail in (b).
func classify(a, b *swe.GoTestRun) (f2p, p2p, stillFailing []string) {
	for q, sb := range b.Tests {
		if pkg, _ := swe.SplitTestName(q); pkg == "" {
			continue
		}
		sa, ran := a.Tests[q]
		switch {
		case sb == swe.TestPass && sa == swe.TestPass:
			p2p = append(p2p, q)
		case sb == swe.TestPass && (!ran || sa == swe.TestFail):
			f2p = append(f2p, q)
		case sb == swe.TestFail && (!ran || sa == swe.TestFail):
			stillFailing = append(stillFailing, q)
		}
	}
	sort.Strings(f2p)
	sort.Strings(p2p)
	sort.Strings(stillFailing)
	return f2p, p2p, stillFailing
}

// passing is the qualified names of the tests that passed.
func passing(r *swe.GoTestRun) []string {
	var out []string
	for q, s := range r.Tests {
		if pkg, _ := swe.SplitTestName(q); pkg != "" && s == swe.TestPass {
			out = append(out, q)
		}
	}
	return out
}

// listNames writes qualified names as FAIL_TO_PASS and PASS_TO_PASS carry
// them (swe's naming rule): bare, unless the top-level test function is
// declared in more than one package directory (funcs, from
// swe.GoTestFuncs).
func listNames(qualified []string, funcs map[string][]string) []string {
	out := make([]string, 0, len(qualified))
	for _, q := range qualified {
		_, test := swe.SplitTestName(q)
		top, _, _ := strings.Cut(test, "/")
		if len(funcs[top]) > 1 {
			out = append(out, q)
		} else {
			out = append(out, test)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// runSummary says in a line or a few why a run had no passing test.
func runSummary(r *swe.GoTestRun) string {
	var parts []string
	for _, pkg := range sortedKeys(r.BuildFailures) {
		parts = append(parts, fmt.Sprintf("%s does not build: %s", pkg, firstLines(r.BuildFailures[pkg], 5)))
	}
	if len(parts) == 0 && strings.TrimSpace(r.Other) != "" {
		parts = append(parts, firstLines(r.Other, 5))
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%d tests reported, none passed", len(r.Tests)/2))
	}
	return strings.Join(firstN(parts, 3), "; ")
}

// problemStatement writes the instance's problem statement from what the
// release shows: there is no issue text offline, so it is synthesized
// from the version bump, the failing tests and their failure output
// before the fix, and the names of the non-test files the fix changes.
func problemStatement(spec Spec, d diff, f2p []string, before *swe.GoTestRun, dir string) string {
	// Paths in the output are the scratch tree's: make them the module's.
	local := strings.NewReplacer(dir+string(filepath.Separator), "", dir, ".")
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s changes the behaviour of %s: some tests fail on %s and pass on %s.\n",
		spec.Module, spec.New, spec.Old, spec.Old, spec.New)
	b.WriteString("(This description is synthesized from the release; it is not a human-written issue.)\n\n")
	b.WriteString("Make these tests pass without breaking the others:\n")
	for _, q := range firstN(f2p, 20) {
		pkg, test := swe.SplitTestName(q)
		fmt.Fprintf(&b, "- %s (package %s)\n", test, pkg)
	}
	if len(f2p) > 20 {
		fmt.Fprintf(&b, "- ... and %d more\n", len(f2p)-20)
	}
	shown := 0
	seenBuild := map[string]bool{}
	b.WriteString("\nWhat they report now:\n")
	for _, q := range f2p {
		if shown == 3 {
			break
		}
		pkg, test := swe.SplitTestName(q)
		if msg, ok := before.BuildFailures[pkg]; ok {
			if !seenBuild[pkg] {
				seenBuild[pkg] = true
				shown++
				fmt.Fprintf(&b, "\nThe tests of %s do not build:\n%s\n", pkg, indent(firstLines(local.Replace(msg), 20)))
			}
			continue
		}
		out := failureLines(local.Replace(before.Output[q]))
		if out == "" {
			if _, ran := before.Tests[q]; !ran {
				out = "(did not run: the test binary ended before it)"
			} else {
				continue // a parent test whose subtest says it
			}
		}
		shown++
		fmt.Fprintf(&b, "\n%s:\n%s\n", test, indent(out))
	}
	var files []string
	others := 0
	for _, p := range d.Changed {
		switch {
		case IsTestPath(p):
		case strings.HasSuffix(p, ".go") || path.Base(p) == "go.mod" || path.Base(p) == "go.sum":
			files = append(files, p)
		default:
			others++
		}
	}
	if len(files) > 0 {
		fmt.Fprintf(&b, "\nThe fix in %s touches: %s", spec.New, strings.Join(firstN(files, 30), ", "))
		if len(files) > 30 {
			fmt.Fprintf(&b, " and %d more Go files", len(files)-30)
		}
		if others > 0 {
			fmt.Fprintf(&b, " (and %d other files)", others)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// failureLines keeps a test's failure messages: its output less the
// "=== RUN"-style framing, at most 20 lines.
func failureLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- PASS") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		keep = append(keep, strings.TrimRight(l, " \t"))
	}
	return firstLines(strings.Join(keep, "\n"), 20)
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("[... %d more lines]", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func firstN[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// copyTree copies the regular files and directories of src into dst,
// writable (the module cache's files are read-only).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		}
		return nil
	})
}
