// Package sandbox isolates what agents run. One interface, Backend, makes
// Sandboxes; two backends implement it: bwrap (bubblewrap, daemon-less, the
// embedded default; package sandbox/bwrap) and docker (the Docker Engine API,
// local or remote engines; package sandbox/docker). Backends register by
// name from their package's init, as database/sql drivers do, and decline
// with ErrUnavailable when their tool is missing, so serve still starts.
//
// A Sandbox runs commands (Exec: stdin, env, working directory, a deadline
// at which the whole process group is killed, output caps with a visible
// marker), keeps a persistent interactive shell per session (Shell: cd and
// exported variables persist; keystrokes and the screen for interactive
// programs; NewShell builds one on Start), copies files in and out as tar
// streams, and closes. Optional interfaces add capabilities, found by type
// assertion: Snapshotter (snapshot and restore, for a reset faster than a
// new sandbox; TrySnapshot takes one where it can), Killer (every process
// but the sandbox's keeper ended, as verifiers need), Labeler (labels
// changed after Create, used by warm pools), Validator (a cheap liveness
// check, used by warm pools) and Stats (resource use) of sandboxes, and
// ImageBuilder (a task's image built from its Dockerfile) of backends.
// CappedBuffer keeps output under a cap with
// TruncationMarker; NewOwnerID, OwnerAlive, ValidOwner, CheckLabels,
// MergeLabels and SpecKey are the owner and label helpers backends and
// pools share. Package sandbox/pool keeps warm sandboxes; package
// sandbox/sandboxtest is the conformance suite every backend's tests run.
//
// Every resource a sandbox holds (a container, a snapshot image, a bwrap
// process tree, state directory and cgroup) carries the labels of its Spec
// plus the reserved LabelOwner label (and LabelSession or LabelPool where
// the caller sets them), so a reaper can find and remove orphans by label,
// also after a crash. Close is idempotent.
//
// Who may call what concurrently: a Backend's methods are safe for
// concurrent use. A Sandbox's Exec, CopyIn and CopyOut may run concurrently;
// a Shell is used by one goroutine at a time (the session's).
//
// # Owners and reaping
//
// The owner (Options.Owner) is a lease. When it is empty, a backend takes
// NewOwnerID(): "<hostname>-<pid>-<start time>-<random>", which names the
// process that opened the backend, start time being that process's start
// in clock ticks after boot (field 22 of /proc/self/stat). OwnerAlive reads
// the lease: known when the owner was made this way on this host; alive
// when /proc/<pid>/stat exists and shows the same start time, so a pid the
// kernel has reused is not taken for the owner. At Open, every backend
// reaps by mark and sweep: it lists its resources by owner label and
// removes (a) those of its own owner (an earlier run's, when the owner is
// explicit) and (b) those of every known owner that is not alive (a
// crashed process of this host). Resources of live owners and of unknown
// owners stay. So two backends open at once, in one process or two, never
// reap each other's sandboxes, and what a crashed process left is removed
// by the next backend opened on this host. An owner a user names (--set
// sandbox.owner=NAME) is unknown (an id from NewOwnerID stays a lease when
// passed explicitly): only a backend opened with that same owner reaps its
// resources, so processes that share a docker engine or a bwrap directory
// must not share an explicit owner. Backend.Reap(ctx, owner) removes one
// owner's unheld resources on demand.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Reserved labels. Task files may not set labels with this prefix.
const (
	LabelPrefix  = "nextstate."
	LabelOwner   = "nextstate.owner"   // the server instance that created it
	LabelSession = "nextstate.session" // the session it serves
	LabelPool    = "nextstate.pool"    // set while it waits in a warm pool
)

// Errors for errors.Is.
var (
	// ErrUnavailable: the backend's tool or daemon is missing here.
	ErrUnavailable = errors.New("sandbox backend unavailable")
	// ErrClosed: the sandbox was closed.
	ErrClosed = errors.New("sandbox closed")
	// ErrGone: the sandbox died underneath (container killed, process
	// tree gone). It is the infrastructure's fault, not the agent's.
	ErrGone = errors.New("sandbox is gone")
	// ErrNoSnapshot: the backend cannot snapshot.
	ErrNoSnapshot = errors.New("sandbox cannot snapshot")
)

// Spec describes a sandbox to create.
type Spec struct {
	// Image is the docker image, or for bwrap a rootfs directory ("" is
	// the host's root, read-only).
	Image string `json:"image,omitempty"`
	// Workdir is the writable working directory inside the sandbox.
	// Default /workspace.
	Workdir string `json:"workdir,omitempty"`
	// Env is added to every command's environment.
	Env map[string]string `json:"env,omitempty"`
	// Network allows network access; the default is none.
	Network bool   `json:"network,omitempty"`
	Limits  Limits `json:"limits,omitzero"`
	// Labels are attached to every resource the sandbox creates.
	Labels map[string]string `json:"labels,omitempty"`
	// Mounts bind host directories into the sandbox (a toolchain, a
	// module cache), read-only or writable. They are not part of the
	// sandbox's state: a Snapshot leaves them out, and CopyIn and CopyOut
	// reach them only where the backend says so.
	Mounts []Mount `json:"mounts,omitempty"`
}

// Mount binds a directory of the host (for docker, of the engine's host)
// into a sandbox. Source and Target are absolute paths; Source must exist.
// A Target that lies inside a directory the sandbox gets read-only from
// its image or the host (bwrap's /usr, say) must exist there already.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// CheckMounts checks what every backend needs of mounts: absolute paths,
// a Target other than "/", and no Target twice. Whether Source exists is
// the backend's to check (a docker engine's host may be another machine).
func CheckMounts(mounts []Mount) error {
	seen := map[string]bool{}
	for _, m := range mounts {
		if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Target) {
			return fmt.Errorf("sandbox: mount %s -> %s: source and target must be absolute paths", m.Source, m.Target)
		}
		t := filepath.Clean(m.Target)
		if t == "/" {
			return fmt.Errorf("sandbox: mount %s -> /: cannot mount over the root", m.Source)
		}
		if seen[t] {
			return fmt.Errorf("sandbox: mount target %s appears twice", t)
		}
		seen[t] = true
	}
	return nil
}

// Limits bound a sandbox's resources. Zero means the backend's default
// (DefaultLimits); how each is enforced is the backend's to document.
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
	PIDs        int64   `json:"pids,omitempty"`
	// DiskBytes bounds what the sandbox may write to its own files (its
	// workspace and scratch directories), so that one sandbox cannot fill
	// the host's disk under the others.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
}

// DefaultLimits apply where a Spec sets none.
var DefaultLimits = Limits{MemoryBytes: 1 << 30, CPUs: 1, PIDs: 512, DiskBytes: 4 << 30}

// Or fills l's zero fields from d.
func (l Limits) Or(d Limits) Limits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	if l.PIDs == 0 {
		l.PIDs = d.PIDs
	}
	if l.DiskBytes == 0 {
		l.DiskBytes = d.DiskBytes
	}
	return l
}

// DefaultMaxOutput caps the output Exec and Shell keep, per stream.
const DefaultMaxOutput = 64 << 10

// TruncationMarker is appended to output that was cut at its cap, with the
// number of bytes dropped: "\n[... 12345 bytes truncated ...]\n".
const TruncationMarker = "\n[... %d bytes truncated ...]\n"

// ExecRequest is one command.
type ExecRequest struct {
	// Cmd is the argv; Script, if set instead, runs under bash -c.
	Cmd    []string
	Script string
	Stdin  io.Reader
	Env    map[string]string
	// Dir is the working directory; default the Spec's Workdir.
	Dir string
	// Timeout kills the command's whole process group when it passes;
	// 0 means ctx alone bounds it.
	Timeout time.Duration
	// MaxOutput caps each of stdout and stderr; 0 means DefaultMaxOutput.
	MaxOutput int
}

// ExecResult is what a command did. A command that ran and failed is not an
// error: its ExitCode says so. TimedOut means the Timeout killed it.
type ExecResult struct {
	Stdout    []byte        `json:"stdout"`
	Stderr    []byte        `json:"stderr"`
	ExitCode  int           `json:"exit_code"`
	TimedOut  bool          `json:"timed_out,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
	Elapsed   time.Duration `json:"elapsed"`
}

// Backend makes sandboxes.
type Backend interface {
	// Name is the registered name: "bwrap", "docker".
	Name() string
	// Create starts a sandbox. It is ready for Exec when Create returns.
	Create(ctx context.Context, spec Spec) (Sandbox, error)
	// Reap removes every resource labelled as owned by owner that no live
	// sandbox of this Backend holds (orphans from a crash), and reports
	// how many it removed. It does not ask whether owner is alive: Open's
	// reaping does (see Owners and reaping).
	Reap(ctx context.Context, owner string) (int, error)
	// Close closes every sandbox it made and releases the backend.
	Close(ctx context.Context) error
}

// Sandbox is one isolated environment.
type Sandbox interface {
	ID() string
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// Start runs a long-lived process with pipes, for persistent shells
	// (see NewShell). It ends with the sandbox, or when killed.
	Start(ctx context.Context, req StartRequest) (Process, error)
	// CopyIn unpacks a tar stream into dir inside the sandbox.
	CopyIn(ctx context.Context, dir string, tar io.Reader) error
	// CopyOut returns a tar stream of path inside the sandbox.
	CopyOut(ctx context.Context, path string) (io.ReadCloser, error)
	// Close stops every process and removes the sandbox. Idempotent.
	Close(ctx context.Context) error
}

// StartRequest is a long-lived process to start.
type StartRequest struct {
	Cmd []string
	Env map[string]string
	Dir string
	// TTY gives the process a terminal (stdout and stderr then merge).
	TTY bool
}

// Process is a long-lived process in a sandbox.
type Process interface {
	Stdin() io.WriteCloser
	// Stdout carries stdout, and stderr too: they are merged.
	Stdout() io.Reader
	// Wait waits for the process to end and returns its exit code; it
	// may be called more than once.
	Wait() (int, error)
	// Kill ends the process and its process group, and releases Stdout:
	// a read pending on it returns, even when a process that left the
	// group still holds the other end.
	Kill() error
}

// Shell is a long-lived bash in the sandbox, so that cd and exported
// variables persist between commands, with a terminal whose screen can be
// read for interactive programs. Shell commands go to Run (the persistent
// bash, output read up to an end marker); interactive programs (editors,
// pagers, REPLs) run in the terminal, driven by SendKeys and read by
// Screen. The two are separate shells in the same sandbox. NewShell makes
// one for any Sandbox.
type Shell interface {
	// Run types command into the shell, waits until it finishes (or
	// timeout passes, when it interrupts it with Ctrl-C) and returns its
	// output and exit code.
	Run(ctx context.Context, command string, timeout time.Duration) (ExecResult, error)
	// SendKeys sends keystrokes in tmux's key syntax ("q", "C-c", "Enter").
	SendKeys(ctx context.Context, keys ...string) error
	// Screen returns the terminal's visible screen.
	Screen(ctx context.Context) (string, error)
	// Close ends the shell, the terminal and everything started from
	// them. Idempotent. Closing the sandbox ends its shells too.
	Close() error
}

// TerminalWatcher is implemented by Shells that can tell what runs in the
// foreground of their terminal. TerminalForeground reports whether the
// terminal's own shell holds the foreground (no program started from it
// runs there: typed commands have finished) and, when one does, the
// program's name. Typed input that the shell has not read yet shows once
// it has: the shell runs it, or echoes it at its prompt. Verifiers call it
// after the agent's last action, to let what the agent typed be processed
// before its processes are ended.
type TerminalWatcher interface {
	TerminalForeground(ctx context.Context) (shellHasIt bool, program string, err error)
}

// Killer is implemented by sandboxes that can end every process in them
// but their keeper (the process that holds the sandbox open) at once:
// processes in the background, double-forked, in a session of their own
// (setsid, nohup, a tmux server) alike, since it works on the sandbox's
// PID namespace, not a process group. KillAll returns once none of them is
// left; the sandbox stays usable (a Shell made before must be made anew).
// Verifiers call it after the agent's last action, so that nothing the
// agent started runs while its work is judged.
type Killer interface {
	KillAll(ctx context.Context) error
}

// KeeperLoop is the bash program of a sandbox's keeper, its PID 1: it
// ignores every signal it may (the kernel keeps the other two, SIGKILL and
// SIGSTOP, from reaching a namespace's init from inside it), reaps the
// orphans it inherits once a second, and exits when its stdin reaches end
// of file (the backend let go of the sandbox). So no process in the
// sandbox, the agent's included, can end the sandbox by killing its
// keeper: a sandbox that dies is the infrastructure's doing.
const KeeperLoop = `trap '' HUP INT QUIT TERM USR1 USR2 PIPE ALRM TSTP TTIN TTOU XCPU XFSZ VTALRM PROF WINCH
while :; do read -r -t 1 _; [ $? -gt 128 ] || exit 0; wait; done`

// Snapshotter is implemented by sandboxes that can save their state and
// return to it, which makes a task reset faster than a new sandbox.
type Snapshotter interface {
	Snapshot(ctx context.Context) (Snapshot, error)
	Restore(ctx context.Context, s Snapshot) error
}

// Snapshot is a backend's saved state.
type Snapshot interface {
	// Release frees the snapshot's storage.
	Release(ctx context.Context) error
}

// TrySnapshot snapshots sb when it is a Snapshotter, for a later Restore
// to its present state. It returns a nil Snapshot and no error when sb
// cannot snapshot (not a Snapshotter, or ErrNoSnapshot): the caller then
// makes a new sandbox where it would have restored.
func TrySnapshot(ctx context.Context, sb Sandbox) (Snapshot, error) {
	sn, ok := sb.(Snapshotter)
	if !ok {
		return nil, nil
	}
	snap, err := sn.Snapshot(ctx)
	if errors.Is(err, ErrNoSnapshot) {
		return nil, nil
	}
	return snap, err
}

// ImageBuilder is implemented by backends whose Spec.Image names an image
// they can build from a Dockerfile (docker: on every engine it places
// sandboxes on), so that a task with a Dockerfile gets a sandbox of its
// own image. A backend without it has its callers bring a task's
// Dockerfile about another way (terminal-v1 runs its steps in the sandbox
// under bwrap, whose Spec.Image is a rootfs directory).
type ImageBuilder interface {
	// BuildImage builds the image of b and returns its reference, the
	// Spec.Image of a sandbox made from it. A build of unchanged content
	// may reuse an earlier one.
	BuildImage(ctx context.Context, b ImageBuild) (string, error)
}

// ImageBuild is an image to build.
type ImageBuild struct {
	// Dir is the build context, a host directory holding the Dockerfile.
	Dir string
	// Dockerfile is the Dockerfile's path in Dir (slash-separated); empty
	// is "Dockerfile".
	Dockerfile string
	// Name names the image (a task's name).
	Name string
	// BaseImage replaces each FROM image the backend does not have; empty
	// means such a FROM is an error (nothing is pulled).
	BaseImage string
	// BaseWorkdir, when set, is the working directory a stage built from
	// BaseImage in place of a missing FROM starts in (a WORKDIR right after
	// that FROM), as the replaced image would have had it: Terminal-Bench's
	// base images work in /app. Empty keeps the base image's own.
	BaseWorkdir string
	// Exclude lists patterns left out of the build context, as
	// .dockerignore lines (a task's hidden tests and its solution).
	Exclude []string
}

// Labeler is implemented by sandboxes whose labels can change after
// Create. A warm pool calls it when it hands a sandbox out: LabelPool is
// removed (an empty value removes a label) and LabelSession set. A backend
// whose resources cannot be relabelled (docker containers) keeps the
// labels in its own bookkeeping instead.
type Labeler interface {
	SetLabels(ctx context.Context, labels map[string]string) error
}

// Validator is implemented by sandboxes that can tell cheaply, without a
// round trip into the sandbox, whether they are still usable. A warm pool
// calls it before handing an idle sandbox out and discards invalid ones,
// as database/sql does with driver.Validator.
type Validator interface {
	IsValid() bool
}

// Stats is implemented by sandboxes that can report their resource use.
type Stats interface {
	Usage(ctx context.Context) (Usage, error)
}

// Usage is a sandbox's resource use; a field a backend cannot measure is
// zero.
type Usage struct {
	MemoryBytes int64         `json:"memory_bytes"`
	PIDs        int64         `json:"pids"`
	CPU         time.Duration `json:"cpu"`
}

// Opener makes a Backend from its options; registered per backend name.
type Opener func(ctx context.Context, opts Options) (Backend, error)

// Options configure a Backend.
type Options struct {
	// Owner labels every resource, so a reaper can tell whose it is.
	// Empty means NewOwnerID(), a lease on this process: once the process
	// is gone, the next backend opened on this host reaps what it left.
	// An explicit owner (1 to 64 letters, digits and '-'; see ValidOwner)
	// is reaped only by a backend opened with the same owner, at its Open.
	Owner string
	// Hosts are docker engine addresses (unix://, tcp://, ssh://); empty
	// means the environment's default. bwrap ignores it.
	Hosts []string
	// Dir is where the backend keeps its files (bwrap workspaces).
	Dir string
	// Hide names host paths no sandbox may see even where the backend
	// shows the host's files (bwrap's read-only system view): the served
	// task folders, the server's store. bwrap masks those inside what it
	// binds; docker ignores it (a container sees no host path but its
	// Spec's Mounts).
	Hide []string
}

var (
	mu       sync.RWMutex
	backends = map[string]Opener{}
)

// Register makes a backend available by name. It panics on a nil opener or
// a duplicate name.
func Register(name string, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	if open == nil {
		panic("sandbox: Register opener is nil")
	}
	if _, dup := backends[name]; dup {
		panic("sandbox: Register called twice for backend " + name)
	}
	backends[name] = open
}

// Backends returns the registered backend names, sorted.
func Backends() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(backends))
	for n := range backends {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Open opens a registered backend. An unknown name is an error that lists
// the registered ones; a backend whose tool is missing returns an error
// wrapping ErrUnavailable.
func Open(ctx context.Context, name string, opts Options) (Backend, error) {
	mu.RLock()
	open, ok := backends[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown sandbox backend %q (registered: %v)", name, Backends())
	}
	return open(ctx, opts)
}
