package terminal_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/terminal"
	"github.com/nextstate-rl/nextstate/gym"
)

// A task folder as Terminal-Bench writes it, fields nextstate does not use
// included, loads unchanged through gym.LoadSuite.
func TestLoadTerminalBenchSuite(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hello-world/task.yaml", `instruction: |-
  Create a file called hello.txt in the current directory. Write "Hello, world!" to it.
author_name: Someone
author_email: someone@example.com
difficulty: easy
category: file-operations
tags:
  - file-operations
parser_name: pytest
max_agent_timeout_sec: 360.0
max_test_timeout_sec: 60.0
run_tests_in_same_shell: false
disable_asciinema: false
estimated_duration_sec: null
expert_time_estimate_min: 1
junior_time_estimate_min: 2
`)
	write("hello-world/Dockerfile", "FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624\n\nWORKDIR /app\n")
	write("hello-world/docker-compose.yaml", "services:\n  client:\n    build: .\n")
	write("hello-world/run-tests.sh", "#!/bin/bash\nsource $TEST_DIR/setup-uv-pytest.sh\nbash $TEST_DIR/run-uv-pytest.sh\n")
	write("hello-world/tests/test_outputs.py", "def test_hello(): pass\n")
	write("hello-world/tests/data/expected.txt", "Hello, world!\n")
	write("hello-world/solution.sh", "#!/bin/bash\necho 'Hello, world!' > hello.txt\n")
	// The older form: descriptions keyed "base", a solution.yaml.
	write("older/task.yaml", "descriptions:\n  - key: base\n    description: Do the thing.\n  - key: hard\n    description: Do it harder.\nauthor_email: x@y\n")
	write("older/Dockerfile", "FROM python:3.13\n")
	write("older/run-tests.sh", "pytest $TEST_DIR -rA\n")
	write("older/solution.yaml", "- command: echo hi\n  min_timeout_sec: 0.1\n  block: true\n  append_enter: true\n- ls\n")
	// A gym task in a subdirectory is still read as one.
	write("plain/task.yaml", "env: terminal-v1\ninstruction: a gym task file\n")
	// Neither: ignored.
	write("notes/README.md", "not a task\n")

	s, err := gym.LoadSuite(root)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range s.Tasks {
		ids = append(ids, tk.ID)
	}
	if !slices.Equal(ids, []string{"hello-world", "older", "plain"}) {
		t.Fatalf("tasks %v", ids)
	}
	hw, _ := s.Task("hello-world")
	if hw.Env != terminal.KindName || hw.Dir != filepath.Join(root, "hello-world") ||
		!strings.HasPrefix(hw.Instruction, "Create a file called hello.txt") {
		t.Errorf("hello-world: %+v", hw)
	}
	want := gym.Limits{MaxSteps: terminal.DefaultMaxSteps, StepTimeout: gym.Duration(10 * time.Minute),
		EpisodeTimeout: gym.Duration(360*time.Second + 60*time.Second + time.Minute)}
	if hw.Limits != want {
		t.Errorf("limits %+v, want %+v", hw.Limits, want)
	}
	var data terminal.TaskData
	if err := json.Unmarshal(hw.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.Workdir != "/app" || data.Image != "ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624" ||
		data.Difficulty != "easy" || string(data.TaskYAML["run_tests_in_same_shell"]) != "false" ||
		string(data.TaskYAML["author_name"]) != `"Someone"` {
		t.Errorf("data %s", hw.Data)
	}
	var ver terminal.VerifierData
	if err := json.Unmarshal(hw.Verifier, &ver); err != nil {
		t.Fatal(err)
	}
	if ver.Parser != "pytest" || ver.TestTimeout != gym.Duration(time.Minute) || ver.RunTests != "run-tests.sh" ||
		!slices.Equal(ver.Tests, []string{"tests/data/expected.txt", "tests/test_outputs.py"}) {
		t.Errorf("verifier %s", hw.Verifier)
	}
	if hw.Public().Verifier != nil {
		t.Error("the tests are listed to agents")
	}

	old, _ := s.Task("older")
	if old.Instruction != "Do the thing." || old.Limits.EpisodeTimeout != gym.Duration(terminal.DefaultAgentTimeout+terminal.DefaultTestTimeout+time.Minute) {
		t.Errorf("older: %+v", old)
	}
	sol, err := terminal.LoadSolution(old)
	if err != nil || len(sol.Steps) != 2 || !sol.Steps[0].Block || sol.Steps[0].MinTimeout != 0.1 ||
		sol.Steps[1] != (terminal.SolutionStep{Command: "ls", Block: true, AppendEnter: true}) {
		t.Errorf("solution.yaml: %+v, %v", sol, err)
	}
	if sol, err := terminal.LoadSolution(hw); err != nil || !strings.Contains(sol.Script, "Hello, world!") {
		t.Errorf("solution.sh: %+v, %v", sol, err)
	}
	if p, _ := s.Task("plain"); p.Env != terminal.KindName || p.Dir != filepath.Join(root, "plain") {
		t.Errorf("plain: %+v", p)
	}

	// One task folder on its own is a suite of one.
	one, err := terminal.LoadSuite(filepath.Join(root, "hello-world"))
	if err != nil || len(one.Tasks) != 1 || one.Tasks[0].ID != "hello-world" {
		t.Errorf("one folder: %+v, %v", one, err)
	}
}

func TestLoadTaskRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		says  string
	}{
		{"no instruction", map[string]string{"task.yaml": "author_name: x\n", "Dockerfile": "FROM x\n"}, "no instruction"},
		{"other parser", map[string]string{"task.yaml": "instruction: x\nparser_name: swebench\n", "Dockerfile": "FROM x\n"}, `parser_name "swebench"`},
		{"negative timeout", map[string]string{"task.yaml": "instruction: x\nmax_test_timeout_sec: -1\n", "Dockerfile": "FROM x\n"}, "negative"},
		{"tests without runner", map[string]string{"task.yaml": "instruction: x\n", "Dockerfile": "FROM x\n", "tests/t.py": ""}, "no run-tests.sh"},
		{"bad solution.yaml", map[string]string{"task.yaml": "instruction: x\n", "Dockerfile": "FROM x\n", "solution.yaml": "command: x\n"}, "list of commands"},
		{"COPY --from", map[string]string{"task.yaml": "instruction: x\n", "Dockerfile": "FROM a AS b\nFROM c\nCOPY --from=b /x /y\n"}, "--from"},
		{"COPY outside", map[string]string{"task.yaml": "instruction: x\n", "Dockerfile": "FROM c\nCOPY ../secret /y\n"}, "outside the task folder"},
	} {
		dir := t.TempDir()
		for n, c := range tc.files {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755)
			os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644)
		}
		_, err := terminal.LoadTask(dir)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.says)
		}
		if !terminal.IsTaskDir(dir) {
			t.Errorf("%s: not detected as a task folder", tc.name)
		}
	}
	// A task.yaml with an env field is a gym task, not Terminal-Bench's.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "task.yaml"), []byte("env: echo-v1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM x\n"), 0o644)
	if terminal.IsTaskDir(dir) {
		t.Error("a gym task.yaml was taken for Terminal-Bench's")
	}
}

// A Dockerfile that sets no WORKDIR works in /app, as Terminal-Bench's
// base images do: its relative COPY and its RUN steps land there, and so
// does the sandbox.
func TestParseDockerfileDefaultWorkdir(t *testing.T) {
	d, err := terminal.ParseDockerfile([]byte("FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nCOPY data.txt data.txt\nRUN python -c 'print(1)'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Workdir != "" || d.WorkingDir() != terminal.DefaultWorkdir || terminal.DefaultWorkdir != "/app" {
		t.Errorf("workdir %q, working dir %q; want none set and /app", d.Workdir, d.WorkingDir())
	}
	if len(d.Steps) != 2 || d.Steps[0].Dest != "/app/data.txt" || d.Steps[1].Dir != "/app" {
		t.Errorf("steps %+v; want the COPY to /app/data.txt and the RUN in /app", d.Steps)
	}
	d, err = terminal.ParseDockerfile([]byte("FROM x\nWORKDIR src\n"))
	if err != nil || d.WorkingDir() != "/app/src" {
		t.Errorf("a relative WORKDIR: %v, %v; want /app/src", d, err)
	}
}

func TestParseDockerfile(t *testing.T) {
	d, err := terminal.ParseDockerfile([]byte(`# syntax=docker/dockerfile:1
ARG BASE=ubuntu:24.04
FROM golang:1.22 AS build
RUN go build ./...

FROM ${BASE}
ARG VERSION="1.2"
ENV LANG=C.UTF-8 \
    APP_HOME=/srv/app
ENV LEGACY some value here
ENV PATH="/opt/tools/bin:${PATH}" QUOTED='a b'
WORKDIR $APP_HOME
COPY --chown=root:root requirements.txt ./
COPY ["data dir/", "data/"]
ADD app.tar.gz /opt/
RUN apt-get update && \
    # a comment inside a continued line
    apt-get install -y curl
RUN ["python3", "-c", "print(1)"]
WORKDIR src
USER nobody
CMD ["bash"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if d.From != "ubuntu:24.04" || d.Workdir != "/srv/app/src" {
		t.Errorf("from %q workdir %q", d.From, d.Workdir)
	}
	wantEnv := map[string]string{"LANG": "C.UTF-8", "APP_HOME": "/srv/app", "LEGACY": "some value here",
		"PATH": "/opt/tools/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "QUOTED": "a b"}
	for k, v := range wantEnv {
		if d.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, d.Env[k], v)
		}
	}
	var ops []string
	for _, s := range d.Steps {
		ops = append(ops, s.Op)
	}
	if !slices.Equal(ops, []string{"WORKDIR", "COPY", "COPY", "COPY", "RUN", "RUN", "WORKDIR"}) {
		t.Fatalf("steps %v", ops)
	}
	if s := d.Steps[1]; !slices.Equal(s.Sources, []string{"requirements.txt"}) || s.Dest != "/srv/app/" {
		t.Errorf("COPY %+v", s)
	}
	if s := d.Steps[2]; !slices.Equal(s.Sources, []string{"data dir"}) || s.Dest != "/srv/app/data/" {
		t.Errorf("COPY json %+v", s)
	}
	if s := d.Steps[4]; s.Script != "apt-get update &&      apt-get install -y curl" || s.Dir != "/srv/app" || s.Env["LANG"] != "C.UTF-8" {
		t.Errorf("RUN %+v", s)
	}
	if s := d.Steps[5]; !slices.Equal(s.Argv, []string{"python3", "-c", "print(1)"}) {
		t.Errorf("RUN exec form %+v", s)
	}
}
