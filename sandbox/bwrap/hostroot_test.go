package bwrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/bwrap"
)

// A sandbox without an image sees the host's system read-only and nothing
// else of it: no other sandbox's files (docker's, other bwrap state
// directories), no secrets, no home, no checkout, and none of the paths
// the backend was told to hide (the served task folders, the store).
func TestHostView(t *testing.T) {
	hidden, err := os.MkdirTemp("/opt", "nextstate-hidden-")
	if err != nil {
		t.Skipf("cannot make a directory in /opt: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(hidden) })
	if err := os.WriteFile(filepath.Join(hidden, "solution.sh"), []byte("echo secret-solution\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(hidden, "..", filepath.Base(hidden)+".txt")
	if err := os.WriteFile(secretFile, []byte("secret-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secretFile) })
	home, _ := os.UserHomeDir()
	marker := filepath.Join(home, ".nextstate-hostview-marker")
	if err := os.WriteFile(marker, []byte("host home\n"), 0o600); err == nil {
		t.Cleanup(func() { os.Remove(marker) })
	}
	wd, _ := os.Getwd()

	b, err := bwrap.Open(context.Background(), sandbox.Options{Owner: testOwner + "-view", Dir: t.TempDir(),
		Hide: []string{hidden, filepath.Clean(secretFile)}})
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("bwrap backend unavailable here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	sb, err := b.Create(t.Context(), sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())

	probe := func(script string) string {
		t.Helper()
		r, err := sb.Exec(t.Context(), sandbox.ExecRequest{Script: script})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(r.Stdout))
	}
	for _, p := range []string{"/var/lib/docker", "/run/docker.sock", "/var/run/docker.sock", "/var/log", "/var/backups",
		"/home", "/srv", "/mnt", "/work", wd, marker, filepath.Join(hidden, "solution.sh")} {
		if got := probe("[ -e '" + p + "' ] && echo visible || echo absent"); got != "absent" {
			t.Errorf("%s is %s in the sandbox", p, got)
		}
	}
	for _, p := range []string{"/etc/shadow", "/etc/gshadow", secretFile} {
		if got := probe("cat '" + p + "' 2>/dev/null | wc -c"); got != "0" {
			t.Errorf("%s has %s bytes in the sandbox, want it masked", p, got)
		}
	}
	if got := probe("ls /etc/ssl/private 2>/dev/null | wc -l"); got != "0" {
		t.Errorf("/etc/ssl/private lists %s entries", got)
	}
	// The system is there, read-only; /var/tmp is the sandbox's own.
	if got := probe("test -x /usr/bin/python3 && echo ok"); got != "ok" {
		t.Errorf("/usr/bin/python3: %q", got)
	}
	if got := probe("touch /usr/x /etc/x 2>/dev/null && echo wrote || echo refused"); got != "refused" {
		t.Errorf("writing the system: %s", got)
	}
	if got := probe("echo hi > /var/tmp/x && cat /var/tmp/x"); got != "hi" {
		t.Errorf("/var/tmp: %q", got)
	}
	// The kernel's settings stay the host's: no sysctl, no sysrq.
	for _, p := range []string{"/proc/sys/vm/swappiness", "/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger"} {
		if got := probe("[ -e " + p + " ] || { echo absent; exit; }; v=$(cat " + p + " 2>/dev/null); " +
			"echo \"$v\" > " + p + " 2>/dev/null && echo wrote || echo refused"); got == "wrote" {
			t.Errorf("%s is writable from the sandbox", p)
		}
	}
	if got := probe("cat /proc/keys 2>/dev/null | wc -c"); got != "0" {
		t.Errorf("/proc/keys shows %s bytes", got)
	}
	if got := probe("grep CapEff /proc/self/status"); !strings.HasSuffix(got, "0000000000000000") {
		t.Errorf("capabilities: %s", got)
	}

	// A hidden path that would hide the system is refused at Open.
	if _, err := bwrap.Open(context.Background(), sandbox.Options{Dir: t.TempDir(), Hide: []string{"/usr"}}); err == nil ||
		!strings.Contains(err.Error(), "system directory") {
		t.Errorf("Hide /usr: %v", err)
	}
}
