// Package confine runs the GUI kinds' processes (desktop-v1's setup
// commands, apps and evaluators; the web kinds' browser) under
// bubblewrap, as package sandbox/bwrap confines terminals: a root of its
// own on a tmpfs, read-only, holding the host's system view
// (bwrap.SystemArgs: usr, bin, sbin, lib*, etc and opt; of /var only
// dpkg's database and font caches; the host's secrets and the
// "sandbox.hide" paths masked), a /proc of the process's own PID
// namespace with /proc/sys read-only, a minimal /dev (with /dev/shm),
// empty /run and /tmp, and only the host paths a Spec names bound in.
// Never the host's /root or /home, a checkout, /run (the docker socket),
// /var/lib/docker or another session's files.
//
// The process runs as uid and gid UID (1000) in a user namespace of its
// own, mapped to the server's user outside, with no capabilities
// (--cap-drop ALL, and no new privileges: setuid programs do not raise
// it), unable to make further user namespaces where bwrap and the kernel
// allow that (bwrap 0.8's --disable-userns); in new PID, IPC, UTS, cgroup
// and, unless Spec.ShareNet, network namespaces; in a session of its own
// (so it cannot push input into the server's terminal); and it dies with
// the process that started it.
package confine

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox/bwrap"
)

// The values of a kind's sandbox setting.
const (
	Auto  = "auto"  // bwrap where it works, else none with a warning (the default)
	Bwrap = "bwrap" // bwrap, or the kind fails to configure
	None  = "none"  // unsandboxed: the server's user, the host's files
)

// Mode resolves a sandbox setting: "" and "auto" give Bwrap where Works,
// else None (logging that what, such as "desktop apps", run
// unsandboxed); "bwrap" needs Works; "none" is None. Under Bwrap it also
// checks hide, the paths Spec.Hide will mask (bwrap.SystemArgs refuses one
// that would hide a whole system directory).
func Mode(value, what string, hide []string) (string, error) {
	switch value {
	case None:
		return None, nil
	case Bwrap:
		if !Works() {
			return "", fmt.Errorf("sandbox %q: bubblewrap (bwrap) is missing or cannot make namespaces here", value)
		}
	case "", Auto:
		if !Works() {
			slog.Warn("bubblewrap is missing or cannot make namespaces: " + what + " run unsandboxed, as the server's user, seeing the host's files")
			return None, nil
		}
	default:
		return "", fmt.Errorf("sandbox %q: want auto, bwrap or none", value)
	}
	if _, err := bwrap.SystemArgs(hide); err != nil {
		return "", fmt.Errorf("sandbox %q: %w", Bwrap, err)
	}
	return Bwrap, nil
}

// Spec is what a confined process sees beyond the system view. Paths are
// the host's and appear at the same paths inside.
type Spec struct {
	// Hide are further host paths to mask (the "sandbox.hide" setting).
	Hide []string
	// Dirs are host directories bound read-write (a home, a profile).
	Dirs []string
	// Files are host files bound read-only (an Xauthority).
	Files []string
	// Sockets are unix socket files bound in (an X display's).
	Sockets []string
	// ShareNet keeps the host's network namespace (the browser reaches
	// the page server on loopback); otherwise the process has only a
	// loopback of its own.
	ShareNet bool
	// Env, when not nil, is the process's whole environment (KEY=VALUE);
	// nil keeps the environment the bwrap command is given.
	Env []string
	// Dir is the working directory inside ("" leaves bwrap's default).
	Dir string
}

// Command returns the command line that runs a program confined by s:
// bwrap's path and arguments, ending with "--"; append the program's
// argv.
func Command(s Spec) ([]string, error) {
	ns := namespaces()
	if ns == nil {
		return nil, fmt.Errorf("confine: bubblewrap (bwrap) is missing or cannot make namespaces here")
	}
	a, err := args(s, ns)
	if err != nil {
		return nil, err
	}
	return append([]string{bwrapPath}, a...), nil
}

// args returns bwrap's arguments for s with the namespace options ns.
func args(s Spec, ns []string) ([]string, error) {
	sys, err := bwrap.SystemArgs(s.Hide)
	if err != nil {
		return nil, fmt.Errorf("confine: %w", err)
	}
	args := append([]string{"--tmpfs", "/"}, sys...)
	args = append(args, bwrap.ProcArgs()...)
	args = append(args, "--dev", "/dev", "--tmpfs", "/run", "--tmpfs", "/tmp")
	for _, d := range s.Dirs {
		args = append(args, "--bind", d, d)
	}
	for _, f := range s.Files {
		args = append(args, "--ro-bind", f, f)
	}
	for _, so := range s.Sockets {
		args = append(args, "--bind", so, so)
	}
	args = append(args, "--remount-ro", "/")
	args = append(args, ns...)
	if s.ShareNet {
		args = append(args, "--share-net")
	}
	args = append(args, "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--hostname", "sandbox")
	if s.Env != nil {
		args = append(args, "--clearenv")
		for _, kv := range s.Env {
			k, v, _ := strings.Cut(kv, "=")
			args = append(args, "--setenv", k, v)
		}
	}
	if s.Dir != "" {
		args = append(args, "--chdir", s.Dir)
	}
	return append(args, "--"), nil
}

// Works reports whether bubblewrap confines a trivial command here as
// Command would.
func Works() bool { return namespaces() != nil }

// bwrapPath is bwrap's path, set by namespaces.
var bwrapPath string

// UID is the uid and gid of a confined process inside its user
// namespace, mapped to the server's outside (root's, when it runs as
// root): files it writes in a bound directory are the server's, and it is
// not root inside, where programs such as xterm expect a root to hold
// capabilities.
const UID = 1000

// nsOptions are the namespace options to try, the strictest first: every
// namespace, and no further user namespaces inside (bwrap 0.8 and a
// kernel that lets it); then every namespace, with a user namespace.
var nsOptions = [][]string{
	{"--unshare-all", "--unshare-user", "--disable-userns", "--uid", strconv.Itoa(UID), "--gid", strconv.Itoa(UID)},
	{"--unshare-all", "--unshare-user", "--uid", strconv.Itoa(UID), "--gid", strconv.Itoa(UID)},
}

// namespaces returns the first of nsOptions under which bwrap runs
// /bin/true confined (nil: none, or no bwrap), found once.
var namespaces = sync.OnceValue(func() []string {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil
	}
	bwrapPath = path
	for _, ns := range nsOptions {
		a, err := args(Spec{}, ns)
		if err != nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = exec.CommandContext(ctx, path, append(a, "/bin/true")...).Run()
		cancel()
		if err == nil {
			return ns
		}
	}
	return nil
})
