package confine

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMode(t *testing.T) {
	for _, c := range []struct {
		value string
		hide  []string
		says  string // "" : no error
	}{
		{value: None},
		{value: "docker", says: "want auto, bwrap or none"},
		{value: Bwrap, hide: []string{"relative"}, says: "not absolute"},
		{value: Auto, hide: []string{"/usr"}, says: "system directory"},
	} {
		if c.value != None && !Works() {
			continue
		}
		_, err := Mode(c.value, "tests", c.hide)
		if c.says == "" && err != nil || c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)) {
			t.Errorf("Mode(%q, %q): %v, want an error saying %q", c.value, c.hide, err, c.says)
		}
	}
	if m, err := Mode("", "tests", nil); err != nil || m != map[bool]string{true: Bwrap, false: None}[Works()] {
		t.Errorf("Mode(\"\"): %s %v, want bwrap where it works, else none", m, err)
	}
}

// TestCommand: Spec.Env is the whole environment, Spec.ShareNet keeps the
// host's network namespace (and only it), Spec.Dir is the working
// directory, a Dirs entry is writable, and the process is uid UID.
func TestCommand(t *testing.T) {
	if !Works() {
		t.Skip("bubblewrap is missing or cannot make namespaces here")
	}
	t.Setenv("NEXTSTATE_CONFINE_TEST_SECRET", "the server's")
	dir := t.TempDir()
	for _, share := range []bool{false, true} {
		argv, err := Command(Spec{Dirs: []string{dir}, Dir: dir, ShareNet: share, Env: []string{"A=b=c", "PATH=/usr/bin:/bin"}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(argv[0], append(argv[1:], "/bin/sh", "-c",
			`env | sort | tr '\n' ' '; echo; pwd; id -u; readlink /proc/self/ns/net /proc/self/ns/pid; touch written`)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		hostNet, _ := os.Readlink("/proc/self/ns/net")
		hostPID, _ := os.Readlink("/proc/self/ns/pid")
		if len(lines) != 5 || !strings.HasPrefix(lines[0], "A=b=c PATH=/usr/bin:/bin PWD=") || strings.Contains(lines[0], "SECRET") ||
			lines[1] != dir || lines[2] != "1000" || (lines[3] == hostNet) != share || lines[4] == hostPID {
			t.Errorf("ShareNet %v: got\n%s\nwant the environment A, PATH (and the shell's PWD), the directory %s, uid 1000, "+
				"the host's network namespace only when shared (%s), a PID namespace of its own", share, out, dir, hostNet)
		}
		if _, err := os.Stat(dir + "/written"); err != nil {
			t.Errorf("the bound directory is not writable: %v", err)
		}
	}
}
