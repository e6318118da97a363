// Package bwrap is the daemon-less sandbox backend, registered as "bwrap":
// each sandbox is a bubblewrap (bwrap) process tree in its own PID, mount,
// UTS, IPC and (unless Spec.Network) network namespaces, with no
// capabilities, on a read-only root.
//
// # Layout
//
// The root is a read-only tmpfs. With no Spec.Image it holds the host's
// system view (SystemArgs, shared with the GUI envs' app sandboxes):
//
//   - read-only: usr, bin, sbin, lib*, etc and opt, the programs, libraries
//     and configuration tasks run with;
//   - of /var only dpkg's database and the font caches (read-only), an empty
//     /var/tmp of the sandbox's own, and /var/run and /var/lock pointing at
//     its /run; never /var/lib/docker (other sandboxes' files), /var/log or
//     /var/backups;
//   - never home, root, run, tmp, mnt, media, srv, boot, or any other
//     top-level directory of the host (a checkout under /work, the
//     server's store);
//   - the host's secrets masked (empty): /etc/shadow and gshadow, TLS and
//     SSH private keys, docker's, containerd's and kubernetes' configuration;
//   - and the paths of Options.Hide masked the same way (serve hides the
//     task folders it serves and its store: a --tasks folder under /opt
//     is not readable from a sandbox).
//
// When Spec.Image names a directory, the root holds every top-level entry
// of that rootfs instead. /proc, /dev and /run are the sandbox's own, /proc
// hardened (ProcArgs: /proc/sys and sysrq-trigger read-only, the host's
// keys and timers empty).
// Three places are writable, each a directory of the sandbox's state
// directory (Options.Dir/<owner>_<sandbox id>, default
// $TMPDIR/nextstate-bwrap): the workspace at Spec.Workdir (default
// /workspace), /tmp and /root (HOME). They lie in a tmpfs of
// Limits.DiskBytes mounted on the state directory's disk/ (see
// DiskQuota), so a sandbox that fills them gets ENOSPC; its pages are
// memory, and count against Limits.MemoryBytes under cgroups. Where this
// process cannot mount (no CAP_SYS_ADMIN), they are plain directories and
// the disk is not bounded. With an image, the image's Workdir and /root
// contents are copied in at Create. The state directory also holds
// labels.json (the sandbox's labels) and pid (the host pid and start time
// of its process tree), which is what the reaping reads (see Owners and
// reaping). A Workdir inside a bound system directory (/usr/src/app) is
// refused: there is no mount point to make there.
//
// Spec.Mounts are bound after these (--bind, or --ro-bind when read-only),
// parents before children. A Source must exist on this host; a Target in
// a directory bound read-only from the host or the rootfs (/usr/...) must
// exist there, while one elsewhere (/mnt/x, /opt-like new top-level
// directories, inside the workspace) is made. CopyIn writes into writable
// mounts (the host directory itself) and refuses read-only ones; CopyOut
// reads from any. Snapshot and Restore leave mounts alone.
//
// Commands run as root without capabilities (bwrap --cap-drop ALL; setpriv
// with an empty bounding set for entered processes), so they cannot
// remount, mount or change the host's files, but can read what the host's
// root may read in the system view.
//
// # Processes
//
// Create starts one long-lived bwrap per sandbox. Its PID 1 is the
// keeper itself (bwrap --as-pid-1 running sandbox.KeeperLoop in bash):
// it ignores every signal it can, and the kernel keeps SIGKILL and
// SIGSTOP from reaching a namespace's init from inside, so nothing in the
// sandbox can end it; it reaps the orphans it inherits, and it exits when
// its stdin, a pipe held by this process, closes, so a sandbox dies with
// its server (bwrap --die-with-parent, and the pipe) and leaves its state
// directory and cgroup for the next backend's Open to reap.
// Exec and Start enter that sandbox with nsenter (mount, PID, UTS, IPC and
// network namespaces; root and working directory of the sandbox) and
// setpriv (drop capabilities): measured here, a command through nsenter
// costs about 4 ms against about 7 ms for a fresh `bwrap ... bash -c`, and
// it shares the sandbox's process tree, /tmp and loopback network with the
// shell, as a container does. Every command is its own session and process
// group; at its Timeout the whole group is killed. KillAll
// (sandbox.Killer) kills every process of the sandbox's PID namespace but
// the keeper, whatever its group or session: first all at once, with
// kill -9 -1 from inside (so that none sees another end and acts before
// its own), then by a sweep of the namespace until none is left. A sandbox
// whose process tree was killed from outside makes Exec, Start and the
// copies return sandbox.ErrGone.
//
// The backend needs root (nsenter, cgroups, the disk's mount) and the
// bwrap, nsenter and setpriv programs (Debian packages bubblewrap and
// util-linux); an image rootfs needs bash and setpriv. Without bwrap, Open
// returns an error wrapping sandbox.ErrUnavailable.
//
// # Limits
//
// Where the server's cgroup hierarchy is writable, each sandbox gets a child
// cgroup "nextstate_<owner>_<id>" of the server's own cgroup, and every
// process of the sandbox joins it before it starts:
//
//   - cgroup v2 (a unified hierarchy with the memory, pids and cpu
//     controllers delegated): memory.max and memory.swap.max=0, pids.max,
//     cpu.max. The limits hold for the sandbox as a whole.
//   - cgroup v1 (memory, pids and cpu hierarchies, as on this project's
//     machines): memory.limit_in_bytes (and memsw where swap is accounted),
//     pids.max, cpu.cfs_quota_us. The same guarantees.
//
// A memory hog is killed by the kernel's OOM killer inside the cgroup (the
// sandbox's init is exempt); a fork bomb gets EAGAIN at pids.max; CPU is
// throttled to Limits.CPUs.
//
// Without a writable cgroup hierarchy (or with WithoutCgroups), only
// memory is bounded, by an rlimit set on every process (prlimit):
// RLIMIT_AS = Limits.MemoryBytes bounds each process's address space, not
// the sandbox's total, so N processes may use N times it. PIDs and CPUs
// are not enforced: the kernel exempts uid 0 from RLIMIT_NPROC whatever
// its capabilities, and sandboxes run as uid 0. A fork bomb then runs
// until its command's timeout kills its process group (or Restore or
// Close kills the sandbox), bounded only by the host's pid_max. Use
// cgroups (or the docker backend) where agents are not trusted.
// LimitsMode says which mode an opened backend uses.
//
// # Snapshots
//
// A Sandbox is a sandbox.Snapshotter: Snapshot copies the workspace, /tmp
// and /root into the state directory; Restore kills every process of the
// sandbox but its init (shells included: make a new Shell after it) and
// copies the saved trees back. Restoring a small workspace takes
// milliseconds, far less than a new sandbox with its image copied in.
//
// # Owners and reaping
//
// Options.Owner defaults to sandbox.NewOwnerID(), a lease on this process
// ("<hostname>-<pid>-<start time>-<random>"), so every backend has an
// owner of its own. The owner is in the name of every state directory
// (<owner>_<id>) and cgroup (nextstate_<owner>_<id>) and in labels.json's
// sandbox.LabelOwner. Open reaps by mark and sweep, before it returns:
// it lists the state directories under Options.Dir and the nextstate_
// cgroups under this process's cgroup, takes each one's owner (from
// labels.json, else from the name), and removes those of its own owner
// (an earlier run's, with an explicit owner) and those of every owner that
// sandbox.OwnerAlive knows (made on this host) and finds ended (a crashed
// server: its sandboxes died with it, but their directories and cgroups
// stayed). For each state directory it first kills the process group its
// pid file records, if that group's leader still runs with the recorded
// start time, then removes the directory; then it removes the cgroups,
// killing whatever is left in them. Resources of live owners (other
// backends, in this process or another) and of unknown owners (explicit
// ones, or another host's) are never touched, so backends open at once do
// not reap each other. Reap(ctx, owner) removes one owner's (every
// owner's for "") state directories and cgroups that no live sandbox of
// the Backend holds, alive or not. Processes that share a directory must
// not share an explicit owner: each one's Open would remove the other's
// sandboxes.
//
// # Concurrency
//
// Backend and Sandbox methods are safe for concurrent use. Restore or Close
// while an Exec runs ends that Exec's command.
package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

func init() {
	sandbox.Register("bwrap", func(ctx context.Context, opts sandbox.Options) (sandbox.Backend, error) {
		return Open(ctx, opts)
	})
}

// Option configures Open.
type Option func(*config)

type config struct{ noCgroups bool }

// WithoutCgroups makes the backend use the rlimit fallback even where
// cgroups are writable (to test it, or where cgroups belong to another
// manager).
func WithoutCgroups() Option { return func(c *config) { c.noCgroups = true } }

// DefaultDir is where state directories go when Options.Dir is empty.
func DefaultDir() string { return filepath.Join(os.TempDir(), "nextstate-bwrap") }

// Backend makes bwrap sandboxes.
type Backend struct {
	owner   string
	dir     string
	hide    []string // host paths masked in the system view (Options.Hide)
	bwrap   string
	nsenter string
	setpriv string
	prlimit string
	cg      *cgroups // nil: rlimits
	mode    string
	why     error // why cgroups are not used
	diskErr error // why sandboxes have no disk of their own; nil: they have

	mu     sync.Mutex
	live   map[string]*Sandbox
	closed bool
}

// Open opens the backend. Options.Owner defaults to sandbox.NewOwnerID();
// Options.Dir to DefaultDir. Hosts is ignored. Before it returns, it reaps
// its own owner's state directories and cgroups and those of every ended
// owner of this host (see Owners and reaping); a failure to reap is logged,
// not returned.
func Open(ctx context.Context, opts sandbox.Options, o ...Option) (*Backend, error) {
	var cfg config
	for _, f := range o {
		f(&cfg)
	}
	b := &Backend{owner: opts.Owner, dir: opts.Dir, hide: opts.Hide, live: map[string]*Sandbox{}}
	if b.owner == "" {
		b.owner = sandbox.NewOwnerID()
	}
	if !sandbox.ValidOwner(b.owner) {
		return nil, fmt.Errorf("bwrap: invalid owner %q (letters, digits and '-', at most 64)", b.owner)
	}
	if b.dir == "" {
		b.dir = DefaultDir()
	}
	var err error
	if b.bwrap, err = exec.LookPath("bwrap"); err != nil {
		return nil, fmt.Errorf("bwrap: %w: bwrap is not installed (Debian package bubblewrap)", sandbox.ErrUnavailable)
	}
	for _, t := range []struct {
		dst  *string
		name string
	}{{&b.nsenter, "nsenter"}, {&b.setpriv, "setpriv"}, {&b.prlimit, "prlimit"}} {
		if *t.dst, err = exec.LookPath(t.name); err != nil {
			return nil, fmt.Errorf("bwrap: %w: %s is not installed (Debian package util-linux)", sandbox.ErrUnavailable, t.name)
		}
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("bwrap: %w: the bwrap backend needs root (nsenter, cgroups)", sandbox.ErrUnavailable)
	}
	if _, err := maskPaths(b.hide); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return nil, fmt.Errorf("bwrap: state directory: %w", err)
	}
	b.mode = ModeRlimit
	if cfg.noCgroups {
		b.why = errors.New("disabled by WithoutCgroups")
	} else if b.cg, b.why = detectCgroups(b.owner); b.cg != nil {
		b.mode = b.cg.mode
	} else {
		slog.Info("bwrap: no writable cgroups; limits fall back to rlimits", "reason", b.why)
	}
	if b.diskErr = probeDisk(b.dir); b.diskErr != nil {
		slog.Info("bwrap: sandboxes get no disk quota", "reason", b.diskErr)
	}
	if n, err := b.reapAtOpen(ctx); err != nil {
		slog.Warn("bwrap: reaping at open", "err", err)
	} else if n > 0 {
		slog.Info("bwrap: reaped orphans at open", "removed", n)
	}
	return b, nil
}

// reapAtOpen removes, by mark and sweep, the state directories and
// cgroups of this backend's own owner (an earlier run's, when the owner is
// explicit) and those of every owner that sandbox.OwnerAlive knows and
// finds ended (a crashed process of this host). Live and unknown owners'
// are kept.
func (b *Backend) reapAtOpen(ctx context.Context) (int, error) {
	return b.sweep(ctx, func(owner string) bool {
		if owner == b.owner {
			return true
		}
		alive, known := sandbox.OwnerAlive(owner)
		return known && !alive
	})
}

// Name implements sandbox.Backend.
func (b *Backend) Name() string { return "bwrap" }

// Owner is the owner id that labels this backend's resources.
func (b *Backend) Owner() string { return b.owner }

// Dir is the directory that holds the state directories.
func (b *Backend) Dir() string { return b.dir }

// DiskQuota reports whether each sandbox's writable places are a tmpfs of
// Limits.DiskBytes, and why not when they are not.
func (b *Backend) DiskQuota() (bool, error) { return b.diskErr == nil, b.diskErr }

// LimitsMode says how limits are enforced: ModeCgroup2, ModeCgroup1 or
// ModeRlimit, and for ModeRlimit why cgroups are not used.
func (b *Backend) LimitsMode() (string, error) { return b.mode, b.why }

// hostEntries are the top-level host directories a Spec without an Image
// sees (read-only, see SystemArgs): a Workdir may not lie in them.
var hostEntries = map[string]bool{
	"usr": true, "bin": true, "sbin": true, "lib": true, "lib32": true, "lib64": true,
	"libx32": true, "etc": true, "opt": true, "var": true,
}

// skipImageEntries are the rootfs entries the sandbox provides itself.
var skipImageEntries = map[string]bool{"proc": true, "dev": true, "sys": true, "tmp": true, "run": true, "root": true}

// Create implements sandbox.Backend.
func (b *Backend) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	return b.create(ctx, spec)
}

// create makes a sandbox in phases: the spec's layout is checked
// (layoutOf), the state directory and its writable places are made
// (makePlaces), the limits applied (limitWrap), and the bwrap command line
// (bwrapArgs) started.
func (b *Backend) create(ctx context.Context, spec sandbox.Spec) (_ *Sandbox, err error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, sandbox.ErrClosed
	}
	lay, err := layoutOf(spec)
	if err != nil {
		return nil, err
	}
	limits := spec.Limits.Or(sandbox.DefaultLimits)

	s := &Sandbox{
		b:       b,
		id:      "bw" + sandbox.RandomID(5),
		spec:    spec,
		workdir: lay.workdir,
		binds:   lay.binds,
		done:    make(chan struct{}),
	}
	s.state = filepath.Join(b.dir, b.owner+"_"+s.id)
	s.labels = sandbox.MergeLabels(spec.Labels, map[string]string{sandbox.LabelOwner: b.owner})
	if err := os.Mkdir(s.state, 0o700); err != nil {
		return nil, fmt.Errorf("bwrap: state directory: %w", err)
	}
	defer func() {
		if err != nil {
			s.cleanup(context.Background())
		}
	}()
	if err := s.makePlaces(lay.rootDir, limits); err != nil {
		return nil, err
	}
	if err := s.writeLabels(); err != nil {
		return nil, err
	}
	if s.wrap, err = s.limitWrap(limits); err != nil {
		return nil, err
	}
	args, err := s.bwrapArgs(lay)
	if err != nil {
		return nil, err
	}
	if err := s.start(ctx, append(append(s.wrap, b.bwrap), args...)); err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, sandbox.ErrClosed
	}
	b.live[s.id] = s
	b.mu.Unlock()
	return s, nil
}

// layout is where a Spec puts things: its working directory (and that
// path's top-level entry), the root it reads (the host's "/" or an image
// rootfs) and its checked Mounts.
type layout struct {
	workdir, top, rootDir string
	binds                 []sandbox.Mount
}

// layoutOf checks a Spec's Workdir, Image and Mounts.
func layoutOf(spec sandbox.Spec) (layout, error) {
	workdir := spec.Workdir
	if workdir == "" {
		workdir = "/workspace"
	}
	workdir = filepath.Clean(workdir)
	if !filepath.IsAbs(workdir) || workdir == "/" {
		return layout{}, fmt.Errorf("bwrap: Workdir %q must be an absolute path below /", spec.Workdir)
	}
	lay := layout{workdir: workdir, top: strings.Split(workdir, "/")[1], rootDir: "/"}
	if spec.Image != "" {
		lay.rootDir = spec.Image
		if _, err := os.Stat(filepath.Join(lay.rootDir, "bin/sh")); err != nil {
			return layout{}, fmt.Errorf("bwrap: image %q is not a rootfs directory with /bin/sh: %w", spec.Image, err)
		}
	}
	switch top := lay.top; {
	case spec.Image == "" && hostEntries[top], top == "proc", top == "dev", top == "sys", top == "run":
		return layout{}, fmt.Errorf("bwrap: Workdir %s lies inside the sandbox's read-only /%s", workdir, top)
	}
	binds, err := checkMounts(spec, lay.rootDir, lay.top)
	if err != nil {
		return layout{}, err
	}
	lay.binds = binds
	return lay, nil
}

// makePlaces makes the sandbox's writable places in its state directory,
// in a disk of limits.DiskBytes where the backend can mount one: the
// working directory, /tmp and /root, the last two unless the working
// directory is one of them. An image's own /root (or working directory) is
// copied into its place.
func (s *Sandbox) makePlaces(rootDir string, limits sandbox.Limits) error {
	places := s.state
	if s.b.diskErr == nil {
		places = filepath.Join(s.state, diskDir)
		if err := os.Mkdir(places, 0o755); err != nil {
			return fmt.Errorf("bwrap: state directory: %w", err)
		}
		if err := mountDisk(places, limits.DiskBytes); err != nil {
			return err
		}
	}
	s.mounts = []mount{{s.workdir, filepath.Join(places, "workspace")}}
	if s.workdir != "/tmp" {
		s.mounts = append(s.mounts, mount{"/tmp", filepath.Join(places, "tmp")})
	}
	if s.workdir != "/root" {
		s.mounts = append(s.mounts, mount{"/root", filepath.Join(places, "root")})
	}
	for _, m := range s.mounts {
		perm := os.FileMode(0o755)
		if m.inside == "/tmp" {
			perm = 0o1777
		}
		if err := os.Mkdir(m.host, perm); err != nil {
			return fmt.Errorf("bwrap: state directory: %w", err)
		}
		_ = os.Chmod(m.host, perm)
		if s.spec.Image != "" && m.inside != "/tmp" {
			if fi, err := os.Stat(filepath.Join(rootDir, m.inside)); err == nil && fi.IsDir() {
				if err := copyTree(filepath.Join(rootDir, m.inside), m.host); err != nil {
					return fmt.Errorf("bwrap: image %s: copy %s: %w", s.spec.Image, m.inside, err)
				}
			}
		}
	}
	return nil
}

// limitWrap returns the argv prefix that applies limits to every process
// of the sandbox: a shell that joins its cgroups (made here) and execs the
// rest, or prlimit's address-space cap where there are no cgroups.
func (s *Sandbox) limitWrap(limits sandbox.Limits) ([]string, error) {
	b := s.b
	if b.cg == nil {
		return []string{b.prlimit, "--as=" + strconv.FormatInt(limits.MemoryBytes, 10), "--"}, nil
	}
	var err error
	if s.cg, err = b.cg.create(s.id, b.owner, limits); err != nil {
		return nil, err
	}
	files := s.cg.procsFiles()
	return append([]string{"/bin/sh", "-c", joinScript, "nextstate-join", strconv.Itoa(len(files))}, files...), nil
}

// bwrapArgs is the bwrap command line of the sandbox: the namespaces, the
// root (the host's system view, or the image rootfs read-only), /proc,
// /dev and /run, the writable places and the Spec's Mounts, then the
// keeper.
func (s *Sandbox) bwrapArgs(lay layout) ([]string, error) {
	args := []string{"--unshare-pid", "--unshare-uts", "--unshare-ipc"}
	if !s.spec.Network {
		args = append(args, "--unshare-net")
	}
	args = append(args, "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--hostname", "sandbox", "--info-fd", "3", "--tmpfs", "/")
	if s.spec.Image == "" {
		sys, err := SystemArgs(s.b.hide, lay.top)
		if err != nil {
			return nil, err
		}
		args = append(args, sys...)
	} else {
		root, err := rootArgs(lay.rootDir, func(n string) bool { return !skipImageEntries[n] && n != lay.top })
		if err != nil {
			return nil, fmt.Errorf("bwrap: root %s: %w", lay.rootDir, err)
		}
		args = append(args, root...)
	}
	args = append(args, ProcArgs()...)
	args = append(args, "--dev", "/dev", "--tmpfs", "/run")
	for _, m := range s.mounts {
		args = append(args, "--bind", m.host, m.inside)
	}
	for _, m := range s.binds {
		flag := "--bind"
		if m.ReadOnly {
			flag = "--ro-bind"
		}
		args = append(args, flag, m.Source, m.Target)
	}
	// The keeper is the namespace's PID 1 itself (--as-pid-1), so no
	// process of the sandbox can kill it (see sandbox.KeeperLoop).
	return append(args, "--remount-ro", "/", "--chdir", s.workdir, "--clearenv",
		"--setenv", "PATH", defaultPath, "--as-pid-1", "--",
		"bash", "-c", "echo ready; exec >/dev/null 2>&1\n"+sandbox.KeeperLoop), nil
}

// joinScript puts the shell into the cgroups listed after a count, then
// runs the rest of its arguments: every process of a sandbox starts inside
// its cgroup, before it can fork.
const joinScript = `n=$1; shift
while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done
exec "$@"`

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Reap implements sandbox.Backend: it removes the state directories and
// cgroups of owner that no live sandbox of this Backend holds, killing
// their process trees first. owner "" reaps every owner's. It does not ask
// whether owner is alive.
func (b *Backend) Reap(ctx context.Context, owner string) (int, error) {
	return b.sweep(ctx, func(o string) bool { return owner == "" || o == owner })
}

// sweep removes the state directories under the backend's directory, and
// the cgroups under the backend's cgroup, whose owner pick chooses and
// whose sandbox no live sandbox of this Backend is: for each directory it
// kills the process group its pid file records (when that still runs),
// then removes the directory; then it removes the cgroups, killing what is
// left in them. A directory's owner is the owner label of its labels.json
// (its name's, "<owner>_<id>", when that is missing); a cgroup's is its
// name's, "nextstate_<owner>_<id>". pick is asked once per owner. It
// reports how many state directories it removed.
func (b *Backend) sweep(ctx context.Context, pick func(owner string) bool) (int, error) {
	picked := map[string]bool{}
	choose := func(owner string) bool {
		p, ok := picked[owner]
		if !ok {
			p = pick(owner)
			picked[owner] = p
		}
		return p
	}
	held := func(id string) bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		_, ok := b.live[id]
		return ok
	}
	var errs []error
	ents, err := os.ReadDir(b.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("bwrap: reap: %w", err))
	}
	n := 0
	for _, e := range ents {
		o, id, ok := strings.Cut(e.Name(), "_")
		if !e.IsDir() || !ok || held(id) {
			continue
		}
		dir := filepath.Join(b.dir, e.Name())
		if l := readLabelOwner(dir); l != "" {
			o = l
		}
		if !choose(o) {
			continue
		}
		if pf, err := readPidFile(dir); err == nil {
			pf.kill()
		}
		unmountDisk(dir)
		if err := os.RemoveAll(dir); err != nil {
			if _, serr := os.Lstat(dir); !errors.Is(serr, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("bwrap: reap: %w", err))
				continue
			} // another reaper removed it meanwhile
		}
		n++
	}
	if b.cg != nil {
		for _, cg := range b.cg.orphans(choose, held) {
			if err := cg.remove(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return n, errors.Join(errs...)
}

// readLabelOwner returns the owner label of a state directory's
// labels.json; "" when it cannot be read.
func readLabelOwner(dir string) string {
	raw, err := os.ReadFile(filepath.Join(dir, "labels.json"))
	if err != nil {
		return ""
	}
	var l map[string]string
	if json.Unmarshal(raw, &l) != nil {
		return ""
	}
	return l[sandbox.LabelOwner]
}

// Close implements sandbox.Backend: it closes every sandbox it made.
func (b *Backend) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	live := make([]*Sandbox, 0, len(b.live))
	for _, s := range b.live {
		live = append(live, s)
	}
	b.mu.Unlock()
	var errs []error
	for _, s := range live {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}

func (b *Backend) forget(id string) {
	b.mu.Lock()
	delete(b.live, id)
	b.mu.Unlock()
}

// pidFile is what the state directory's pid file holds: enough to kill
// the sandbox's process tree after a crash, and not a process that reused
// its pid.
type pidFile struct {
	PGID  int    `json:"pgid"`  // the outer bwrap, leader of its process group
	PID1  int    `json:"pid1"`  // the sandbox's pid 1, as the host sees it
	Start uint64 `json:"start"` // the outer bwrap's start time (clock ticks after boot)
}

func readPidFile(dir string) (pidFile, error) {
	var pf pidFile
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		return pf, err
	}
	err = json.Unmarshal(b, &pf)
	return pf, err
}

// kill kills the process tree if its leader still runs.
func (pf pidFile) kill() {
	if pf.PGID <= 0 {
		return
	}
	if st, err := procStart(pf.PGID); err != nil || st != pf.Start {
		return
	}
	_ = syscall.Kill(pf.PID1, syscall.SIGKILL) // the PID namespace dies with its pid 1
	_ = syscall.Kill(-pf.PGID, syscall.SIGKILL)
}

// procStart reads a process's start time; an error means it is gone (or a
// zombie).
func procStart(pid int) (uint64, error) {
	st, zombie, err := sandbox.ProcStartTime(pid)
	if err == nil && zombie {
		err = errors.New("zombie")
	}
	return st, err
}

// waitTimeout bounds waits that have no ctx of their own.
const waitTimeout = 10 * time.Second
