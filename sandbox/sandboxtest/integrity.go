package sandboxtest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// The integrity checks: what an agent inside a sandbox does to outlive its
// last action or to end the sandbox on purpose must fail.

// keeper checks that nothing inside a sandbox can end it by killing its
// keeper: the signals an agent would send to PID 1, and kill -1 (every
// process it may signal), leave the sandbox usable.
func (s *suite) keeper(t *testing.T) {
	sb := s.create(t, nil)
	sh := newShell(t, sb)
	for _, cmd := range []string{
		"kill -KILL 1", "kill -TERM 1", "kill -INT 1", "kill -HUP 1", "kill -QUIT 1", "kill -USR1 1",
		"kill -STOP 1; kill -CONT 1",
	} {
		exec(t, sb, sandbox.ExecRequest{Script: cmd + "; true", Timeout: 10 * time.Second})
	}
	// The keeper's children, if it has any: kill everything but oneself.
	exec(t, sb, sandbox.ExecRequest{Script: "kill -KILL -1; true", Timeout: 10 * time.Second})
	_ = sh // the shell died with kill -1; the sandbox must not have
	r := exec(t, sb, sandbox.ExecRequest{Script: "echo alive"})
	if got := strings.TrimSpace(string(r.Stdout)); got != "alive" {
		t.Fatalf("after the keeper was attacked: stdout %q stderr %q", r.Stdout, r.Stderr)
	}
	if v, ok := sb.(sandbox.Validator); ok && !v.IsValid() {
		t.Errorf("IsValid false after the keeper was attacked from inside")
	}
}

// leftovers are the ways an agent leaves a process behind that plain
// process-group kills miss; each runs a sleep with a marker argument.
var leftovers = []string{
	"sleep 4343001 &",                                   // a background job of the persistent shell
	"( (sleep 4343002 &) & )",                           // double-forked, reparented to PID 1
	"setsid sleep 4343003 </dev/null >/dev/null 2>&1 &", // a session of its own
	"nohup sleep 4343004 </dev/null >/dev/null 2>&1 &",  // immune to SIGHUP
	"setsid bash -c 'trap \"\" TERM HUP INT; while :; do sleep 4343005; done' </dev/null >/dev/null 2>&1 &",
}

// killAll checks sandbox.Killer: every leftover, including a tmux server's
// children, is gone after KillAll, and the sandbox still runs commands.
func (s *suite) killAll(t *testing.T) {
	sb := s.create(t, nil)
	k, ok := sb.(sandbox.Killer)
	if !ok {
		t.Skipf("%T is not a sandbox.Killer", sb)
	}
	sh := newShell(t, sb)
	for _, l := range leftovers {
		run(t, sh, l)
	}
	n := len(leftovers)
	if has(t, sb, "tmux") {
		run(t, sh, "tmux new-session -d -s leftover 'sleep 4343006'")
		n++
	}
	// A command of Exec's that detached itself.
	exec(t, sb, sandbox.ExecRequest{Script: "setsid sleep 4343007 </dev/null >/dev/null 2>&1 & disown; true"})
	n++
	// A loop and a tmux server show their marker twice (themselves and
	// their sleep): at least one per leftover.
	waitFor(t, "the leftovers to start", func() (bool, string) {
		got := countProcs(t, sb, "434300[0-9]")
		k, _ := strconv.Atoi(got)
		return k >= n, fmt.Sprintf("%s processes of %d leftovers", got, n)
	})
	if err := k.KillAll(ctxFor(t)); err != nil {
		t.Fatalf("KillAll: %v", err)
	}
	if got := countProcs(t, sb, "434300[0-9]"); got != "0" {
		r := exec(t, sb, sandbox.ExecRequest{Script: "for p in /proc/[0-9]*; do echo \"$p $(tr '\\0' ' ' <$p/cmdline)\"; done"})
		t.Fatalf("%s leftovers survive KillAll:\n%s", got, r.Stdout)
	}
	r := exec(t, sb, sandbox.ExecRequest{Script: "echo alive"})
	if strings.TrimSpace(string(r.Stdout)) != "alive" {
		t.Fatalf("after KillAll: %q %q", r.Stdout, r.Stderr)
	}
	sh2, err := sandbox.NewShell(ctxFor(t), sb)
	if err != nil {
		t.Fatalf("NewShell after KillAll: %v", err)
	}
	defer sh2.Close()
	if r := run(t, sh2, "echo again"); !strings.Contains(string(r.Stdout), "again") {
		t.Fatalf("shell after KillAll: %q", r.Stdout)
	}
	// A closed sandbox says so.
	if err := sb.Close(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	if err := k.KillAll(ctxFor(t)); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("KillAll after Close: %v, want ErrClosed", err)
	}
}

// diskQuota checks Limits.DiskBytes: a sandbox that writes more than it
// may into its workspace gets an error (ENOSPC) and stays usable, while
// writing less works.
func (s *suite) diskQuota(t *testing.T) {
	if s.cfg.noDisk {
		t.Skip("the backend bounds no disk here (WithoutDiskQuota)")
	}
	sb := s.create(t, func(sp *sandbox.Spec) {
		sp.Limits.DiskBytes = 64 << 20
		sp.Limits.MemoryBytes = 512 << 20
	})
	r := exec(t, sb, sandbox.ExecRequest{Script: "dd if=/dev/zero of=small bs=1M count=16 2>&1 && echo wrote", Timeout: Timeout})
	if !strings.Contains(string(r.Stdout), "wrote") {
		t.Fatalf("16 MiB under a 64 MiB quota: %q %q", r.Stdout, r.Stderr)
	}
	r = exec(t, sb, sandbox.ExecRequest{Script: "dd if=/dev/zero of=big bs=1M count=128 2>&1; echo rc=$?", Timeout: Timeout})
	if strings.Contains(string(r.Stdout), "rc=0") {
		t.Errorf("128 MiB under a 64 MiB quota was written: %q", r.Stdout)
	}
	exec(t, sb, sandbox.ExecRequest{Script: "rm -f big"})
	if r := exec(t, sb, sandbox.ExecRequest{Script: "echo alive > after && cat after"}); strings.TrimSpace(string(r.Stdout)) != "alive" {
		t.Errorf("after the quota was hit: %q %q", r.Stdout, r.Stderr)
	}
}
