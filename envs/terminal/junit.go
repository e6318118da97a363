package terminal

import (
	"encoding/xml"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pytest"
)

// ParseJUnit reads pytest's JUnit XML report (--junitxml, junit_family
// xunit1, which names each test's file) into a pytest.Report whose Source is
// "junit". The verifier takes the reward from this report, which pytest
// writes itself, not from the run's output, which the tests' code (and so
// the agent's code they import) can print anything to. Test names are node
// ids under tests/ ("tests/test_outputs.py::TestX::test_a"), as the -rA
// summary names them. A test with a failure or an error child is failed;
// a skip is counted apart, except pytest's xfail (a skip of type
// pytest.xfail), which counts as passed; a test pytest names twice (an
// error at teardown after a pass) takes the worse status.
func ParseJUnit(report []byte) (*pytest.Report, error) {
	var doc struct {
		XMLName xml.Name
		Suites  []junitSuite `xml:"testsuite"`
		junitSuite
	}
	if err := xml.Unmarshal(report, &doc); err != nil {
		return nil, fmt.Errorf("reading the JUnit report: %w", err)
	}
	var cases []junitCase
	switch doc.XMLName.Local {
	case "testsuites":
		for _, s := range doc.Suites {
			cases = append(cases, s.Cases...)
		}
	case "testsuite":
		cases = doc.Cases
	default:
		return nil, fmt.Errorf("reading the JUnit report: root element <%s>, want <testsuites> or <testsuite>", doc.XMLName.Local)
	}
	r := &pytest.Report{Source: "junit"}
	for _, c := range cases {
		name := c.nodeID()
		var st pytest.Status
		msg := ""
		switch {
		case c.Failure != nil:
			st, msg = pytest.StatusFailed, c.Failure.Message
		case c.Error != nil:
			st, msg = pytest.StatusError, c.Error.Message
		case c.Skipped != nil && c.Skipped.Type == "pytest.xfail":
			st = pytest.StatusXFail
		case c.Skipped != nil:
			r.Skipped++
			continue
		default:
			st = pytest.StatusPassed
		}
		r.Add(pytest.Result{Name: name, Status: st, Message: firstLine(msg)})
	}
	if len(r.Tests) == 0 && r.Skipped == 0 {
		return nil, errors.New("the JUnit report lists no test")
	}
	return r, nil
}

type junitSuite struct {
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	File      string        `xml:"file,attr"`
	Failure   *junitOutcome `xml:"failure"`
	Error     *junitOutcome `xml:"error"`
	Skipped   *junitOutcome `xml:"skipped"`
}

type junitOutcome struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
}

// nodeID rebuilds pytest's node id: the file under tests/, then the
// classes of the classname after the module's own dotted path, then the
// test's name ("tests/test_x.py::TestY::test_z[1]").
func (c junitCase) nodeID() string {
	file := c.File
	if file == "" { // xunit2 reports lack the file: the module path is all there is
		mod, _, _ := strings.Cut(c.Classname, ".Test")
		file = strings.ReplaceAll(mod, ".", "/") + ".py"
	}
	file = strings.TrimPrefix(path.Clean("/"+file), "/")
	parts := []string{"tests/" + file}
	mod := strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", ".")
	if rest, ok := strings.CutPrefix(c.Classname, mod); ok && strings.HasPrefix(rest, ".") {
		parts = append(parts, strings.Split(rest[1:], ".")...)
	} else if i := strings.LastIndex(c.Classname, "."); i >= 0 && strings.HasPrefix(c.Classname[i+1:], "Test") {
		parts = append(parts, c.Classname[i+1:])
	}
	return strings.Join(append(parts, c.Name), "::")
}

// firstLine is the first line of s, for short failure messages.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
