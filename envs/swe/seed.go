package swe

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// An agent's Go build cache starts as a copy of a seed: the build cache of
// the repository at its base commit, made once per repository by the
// harness in a sandbox of its own (`go test -exec=true ./...`: every
// package and test binary compiled, none run). The seed holds nothing the
// agent may not see (no test_patch, no fix), and the agent gets a copy, so
// it cannot change what later agents start from. Without it, an agent's
// first `go test` compiles the standard library (tens of seconds).

// seedCompleteFile marks a finished seed.
const seedCompleteFile = ".nextstate-seed-complete"

// seedDir is where the seed of repo lives.
func (h *Harness) seedDir(repo *Repo) string {
	return filepath.Join(h.opts.WorkDir, "gocache-seed", strings.TrimSuffix(filepath.Base(repo.Tar), ".tar"))
}

// Seed makes the agent build-cache seed of a Go instance's repository, if
// it is not made yet, and returns its directory ("" for a repository that
// is not Go, or when EvalOptions.AgentGoCache is "off").
func (h *Harness) Seed(ctx context.Context, in *Instance, repo *Repo) (string, error) {
	if repo.Language != "go" || h.opts.AgentGoCache == "off" {
		return "", nil
	}
	dir := h.seedDir(repo)
	unlock := h.repos.lock("seed " + dir)
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, seedCompleteFile)); err == nil {
		return dir, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	spec, err := h.opts.Spec(in, repo.Language, dir)
	if err != nil {
		return "", err
	}
	spec.Labels = sandbox.MergeLabels(spec.Labels, map[string]string{"swe.instance": labelValue(in.InstanceID), "swe.role": "seed"})
	sb, err := h.backend.Create(ctx, spec)
	if err != nil {
		return "", fmt.Errorf("creating the seed sandbox: %w", err)
	}
	defer sb.Close(context.WithoutCancel(ctx))
	if err := copyRepo(ctx, sb, repo); err != nil {
		return "", err
	}
	// Packages that do not build at the base commit are left out of the
	// seed; that is not an error.
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"go", "test", "-count=1", "-vet=off", "-exec=true", "./..."},
		Dir: Workdir, Timeout: h.opts.TestTimeout})
	if err != nil {
		return "", fmt.Errorf("building the seed: %w", err)
	}
	if r.TimedOut {
		return "", fmt.Errorf("building the seed: go test -exec=true ./... ran past %s", h.opts.TestTimeout)
	}
	if err := os.WriteFile(filepath.Join(dir, seedCompleteFile), nil, 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// copySeed copies the seed into the agent's build cache in sb.
func copySeed(ctx context.Context, sb sandbox.Sandbox, dir string) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { // owned by copySeed: it waits for it
		_, _, err := tarTreeTo(dir, pw, func(rel string) bool { return rel != seedCompleteFile })
		pw.CloseWithError(err)
		done <- err
	}()
	err := sb.CopyIn(ctx, SandboxAgentGoCache, pr)
	pr.CloseWithError(fmt.Errorf("copy in ended: %w", err))
	if werr := <-done; err == nil && werr != nil && werr != io.ErrClosedPipe {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("copying the build cache seed in: %w", err)
	}
	return nil
}
