package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

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

// TestImageBuildTask: `image build-task --base-image` builds a Dockerfile
// whose FROM is on no engine here, and prints the tag.
func TestImageBuildTask(t *testing.T) {
	cli := engineWithBase(t)
	dir := filepath.Join(t.TempDir(), "hello-task")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM ghcr.io/example/t-bench/python-3-13:20250620\nRUN echo hi > /hi\n"), 0o644)
	if out, err := run(t, "image", "build-task", "-q", dir); err == nil || !strings.Contains(err.Error(), "--base-image") {
		t.Fatalf("without --base-image: %v\n%s", err, out)
	}
	out, err := run(t, "image", "build-task", "-q", "--base-image", image.Base, dir)
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
