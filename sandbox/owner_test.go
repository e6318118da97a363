package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// lease returns an owner id of NewOwnerID's form for pid and start.
func lease(host string, pid int, start uint64) string {
	return host + "-" + strconv.Itoa(pid) + "-" + strconv.FormatUint(start, 10) + "-0123abcd"
}

func selfStart(t *testing.T) uint64 {
	t.Helper()
	st, _, err := ProcStartTime(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	return st
}

func TestNewOwnerIDForm(t *testing.T) {
	start := selfStart(t)
	a, b := NewOwnerID(), NewOwnerID()
	if a == b {
		t.Errorf("two ids alike: %s", a)
	}
	for _, o := range []string{a, b} {
		if !ValidOwner(o) {
			t.Errorf("%q is not a valid owner", o)
		}
		host, pid, st, ok := parseOwner(o)
		if !ok || host != ownerHost() || pid != os.Getpid() || st != start {
			t.Errorf("%q parses as %q %d %d %v; want %q %d %d", o, host, pid, st, ok, ownerHost(), os.Getpid(), start)
		}
	}
	want := ownerHost() + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(start, 10) + "-"
	if !strings.HasPrefix(a, want) || len(a) != len(want)+8 {
		t.Errorf("NewOwnerID %q, want %s and 8 hex digits", a, want)
	}
}

func TestOwnerAlive(t *testing.T) {
	start := selfStart(t)
	if !procComplete() {
		t.Skip("/proc hides processes here")
	}
	exited := exec.Command("true")
	if err := exited.Start(); err != nil {
		t.Fatal(err)
	}
	// Its start time, read while it cannot be reaped yet (a zombie at
	// worst); then it is waited for and gone.
	exitedStart, _, err := ProcStartTime(exited.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	exited.Wait()
	maxPID := 4194304
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		maxPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	for _, c := range []struct {
		name         string
		owner        string
		alive, known bool
	}{
		{"self", NewOwnerID(), true, true},
		{"self by hand", lease(ownerHost(), os.Getpid(), start), true, true},
		{"an exited process", lease(ownerHost(), exited.Process.Pid, exitedStart), false, true},
		{"a pid above pid_max", lease(ownerHost(), maxPID+1, start), false, true},
		{"a reused pid", lease(ownerHost(), os.Getpid(), start+1), false, true},
		{"pid 1 with another start time", lease(ownerHost(), 1, start+12345), false, true},
		{"another host", lease("some-other-host", os.Getpid(), start), false, false},
		{"another host, dead", lease("some-other-host", maxPID+1, start), false, false},
		{"a plain name", "nextstate", false, false},
		{"the old random form", "ns0123456789ab", false, false},
		{"a name with dashes", "ns-prod-1", false, false},
		{"no random part", ownerHost() + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(start, 10), false, false},
		{"a short random part", lease(ownerHost(), os.Getpid(), start) + "0", false, false},
		{"pid 0", lease(ownerHost(), 0, start), false, false},
		{"empty", "", false, false},
	} {
		alive, known := OwnerAlive(c.owner)
		if alive != c.alive || known != c.known {
			t.Errorf("%s: OwnerAlive(%q) = %v, %v; want %v, %v", c.name, c.owner, alive, known, c.alive, c.known)
		}
	}
}

func TestSanitizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"vm":                              "vm",
		"ip-10-0-0-1.ec2.internal":        "ip-10-0-0-1-ec2-internal",
		"":                                "localhost",
		"a_b":                             "a-b",
		"averyveryveryverylonghostname01": "averyveryveryverylonghos",
	} {
		if got := sanitizeHost(in); got != want {
			t.Errorf("sanitizeHost(%q) = %q, want %q", in, got, want)
		}
	}
	long := lease(sanitizeHost(strings.Repeat("h", 64)), 4194304, ^uint64(0))
	if !ValidOwner(long) {
		t.Errorf("the longest id %q (%d) is not valid", long, len(long))
	}
}

func TestValidOwner(t *testing.T) {
	for o, want := range map[string]bool{
		"ns-prod-1": true, "a": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "a_b": false, "a/b": false, "a b": false, "a.b": false,
	} {
		if got := ValidOwner(o); got != want {
			t.Errorf("ValidOwner(%q) = %v", o, got)
		}
	}
}
