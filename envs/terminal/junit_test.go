package terminal_test

import (
	"os"
	"reflect"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/internal/pytest"
	"github.com/nextstate-rl/nextstate/envs/terminal"
)

// testdata/junit-xunit1.xml is what pytest 7.2 wrote for
// testdata/junit-xunit1.py (--junitxml, -o junit_family=xunit1).
func TestParseJUnit(t *testing.T) {
	b, err := os.ReadFile("testdata/junit-xunit1.xml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := terminal.ParseJUnit(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []pytest.Result{
		{Name: "tests/test_outputs.py::test_pass", Status: pytest.StatusPassed},
		{Name: "tests/test_outputs.py::test_fail", Status: pytest.StatusFailed, Message: "AssertionError: one is not two"},
		{Name: "tests/test_outputs.py::test_xfail", Status: pytest.StatusXFail},
		{Name: "tests/test_outputs.py::test_param[1]", Status: pytest.StatusPassed},
		{Name: "tests/test_outputs.py::test_param[2]", Status: pytest.StatusFailed, Message: "assert 2 == 1"},
		{Name: "tests/test_outputs.py::TestGroup::test_in_class", Status: pytest.StatusPassed},
		{Name: "tests/test_outputs.py::test_teardown", Status: pytest.StatusError, Message: `failed on teardown with "RuntimeError: teardown broke"`},
	}
	if !reflect.DeepEqual(r.Tests, want) {
		t.Errorf("tests:\n got %+v\nwant %+v", r.Tests, want)
	}
	if r.Passed != 4 || r.Failed != 3 || r.Skipped != 1 || r.Source != "junit" {
		t.Errorf("counts: %+v", r)
	}
}

func TestParseJUnitRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"not xml":    "PASSED tests/test_outputs.py::test_a",
		"wrong root": "<html><body/></html>",
		"no test":    `<testsuites><testsuite name="pytest" tests="0"/></testsuites>`,
	} {
		if r, err := terminal.ParseJUnit([]byte(doc)); err == nil {
			t.Errorf("%s: %+v, want an error", name, r)
		}
	}
	// A bare <testsuite> root (pytest's older default) is read too.
	r, err := terminal.ParseJUnit([]byte(`<testsuite><testcase classname="test_x" name="test_a" file="test_x.py"/></testsuite>`))
	if err != nil || r.Passed != 1 || r.Tests[0].Name != "tests/test_x.py::test_a" {
		t.Errorf("testsuite root: %+v %v", r, err)
	}
}
