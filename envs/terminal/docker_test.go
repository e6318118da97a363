package terminal_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/terminal"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
	_ "github.com/nextstate-rl/nextstate/sandbox/docker"
)

// needDocker skips the test when no docker engine answers here or the base
// image is missing (nextstate image build makes it).
func needDocker(t testing.TB) gym.Settings {
	t.Helper()
	if testing.Short() {
		t.Skip("docker tests are slow: -short")
	}
	b, err := sandbox.Open(context.Background(), "docker", sandbox.Options{})
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no docker engine here: %v (apt-get install -y docker.io and start dockerd)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b.Close(context.Background())
	if out, err := exec.Command("docker", "image", "inspect", terminal.DefaultBaseImage).CombinedOutput(); err != nil {
		t.Skipf("the base image %s is missing (nextstate image build): %s", terminal.DefaultBaseImage, strings.TrimSpace(string(out)))
	}
	return gym.Settings{"sandbox": "docker"}
}

// With docker, a task's sandbox is built from its Dockerfile; tasks validate
// as with bwrap.
func TestDockerValidate(t *testing.T) {
	settings := needDocker(t)
	v := terminal.NewValidator(settings)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := v.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	want := map[string]bool{"terminal-git-recover": true, "terminal-interactive-quiz": true, "terminal-c-build": true, "terminal-permissions": true}
	for _, task := range terminal.SmokeTasks() {
		if !want[task.ID] {
			continue
		}
		t.Run(task.ID, func(t *testing.T) {
			res := v.Validate(t.Context(), &task)
			if !res.OK {
				t.Errorf("nothing %.2f oracle %.2f: %s\nnothing: %v\noracle: %v", res.Nothing, res.Oracle, res.Err, res.NothingTests, res.OracleTests)
			}
		})
	}
	// A Terminal-Bench task whose FROM names an image that is not here
	// builds from the base image.
	task := writeTask(t, map[string]string{
		"task.yaml":             "instruction: Write 42 into /app/answer.txt.\n",
		"Dockerfile":            "FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624\nWORKDIR /app\nRUN echo seed > seed.txt\n",
		"run-tests.sh":          "#!/bin/bash\nexec pytest -p no:cacheprovider -rA \"$TEST_DIR/test_outputs.py\"\n",
		"tests/test_outputs.py": "def test_answer():\n    assert open('/app/answer.txt').read().strip() == '42'\n",
		"solution.sh":           "echo 42 > answer.txt\n",
	})
	if res := v.Validate(t.Context(), &task); !res.OK {
		t.Errorf("substituted FROM: %+v", res)
	}
	// A task that relies on Terminal-Bench's base image for its working
	// directory (/app) and for `python`: the base image in its place works
	// in /app, and has python.
	tb, err := terminal.LoadTask(filepath.Join("testdata", "tasks", "tbench-conventions"))
	if err != nil {
		t.Fatal(err)
	}
	if res := v.Validate(t.Context(), &tb); !res.OK || res.Nothing != 0.75 {
		t.Errorf("Terminal-Bench conventions: nothing %.2f (want 0.75), oracle %.2f: %s\nnothing: %v\noracle: %v",
			res.Nothing, res.Oracle, res.Err, res.NothingTests, res.OracleTests)
	}
}
