package pytest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func statuses(r *Report) map[string]Status {
	out := map[string]Status{}
	for _, t := range r.Tests {
		out[t.Name] = t.Status
	}
	return out
}

// The fixtures are real output of pytest 7.2.1 (Debian 12) run with -rA
// (see testdata).
func TestParsePytestMixed(t *testing.T) {
	for _, name := range []string{"mixed.txt", "color.txt"} {
		t.Run(name, func(t *testing.T) {
			r, err := Parse(fixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]Status{
				"tests/test_x.py::test_a":      StatusPassed,
				"tests/test_x.py::test_p[1]":   StatusPassed,
				"tests/test_x.py::test_p[a b]": StatusPassed,
				"tests/test_x.py::test_xf":     StatusXFail,
				"tests/test_x.py::test_fix":    StatusError,
				"tests/test_x.py::test_b":      StatusFailed,
				"tests/test_x.py::test_p[2]":   StatusFailed,
				"tests/test_x.py::test_err":    StatusFailed,
			}
			got := statuses(r)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
			if len(got) != len(want) {
				t.Errorf("tests %v", got)
			}
			if r.Passed != 4 || r.Failed != 4 || r.Skipped != 1 || r.Total() != 8 || r.Reward() != 0.5 || r.Source != "summary" {
				t.Errorf("report %+v, reward %v", r, r.Reward())
			}
			for _, tr := range r.Tests {
				if tr.Name == "tests/test_x.py::test_b" && tr.Message != "AssertionError: one is not two" {
					t.Errorf("test_b message %q", tr.Message)
				}
			}
		})
	}
}

func TestParsePytestAllPassed(t *testing.T) {
	r, err := Parse(fixture(t, "all_passed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Reward() != 1 || r.Passed != 2 || r.Failed != 0 {
		t.Errorf("%+v", r)
	}
}

func TestParsePytestCollectionError(t *testing.T) {
	r, err := Parse(fixture(t, "collection_error.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Reward() != 0 || r.Failed != 1 || r.Tests[0].Name != "coll/test_coll.py" || r.Tests[0].Status != StatusError {
		t.Errorf("%+v", r)
	}
}

// A test's own output (which a program the agent wrote may shape) comes
// before pytest's real summary, which alone counts.
func TestParsePytestIgnoresPrintedSummaries(t *testing.T) {
	r, err := Parse(fixture(t, "injected_summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := statuses(r)
	if !maps(got, map[string]Status{"inj/test_inj.py::test_passes": StatusPassed, "inj/test_inj.py::test_real_failure": StatusFailed}) {
		t.Errorf("tests %v", got)
	}
	if r.Reward() != 0.5 {
		t.Errorf("reward %v", r.Reward())
	}
}

func maps(a, b map[string]Status) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Without -rA the summary lists failures only; the counts line has the rest.
func TestParsePytestWithoutRA(t *testing.T) {
	r, err := Parse(fixture(t, "quiet_no_rA.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != "stats" || r.Passed != 4 || r.Failed != 4 || r.Skipped != 1 {
		t.Errorf("%+v", r)
	}
	if len(r.Tests) != 4 {
		t.Errorf("the failures are still named: %+v", r.Tests)
	}
}

func TestParsePytestNoResults(t *testing.T) {
	for _, out := range []string{"", fixture(t, "cut_off.txt"), "bash: pytest: command not found\n",
		"PASSED tests/test_x.py::test_a\n"} {
		if r, err := Parse(out); err != ErrNoResults {
			t.Errorf("%q: %+v, %v", clip(out, 60), r, err)
		}
	}
}

func TestParsePytestEdgeCases(t *testing.T) {
	out := "junk\r\n" +
		"=========================== short test summary info ============================\r\n" +
		"PASSED t.py::test_ok\r\n" +
		"PASSED t.py::test_teardown\r\n" +
		"ERROR t.py::test_teardown - RuntimeError: at teardown\r\n" +
		"FAILED t.py::test_p[a - b] - assert 0\r\n" +
		"XPASS t.py::test_xp unexpectedly fine\r\n" +
		"SKIPPED [3] t.py:9: later\r\n" +
		"=================== 2 failed, 2 passed, 3 skipped in 0.10s =====================\r\n" +
		"PASSED after.py::not_counted\r\n"
	r, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{"t.py::test_ok": StatusPassed, "t.py::test_teardown": StatusError,
		"t.py::test_p[a - b]": StatusFailed, "t.py::test_xp": StatusXPass}
	if got := statuses(r); !maps(got, want) {
		t.Errorf("tests %v", got)
	}
	if r.Passed != 1 || r.Failed != 3 || r.Skipped != 3 {
		t.Errorf("%+v", r)
	}
	names := []string{}
	for _, tr := range r.Tests {
		names = append(names, tr.Name)
	}
	if !slices.Equal(names, []string{"t.py::test_ok", "t.py::test_teardown", "t.py::test_p[a - b]", "t.py::test_xp"}) {
		t.Errorf("order %v", names)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// What swe-v1's harness reads besides the tests: the counts line, the
// ERRORS section, a file that did not collect, and skips pytest names
// (--no-fold-skipped).
func TestParseSummaryErrorsAndNamedSkips(t *testing.T) {
	out := "==================================== ERRORS ====================================\n" +
		"_____________________ ERROR collecting tests/test_b.py _____________________\n" +
		"E   SyntaxError: expected ':'\n" +
		"=========================== short test summary info ============================\n" +
		"PASSED tests/test_a.py::test_one\n" +
		"SKIPPED tests/test_a.py::test_s - no numpy\n" +
		"PASSED tests/test_a.py::test_s\n" +
		"ERROR tests/test_b.py - SyntaxError: expected ':'\n" +
		"==================== 1 passed, 1 skipped, 1 error in 0.12s =====================\n"
	r, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{"tests/test_a.py::test_one": StatusPassed, "tests/test_a.py::test_s": StatusSkipped,
		"tests/test_b.py": StatusError}
	if got := statuses(r); !maps(got, want) {
		t.Errorf("tests %v", got)
	}
	if r.Passed != 1 || r.Failed != 1 || r.Skipped != 1 || r.Summary != "1 passed, 1 skipped, 1 error in 0.12s" {
		t.Errorf("%+v", r)
	}
	if r.Tests[2].Message != "SyntaxError: expected ':'" || r.Tests[1].Message != "" {
		t.Errorf("messages %+v", r.Tests)
	}
	if !strings.Contains(r.Errors, "SyntaxError: expected ':'") || strings.Contains(r.Errors, "short test summary") {
		t.Errorf("errors section %q", r.Errors)
	}
}
