package browser

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui/internal/confine"
	"github.com/nextstate-rl/nextstate/envs/gui/internal/confine/confinetest"
)

// needBwrap skips a test when the browser's sandbox cannot run here.
func needBwrap(t *testing.T) {
	t.Helper()
	if !confine.Works() {
		t.Skip("bubblewrap is missing or cannot make namespaces here")
	}
}

// browserProcs returns the host pids of a sandboxed browser's processes
// (the browser and its helpers, not the bwrap that started them): those
// in the PID namespace of the process that runs with profile directory
// dir and is not bwrap.
func browserProcs(t *testing.T, base, dir string) []int {
	t.Helper()
	var ns string
	for _, q := range scanProcs(base) {
		if q.dir == dir && comm(q.pid) != "bwrap" {
			ns, _ = os.Readlink("/proc/" + strconv.Itoa(q.pid) + "/ns/pid")
		}
	}
	if ns == "" {
		t.Fatalf("no browser process runs with the profile %s", dir)
	}
	if own, _ := os.Readlink("/proc/self/ns/pid"); ns == own {
		t.Fatalf("the browser with the profile %s runs in the host's PID namespace", dir)
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if n, _ := os.Readlink("/proc/" + e.Name() + "/ns/pid"); n == ns && comm(pid) != "bwrap" {
			out = append(out, pid)
		}
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// TestBrowserEscapes: the browser's processes cannot reach the host. From
// the host's side, each of them has no capabilities and a root without
// the files the test planted (the host's /root, a temporary directory,
// the checkout), the docker socket, /var/lib/docker or the shadow file;
// the browser itself cannot load them as file: URLs; and the probe, run
// in the sandbox the pool gives its browsers, finds no way out but the
// host's network namespace, which the browser shares on purpose.
func TestBrowserEscapes(t *testing.T) {
	needBwrap(t)
	planted := confinetest.Plant(t)
	p := newPool(t, Options{Sandbox: confine.Bwrap})
	pg := openPage(t, p)
	dir := filepath.Join(p.dir, "b1")
	pids := browserProcs(t, p.opts.Dir, dir)
	if len(pids) < 2 {
		t.Errorf("the browser has %d processes in its sandbox, want the browser and its helpers", len(pids))
	}
	for _, pid := range pids {
		confinetest.CheckProcess(t, pid, comm(pid), planted)
	}

	ctx := t.Context()
	files := append([]string{"/etc/shadow"}, planted[:len(planted)-1]...) // the last is the checkout
	for _, f := range files {
		if err := pg.Navigate(ctx, "file://"+f); err != nil {
			continue // not found: the file is not there
		}
		var text string
		if err := pg.Eval(ctx, "document.body ? document.body.innerText : ''", &text); err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(text) != "" {
			t.Errorf("the browser reads file://%s: %q", f, text)
		}
	}

	// The sandbox of a browser, with a shell in it.
	probeDir := filepath.Join(p.dir, "probe")
	if err := os.MkdirAll(probeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(probeDir, "probe.out")
	argv, err := confine.Command(browserSpec(nil, probeDir))
	if err != nil {
		t.Fatal(err)
	}
	extra := []string{`[ "$HOME" = "$(pwd)" ] && touch "$HOME/written" || echo "broken: the profile directory is not the writable home"`,
		`[ "$(ls -A "$(dirname "$HOME")")" = probe ] || echo "escape: other browsers' profiles are visible"`}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "/bin/sh", "-c", confinetest.Probe(t, out, planted, true, extra...))...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the probe: %v\n%s", err, b)
	}
	confinetest.Read(t, out)
	if _, err := os.Stat(filepath.Join(probeDir, "written")); err != nil {
		t.Errorf("the file the probe wrote in its home is not in the profile directory: %v", err)
	}
}

// TestReapSandboxed: a sandboxed browser whose pool's process is gone
// (its owner's lease ended, as when the server crashed) is found by Reap,
// and every process of its sandbox, the browser's helpers with it, ends.
func TestReapSandboxed(t *testing.T) {
	needBwrap(t)
	base := t.TempDir()
	prefix := OwnerPrefix()
	parts := strings.Split(strings.TrimSuffix(prefix, "-"), "-")
	deadPID := 4194000
	for ; syscall.Kill(deadPID, 0) == nil; deadPID++ {
	}
	parts[len(parts)-2] = strconv.Itoa(deadPID)
	dead := strings.Join(parts, "-") + "-0badbeef"
	// A pool that carries the dead owner's lease: what a crashed server
	// left, as far as Reap can tell.
	p := newPool(t, Options{Dir: base, Owner: dead, Sandbox: confine.Bwrap, Logger: slog.New(slog.DiscardHandler)})
	openPage(t, p)
	dir := filepath.Join(p.dir, "b1")
	pids := browserProcs(t, base, dir)
	outer := p.PIDs()
	if len(outer) != 1 || comm(outer[0]) != "bwrap" {
		t.Fatalf("the pool's process %v (%s), want one bwrap", outer, comm(outer[0]))
	}
	killed, removed, err := Reap(base)
	if err != nil {
		t.Fatal(err)
	}
	if killed == 0 || removed != 1 {
		t.Errorf("Reap killed %d and removed %d, want the browser's processes and its owner's directory", killed, removed)
	}
	waitFor(t, "the sandboxed browser's processes", func() bool {
		for _, pid := range append(pids, outer...) {
			if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
				return false
			}
		}
		return true
	})
	if _, err := os.Stat(filepath.Join(base, dead)); !os.IsNotExist(err) {
		t.Errorf("the dead owner's directory is there (%v)", err)
	}
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
