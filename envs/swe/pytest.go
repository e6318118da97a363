package swe

import (
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pytest"
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

// ParsePytest reads pytest's output (run with -rA) into per-test results,
// as package envs/internal/pytest reads it (the last summary section; a
// node id ends after its last "::" part and its parameter brackets).
func ParsePytest(out string) *PytestRun {
	r := &PytestRun{Tests: map[string]TestStatus{}}
	rep, err := pytest.Parse(out)
	if err != nil {
		return r
	}
	r.Summary = rep.Summary
	var errs strings.Builder
	for _, l := range strings.SplitAfter(rep.Errors, "\n") {
		if errs.Len() >= MaxTestOutput {
			break
		}
		errs.WriteString(l)
	}
	r.ErrorsSection = errs.String()
	for _, t := range rep.Tests {
		switch {
		case t.Status == pytest.StatusError && !strings.Contains(t.Name, "::"):
			r.Errors = append(r.Errors, strings.TrimSuffix(t.Name+" - "+t.Message, " - "))
		case t.Status.Passed():
			r.Tests[t.Name] = TestPass
		case t.Status == pytest.StatusSkipped:
			r.Tests[t.Name] = TestSkip
		default:
			r.Tests[t.Name] = TestFail
		}
	}
	return r
}
