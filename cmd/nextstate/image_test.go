package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/nextstate-rl/nextstate/envs/terminal"
	"github.com/nextstate-rl/nextstate/sandbox/docker"
	"github.com/nextstate-rl/nextstate/sandbox/image"
)

// engineWithBase skips unless an engine answers and has the base image.
func engineWithBase(t *testing.T) *client.Client {
	t.Helper()
	cli, err := docker.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Skipf("no docker engine answers (%v): scripts/deps.sh starts one", err)
	}
	if ok, _ := image.Exists(ctx, cli, image.Base); !ok {
		t.Skipf("%s is missing: make image builds it", image.Base)
	}
	return cli
}

// TestImageBuildPresent: `image build` with the image present only says
// so (make image built it; no debootstrap here).
func TestImageBuildPresent(t *testing.T) {
	engineWithBase(t)
	out, err := run(t, "image", "build", "--cache-dir", t.TempDir())
	if err != nil {
		t.Fatalf("image build: %v\n%s", err, out)
	}
	if !strings.Contains(out, "is present") || !strings.Contains(out, image.Base) {
		t.Errorf("output: %s", out)
	}
}

// TestImageBuildTask: `image build-task` builds a Dockerfile whose FROM is
// on no engine here on the base image, as `tasks validate` does, and
// prints the tag; with --base-image "" that FROM is an error. A step that
// fails says what it printed.
func TestImageBuildTask(t *testing.T) {
	cli := engineWithBase(t)
	dir := filepath.Join(t.TempDir(), "hello-task")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM ghcr.io/example/t-bench/python-3-13:20250620\nRUN echo hi > /hi\n"), 0o644)
	if out, err := run(t, "image", "build-task", "-q", "--base-image", "", dir); err == nil || !strings.Contains(err.Error(), "--base-image") {
		t.Fatalf("with --base-image \"\": %v\n%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad-task")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "Dockerfile"), []byte("FROM "+image.Base+"\nRUN echo the-step-said-this && false\n"), 0o644)
	if out, err := run(t, "image", "build-task", "-q", bad); err == nil || !strings.Contains(err.Error(), "the-step-said-this") {
		t.Errorf("a failing step: the error lacks its output: %v\n%s", err, out)
	}
	out, err := run(t, "image", "build-task", "-q", dir)
	if err != nil {
		t.Fatalf("build-task: %v\n%s", err, out)
	}
	f := strings.Fields(out)
	if len(f) != 2 || !strings.HasPrefix(f[1], image.TaskRepo+"/hello-task:") {
		t.Fatalf("output %q", out)
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), f[1], client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	if ok, err := image.Exists(context.Background(), cli, f[1]); !ok {
		t.Errorf("%s is not on the engine: %v", f[1], err)
	}
}

// build-task's --base-image defaults to the base image, as tasks validate's
// and serve's do.
func TestImageBuildTaskDefaultBaseImage(t *testing.T) {
	f := newImageBuildTask().Flags().Lookup("base-image")
	if f == nil || f.DefValue != image.Base {
		t.Errorf("--base-image defaults to %v, want %s", f, image.Base)
	}
	if terminal.DefaultBaseImage != image.Repo && terminal.DefaultBaseImage != image.Base {
		t.Errorf("terminal-v1's base image %s is not %s", terminal.DefaultBaseImage, image.Base)
	}
}
