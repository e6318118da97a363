package gobuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nextstate-rl/nextstate/envs/swe"
)

// maxCmdOutput caps what a command's stderr keeps for error messages.
const maxCmdOutput = 64 << 10

// cmdResult is what one command did.
type cmdResult struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	TimedOut bool
	Elapsed  time.Duration
}

// command is one command to run: argv, directory, environment added to
// the host's, stdin, a timeout that kills its whole process group.
type command struct {
	Args []string
	Dir  string
	// Env is added to the host's environment; an empty value unsets.
	Env     map[string]string
	Stdin   io.Reader
	Stdout  io.Writer // nil: kept in cmdResult.Stdout
	Timeout time.Duration
	Offline bool // run without network (see runCmd)
}

// runCmd runs c. A command that ran and exited non-zero is not an error
// (its ExitCode says so); failing to start, or ctx ending, is. Offline
// commands run under bwrap with the host's filesystem, their own PID and
// network namespaces (only a loopback interface), when bwrap works here;
// otherwise directly (the modules still come only from the cache, with
// GOPROXY=off). The process group is killed at the timeout or when ctx
// ends, so a hung test binary cannot outlive the call.
func runCmd(ctx context.Context, c command) (cmdResult, error) {
	args := c.Args
	if c.Offline && offlineWrapper() != nil {
		args = append(slices.Clone(offlineWrapper()), args...)
	}
	parent := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = mergeEnv(os.Environ(), c.Env)
	cmd.Stdin = c.Stdin
	var stdout bytes.Buffer
	stderr := &cappedWriter{max: maxCmdOutput}
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	} else {
		cmd.Stdout = &stdout
	}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process that left the group and holds the output pipes open does
	// not hold Wait past this once the command is gone.
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return cmdResult{}, fmt.Errorf("starting %s: %w", args[0], err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	wg.Wait()
	// Whatever the command left in its group (a test binary's children)
	// goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	res := cmdResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Elapsed: time.Since(start)}
	if ctx.Err() != nil {
		res.ExitCode = -1
		if err := parent.Err(); err != nil {
			return res, err // the caller gave up
		}
		res.TimedOut = true // our own timeout
		return res, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		res.ExitCode = exit.ExitCode()
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("running %s: %w", args[0], err)
	}
	return res, nil
}

// mustRun runs c and turns a non-zero exit into an error with its stderr.
func mustRun(ctx context.Context, c command) ([]byte, error) {
	res, err := runCmd(ctx, c)
	if err != nil {
		return nil, err
	}
	if res.TimedOut {
		return nil, fmt.Errorf("%s: timed out after %v", strings.Join(c.Args, " "), c.Timeout)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("%s: exit %d: %s", strings.Join(c.Args, " "), res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return res.Stdout, nil
}

var (
	offlineOnce sync.Once
	offlineArgs []string
)

// offlineWrapper is the bwrap prefix that takes a command off the network,
// or nil when bwrap cannot do it here.
func offlineWrapper() []string {
	offlineOnce.Do(func() {
		bw, err := exec.LookPath("bwrap")
		if err != nil {
			slog.Warn("gobuild: bwrap not found; tests run with the host's network", "err", err)
			return
		}
		args := []string{bw, "--dev-bind", "/", "/", "--unshare-net", "--unshare-pid", "--proc", "/proc", "--die-with-parent", "--"}
		out, err := exec.Command(args[0], append(args[1:], "true")...).CombinedOutput()
		if err != nil {
			slog.Warn("gobuild: bwrap cannot make a network namespace here; tests run with the host's network",
				"err", err, "output", strings.TrimSpace(string(out)))
			return
		}
		offlineArgs = args
	})
	return offlineArgs
}

func mergeEnv(base []string, add map[string]string) []string {
	if len(add) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(add))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := add[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(add)) {
		if add[k] != "" {
			out = append(out, k+"="+add[k])
		}
	}
	return out
}

// cappedWriter keeps the first max bytes written and counts the rest.
type cappedWriter struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	room := w.max - w.buf.Len()
	if room >= len(p) {
		w.buf.Write(p)
	} else {
		if room > 0 {
			w.buf.Write(p[:room])
		}
		w.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (w *cappedWriter) Bytes() []byte {
	if w.dropped == 0 {
		return w.buf.Bytes()
	}
	return append(w.buf.Bytes(), fmt.Sprintf("\n[... %d bytes truncated ...]\n", w.dropped)...)
}

// onlineEnv is the environment of the commands that fill the module cache:
// the user's proxy (GOPROXY as go env has it unless Options.Proxy says),
// the cache at modCache.
func (b *builder) onlineEnv() map[string]string {
	env := map[string]string{
		"GOMODCACHE":  b.opts.ModCache,
		"GOFLAGS":     "-mod=mod -buildvcs=false",
		"GOTOOLCHAIN": "local",
		"GOWORK":      "off",
		"GO111MODULE": "on",
	}
	if b.opts.Proxy != "" {
		env["GOPROXY"] = b.opts.Proxy
	}
	if b.opts.BuildCache != "" {
		env["GOCACHE"] = b.opts.BuildCache
	}
	return env
}

// offlineEnv is the environment tests run with (swe.GoTestEnv).
func (b *builder) offlineEnv() map[string]string {
	return swe.GoTestEnv(b.opts.ModCache, b.opts.BuildCache)
}

// moduleInfo is what the go command says of a module version.
type moduleInfo struct {
	Path    string
	Version string
	Time    time.Time
	Dir     string
	GoMod   string
	Zip     string
	Error   string
}

// download fetches module@version into the module cache and returns its
// directory there (read-only files).
func (b *builder) download(ctx context.Context, module, version string) (moduleInfo, error) {
	tmp, err := os.MkdirTemp(b.work, "download-")
	if err != nil {
		return moduleInfo{}, err
	}
	res, err := runCmd(ctx, command{
		Args: []string{b.opts.Go, "mod", "download", "-json", module + "@" + version},
		Dir:  tmp, Env: b.onlineEnv(), Timeout: b.opts.DownloadTimeout,
	})
	if err != nil {
		return moduleInfo{}, err
	}
	var info moduleInfo
	if jerr := json.Unmarshal(res.Stdout, &info); jerr != nil {
		return moduleInfo{}, fmt.Errorf("go mod download %s@%s: exit %d: %s", module, version, res.ExitCode,
			strings.TrimSpace(string(res.Stderr)))
	}
	if info.Error != "" || res.ExitCode != 0 || info.Dir == "" {
		return moduleInfo{}, fmt.Errorf("go mod download %s@%s: %s%s", module, version, info.Error,
			strings.TrimSpace(string(res.Stderr)))
	}
	if info.Version != version {
		return moduleInfo{}, fmt.Errorf("%s@%s: the proxy resolves it to %s: give an exact tagged version",
			module, version, info.Version)
	}
	// The version's time (for CreatedAt) comes from go list -m.
	if out, err := mustRun(ctx, command{
		Args: []string{b.opts.Go, "list", "-m", "-json", module + "@" + version},
		Dir:  tmp, Env: b.onlineEnv(), Timeout: b.opts.DownloadTimeout,
	}); err == nil {
		var m moduleInfo
		if json.Unmarshal(out, &m) == nil {
			info.Time = m.Time
		}
	}
	return info, nil
}

// prefetch fills the module cache with everything the module in dir needs
// to build and test its packages: go mod download, then go list -deps
// -test ./... (which also fetches what a test imports that go mod download
// missed). dir is a scratch copy (go.sum may be completed). A module whose
// packages do not build is not an error here: its tests will say so.
func (b *builder) prefetch(ctx context.Context, dir string) error {
	res, err := runCmd(ctx, command{Args: []string{b.opts.Go, "mod", "download"}, Dir: dir,
		Env: b.onlineEnv(), Timeout: b.opts.DownloadTimeout})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		b.log.Warn("go mod download failed", "dir", dir, "stderr", strings.TrimSpace(string(res.Stderr)))
	}
	res, err = runCmd(ctx, command{Args: []string{b.opts.Go, "list", "-e", "-deps", "-test", "./..."}, Dir: dir,
		Env: b.onlineEnv(), Timeout: b.opts.DownloadTimeout})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		b.log.Warn("go list -deps -test failed", "dir", dir, "stderr", strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}

// goTest runs the tests of pkgs (or the -run selection) in dir, offline,
// and parses the result.
func (b *builder) goTest(ctx context.Context, dir, run string, pkgs []string) (*swe.GoTestRun, time.Duration, error) {
	if len(pkgs) == 0 { // nothing to test on this side
		r, _ := swe.ParseGoTestRun(strings.NewReader(""))
		return r, 0, nil
	}
	args := swe.GoTestArgs(run, b.opts.TestTimeout.String(), pkgs)
	args[0] = b.opts.Go
	var stdout bytes.Buffer
	res, err := runCmd(ctx, command{Args: args, Dir: dir, Env: b.offlineEnv(), Stdout: &stdout,
		Timeout: b.opts.TestTimeout + 2*time.Minute, Offline: true})
	if err != nil {
		return nil, 0, err
	}
	r, perr := swe.ParseGoTestRun(io.MultiReader(&stdout, bytes.NewReader(res.Stderr)))
	if perr != nil && !errors.Is(perr, swe.ErrNoGoTestEvents) {
		return nil, 0, perr
	}
	if res.TimedOut {
		r.Other += fmt.Sprintf("\n[go test killed after %v]\n", b.opts.TestTimeout+2*time.Minute)
	}
	return r, res.Elapsed, nil
}

// absPath makes p absolute; "~/" is the home directory.
func absPath(p string) (string, error) {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, rest)
	}
	return filepath.Abs(p)
}
