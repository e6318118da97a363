package gobuild

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command past its timeout is killed with its whole process group: a
// background child does not outlive it.
func TestRunCmdTimeoutKillsGroup(t *testing.T) {
	res, err := runCmd(context.Background(), command{
		Args:    []string{"sh", "-c", "sleep 30 & echo $!; wait"},
		Timeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Fatalf("not timed out: %+v", res)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	if err != nil {
		t.Fatalf("child pid: %q", res.Stdout)
	}
	deadline := time.Now().Add(time.Minute)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("background child %d still runs after the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A caller's cancelled context is an error, not a timeout.
func TestRunCmdCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := runCmd(ctx, command{Args: []string{"sleep", "30"}, Timeout: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's error", err)
	}
}

func TestRunCmdExitAndEnv(t *testing.T) {
	res, err := runCmd(context.Background(), command{
		Args: []string{"sh", "-c", `echo "$A-${HOME:+home}-${GOFLAGS:-unset}"; echo oops >&2; exit 3`},
		Env:  map[string]string{"A": "x", "GOFLAGS": ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || strings.TrimSpace(string(res.Stdout)) != "x-home-unset" || !strings.Contains(string(res.Stderr), "oops") {
		t.Errorf("result: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if _, err := mustRun(context.Background(), command{Args: []string{"sh", "-c", "echo bad >&2; exit 1"}}); err == nil ||
		!strings.Contains(err.Error(), "exit 1: bad") {
		t.Errorf("mustRun: %v", err)
	}
}

// Offline commands have no route out, but a loopback interface.
func TestOfflineHasOnlyLoopback(t *testing.T) {
	if offlineWrapper() == nil {
		t.Skip("bwrap cannot make a network namespace here: tests run with the host's network")
	}
	res, err := runCmd(context.Background(), command{Args: []string{"cat", "/proc/net/dev"}, Offline: true, Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	var ifaces []string
	for _, line := range strings.Split(string(res.Stdout), "\n")[2:] {
		if name, _, ok := strings.Cut(line, ":"); ok {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	if len(ifaces) != 1 || ifaces[0] != "lo" {
		t.Errorf("interfaces offline: %v, want only lo", ifaces)
	}
}
