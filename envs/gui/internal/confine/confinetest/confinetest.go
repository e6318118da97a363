// Package confinetest holds the escape checks that the GUI kinds' tests
// run against their confined processes (package confine): a probe script
// run inside, which writes what it could reach to a file the test reads
// back, and checks of a running process from the host's side.
package confinetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Plant makes files that no confined process may see and returns their
// paths: one in the host's /root (when the test may write there), one in
// a temporary directory of the test's, and the test's working directory
// (the project's checkout). They are removed when the test ends.
func Plant(t testing.TB) []string {
	t.Helper()
	name := "nextstate-escape-" + strconv.Itoa(os.Getpid())
	var out []string
	if f := filepath.Join("/root", name); os.WriteFile(f, []byte("host secret\n"), 0o600) == nil {
		t.Cleanup(func() { os.Remove(f) })
		out = append(out, f)
	}
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte("host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out = append(out, f)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return append(out, wd)
}

// hostNS reads the test process's namespace of kind (pid, net, ...).
func hostNS(t testing.TB, kind string) string {
	t.Helper()
	ns, err := os.Readlink("/proc/self/ns/" + kind)
	if err != nil {
		t.Skipf("no /proc/self/ns/%s: %v", kind, err)
	}
	return ns
}

// Done is the probe's last line.
const Done = "probe done"

// Probe returns a sh script to run inside a confined process. It writes
// to out one line "escape: <what>" for each way out it finds, then Done.
// It looks for the planted paths (Plant), the docker socket and
// /var/lib/docker, the host's /root and /home, a readable /etc/shadow,
// capabilities, a writable /usr, / or /proc/sys, privileges that setuid
// programs could raise, and the host's PID, IPC, mount and (unless
// shareNet) network namespaces; extra are more lines of sh, run before
// Done, that print only what they find wrong.
func Probe(t testing.TB, out string, planted []string, shareNet bool, extra ...string) string {
	t.Helper()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var b strings.Builder
	fmt.Fprintf(&b, "exec >%s 2>&1\n", q(out))
	for _, p := range append(planted, "/run/docker.sock", "/var/run/docker.sock", "/var/lib/docker") {
		fmt.Fprintf(&b, "[ -e %[1]s ] && echo %[2]s\n", q(p), q("escape: "+p+" is visible"))
	}
	b.WriteString(`for d in /root /home; do [ -n "$(ls -A $d 2>/dev/null)" ] && echo "escape: the host's $d is visible"; done
[ -s /etc/shadow ] && echo "escape: /etc/shadow is readable"
grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status || echo "escape: capabilities $(grep ^CapEff /proc/self/status)"
grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/self/status || echo "escape: setuid programs can raise privileges"
f=/usr/.nextstate-escape-$$; touch $f 2>/dev/null && { rm -f $f; echo "escape: /usr is writable"; }
f=/.nextstate-escape-$$; touch $f 2>/dev/null && { rm -f $f; echo "escape: / is writable"; }
v=$(cat /proc/sys/vm/swappiness) && (echo "$v" >/proc/sys/vm/swappiness) 2>/dev/null && echo "escape: /proc/sys is writable"
`)
	kinds := []string{"pid", "ipc", "mnt"}
	if !shareNet {
		kinds = append(kinds, "net")
	}
	for _, k := range kinds {
		fmt.Fprintf(&b, "[ \"$(readlink /proc/self/ns/%s)\" = %s ] && echo %s\n", k, q(hostNS(t, k)), q("escape: the host's "+k+" namespace"))
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "echo %s\n", q(Done))
	return b.String()
}

// Read waits (at most a minute) for the probe's output file out to end
// with Done and fails t with each other line: an escape, or a check that
// could not run.
func Read(t testing.TB, out string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(out)
		s := strings.TrimSpace(string(b))
		if strings.HasSuffix(s, Done) {
			for _, l := range strings.Split(s, "\n") {
				if l != Done {
					t.Errorf("probe: %s", l)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the probe did not finish within a minute; its output %s:\n%s", out, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CheckProcess checks a running confined process from the host: it has no
// capabilities, runs in a session other than the test's (so it cannot
// push input into the test's terminal), and its root (/proc/<pid>/root)
// holds none of the planted paths, no docker socket, no /var/lib/docker
// and an empty /etc/shadow. It fails t with what it finds, naming the
// process what.
func CheckProcess(t testing.TB, pid int, what string, planted []string) {
	t.Helper()
	proc := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(proc + "/status")
	if err != nil {
		t.Fatalf("%s (pid %d): %v", what, pid, err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok && strings.Trim(strings.TrimSpace(v), "0") != "" {
			t.Errorf("%s (pid %d) has capabilities: CapEff %s", what, pid, strings.TrimSpace(v))
		}
	}
	if sid, own := session(proc), session("/proc/self"); sid == 0 || sid == own {
		t.Errorf("%s (pid %d) is in the test's session %d", what, pid, sid)
	}
	root := proc + "/root"
	for _, p := range append(planted, "/run/docker.sock", "/var/lib/docker", "/root/.bashrc") {
		if _, err := os.Lstat(root + p); err == nil {
			t.Errorf("%s (pid %d) sees %s", what, pid, p)
		}
	}
	if fi, err := os.Stat(root + "/etc/shadow"); err == nil && fi.Size() > 0 {
		t.Errorf("%s (pid %d) sees the host's /etc/shadow", what, pid)
	}
}

// session reads the session id of the process at proc (0: unknown).
func session(proc string) int {
	stat, err := os.ReadFile(proc + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid pgrp session ...: comm may hold spaces.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 4 {
		return 0
	}
	sid, _ := strconv.Atoi(f[3])
	return sid
}
