package swe

import (
	"regexp"
	"strings"
)

// PytestRun is what one pytest run with -rA reported.
type PytestRun struct {
	// Tests is each reported test's result by node id
	// ("tests/test_x.py::test_a[1]"): PASSED and XFAIL pass, FAILED,
	// ERROR and XPASS fail, SKIPPED skips (only where pytest names the
	// node, as with -rA it does not: a skipped test is then missing).
	Tests map[string]TestStatus
	// Errors are the ERROR lines of the short summary without a test's
	// node id: a file that did not collect (a syntax error, an import
	// error), with pytest's message.
	Errors []string
	// ErrorsSection is the "ERRORS" section of the output: the
	// tracebacks of collection and setup errors, cut at MaxTestOutput.
	ErrorsSection string
	// Summary is the last line ("2 failed, 3 passed in 0.12s").
	Summary string
}

var (
	pyANSI    = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]`)
	pySection = regexp.MustCompile(`^=+ (.*?) =+$`)
	pyLine    = regexp.MustCompile(`^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (.+)$`)
)

// ParsePytest reads pytest's output (run with -rA) into per-test results.
// A failure's node id may not hold " - " (pytest puts the message after
// it); a pass's may.
func ParsePytest(out string) *PytestRun {
	r := &PytestRun{Tests: map[string]TestStatus{}}
	section := ""
	var errs strings.Builder
	for _, l := range strings.Split(pyANSI.ReplaceAllString(out, ""), "\n") {
		l = strings.TrimRight(l, "\r")
		if m := pySection.FindStringSubmatch(l); m != nil {
			section = strings.ToLower(m[1])
			if strings.Contains(section, " in ") && (strings.Contains(section, "passed") || strings.Contains(section, "failed") ||
				strings.Contains(section, "error") || strings.Contains(section, "skipped") || strings.Contains(section, "no tests ran")) {
				r.Summary = m[1]
			}
			continue
		}
		if section == "errors" {
			if errs.Len() < MaxTestOutput {
				errs.WriteString(l + "\n")
			}
			continue
		}
		if section != "short test summary info" {
			continue
		}
		m := pyLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		word, rest := m[1], m[2]
		id := rest
		if word != "PASSED" {
			if i := strings.Index(rest, " - "); i >= 0 {
				id = rest[:i]
			} else if word == "XPASS" || word == "SKIPPED" {
				id, _, _ = strings.Cut(rest, " ")
			}
		}
		if word == "SKIPPED" && strings.HasPrefix(rest, "[") {
			continue // "SKIPPED [1] file:line: reason": no node id
		}
		if word == "ERROR" && !strings.Contains(id, "::") {
			r.Errors = append(r.Errors, rest)
			continue
		}
		var st TestStatus
		switch word {
		case "PASSED", "XFAIL":
			st = TestPass
		case "SKIPPED":
			st = TestSkip
		default:
			st = TestFail
		}
		ids := []string{id}
		if word == "PASSED" && strings.Contains(rest, " - ") {
			// A message after a pass (a plugin's report): the id is before
			// it, unless the id itself holds " - "; both are kept.
			ids = append(ids, rest[:strings.Index(rest, " - ")])
		}
		for _, id := range ids {
			// A test that passed and then errored in teardown is failed.
			if old, ok := r.Tests[id]; ok && old == TestFail {
				continue
			}
			r.Tests[id] = st
		}
	}
	r.ErrorsSection = errs.String()
	return r
}
