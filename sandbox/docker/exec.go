package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// pidPrelude runs before every command: it reports the process's PID (in
// the container's PID namespace) on the first line of stderr, then becomes
// the command. An exec'd process is the leader of its own session and
// process group, so that PID is the group to kill at a deadline.
const pidPrelude = `echo "$$" >&2; exec "$@"`

// killGrace is how long Exec waits for a killed command's output to end
// before it closes the stream itself. The engine ends an exec's stream about
// two seconds after its process exits when a process outside the group
// still holds the output open.
const killGrace = 5 * time.Second

// Exec runs one command in the sandbox and returns its output and exit
// code. The command runs as the leader of its own process group; at
// req.Timeout the whole group is killed (SIGKILL, from a second exec) and
// the result says TimedOut. When ctx ends first, the group is killed too
// and ctx's error returned. A command that died because the container died
// returns an error wrapping sandbox.ErrGone.
func (s *Sandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	var res sandbox.ExecResult
	argv, err := argvOf(req)
	if err != nil {
		return res, err
	}
	c, err := s.current()
	if err != nil {
		return res, err
	}
	start := time.Now()
	stdout, stderr := sandbox.NewCappedBuffer(req.MaxOutput), sandbox.NewCappedBuffer(req.MaxOutput)
	pid := newPIDWriter(stderr)
	dir := s.spec.Workdir
	if req.Dir != "" {
		dir = s.abs(req.Dir)
	}
	cli := s.e.cli
	created, err := cli.ExecCreate(ctx, c.id, client.ExecCreateOptions{
		AttachStdin:  req.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          envList(req.Env),
		WorkingDir:   dir,
		Cmd:          append([]string{"/bin/sh", "-c", pidPrelude, "sh"}, argv...),
	})
	if err != nil {
		return res, s.check(ctx, c, fmt.Errorf("docker: exec: %w", err))
	}
	att, err := cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return res, s.check(ctx, c, fmt.Errorf("docker: exec: %w", err))
	}
	defer att.Close()

	copied := make(chan error, 1)
	go func() { // owned by Exec: every return path below receives from copied
		_, err := stdcopy.StdCopy(stdout, pid, att.Reader)
		copied <- err
	}()
	var stdinDone chan struct{}
	if req.Stdin != nil {
		stdinDone = make(chan struct{})
		go func() { // owned by Exec: waited for below, under ctx
			defer close(stdinDone)
			_, _ = io.Copy(att.Conn, req.Stdin)
			_ = att.CloseWrite()
		}()
	}
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}

	var copyErr, ctxErr error
	select {
	case copyErr = <-copied:
	case <-timeout:
		res.TimedOut = true
		copyErr = s.killAndDrain(ctx, c, pid, copied, att)
	case <-ctx.Done():
		ctxErr = ctx.Err()
		copyErr = s.killAndDrain(ctx, c, pid, copied, att)
	}
	att.Close()
	if stdinDone != nil {
		select {
		case <-stdinDone:
		case <-ctx.Done():
		}
	}
	res.Elapsed = time.Since(start)
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = stdout.Truncated() || stderr.Truncated()
	if ctxErr != nil {
		return res, ctxErr
	}
	code, err := s.exitCode(ctx, created.ID)
	if err != nil {
		return res, s.check(ctx, c, fmt.Errorf("docker: exec: %w", err))
	}
	res.ExitCode = code
	if copyErr != nil && !res.TimedOut {
		return res, s.check(ctx, c, fmt.Errorf("docker: exec stream: %w", copyErr))
	}
	if code == 137 && !res.TimedOut {
		// SIGKILL: the OOM killer, the command's own doing, or the
		// container dying underneath. Only the last is an error.
		if err := s.check(ctx, c, nil); err != nil {
			return res, err
		}
	}
	return res, nil
}

// killAndDrain kills the command's process group and waits for its output
// to end, closing the stream after killGrace.
func (s *Sandbox) killAndDrain(ctx context.Context, c *ctr, pid *pidWriter, copied <-chan error, att client.ExecAttachResult) error {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killGrace)
	defer cancel()
	select {
	case <-pid.ready:
	case err := <-copied: // ended before it said its PID
		return err
	case <-kctx.Done():
	}
	if p := pid.get(); p > 0 {
		if err := s.killGroup(kctx, c, p); err != nil {
			s.b.log.Warn("killing a command's process group", "sandbox", s.id, "pid", p, "err", err)
		}
	}
	select {
	case err := <-copied:
		return err
	case <-kctx.Done():
		att.Close()
		return <-copied
	}
}

// killGroup sends SIGKILL to process group pgid in c, from a detached exec.
func (s *Sandbox) killGroup(ctx context.Context, c *ctr, pgid int) error {
	g := strconv.Itoa(pgid)
	created, err := s.e.cli.ExecCreate(ctx, c.id, client.ExecCreateOptions{
		Cmd: []string{"/bin/sh", "-c", "kill -9 -" + g + " 2>/dev/null || kill -9 " + g + " 2>/dev/null; true"},
	})
	if err != nil {
		return err
	}
	_, err = s.e.cli.ExecStart(ctx, created.ID, client.ExecStartOptions{Detach: true})
	return err
}

// exitCode reads an ended exec's exit code. The engine may report it as
// running for a moment after its stream ended; exitCode polls until it
// does not, for up to ten seconds.
func (s *Sandbox) exitCode(ctx context.Context, execID string) (int, error) {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	wait := time.Millisecond
	for {
		r, err := s.e.cli.ExecInspect(ictx, execID, client.ExecInspectOptions{})
		if err != nil {
			return -1, err
		}
		if !r.Running {
			return r.ExitCode, nil
		}
		select {
		case <-ictx.Done():
			return -1, fmt.Errorf("exec %s still running after its output ended: %w", shortID(execID), ictx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

func argvOf(req sandbox.ExecRequest) ([]string, error) {
	switch {
	case req.Script != "" && len(req.Cmd) > 0:
		return nil, errors.New("docker: exec: set Cmd or Script, not both")
	case req.Script != "":
		return []string{"bash", "-c", req.Script}, nil
	case len(req.Cmd) > 0:
		return req.Cmd, nil
	}
	return nil, errors.New("docker: exec: no command")
}

// pidWriter takes the prelude's first line (the PID) off stderr and passes
// the rest on.
type pidWriter struct {
	next  io.Writer
	ready chan struct{}
	line  []byte
	pid   int
	done  bool
	mu    sync.Mutex
}

func newPIDWriter(next io.Writer) *pidWriter {
	return &pidWriter{next: next, ready: make(chan struct{})}
}

func (w *pidWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return w.next.Write(p)
	}
	n := len(p)
	i := bytes.IndexByte(p, '\n')
	if i < 0 && len(w.line)+len(p) < 32 {
		w.line = append(w.line, p...)
		w.mu.Unlock()
		return n, nil
	}
	var rest []byte
	if i >= 0 {
		w.line = append(w.line, p[:i]...)
		rest = p[i+1:]
	} else {
		rest = p // no PID line after all: pass everything on
		w.line = nil
	}
	w.pid, _ = strconv.Atoi(string(bytes.TrimSpace(w.line)))
	w.done = true
	close(w.ready)
	w.mu.Unlock()
	if len(rest) > 0 {
		if _, err := w.next.Write(rest); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (w *pidWriter) get() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pid
}
