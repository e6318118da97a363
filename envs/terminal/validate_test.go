package terminal_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/terminal"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
	_ "github.com/nextstate-rl/nextstate/sandbox/bwrap"
)

// needBwrap skips the test when the bwrap backend cannot open here.
func needBwrap(t testing.TB) gym.Settings {
	t.Helper()
	b, err := sandbox.Open(context.Background(), "bwrap", sandbox.Options{Dir: t.TempDir()})
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("the bwrap sandbox is unavailable here: %v (apt-get install -y bubblewrap tmux python3-pytest, and run as root)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b.Close(context.Background())
	return gym.Settings{"sandbox": "bwrap", "sandbox.dir": t.TempDir()}
}

// newValidator starts a Validator closed when the test ends.
func newValidator(t *testing.T, settings gym.Settings) *terminal.Validator {
	v := terminal.NewValidator(settings)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := v.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return v
}

// Every smoke task validates: doing nothing fails, the oracle passes.
func TestSmokeTasksValidate(t *testing.T) {
	settings := needBwrap(t)
	v := newValidator(t, settings)
	tasks := terminal.SmokeTasks()
	if len(tasks) < 12 {
		t.Errorf("%d smoke tasks, want at least 12", len(tasks))
	}
	for i := range tasks {
		task := tasks[i]
		t.Run(task.ID, func(t *testing.T) {
			res := v.Validate(t.Context(), &task)
			if !res.OK {
				t.Errorf("%s: nothing %.2f, oracle %.2f: %s\nnothing: %v\noracle: %v", task.ID, res.Nothing, res.Oracle, res.Err, res.NothingTests, res.OracleTests)
			}
		})
	}
}

// A solution that types into the terminal with short waits passes its own
// oracle: at submit, the typed commands (one sleeping, one typed ahead of
// it) are let finish before the agent's processes end.
func TestTypedKeysProcessedAtSubmit(t *testing.T) {
	settings := needBwrap(t)
	task, err := terminal.LoadTask(filepath.Join("testdata", "tasks", "typed-at-submit"))
	if err != nil {
		t.Fatal(err)
	}
	v := newValidator(t, settings)
	res := v.Validate(t.Context(), &task)
	if !res.OK {
		t.Fatalf("nothing %.2f, oracle %.2f: %s\nnothing: %v\noracle: %v", res.Nothing, res.Oracle, res.Err, res.NothingTests, res.OracleTests)
	}
	info, _ := res.OracleTests.(gym.Info)
	term, _ := info["terminal"].(gym.Info)
	if _, ok := term["settled_ms"]; !ok {
		t.Errorf("the oracle's verifier info says nothing of the terminal settling: %v", info)
	}
}

// A task written for Terminal-Bench's base image (which is not here)
// validates: with no WORKDIR of its own it works in /app, where its
// relative COPY put its data and its RUN ran, and its Dockerfile, tests and
// solution call `python`.
func TestTerminalBenchConventions(t *testing.T) {
	settings := needBwrap(t)
	task, err := terminal.LoadTask(filepath.Join("testdata", "tasks", "tbench-conventions"))
	if err != nil {
		t.Fatal(err)
	}
	var data terminal.TaskData
	if err := json.Unmarshal(task.Data, &data); err != nil || data.Workdir != "/app" {
		t.Errorf("task data workdir %q (%v), want /app", data.Workdir, err)
	}
	v := newValidator(t, settings)
	res := v.Validate(t.Context(), &task)
	if !res.OK {
		t.Fatalf("nothing %.2f, oracle %.2f: %s\nnothing: %v\noracle: %v", res.Nothing, res.Oracle, res.Err, res.NothingTests, res.OracleTests)
	}
	if res.Nothing != 0.75 {
		t.Errorf("doing nothing scores %.2f; want 0.75 (every test but the output's: the sandbox works in /app, with python)", res.Nothing)
	}
}

// A task whose docker-compose.yaml builds a Dockerfile in a subfolder gets
// that image: its COPY reads the subfolder. A compose file that needs more
// than the main service is refused at reset, saying what.
func TestComposeBuildContext(t *testing.T) {
	settings := needBwrap(t)
	dir := filepath.Join("testdata", "tasks", "compose-subfolder")
	task, err := terminal.LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := newValidator(t, settings)
	if res := v.Validate(t.Context(), &task); !res.OK {
		t.Errorf("nothing %.2f, oracle %.2f: %s\nnothing: %v\noracle: %v", res.Nothing, res.Oracle, res.Err, res.NothingTests, res.OracleTests)
	}
	two := filepath.Join(t.TempDir(), "compose-two-services")
	if err := os.CopyFS(two, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(two, "docker-compose.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("  server:\n    image: nginx\n")
	f.Close()
	task, err = terminal.LoadTask(two)
	if err != nil {
		t.Fatal(err)
	}
	res := v.Validate(t.Context(), &task)
	if res.OK || !strings.Contains(res.Err, `services other than "client" (server) are not started`) {
		t.Errorf("two services: %+v", res)
	}
}

// Offline, a task whose run-tests.sh is Terminal-Bench's template
// (installing uv, then pytest, from the network) validates: its pytest
// command runs with the sandbox's pytest, and the info says why. Run as
// the script, it fails, and the verdict names the network.
func TestOfflineTestsRunner(t *testing.T) {
	settings := needBwrap(t)
	task, err := terminal.LoadTask(filepath.Join("testdata", "tasks", "offline-uv"))
	if err != nil {
		t.Fatal(err)
	}
	validate := func(runner string) terminal.Validation {
		s := gym.Settings{}
		for k, v := range settings {
			s[k] = v
		}
		if runner != "" {
			s[terminal.SettingTestsRunner] = runner
		}
		// A validator of its own, closed before the next one: the kind
		// reads its settings when its first manager configures it.
		v := terminal.NewValidator(s)
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := v.Close(ctx); err != nil {
				t.Error(err)
			}
		}()
		return v.Validate(t.Context(), &task)
	}
	res := validate("")
	if !res.OK {
		t.Fatalf("auto: nothing %.2f, oracle %.2f: %s\noracle: %v", res.Nothing, res.Oracle, res.Err, res.OracleTests)
	}
	info, _ := res.OracleTests.(gym.Info)
	if note, _ := info["runner_note"].(string); !strings.Contains(note, "offline") || info["runner"] != "python3 -m pytest $TEST_DIR/test_outputs.py -rA" {
		t.Errorf("auto: runner %v, note %v", info["runner"], info["runner_note"])
	}
	res = validate(terminal.RunnerScript)
	if res.OK || !strings.Contains(res.Err, "needs the network") || !strings.Contains(res.Err, "--tests-runner pytest") {
		t.Errorf("script: %+v", res)
	}
}
