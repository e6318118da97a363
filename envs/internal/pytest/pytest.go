// Package pytest reads pytest's results from a test run's output: the one
// parser of terminal-v1 (whose verifier notes what the output claims) and
// swe-v1 (whose harness judges a Python instance's tests by it).
//
// Parse reads the last "short test summary info" section that pytest -rA
// writes, one line per test ("PASSED tests/test_x.py::test_a", "FAILED
// tests/test_x.py::test_b - AssertionError: ..."). Only the last section
// counts: output the tests print (which an agent's program may shape)
// comes before it. A node id ends at the first space after its last "::"
// and its parameter brackets, so a parameter holding " - " stays in it. A
// test named twice (passed, then an error at teardown) takes the worse
// status. Without a summary section, or one that lists no pass where the
// final counts line ("== 3 passed, 1 failed in 0.1s ==") says some
// passed (pytest run without -rA), the counts come from that line.
package pytest

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// Status is one test's outcome as pytest reports it.
type Status string

const (
	StatusPassed  Status = "passed"
	StatusFailed  Status = "failed"
	StatusError   Status = "error"   // an error in setup, teardown or collection
	StatusXFail   Status = "xfailed" // failed as expected: counts as passed
	StatusXPass   Status = "xpassed" // passed though expected to fail: counts as failed
	StatusSkipped Status = "skipped" // counted in neither
)

// Passed reports whether the status counts as a pass.
func (s Status) Passed() bool { return s == StatusPassed || s == StatusXFail }

// rank orders statuses from best to worst: a pass, a skip, a failure.
func (s Status) rank() int {
	switch {
	case s.Passed():
		return 0
	case s == StatusSkipped:
		return 1
	}
	return 2
}

// Result is one test's line of pytest's short summary.
type Result struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Message is what pytest said after " - ", for failures: for an
	// error of a file that did not collect (its Name has no "::"),
	// pytest's reason.
	Message string `json:"message,omitempty"`
}

// Report is what Parse read from a test run's output.
type Report struct {
	// Tests are the tests the summary names, in its order; a skipped one
	// only where pytest names its node (--no-fold-skipped).
	Tests   []Result `json:"tests,omitempty"`
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	Skipped int      `json:"skipped,omitempty"`
	// Source says where the counts came from: "summary" (the per-test
	// lines of -rA) or "stats" (the final counts line only).
	Source string `json:"source"`
	// Summary is the final counts line, without its "=" rule:
	// "2 failed, 3 passed in 0.12s".
	Summary string `json:"summary,omitempty"`
	// Errors is the text of the last "ERRORS" section: the tracebacks of
	// collection and setup errors.
	Errors string `json:"-"`

	index map[string]int // Tests by name
}

// Total is the number of tests that count: passed and failed.
func (r *Report) Total() int { return r.Passed + r.Failed }

// Reward is passed/total, 0 when no test counts.
func (r *Report) Reward() float64 {
	if r.Total() == 0 {
		return 0
	}
	return float64(r.Passed) / float64(r.Total())
}

// ErrNoResults is returned when the output holds no pytest results.
var ErrNoResults = errors.New("no pytest results in the test run's output (want pytest -rA's short test summary)")

var (
	ansiRE    = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]`)
	headerRE  = regexp.MustCompile(`^=+ short test summary info =+$`)
	errorsRE  = regexp.MustCompile(`^=+ ERRORS =+$`)
	sectionRE = regexp.MustCompile(`^=+ .*? =+$`)
	statsRE   = regexp.MustCompile(`^=* ?((?:\d+ \w+(?:, )?)+|no tests ran) in [0-9.]+s(?: \([^)]*\))? ?=*$`)
	countRE   = regexp.MustCompile(`(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)`)
	summaryRE = regexp.MustCompile(`^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (.+)$`)
)

// words are the summary's statuses.
var words = map[string]Status{"PASSED": StatusPassed, "FAILED": StatusFailed, "ERROR": StatusError,
	"XFAIL": StatusXFail, "XPASS": StatusXPass, "SKIPPED": StatusSkipped}

// Parse reads pytest's results from a test run's output (stdout), as the
// package doc says; ErrNoResults when there are none.
func Parse(output string) (*Report, error) {
	lines := strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n")
	for i, l := range lines {
		if strings.IndexByte(l, 0x1b) >= 0 {
			l = ansiRE.ReplaceAllString(l, "")
		}
		lines[i] = strings.TrimRight(l, " \r")
	}
	r, err := parseSummary(lines)
	if err != nil {
		return nil, err
	}
	r.Errors = errorsSection(lines)
	return r, nil
}

// parseSummary reads the last summary section, or the counts line.
func parseSummary(lines []string) (*Report, error) {
	start := lastMatch(lines, headerRE)
	if start < 0 {
		return parseStats(lines)
	}
	r := &Report{Source: "summary"}
	for _, l := range lines[start+1:] {
		if strings.HasPrefix(l, "=") {
			break // the final stats line ends the section
		}
		m := summaryRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if m[1] == "SKIPPED" && strings.HasPrefix(m[2], "[") {
			// "SKIPPED [3] t.py:9: reason": skips folded, no node id.
			n := 1
			if k, _, ok := strings.Cut(m[2][1:], "]"); ok {
				if v, err := strconv.Atoi(k); err == nil {
					n = v
				}
			}
			r.Skipped += n
			continue
		}
		name, msg := splitNodeID(m[2])
		st := words[m[1]]
		if st.Passed() || st == StatusSkipped {
			msg = "" // an xfail's or a skip's reason is not a failure message
		}
		r.Add(Result{Name: name, Status: st, Message: msg})
	}
	if s, err := parseStats(lines); err == nil {
		r.Summary = s.Summary
		if len(r.Tests) == 0 && r.Skipped == 0 {
			// An empty section (cut off, or only warnings): the counts
			// line is all there is.
			return s, nil
		}
		if r.Passed == 0 && s.Passed > 0 {
			// Without -rA the summary lists failures only: the counts
			// line says how many passed.
			s.Tests = r.Tests
			return s, nil
		}
	} else if len(r.Tests) == 0 && r.Skipped == 0 {
		return nil, err
	}
	return r, nil
}

// Add records a test's result, and counts it: a test added twice (passed,
// then an error at teardown) takes the worse status (a pass, a skip, a
// failure). Other readers of pytest's results (a JUnit report) build a
// Report with it.
func (r *Report) Add(t Result) {
	if i, ok := r.index[t.Name]; ok {
		if t.Status.rank() > r.Tests[i].Status.rank() {
			r.count(r.Tests[i].Status, -1)
			r.Tests[i] = t
			r.count(t.Status, 1)
		}
		return
	}
	if r.index == nil {
		r.index = map[string]int{}
	}
	r.index[t.Name] = len(r.Tests)
	r.Tests = append(r.Tests, t)
	r.count(t.Status, 1)
}

func (r *Report) count(s Status, n int) {
	switch {
	case s.Passed():
		r.Passed += n
	case s == StatusSkipped:
		r.Skipped += n
	default:
		r.Failed += n
	}
}

// lastMatch is the index of the last line re matches, -1 when none does.
func lastMatch(lines []string, re *regexp.Regexp) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if re.MatchString(lines[i]) {
			return i
		}
	}
	return -1
}

// errorsSection is the text of the last "ERRORS" section, up to the next
// section's rule.
func errorsSection(lines []string) string {
	start := lastMatch(lines, errorsRE)
	if start < 0 {
		return ""
	}
	var b strings.Builder
	for _, l := range lines[start+1:] {
		if sectionRE.MatchString(l) {
			break
		}
		b.WriteString(l + "\n")
	}
	return b.String()
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
func parseStats(lines []string) (*Report, error) {
	for i := len(lines) - 1; i >= 0; i-- {
		m := statsRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		r := &Report{Source: "stats", Summary: strings.Trim(lines[i], "= ")}
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
	return nil, ErrNoResults
}
