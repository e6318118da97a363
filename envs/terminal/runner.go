package terminal

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// Test runners, the values of the "terminal.tests_runner" setting: how
// the verifier runs a task's tests.
const (
	// RunnerAuto (the default) runs run-tests.sh, except where the sandbox
	// has no network and the script only sets its test runner up from the
	// network (installs uv, then pytest) before running pytest: then the
	// sandbox's own pytest runs the script's pytest command (RunnerPytest),
	// and the verifier info says so.
	RunnerAuto = "auto"
	// RunnerScript always runs run-tests.sh as it is.
	RunnerScript = "script"
	// RunnerPytest never runs run-tests.sh: the sandbox's pytest
	// (python3 -m pytest) runs the pytest command of the script, or, when
	// it has none that can be told, every test under $TEST_DIR. Extra
	// packages the script would have installed are not installed.
	RunnerPytest = "pytest"
)

// runnerArgs is what the verifier runs for a runner: the script, or
// pytest with these arguments (shell words, $TEST_DIR expanded by bash).
type testRunner struct {
	Script     bool
	PytestArgs string
	// Why says why pytest runs in place of the script.
	Why string
}

// pickRunner decides how the tests run: setting is the tests_runner
// setting, network whether the sandbox has network access, files the
// task's files.
func pickRunner(setting string, network bool, files fs.FS, runTests string) testRunner {
	if setting == RunnerScript {
		return testRunner{Script: true}
	}
	args, setupOnly := setupOnlyScript(files, runTests)
	switch {
	case setting == RunnerPytest && args != "":
		return testRunner{PytestArgs: args, Why: "tests_runner is pytest: the script's pytest command runs with the sandbox's pytest"}
	case setting == RunnerPytest:
		return testRunner{PytestArgs: `"$TEST_DIR" -rA`, Why: "tests_runner is pytest: every test under the test directory runs with the sandbox's pytest"}
	case !network && setupOnly:
		return testRunner{PytestArgs: args, Why: "offline: run-tests.sh only installs its test runner from the network, " +
			"which the sandbox does not have, so its pytest command runs with the sandbox's own pytest"}
	}
	return testRunner{Script: true}
}

// Patterns of run-tests.sh lines that only set up the test runner, as
// Terminal-Bench's task template and its tasks write them.
var (
	// apt-get update, or apt-get install of what fetching uv needs.
	aptLine     = regexp.MustCompile(`^(sudo\s+)?apt(-get)?\s+(.*)$`)
	aptSetupPkg = regexp.MustCompile(`^(curl|wget|ca-certificates|python3|python3-pip|python3-venv|python-is-python3)(=\S+)?$`)
	// The uv installer piped into a shell.
	installerLine = regexp.MustCompile(`^(curl|wget)\s.*(astral\.sh|/uv/|install\.sh).*\|\s*(env\s+\S+\s+)?(ba)?sh\b.*$`)
	sourceLine    = regexp.MustCompile(`^(source|\.)\s+\S*(\.local/bin/env|\.cargo/env|/bin/activate)\s*$`)
	venvLine      = regexp.MustCompile(`^(uv\s+venv|uv\s+init|python3?\s+-m\s+venv)(\s.*)?$`)
	pipLine       = regexp.MustCompile(`^(uv\s+pip\s+install|uv\s+add|python3?\s+-m\s+pip\s+install|pip3?\s+install)\s+(.*)$`)
	pytestPkg     = regexp.MustCompile(`^-\S*$|^['"]?(pytest(-[a-z0-9-]+)?|pip|setuptools|wheel)([<>=~!]=?[^\s'"]*)?['"]?$`)
	pytestLine    = regexp.MustCompile(`^(uv\s+run\s+)?(python3?\s+-m\s+)?pytest(\s+(.*))?$`)
	// The template's check that the Dockerfile set a WORKDIR, and echoes.
	guardLine = regexp.MustCompile(`^(if\s+\[\s+"\$PWD"\s+=\s+"/"\s+\]|then|fi|exit\s+1|echo(\s.*)?|set\s+-[a-z]+|export\s+PATH=.*)$`)
	// A helper script of the tests folder, sourced or run.
	helperLine = regexp.MustCompile(`^(source|\.|bash|sh)\s+"?\$\{?TEST_DIR\}?/([A-Za-z0-9._-]+\.sh)"?\s*$`)
)

// setupOnlyScript reads the task's run-tests.sh: when every line of it
// (and of the helper scripts of tests/ it sources or runs) only sets up
// the test runner, and one runs pytest, it returns that pytest command's
// arguments and true. When a line does more (installs other packages,
// prepares data, runs another program) it returns the pytest arguments it
// found, if any, and false.
func setupOnlyScript(files fs.FS, runTests string) (pytestArgs string, ok bool) {
	if files == nil || runTests == "" {
		return "", false
	}
	var args []string
	other := false
	var read func(name string, depth int)
	read = func(name string, depth int) {
		b, err := fs.ReadFile(files, name)
		if err != nil {
			other = true
			return
		}
		for _, l := range scriptLines(string(b)) {
			switch {
			case pytestLine.MatchString(l):
				args = append(args, pytestLine.FindStringSubmatch(l)[4])
			case helperLine.MatchString(l) && depth == 0:
				read(path.Join("tests", helperLine.FindStringSubmatch(l)[2]), depth+1)
			case aptLine.MatchString(l):
				other = other || !aptSetup(aptLine.FindStringSubmatch(l)[3])
			case pipLine.MatchString(l):
				for _, w := range strings.Fields(pipLine.FindStringSubmatch(l)[2]) {
					other = other || !pytestPkg.MatchString(w)
				}
			case installerLine.MatchString(l), sourceLine.MatchString(l), venvLine.MatchString(l), guardLine.MatchString(l):
			default:
				other = true
			}
		}
	}
	read(runTests, 0)
	if len(args) != 1 {
		return "", false
	}
	return strings.TrimSpace(args[0]), !other
}

// aptSetup reports whether an apt-get command line (after "apt-get") only
// updates the lists or installs what fetching the runner needs.
func aptSetup(rest string) bool {
	f := strings.Fields(rest)
	var cmd string
	for _, w := range f {
		switch {
		case strings.HasPrefix(w, "-"):
		case cmd == "":
			cmd = w
			if cmd != "update" && cmd != "install" {
				return false
			}
		case cmd == "install" && !aptSetupPkg.MatchString(w):
			return false
		}
	}
	return cmd != ""
}

// scriptLines is a shell script's commands: its lines, continuations
// joined, comments and blank lines dropped, split at "&&" and ";", each
// trimmed.
func scriptLines(s string) []string {
	var out []string
	cont := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if strings.HasSuffix(l, "\\") {
			cont += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		l = strings.TrimSpace(cont + l)
		cont = ""
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		for _, a := range strings.Split(l, "&&") {
			for _, c := range strings.Split(a, ";") {
				if c = strings.TrimSpace(c); c != "" {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// networkSigns are what tools print when the network they need is not
// there: curl, apt, pip, uv.
var networkSigns = regexp.MustCompile(`(?i)could not resolve host|temporary failure (in name resolution|resolving)|` +
	`network is unreachable|name or service not known|failed to establish a new connection|no route to host|` +
	`dns error|failed to fetch https?://|failed to connect to|error sending request for url`)

// networkCause says, from a failed test run's output, whether it failed
// for want of the network, and if so how to run the tests offline.
func networkCause(output string, network bool) string {
	m := networkSigns.FindString(output)
	if m == "" {
		return ""
	}
	if network {
		return "run-tests.sh failed for want of the network (it printed \"" + m + "\")"
	}
	return "run-tests.sh needs the network, which the sandbox does not have (it printed \"" + m + "\"), so the tests did not run; " +
		"offline, run them with the sandbox's pytest (tasks validate --tests-runner " + RunnerPytest + ", or --set " +
		SettingTestsRunner + "=" + RunnerPytest + "), or give the task network (task.yaml network: true)"
}
