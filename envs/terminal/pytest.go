package terminal

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// TestStatus is one test's outcome as pytest reports it.
type TestStatus string

const (
	StatusPassed  TestStatus = "passed"
	StatusFailed  TestStatus = "failed"
	StatusError   TestStatus = "error"   // an error in setup, teardown or collection
	StatusXFail   TestStatus = "xfailed" // failed as expected: counts as passed
	StatusXPass   TestStatus = "xpassed" // passed though expected to fail: counts as failed
	StatusSkipped TestStatus = "skipped" // counted in neither
)

// Passed reports whether the status counts as a pass.
func (s TestStatus) Passed() bool { return s == StatusPassed || s == StatusXFail }

// TestResult is one test's line of pytest's short summary.
type TestResult struct {
	Name   string     `json:"name"`
	Status TestStatus `json:"status"`
	// Message is what pytest said after " - ", for failures.
	Message string `json:"message,omitempty"`
}

// TestReport is what ParsePytest read from a test run's output.
type TestReport struct {
	Tests   []TestResult `json:"tests,omitempty"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Skipped int          `json:"skipped,omitempty"`
	// Source says where the counts came from: "summary" (the per-test
	// lines of -rA) or "stats" (the final counts line only).
	Source string `json:"source"`
}

// Total is the number of tests that count: passed and failed.
func (r *TestReport) Total() int { return r.Passed + r.Failed }

// Reward is passed/total, 0 when no test counts.
func (r *TestReport) Reward() float64 {
	if r.Total() == 0 {
		return 0
	}
	return float64(r.Passed) / float64(r.Total())
}

// ErrNoTestResults is returned when the output holds no pytest results.
var ErrNoTestResults = errors.New("no pytest results in the test run's output (want pytest -rA's short test summary)")

var (
	ansiRE    = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]`)
	headerRE  = regexp.MustCompile(`^=+ short test summary info =+$`)
	statsRE   = regexp.MustCompile(`^=* ?((?:\d+ \w+(?:, )?)+|no tests ran) in [0-9.]+s(?: \([^)]*\))? ?=*$`)
	countRE   = regexp.MustCompile(`(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)`)
	summaryRE = regexp.MustCompile(`^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (.+)$`)
)

// ParsePytest reads pytest's results from a test run's output (stdout).
// It reads the last "short test summary info" section, whose lines pytest
// -rA writes as "PASSED tests/test_x.py::test_a" or "FAILED
// tests/test_x.py::test_b - AssertionError: ...". Only the last section
// counts: output the tests themselves print (which an agent's program may
// shape) comes before it. A test named twice (passed, then an error at
// teardown) takes the worse status. Without a summary section it falls
// back to the counts of the final "== 3 passed, 1 failed in 0.1s ==" line,
// as it does when the summary lists no pass (pytest run without -rA).
func ParsePytest(output string) (*TestReport, error) {
	lines := strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n")
	for i, l := range lines {
		if strings.IndexByte(l, 0x1b) >= 0 {
			l = ansiRE.ReplaceAllString(l, "")
		}
		lines[i] = strings.TrimRight(l, " \r")
	}
	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if headerRE.MatchString(lines[i]) {
			start = i
			break
		}
	}
	if start < 0 {
		return parseStats(lines)
	}
	r := &TestReport{Source: "summary"}
	index := map[string]int{}
	for _, l := range lines[start+1:] {
		if strings.HasPrefix(l, "=") {
			break // the final stats line ends the section
		}
		m := summaryRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if m[1] == "SKIPPED" {
			n := 1
			if s, ok := strings.CutPrefix(m[2], "["); ok {
				if k, _, ok := strings.Cut(s, "]"); ok {
					if v, err := strconv.Atoi(k); err == nil {
						n = v
					}
				}
			}
			r.Skipped += n
			continue
		}
		name, msg := splitNodeID(m[2])
		st := map[string]TestStatus{"PASSED": StatusPassed, "FAILED": StatusFailed, "ERROR": StatusError,
			"XFAIL": StatusXFail, "XPASS": StatusXPass}[m[1]]
		if st.Passed() {
			msg = "" // an xfail's reason is not a failure message
		}
		r.record(index, TestResult{Name: name, Status: st, Message: msg})
	}
	r.tally()
	if len(r.Tests) == 0 && r.Skipped == 0 {
		// An empty section (cut off, or only warnings): the counts line
		// is all there is.
		return parseStats(lines)
	}
	if r.Passed == 0 {
		// Without -rA the summary lists failures only: if the final
		// counts line says some passed, take the counts from it.
		if s, err := parseStats(lines); err == nil && s.Passed > 0 {
			s.Tests = r.Tests
			return s, nil
		}
	}
	return r, nil
}

// record adds a test's result; index maps names to their place in
// r.Tests. A test named twice (passed, then an error at teardown) takes
// the worse status.
func (r *TestReport) record(index map[string]int, t TestResult) {
	if i, ok := index[t.Name]; ok {
		if r.Tests[i].Status.Passed() && !t.Status.Passed() {
			r.Tests[i] = t
		}
		return
	}
	index[t.Name] = len(r.Tests)
	r.Tests = append(r.Tests, t)
}

// tally counts the passed and failed tests of r.Tests.
func (r *TestReport) tally() {
	for _, t := range r.Tests {
		if t.Status.Passed() {
			r.Passed++
		} else {
			r.Failed++
		}
	}
}

// splitNodeID separates "path::test[params] - message" (or "path::test
// reason", as XPASS lines have it). The node id ends at the first space
// after its last "::" and after any parameter brackets.
func splitNodeID(s string) (name, msg string) {
	from := 0
	if i := strings.LastIndex(s, "::"); i >= 0 {
		from = i
	}
	if b := strings.IndexByte(s[from:], '['); b >= 0 {
		depth := 0
		for j := from + b; j < len(s); j++ {
			switch s[j] {
			case '[':
				depth++
			case ']':
				depth--
			}
			if depth == 0 {
				from = j
				break
			}
		}
	}
	if i := strings.IndexByte(s[from:], ' '); i >= 0 {
		msg := strings.TrimSpace(s[from+i:])
		msg = strings.TrimSpace(strings.TrimPrefix(msg, "- "))
		return strings.TrimSpace(s[:from+i]), msg
	}
	return strings.TrimSpace(s), ""
}

// parseStats reads the last "== 2 failed, 3 passed in 0.1s ==" line.
func parseStats(lines []string) (*TestReport, error) {
	for i := len(lines) - 1; i >= 0; i-- {
		m := statsRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		r := &TestReport{Source: "stats"}
		for _, c := range countRE.FindAllStringSubmatch(m[1], -1) {
			n, _ := strconv.Atoi(c[1])
			switch c[2] {
			case "passed", "xfailed":
				r.Passed += n
			case "failed", "error", "errors", "xpassed":
				r.Failed += n
			case "skipped":
				r.Skipped += n
			}
		}
		return r, nil
	}
	return nil, ErrNoTestResults
}
