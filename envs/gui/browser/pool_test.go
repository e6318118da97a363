package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// TestBrowserCrash: a browser killed mid-use fails its pages' operations
// with the infrastructure's fault, and the next page gets a new browser.
func TestBrowserCrash(t *testing.T) {
	p := newPool(t, Options{})
	pg := openPage(t, p)
	ctx := t.Context()
	pid := pg.BrowserPID()
	if pid == 0 {
		t.Fatal("the page's browser has no pid")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The process dies, and the pool sees it, in their own time.
	waitFor(t, "the pool to see its browser die", func() bool { return p.Stats().Crashed == 1 })
	_, err := pg.Screenshot(ctx)
	var fe *gym.FaultError
	if !errors.As(err, &fe) || fe.Fault != gym.FaultInfra || fe.Reason != "browser_crashed" {
		t.Fatalf("screenshot after the browser died: got %v, want an infra fault browser_crashed", err)
	}
	if err := pg.Click(ctx, 1, 1, "left", 1); !errors.As(err, &fe) || fe.Reason != "browser_crashed" {
		t.Errorf("a click after the browser died: got %v, want browser_crashed", err)
	}
	if err := pg.Close(ctx); err != nil {
		t.Errorf("closing a page of a dead browser: %v", err)
	}

	next := openPage(t, p)
	if next.BrowserPID() == pid {
		t.Fatalf("the new page went to the dead browser %d", pid)
	}
	if _, err := next.Screenshot(ctx); err != nil {
		t.Fatalf("a page after the crash: %v", err)
	}
	if s := p.Stats(); s.Crashed != 1 || s.Browsers != 1 {
		t.Errorf("stats %+v, want 1 crashed and 1 live browser", s)
	}
	// The dead browser's processes and profile are gone.
	waitFor(t, "the dead browser's processes", func() bool {
		for _, q := range scanProcs(p.opts.Dir) {
			if q.dir == filepath.Join(p.dir, "b1") {
				return false
			}
		}
		_, err := os.Stat(filepath.Join(p.dir, "b1"))
		return os.IsNotExist(err)
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still there after a minute", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConcurrentPages: 16 pages at once on browsers of 4 pages each, all
// working.
func TestConcurrentPages(t *testing.T) {
	p := newPool(t, Options{SessionsPerBrowser: 4})
	url := testServer(t).URL + "/page.html"
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	pages := make(chan *Page, n)
	for i := range n {
		wg.Go(func() {
			ctx := t.Context()
			pg, err := p.NewPage(ctx, 200, 200)
			if err != nil {
				errs <- fmt.Errorf("page %d: %w", i, err)
				return
			}
			pages <- pg
			if err := pg.Navigate(ctx, url); err != nil {
				errs <- fmt.Errorf("page %d: %w", i, err)
				return
			}
			for range 3 {
				if err := pg.Click(ctx, 20, 40, "left", 1); err != nil {
					errs <- fmt.Errorf("page %d: %w", i, err)
					return
				}
				if _, err := pg.Screenshot(ctx); err != nil {
					errs <- fmt.Errorf("page %d: %w", i, err)
					return
				}
			}
			var clicks int
			if err := pg.Eval(ctx, "window.log.filter(e => e.startsWith('click:btn')).length", &clicks); err != nil || clicks != 3 {
				errs <- fmt.Errorf("page %d: %d clicks seen (%v), want 3", i, clicks, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	close(pages)
	for err := range errs {
		t.Error(err)
	}
	if s := p.Stats(); s.Browsers != n/4 || s.Pages != n {
		t.Errorf("stats %+v, want %d browsers with %d pages", s, n/4, n)
	}
	for pg := range pages {
		if err := pg.Close(t.Context()); err != nil {
			t.Error(err)
		}
	}
	if s := p.Stats(); s.Pages != 0 {
		t.Errorf("after closing every page: stats %+v", s)
	}
}

// TestPoolClose: Close kills the browsers and removes their profiles;
// pages of a closed pool fail, and no new ones open.
func TestPoolClose(t *testing.T) {
	if err := Available(""); err != nil {
		t.Skip(err)
	}
	p, err := NewPool(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pg, err := p.NewPage(ctx, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	pids := p.PIDs()
	if len(pids) != 1 {
		t.Fatalf("PIDs %v, want one browser", pids)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := syscall.Kill(pids[0], 0); err == nil {
		t.Errorf("browser %d is alive after Close", pids[0])
	}
	if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
		t.Errorf("the owner directory %s is there after Close (%v)", p.dir, err)
	}
	var fe *gym.FaultError
	if _, err := pg.Screenshot(ctx); !errors.As(err, &fe) || fe.Fault != gym.FaultInfra {
		t.Errorf("a page of a closed pool: got %v, want an infra fault", err)
	}
	pg.Close(ctx)
	if _, err := p.NewPage(ctx, 100, 100); !errors.Is(err, ErrClosed) {
		t.Errorf("NewPage on a closed pool: got %v, want ErrClosed", err)
	}
}

// TestReap: the browsers and profiles of a dead owner are collected, a
// live owner's are left alone.
func TestReap(t *testing.T) {
	base := t.TempDir()
	prefix := OwnerPrefix() // <host>-<pid>-<start>-
	parts := strings.Split(strings.TrimSuffix(prefix, "-"), "-")
	// The same host and start time, a pid that is not running.
	deadPID := 4194000
	for ; syscall.Kill(deadPID, 0) == nil; deadPID++ {
	}
	parts[len(parts)-2] = strconv.Itoa(deadPID)
	dead := strings.Join(parts, "-") + "-0badc0de"
	live := prefix + "00c0ffee"
	for _, o := range []string{dead, live} {
		if err := os.MkdirAll(filepath.Join(base, o, "b1"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A stand-in for the dead owner's browser: the test binary, sleeping.
	cmd := exec.Command(os.Args[0], userDataFlag+filepath.Join(base, dead, "b1"))
	cmd.Env = append(os.Environ(), "NEXTSTATE_BROWSER_TEST_SLEEPER=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	waitFor(t, "the stand-in's start", func() bool {
		for _, q := range scanProcs(base) {
			if q.pid == cmd.Process.Pid && q.owner == dead {
				return true
			}
		}
		return false
	})

	killed, removed, err := Reap(base)
	if err != nil {
		t.Fatal(err)
	}
	if killed != 1 || removed != 1 {
		t.Errorf("Reap killed %d and removed %d, want 1 and 1", killed, removed)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Error("the dead owner's browser was not killed")
	}
	if _, err := os.Stat(filepath.Join(base, dead)); !os.IsNotExist(err) {
		t.Errorf("the dead owner's directory is there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(base, live, "b1")); err != nil {
		t.Errorf("the live owner's directory is gone: %v", err)
	}
	if pids, dirs := Leftovers(base, prefix); len(pids) != 0 || len(dirs) != 1 || filepath.Base(dirs[0]) != live {
		t.Errorf("Leftovers: %v %v, want only the live owner's directory", pids, dirs)
	}
}

func TestResolveExec(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "browser-bin")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, script string
		resolved     bool
	}{
		{"launcher", "#!/bin/sh -e\n\n" + bin + ` "$@"` + "\n", true},
		{"exec", "#!/bin/sh\n# comment\nexec " + bin + ` "$@"` + "\n", true},
		{"two commands", "#!/bin/sh\nexport X=1\n" + bin + ` "$@"` + "\n", false},
		{"relative", "#!/bin/sh\nbrowser-bin \"$@\"\n", false},
		{"no args", "#!/bin/sh\n" + bin + "\n", false},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.script), 0o755); err != nil {
			t.Fatal(err)
		}
		got := resolveExec(path)
		if want := map[bool]string{true: bin, false: path}[c.resolved]; got != want {
			t.Errorf("%s: resolveExec = %s, want %s", c.name, got, want)
		}
	}
	if got := resolveExec(bin); got != bin {
		t.Errorf("a binary resolves to %s", got)
	}
}

func TestOptionsChecked(t *testing.T) {
	for _, o := range []Options{
		{ExecPath: "/nonexistent/browser"},
		{SessionsPerBrowser: -1},
		{Owner: "bad owner!"},
		{Flags: []string{"no-dashes"}},
		{Flags: []string{"--user-data-dir=/tmp/x"}},
	} {
		if o.ExecPath == "" && Available("") != nil {
			continue
		}
		if p, err := NewPool(o); err == nil {
			p.Close(context.Background())
			t.Errorf("NewPool(%+v) accepted bad options", o)
		}
	}
}
