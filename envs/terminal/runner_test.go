package terminal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestSetupOnlyScript(t *testing.T) {
	// Terminal-Bench's task template: apt-get, the uv installer, a venv,
	// pytest, then the tests.
	template, err := os.ReadFile(filepath.Join("testdata", "tasks", "offline-uv", "run-tests.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := string(template)
	for _, c := range []struct {
		name, script string
		helpers      map[string]string
		args         string
		ok           bool
	}{
		{name: "the template", script: tmpl, args: "$TEST_DIR/test_outputs.py -rA", ok: true},
		{name: "an extra package", script: strings.Replace(tmpl, "# uv pip install numpy==2.2.5", "uv pip install numpy==2.2.5", 1),
			args: "$TEST_DIR/test_outputs.py -rA"},
		{name: "an extra apt package", script: strings.Replace(tmpl, "apt-get install -y curl", "apt-get install -y curl jq", 1),
			args: "$TEST_DIR/test_outputs.py -rA"},
		{name: "data made first", script: "#!/bin/bash\npython3 make_data.py\npytest $TEST_DIR/test_outputs.py\n",
			args: "$TEST_DIR/test_outputs.py"},
		{name: "pytest plugins and a continuation", script: "apt-get update && apt-get install -y curl\nuv pip install \\\n  pytest==8.4.1 pytest-timeout\npython -m pytest -rA $TEST_DIR\n",
			args: "-rA $TEST_DIR", ok: true},
		{name: "a chained command", script: "apt-get update && make -C /app\npytest $TEST_DIR\n", args: "$TEST_DIR"},
		{name: "helpers of tests/", script: "#!/bin/bash\nsource $TEST_DIR/setup-uv-pytest.sh\nbash $TEST_DIR/run-uv-pytest.sh\n",
			helpers: map[string]string{"setup-uv-pytest.sh": "curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\nuv venv .venv\nsource .venv/bin/activate\nuv pip install pytest==8.4.1\n",
				"run-uv-pytest.sh": "uv run pytest $TEST_DIR/test_outputs.py -rA\n"},
			args: "$TEST_DIR/test_outputs.py -rA", ok: true},
		{name: "no pytest", script: "#!/bin/bash\nbash $TEST_DIR/check.sh\n", helpers: map[string]string{"check.sh": "test -f /app/x\n"}},
		{name: "two pytest runs", script: "pytest a.py\npytest b.py\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := fstest.MapFS{"run-tests.sh": {Data: []byte(c.script)}}
			for n, s := range c.helpers {
				files["tests/"+n] = &fstest.MapFile{Data: []byte(s)}
			}
			args, ok := setupOnlyScript(files, "run-tests.sh")
			if args != c.args || ok != c.ok {
				t.Errorf("got %q, %v; want %q, %v", args, ok, c.args, c.ok)
			}
		})
	}
}

func TestPickRunner(t *testing.T) {
	files := fstest.MapFS{"run-tests.sh": {Data: []byte("apt-get update\nuv pip install pytest\nuv run pytest $TEST_DIR/test_outputs.py -rA\n")}}
	direct := fstest.MapFS{"run-tests.sh": {Data: []byte("python3 gen.py\npytest $TEST_DIR/test_outputs.py -rA\n")}}
	for _, c := range []struct {
		name, setting string
		network       bool
		files         fstest.MapFS
		script        bool
		args          string
	}{
		{"auto offline, setup only", RunnerAuto, false, files, false, "$TEST_DIR/test_outputs.py -rA"},
		{"auto with network", RunnerAuto, true, files, true, ""},
		{"auto offline, more than setup", RunnerAuto, false, direct, true, ""},
		{"script", RunnerScript, false, files, true, ""},
		{"pytest, more than setup", RunnerPytest, true, direct, false, "$TEST_DIR/test_outputs.py -rA"},
		{"pytest, no pytest command", RunnerPytest, false, fstest.MapFS{"run-tests.sh": {Data: []byte("bash check.sh\n")}}, false, `"$TEST_DIR" -rA`},
	} {
		r := pickRunner(c.setting, c.network, c.files, "run-tests.sh")
		if r.Script != c.script || r.PytestArgs != c.args || !r.Script && r.Why == "" {
			t.Errorf("%s: got %+v; want script %v, args %q and a reason", c.name, r, c.script, c.args)
		}
	}
}

func TestNetworkCause(t *testing.T) {
	out := "E: Could not open lock file /var/lib/apt/lists/lock\ncurl: (6) Could not resolve host: astral.sh\n" +
		"run-tests.sh: line 15: /root/.local/bin/env: No such file or directory\nuv: command not found\n"
	if c := networkCause(out, false); !strings.Contains(c, "needs the network") || !strings.Contains(c, "--tests-runner pytest") ||
		!strings.Contains(c, "Could not resolve host") {
		t.Errorf("offline: %q", c)
	}
	if c := networkCause("FAILED tests/test_outputs.py::test_x - assert 1 == 2\n", false); c != "" {
		t.Errorf("a plain failure: %q", c)
	}
}
