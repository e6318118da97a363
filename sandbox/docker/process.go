package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// startPrelude reports the PID on the first line of stdout, which Start
// reads before it hands the stream over, and points stderr at stdout:
// merged in the sandbox, the two keep their order, which two streams
// multiplexed by the engine would not.
const startPrelude = `echo "$$"; exec "$@" 2>&1`

// Start runs a long-lived process through an attached exec: its stdin,
// and its stdout and stderr merged (with TTY, the terminal's output), go
// over one hijacked connection to the engine. ctx bounds the start only.
// The process leads its own process group, which Kill kills. Read Stdout
// until it ends: Wait returns once the process has ended and its output
// has been read.
func (s *Sandbox) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Process, error) {
	if len(req.Cmd) == 0 {
		return nil, errors.New("docker: start: no command")
	}
	c, err := s.current()
	if err != nil {
		return nil, err
	}
	dir := s.spec.Workdir
	if req.Dir != "" {
		dir = s.abs(req.Dir)
	}
	cli := s.e.cli
	opts := client.ExecCreateOptions{
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		TTY:          req.TTY,
		Env:          envList(req.Env),
		WorkingDir:   dir,
		Cmd:          append([]string{"/bin/sh", "-c", startPrelude, "sh"}, req.Cmd...),
	}
	if req.TTY {
		opts.ConsoleSize = client.ConsoleSize{Height: 24, Width: 80}
	}
	created, err := cli.ExecCreate(ctx, c.id, opts)
	if err != nil {
		return nil, s.check(ctx, c, fmt.Errorf("docker: start: %w", err))
	}
	att, err := cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: req.TTY, ConsoleSize: opts.ConsoleSize})
	if err != nil {
		return nil, s.check(ctx, c, fmt.Errorf("docker: start: %w", err))
	}
	p := &process{s: s, c: c, execID: created.ID, att: att, ended: make(chan struct{}), closed: make(chan struct{})}
	var out io.Reader = att.Reader
	if !req.TTY {
		pr, pw := io.Pipe()
		p.pr = pr
		p.copied = make(chan struct{})
		s.wg.Add(1)
		go func() { // owned by the sandbox (Close waits) and the process (Wait waits)
			defer s.wg.Done()
			defer close(p.copied)
			_, err := stdcopy.StdCopy(pw, pw, att.Reader)
			pw.CloseWithError(err)
		}()
		out = pr
	}
	br := bufio.NewReader(out)
	// The PID line arrives as soon as the shell runs; ctx bounds the wait.
	line, err := readLine(ctx, br, att)
	if err != nil {
		p.closeConn()
		return nil, s.check(ctx, c, fmt.Errorf("docker: start: reading the process's PID: %w", err))
	}
	if p.pid, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
		p.closeConn()
		return nil, fmt.Errorf("docker: start: want a PID, got %q", line)
	}
	p.out = &endReader{r: br, p: p}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		p.closeConn()
		return nil, sandbox.ErrClosed
	}
	s.procs[p] = struct{}{}
	s.mu.Unlock()
	return p, nil
}

// readLine reads one line, closing the connection if ctx ends first.
func readLine(ctx context.Context, br *bufio.Reader, att client.ExecAttachResult) (string, error) {
	stop := context.AfterFunc(ctx, func() { att.Close() })
	defer stop()
	line, err := br.ReadString('\n')
	if err != nil && ctx.Err() != nil {
		return line, ctx.Err()
	}
	return line, err
}

// process is a Start-ed exec.
type process struct {
	s      *Sandbox
	c      *ctr
	execID string
	pid    int
	att    client.ExecAttachResult
	out    io.Reader
	pr     *io.PipeReader // the demuxed output (no TTY)
	copied chan struct{}  // closed when the demux goroutine ends (no TTY)
	closed chan struct{}  // closed by closeConn

	endOnce   sync.Once
	ended     chan struct{} // closed when Stdout reached its end
	closeOnce sync.Once
}

func (p *process) Stdin() io.WriteCloser { return stdinConn{p.att} }
func (p *process) Stdout() io.Reader     { return p.out }

// closeConn closes the connection to the engine, which ends Stdout.
func (p *process) closeConn() {
	p.closeOnce.Do(func() {
		p.att.Close()
		if p.pr != nil {
			p.pr.CloseWithError(io.EOF)
		}
		close(p.closed)
	})
}

func (p *process) end() { p.endOnce.Do(func() { close(p.ended) }) }

// Wait waits until Stdout has been read to its end (or Kill or the
// sandbox's Close cut it), then returns the exit code. A process that
// ended because its container died returns an error wrapping
// sandbox.ErrGone.
func (p *process) Wait() (int, error) {
	select {
	case <-p.ended:
	case <-p.closed:
	}
	if p.copied != nil {
		<-p.copied
	}
	p.closeConn()
	p.s.mu.Lock()
	delete(p.s.procs, p)
	p.s.mu.Unlock()
	ctx := context.Background()
	code, err := p.s.exitCode(ctx, p.execID)
	if err != nil {
		return -1, p.s.check(ctx, p.c, fmt.Errorf("docker: wait: %w", err))
	}
	if code == 137 {
		if err := p.s.check(ctx, p.c, nil); err != nil {
			return code, err
		}
	}
	return code, nil
}

// Kill kills the process's group (a detached exec sends SIGKILL) and
// closes the stream.
func (p *process) Kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), killGrace)
	defer cancel()
	err := p.s.killGroup(ctx, p.c, p.pid)
	p.closeConn()
	if err != nil {
		return p.s.check(ctx, p.c, fmt.Errorf("docker: kill: %w", err))
	}
	return nil
}

// stdinConn writes to the hijacked connection; Close ends the process's
// stdin (a half-close), not the stream.
type stdinConn struct{ att client.ExecAttachResult }

func (w stdinConn) Write(b []byte) (int, error) { return w.att.Conn.Write(b) }
func (w stdinConn) Close() error                { return w.att.CloseWrite() }

// endReader marks the process's output as ended at EOF or error.
type endReader struct {
	r io.Reader
	p *process
}

func (r *endReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if err != nil {
		r.p.end()
		if !errors.Is(err, io.EOF) {
			err = io.EOF // a closed connection is the end of the stream
		}
	}
	return n, err
}
