package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// local is a Sandbox without isolation: processes run on the host in a
// temporary directory. It tests the Shell apart from any backend.
type local struct{ dir string }

func (l *local) ID() string { return "local" }

func (l *local) cmd(argv []string, env map[string]string, dir string) *exec.Cmd {
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = l.dir
	if dir != "" {
		c.Dir = dir
	}
	c.Env = append(os.Environ(), "HOME="+l.dir)
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c
}

func (l *local) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	argv := req.Cmd
	if req.Script != "" {
		argv = []string{"bash", "-c", req.Script}
	}
	c := l.cmd(argv, req.Env, req.Dir)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr, c.Stdin = &out, &errb, req.Stdin
	err := c.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code, err = ee.ExitCode(), nil
	}
	return sandbox.ExecResult{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: code}, err
}

func (l *local) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Process, error) {
	c := l.cmd(req.Cmd, req.Env, req.Dir)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	in, _ := c.StdinPipe()
	c.Stdout, c.Stderr = w, w
	err = c.Start()
	w.Close()
	if err != nil {
		return nil, err
	}
	return &localProc{c: c, in: in, out: r}, nil
}

func (l *local) CopyIn(context.Context, string, io.Reader) error { return errors.ErrUnsupported }
func (l *local) CopyOut(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.ErrUnsupported
}
func (l *local) Close(context.Context) error { return nil }

type localProc struct {
	c   *exec.Cmd
	in  io.WriteCloser
	out *os.File
}

func (p *localProc) Stdin() io.WriteCloser { return p.in }
func (p *localProc) Stdout() io.Reader     { return p.out }
func (p *localProc) Wait() (int, error) {
	err := p.c.Wait()
	if p.c.ProcessState != nil {
		return p.c.ProcessState.ExitCode(), nil
	}
	return -1, err
}
func (p *localProc) Kill() error {
	syscall.Kill(-p.c.Process.Pid, syscall.SIGKILL)
	p.out.Close()
	return nil
}

func newLocalShell(t *testing.T) sandbox.Shell {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	sh, err := sandbox.NewShell(context.Background(), &local{dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	return sh
}

func TestShellLocal(t *testing.T) {
	sh := newLocalShell(t)
	ctx := context.Background()
	run := func(cmd string) sandbox.ExecResult {
		t.Helper()
		r, err := sh.Run(ctx, cmd, 10*time.Second)
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		return r
	}
	run("cd /tmp; export NS_TEST_VAR=42")
	if r := run("pwd; echo $NS_TEST_VAR; exit_code_is() { return $1; }; exit_code_is 9"); string(r.Stdout) != "/tmp\n42\n" || r.ExitCode != 9 {
		t.Errorf("%q %d", r.Stdout, r.ExitCode)
	}
	r, err := sh.Run(ctx, "echo a; sleep 30; echo b", 200*time.Millisecond)
	if err != nil || !r.TimedOut || !strings.HasPrefix(string(r.Stdout), "a\n") || strings.Contains(string(r.Stdout), "b") || r.ExitCode != 130 {
		t.Errorf("timeout: %v %+v %q", err, r, r.Stdout)
	}
	if r := run("echo $NS_TEST_VAR"); string(r.Stdout) != "42\n" {
		t.Errorf("after interrupt: %q", r.Stdout)
	}
	// Output that looks like a marker does not end the command.
	if r := run(`printf '__NEXTSTATE_END_0000__:0\n'; echo real`); !strings.HasSuffix(string(r.Stdout), "real\n") {
		t.Errorf("fake marker: %q", r.Stdout)
	}
}

func TestShellLocalTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	sh := newLocalShell(t)
	ctx := context.Background()
	if err := sh.SendKeys(ctx, "echo $((6*7))x", "Enter"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		scr, err := sh.Screen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(scr, "42x") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen: %q", scr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sh.Close()
	if _, err := sh.Screen(ctx); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Screen after Close: %v", err)
	}
}

// The terminal's foreground: its shell at the prompt, a program it runs,
// the shell again once the program ends.
func TestShellLocalTerminalForeground(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	sh := newLocalShell(t)
	tw, ok := sh.(sandbox.TerminalWatcher)
	if !ok {
		t.Fatalf("%T is not a sandbox.TerminalWatcher", sh)
	}
	ctx := context.Background()
	waitFor := func(shellHasIt bool, program string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			has, prog, err := tw.TerminalForeground(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if has == shellHasIt && prog == program {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("foreground: shell %v, program %q; want %v, %q", has, prog, shellHasIt, program)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(true, "")
	if err := sh.SendKeys(ctx, "sleep 600", "Enter"); err != nil {
		t.Fatal(err)
	}
	waitFor(false, "sleep")
	if err := sh.SendKeys(ctx, "C-c"); err != nil {
		t.Fatal(err)
	}
	waitFor(true, "")
	sh.Close()
	if _, _, err := tw.TerminalForeground(ctx); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("TerminalForeground after Close: %v", err)
	}
}
