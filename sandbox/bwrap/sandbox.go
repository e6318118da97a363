package bwrap

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// Sandbox is one bwrap sandbox. It implements sandbox.Sandbox,
// sandbox.Snapshotter, sandbox.Killer, sandbox.Labeler, sandbox.Validator and
// sandbox.Stats.
type Sandbox struct {
	b       *Backend
	id      string
	spec    sandbox.Spec
	workdir string
	state   string
	mounts  []mount         // writable places: inside path and state directory
	binds   []sandbox.Mount // Spec.Mounts, checked, parents before children
	cg      *cgroup
	wrap    []string // the argv prefix that applies limits

	cmd    *exec.Cmd     // the outer bwrap
	hold   *os.File      // the write end of init's stdin: the sandbox lives while it is open
	done   chan struct{} // closed when the outer bwrap has exited
	waitWG sync.WaitGroup
	pid1   int    // the sandbox's pid 1, its keeper, as the host sees it
	pidNS  string // readlink of /proc/<pid1>/ns/pid
	start1 uint64 // pid1's start time

	labelMu sync.Mutex
	labels  map[string]string

	snapSeq   atomic.Int64
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

type mount struct{ inside, host string }

var (
	_ sandbox.Sandbox     = (*Sandbox)(nil)
	_ sandbox.Snapshotter = (*Sandbox)(nil)
	_ sandbox.Killer      = (*Sandbox)(nil)
	_ sandbox.Labeler     = (*Sandbox)(nil)
	_ sandbox.Validator   = (*Sandbox)(nil)
	_ sandbox.Stats       = (*Sandbox)(nil)
)

// ID implements sandbox.Sandbox.
func (s *Sandbox) ID() string { return s.id }

// StateDir is the sandbox's directory on the host.
func (s *Sandbox) StateDir() string { return s.state }

// PID is the host pid of the sandbox's pid 1 (for tests that kill a
// sandbox from outside).
func (s *Sandbox) PID() int { return s.pid1 }

// start runs the outer bwrap and waits until the sandbox is ready.
func (s *Sandbox) start(ctx context.Context, argv []string) error {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer infoR.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		infoW.Close()
		return err
	}
	defer outR.Close()
	inR, inW, err := os.Pipe()
	if err != nil {
		infoW.Close()
		outW.Close()
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + defaultPath}
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.ExtraFiles = []*os.File{infoW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	err = cmd.Start()
	infoW.Close()
	outW.Close()
	inR.Close()
	if err != nil {
		inW.Close()
		return fmt.Errorf("bwrap: start: %w", err)
	}
	s.cmd, s.hold = cmd, inW
	s.waitWG.Add(1)
	go func() { // owned by s: cleanup waits for it
		defer s.waitWG.Done()
		_ = cmd.Wait()
		close(s.done)
	}()
	deadline := time.Now().Add(waitTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = infoR.SetReadDeadline(deadline)
	_ = outR.SetReadDeadline(deadline)
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	fail := func(what string, err error) error {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return fmt.Errorf("bwrap: start: %s: %v: %s", what, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.NewDecoder(infoR).Decode(&info); err != nil {
		return fail("info", err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || line != "ready\n" {
		return fail("ready", err)
	}
	s.pid1 = info.ChildPID
	if s.pidNS, err = os.Readlink("/proc/" + strconv.Itoa(s.pid1) + "/ns/pid"); err != nil {
		return fail("pid namespace", err)
	}
	if s.start1, err = procStart(s.pid1); err != nil {
		return fail("pid 1", err)
	}
	// The OOM killer takes a hog, not the sandbox's keeper.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", s.pid1), []byte("-1000"), 0)
	outerStart, err := procStart(cmd.Process.Pid)
	if err != nil {
		return fail("bwrap", err)
	}
	pf, _ := json.Marshal(pidFile{PGID: cmd.Process.Pid, PID1: s.pid1, Start: outerStart})
	if err := os.WriteFile(filepath.Join(s.state, "pid"), pf, 0o600); err != nil {
		return fail("pid file", err)
	}
	return nil
}

// alive reports whether the sandbox's process tree still runs.
func (s *Sandbox) alive() bool {
	select {
	case <-s.done:
		return false
	default:
	}
	st, err := procStart(s.pid1)
	return err == nil && st == s.start1
}

// usable says why the sandbox cannot be used, if it cannot.
func (s *Sandbox) usable() error {
	if s.closed.Load() {
		return sandbox.ErrClosed
	}
	if !s.alive() {
		return fmt.Errorf("bwrap: sandbox %s: %w", s.id, sandbox.ErrGone)
	}
	return nil
}

// IsValid implements sandbox.Validator.
func (s *Sandbox) IsValid() bool { return s.usable() == nil }

// command builds the host command that runs argv inside the sandbox.
func (s *Sandbox) command(argv []string, env map[string]string, dir string) *exec.Cmd {
	if dir == "" {
		dir = s.workdir
	} else if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.workdir, dir)
	}
	full := append([]string(nil), s.wrap...)
	full = append(full, s.b.nsenter, "--target", strconv.Itoa(s.pid1),
		"--mount", "--pid", "--uts", "--ipc", "--net", "--root", "--wdns="+dir,
		s.b.setpriv, "--bounding-set=-all", "--inh-caps=-all", "--")
	full = append(full, argv...)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = s.environ(env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// environ is the sandbox's default environment, then the Spec's, then env.
func (s *Sandbox) environ(env map[string]string) []string {
	m := map[string]string{"PATH": defaultPath, "HOME": "/root", "LANG": "C.UTF-8", "HOSTNAME": "sandbox"}
	maps.Copy(m, s.spec.Env)
	maps.Copy(m, env)
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Exec implements sandbox.Sandbox. The command runs in its own session
// and process group, which is killed at req.Timeout or when ctx ends.
func (s *Sandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := s.usable(); err != nil {
		return sandbox.ExecResult{}, err
	}
	argv := req.Cmd
	if req.Script != "" {
		if len(req.Cmd) > 0 {
			return sandbox.ExecResult{}, errors.New("bwrap: exec: both Cmd and Script set")
		}
		argv = []string{"bash", "-c", req.Script}
	}
	if len(argv) == 0 {
		return sandbox.ExecResult{}, errors.New("bwrap: exec: no command")
	}
	cmd := s.command(argv, req.Env, req.Dir)
	stdout, stderr := sandbox.NewCappedBuffer(req.MaxOutput), sandbox.NewCappedBuffer(req.MaxOutput)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Stdin = req.Stdin
	cmd.WaitDelay = time.Second // a daemon that keeps the pipes open does not hold Exec
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("bwrap: exec: %w", err)
	}
	pgid := cmd.Process.Pid
	var timer <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timer = t.C
	}
	waited := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by this call: it waits for it below
		defer wg.Done()
		waited <- cmd.Wait()
	}()
	defer wg.Wait()
	var err error
	got, timedOut, canceled := false, false, false
	select {
	case err = <-waited:
		got = true
	case <-timer:
		timedOut = true
	case <-ctx.Done():
		canceled = true
	case <-s.done: // the sandbox died under the command
	}
	if !got {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		err = <-waited
	}
	res := sandbox.ExecResult{
		Stdout: stdout.Bytes(), Stderr: stderr.Bytes(),
		Truncated: stdout.Truncated() || stderr.Truncated(),
		TimedOut:  timedOut, Elapsed: time.Since(start),
		ExitCode: exitCode(cmd.ProcessState),
	}
	if !s.alive() && !s.closed.Load() {
		return res, fmt.Errorf("bwrap: sandbox %s: %w", s.id, sandbox.ErrGone)
	}
	if canceled {
		return res, ctx.Err()
	}
	if err != nil && cmd.ProcessState == nil {
		return res, fmt.Errorf("bwrap: exec: %w", err)
	}
	return res, nil
}

// exitCode is the command's exit status; a signal n reads as 128+n, as in
// a shell.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Start implements sandbox.Sandbox. TTY is not supported: run interactive
// programs in a Shell's terminal.
func (s *Sandbox) Start(ctx context.Context, req sandbox.StartRequest) (sandbox.Process, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if req.TTY {
		return nil, fmt.Errorf("bwrap: start with a TTY: %w (use a Shell's terminal)", errors.ErrUnsupported)
	}
	if len(req.Cmd) == 0 {
		return nil, errors.New("bwrap: start: no command")
	}
	cmd := s.command(req.Cmd, req.Env, req.Dir)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("bwrap: start: %w", err)
	}
	return &process{cmd: cmd, stdin: in, stdout: r}, nil
}

type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File
	once   sync.Once
	code   int
	err    error
}

func (p *process) Stdin() io.WriteCloser { return p.stdin }
func (p *process) Stdout() io.Reader     { return p.stdout }

// Wait implements sandbox.Process; it may be called more than once.
func (p *process) Wait() (int, error) {
	p.once.Do(func() {
		err := p.cmd.Wait()
		p.code = exitCode(p.cmd.ProcessState)
		if p.cmd.ProcessState == nil {
			p.err = err
		}
	})
	return p.code, p.err
}

// Kill implements sandbox.Process: the process group dies and Stdout is
// closed, so a pending read returns.
func (p *process) Kill() error {
	err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.stdout.Close()
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Close implements sandbox.Sandbox: it kills the process tree, removes the
// cgroup and the state directory. Idempotent; later calls return the
// first one's result.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.closeErr = s.cleanup(ctx)
		s.b.forget(s.id)
	})
	return s.closeErr
}

// cleanup kills and removes everything the sandbox holds.
func (s *Sandbox) cleanup(ctx context.Context) error {
	var errs []error
	if s.cmd != nil && s.cmd.Process != nil {
		// Killing pid 1 ends the PID namespace; the outer bwrap then reaps
		// it and exits (killing the outer one first would leave pid 1 a
		// zombie for the host's init).
		if s.pid1 > 0 && s.alive() {
			_ = syscall.Kill(s.pid1, syscall.SIGKILL)
		}
		s.hold.Close()
		t := time.NewTimer(2 * time.Second)
		select {
		case <-s.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-s.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("bwrap: close %s: %w", s.id, ctx.Err()))
		}
		s.waitWG.Wait()
	}
	if s.cg != nil {
		rctx, cancel := context.WithTimeout(ctx, waitTimeout)
		errs = append(errs, s.cg.remove(rctx))
		cancel()
	}
	unmountDisk(s.state)
	if err := os.RemoveAll(s.state); err != nil {
		errs = append(errs, fmt.Errorf("bwrap: close %s: %w", s.id, err))
	}
	return errors.Join(errs...)
}

// resolve maps a path inside the sandbox to the host directory that holds
// it, opened as an os.Root, and the path relative to it: one of the
// sandbox's writable places or, the deepest match winning, a Spec mount
// (a read-only one only when write is false).
func (s *Sandbox) resolve(p string, write bool) (*os.Root, string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.workdir, p)
	}
	p = filepath.Clean(p)
	within := func(dir string) (string, bool) {
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", false
		}
		return rel, true
	}
	host, rel, depth, ro := "", "", -1, false
	for _, m := range s.mounts {
		if r, ok := within(m.inside); ok && pathDepth(m.inside) > depth {
			host, rel, depth, ro = m.host, r, pathDepth(m.inside), false
		}
	}
	for _, m := range s.binds {
		if r, ok := within(m.Target); ok && pathDepth(m.Target) > depth {
			host, rel, depth, ro = m.Source, r, pathDepth(m.Target), m.ReadOnly
		}
	}
	if depth < 0 {
		places := make([]string, 0, len(s.mounts)+len(s.binds))
		for _, m := range s.mounts {
			places = append(places, m.inside)
		}
		for _, m := range s.binds {
			places = append(places, m.Target)
		}
		return nil, "", fmt.Errorf("bwrap: %s is outside the sandbox's writable places and mounts %v", p, places)
	}
	if write && ro {
		return nil, "", fmt.Errorf("bwrap: %s lies in a read-only mount", p)
	}
	root, err := os.OpenRoot(host)
	if err != nil {
		return nil, "", fmt.Errorf("bwrap: %s: %w", p, err)
	}
	return root, rel, nil
}

// SetLabels implements sandbox.Labeler: labels.json is rewritten; an empty
// value removes a label. The owner label cannot change.
func (s *Sandbox) SetLabels(_ context.Context, labels map[string]string) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.labelMu.Lock()
	defer s.labelMu.Unlock()
	s.labels = sandbox.MergeLabels(s.labels, labels, map[string]string{sandbox.LabelOwner: s.b.owner})
	return s.writeLabelsLocked()
}

// Labels returns a copy of the sandbox's labels.
func (s *Sandbox) Labels() map[string]string {
	s.labelMu.Lock()
	defer s.labelMu.Unlock()
	return maps.Clone(s.labels)
}

func (s *Sandbox) writeLabels() error {
	s.labelMu.Lock()
	defer s.labelMu.Unlock()
	return s.writeLabelsLocked()
}

func (s *Sandbox) writeLabelsLocked() error {
	b, _ := json.Marshal(s.labels)
	tmp := filepath.Join(s.state, "labels.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("bwrap: labels: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.state, "labels.json")); err != nil {
		return fmt.Errorf("bwrap: labels: %w", err)
	}
	return nil
}

// Usage implements sandbox.Stats: from the cgroup where there is one;
// without, only PIDs is counted.
func (s *Sandbox) Usage(context.Context) (sandbox.Usage, error) {
	if err := s.usable(); err != nil {
		return sandbox.Usage{}, err
	}
	if s.cg != nil {
		return s.cg.usage(), nil
	}
	return sandbox.Usage{PIDs: int64(len(s.procs(false)))}, nil
}

// procs lists the host pids of the sandbox's processes, without pid 1
// (the keeper) and zombies unless all.
func (s *Sandbox) procs(all bool) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if !all && pid == s.pid1 {
			continue
		}
		if ns, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && ns == s.pidNS {
			if _, zombie, err := sandbox.ProcStartTime(pid); !all && (err != nil || zombie) {
				continue // dead already: its parent (the keeper, mostly) reaps it
			}
			out = append(out, pid)
		}
	}
	return out
}

// KillAll implements sandbox.Killer: every process in the sandbox's PID
// namespace but its keeper is killed, until none is left.
func (s *Sandbox) KillAll(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.killAll(ctx); err != nil {
		return err
	}
	return s.usable()
}

// killAll kills every process of the sandbox but pid 1 (the keeper),
// until none is left or ctx ends.
func (s *Sandbox) killAll(ctx context.Context) error {
	// First all at once: kill -9 -1 from inside the namespace signals
	// every process but the keeper and itself in one system call, so none
	// sees another die and acts before its own end (a sweep from outside,
	// one kill at a time, would leave such a moment). The sweep then takes
	// what forked meanwhile.
	cmd := s.command([]string{"bash", "-c", "kill -9 -1 2>/dev/null; exit 0"}, nil, "/")
	cmd.WaitDelay = time.Second
	_ = cmd.Run()
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		ps := s.procs(false)
		if len(ps) == 0 {
			return nil
		}
		for _, p := range ps {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bwrap: kill processes of %s: %w", s.id, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// snapshot is a saved copy of the writable places.
type snapshot struct {
	s    *Sandbox
	dir  string
	once sync.Once
}

// Release implements sandbox.Snapshot.
func (sn *snapshot) Release(context.Context) error {
	var err error
	sn.once.Do(func() { err = os.RemoveAll(sn.dir) })
	return err
}

// Snapshot implements sandbox.Snapshotter: it copies the workspace, /tmp
// and /root. Processes keep running; what they write meanwhile may or may
// not be in the copy.
func (s *Sandbox) Snapshot(ctx context.Context) (sandbox.Snapshot, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.state, "snapshot-"+strconv.FormatInt(s.snapSeq.Add(1), 10))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bwrap: snapshot: %w", err)
	}
	for i, m := range s.mounts {
		d := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("bwrap: snapshot: %w", err)
		}
		if err := copyTree(m.host, d); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("bwrap: snapshot %s: %w", m.inside, err)
		}
	}
	return &snapshot{s: s, dir: dir}, nil
}

// Restore implements sandbox.Snapshotter: every process but the sandbox's
// init is killed (shells too), and the writable places are put back as
// they were at the snapshot.
func (s *Sandbox) Restore(ctx context.Context, snap sandbox.Snapshot) error {
	sn, ok := snap.(*snapshot)
	if !ok || sn.s != s {
		return errors.New("bwrap: restore: not a snapshot of this sandbox")
	}
	if err := s.usable(); err != nil {
		return err
	}
	if _, err := os.Stat(sn.dir); err != nil {
		return fmt.Errorf("bwrap: restore: snapshot released: %w", err)
	}
	if err := s.killAll(ctx); err != nil {
		return err
	}
	for i, m := range s.mounts {
		if err := clearDir(m.host); err != nil {
			return fmt.Errorf("bwrap: restore %s: %w", m.inside, err)
		}
		if err := copyTree(filepath.Join(sn.dir, strconv.Itoa(i)), m.host); err != nil {
			return fmt.Errorf("bwrap: restore %s: %w", m.inside, err)
		}
	}
	return nil
}

// limitedWriter keeps the first n bytes.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
