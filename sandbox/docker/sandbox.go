package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// Sandbox is one container on one engine. Restore replaces the container
// (the ID stays); every other method works on the current one.
type Sandbox struct {
	b      *Backend
	e      *engine
	id     string
	spec   sandbox.Spec
	limits sandbox.Limits
	gen    atomic.Int64 // container generations, for names

	restoreMu sync.Mutex // one Snapshot or Restore at a time

	mu        sync.Mutex
	cur       *ctr
	standby   *standby // a started container of the last snapshot, for the next Restore
	closed    bool
	gone      error // set once the container was found dead
	procs     map[*process]struct{}
	wg        sync.WaitGroup // process goroutines
	closeErr  error
	closeOnce sync.Once
}

// ctr is one container of a sandbox.
type ctr struct {
	id, name string
	snap     *Snapshot // the snapshot it was restored from, if any
}

var (
	_ sandbox.Sandbox     = (*Sandbox)(nil)
	_ sandbox.Snapshotter = (*Sandbox)(nil)
	_ sandbox.Killer      = (*Sandbox)(nil)
	_ sandbox.Validator   = (*Sandbox)(nil)
	_ sandbox.Stats       = (*Sandbox)(nil)
	_ sandbox.Labeler     = (*Sandbox)(nil)
)

// ID is the sandbox's ID, stable across Restore.
func (s *Sandbox) ID() string { return s.id }

// Host is the address of the engine the sandbox runs on.
func (s *Sandbox) Host() string { return s.e.host }

// ContainerID is the current container's ID (Restore changes it).
func (s *Sandbox) ContainerID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return ""
	}
	return s.cur.id
}

// current returns the container to work on, or why there is none.
func (s *Sandbox) current() (*ctr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, sandbox.ErrClosed
	case s.gone != nil:
		return nil, s.gone
	}
	return s.cur, nil
}

// check turns an engine error, or a command killed by SIGKILL, into
// sandbox.ErrGone when the container c has died underneath. It inspects
// the container; other errors come back as they are.
func (s *Sandbox) check(ctx context.Context, c *ctr, cause error) error {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	res, err := s.e.cli.ContainerInspect(ictx, c.id, client.ContainerInspectOptions{})
	var why string
	switch {
	case cerrdefs.IsNotFound(err):
		why = "was removed"
	case err != nil:
		return cause
	case res.Container.State == nil || res.Container.State.Running:
		return cause
	default:
		st := res.Container.State
		why = fmt.Sprintf("exited (status %s, exit code %d", st.Status, st.ExitCode)
		if st.OOMKilled {
			why += ", OOM-killed"
		}
		why += ")"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.ErrClosed
	}
	if s.cur != c {
		return fmt.Errorf("docker: the sandbox was restored while the call ran: %w", cause)
	}
	if s.gone == nil {
		s.gone = fmt.Errorf("docker: container %s of sandbox %s %s: %w", shortID(c.id), s.id, why, sandbox.ErrGone)
	}
	return s.gone
}

// abs resolves p against the sandbox's working directory.
func (s *Sandbox) abs(p string) string {
	if p == "" {
		return s.spec.Workdir
	}
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(s.spec.Workdir, p)
}

// CopyIn unpacks the tar stream into dir (relative to the working
// directory), creating dir first when it is missing. Entries keep the
// owners and modes of their headers.
func (s *Sandbox) CopyIn(ctx context.Context, dir string, tr io.Reader) error {
	c, err := s.current()
	if err != nil {
		return err
	}
	dir = s.abs(dir)
	if _, err := s.e.cli.ContainerStatPath(ctx, c.id, client.ContainerStatPathOptions{Path: dir}); err != nil {
		if !cerrdefs.IsNotFound(err) {
			return s.check(ctx, c, fmt.Errorf("docker: copy in: %w", err))
		}
		res, err := s.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"mkdir", "-p", "--", dir}, Dir: "/"})
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("docker: copy in: mkdir %s: %s", dir, res.Stderr)
		}
	}
	if _, err := s.e.cli.CopyToContainer(ctx, c.id, client.CopyToContainerOptions{DestinationPath: dir, Content: tr, AllowOverwriteDirWithFile: true}); err != nil {
		return s.check(ctx, c, fmt.Errorf("docker: copy in to %s: %w", dir, err))
	}
	return nil
}

// CopyOut returns a tar stream of path (relative to the working
// directory); a directory comes with its name as the first entry, as
// `docker cp` makes it. A missing path is an error wrapping fs.ErrNotExist.
// The stream is read under ctx; close it.
func (s *Sandbox) CopyOut(ctx context.Context, p string) (io.ReadCloser, error) {
	c, err := s.current()
	if err != nil {
		return nil, err
	}
	p = s.abs(p)
	res, err := s.e.cli.CopyFromContainer(ctx, c.id, client.CopyFromContainerOptions{SourcePath: p})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			if gerr := s.check(ctx, c, err); errors.Is(gerr, sandbox.ErrGone) {
				return nil, gerr
			}
			return nil, fmt.Errorf("docker: copy out %s: %w", p, fs.ErrNotExist)
		}
		return nil, s.check(ctx, c, fmt.Errorf("docker: copy out %s: %w", p, err))
	}
	return res.Content, nil
}

// Close removes the container (killing every process in it) and frees what
// the sandbox held. It is idempotent; it returns the first call's error.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		c, sb := s.cur, s.standby
		s.standby = nil
		procs := s.procsLocked()
		s.mu.Unlock()
		for _, p := range procs {
			p.closeConn()
		}
		if c != nil {
			s.closeErr = s.removeContainer(ctx, c)
		}
		if sb != nil {
			<-sb.ready
			if sb.c != nil {
				s.closeErr = errors.Join(s.closeErr, s.removeContainer(ctx, sb.c))
			}
		}
		s.wg.Wait()
		s.b.forget(s)
	})
	return s.closeErr
}

// procsOfLocked returns the processes running in container c.
func (s *Sandbox) procsOfLocked(c *ctr) []*process {
	var out []*process
	for p := range s.procs {
		if p.c == c {
			out = append(out, p)
		}
	}
	return out
}

func (s *Sandbox) procsLocked() []*process {
	out := make([]*process, 0, len(s.procs))
	for p := range s.procs {
		out = append(out, p)
	}
	return out
}

// Snapshot commits the container's filesystem (the working directory
// included: it lives in the container's own layer) to an image on its
// engine, pausing its processes while it does. Processes are not part of a
// snapshot. The image carries the owner label and LabelSnapshot, so Reap
// removes it once no Snapshot holds it. Release it when done.
func (s *Sandbox) Snapshot(ctx context.Context) (sandbox.Snapshot, error) {
	s.restoreMu.Lock()
	defer s.restoreMu.Unlock()
	c, err := s.current()
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{b: s.b, e: s.e, id: newID()}
	s.b.hold(snap.id)
	res, err := s.e.cli.ContainerCommit(ctx, c.id, client.ContainerCommitOptions{
		Changes: []string{fmt.Sprintf("LABEL %s=%s", LabelSnapshot, snap.id)},
		Comment: "nextstate snapshot of sandbox " + s.id,
	})
	if err != nil {
		s.b.unhold(snap.id)
		return nil, s.check(ctx, c, fmt.Errorf("docker: snapshot: %w", err))
	}
	snap.image = res.ID
	s.b.mu.Lock()
	s.b.snaps[snap] = struct{}{}
	s.b.mu.Unlock()
	s.prepareStandby(snap)
	return snap, nil
}

// Restore returns the sandbox to snap: the sandbox's container is
// replaced by one started from the snapshot's image with the sandbox's
// Spec, and the old one is removed in the background. Every process of the
// old container ends (persistent shells included: start new ones). snap
// must come from a sandbox on the same engine. A sandbox that was gone is
// usable again after a Restore.
//
// To make a reset cost little more than a pointer swap, Snapshot and
// Restore start the next container ahead, in the background: a standby,
// started from the snapshot's image and left untouched until the next
// Restore of the same snapshot puts it in place (processes that never ran
// leave no state). A sandbox thus holds two containers once it has a
// snapshot; Close, a Snapshot of something else, and the snapshot's
// Release remove the standby.
func (s *Sandbox) Restore(ctx context.Context, snap sandbox.Snapshot) error {
	sn, ok := snap.(*Snapshot)
	if !ok || sn.b != s.b {
		return fmt.Errorf("docker: restore: %T is not a snapshot of this backend", snap)
	}
	if sn.e != s.e {
		return fmt.Errorf("docker: restore: the snapshot is on engine %s, the sandbox on %s", sn.e.host, s.e.host)
	}
	s.restoreMu.Lock()
	defer s.restoreMu.Unlock()
	s.mu.Lock()
	closed, sb := s.closed, s.standby
	if sb != nil && sb.snap == sn {
		s.standby = nil
	} else {
		sb = nil
	}
	s.mu.Unlock()
	if closed {
		return sandbox.ErrClosed
	}
	var c *ctr
	if sb != nil {
		select {
		case <-sb.ready:
			c = sb.c // nil when it failed to start: start one now
		case <-ctx.Done():
			s.mu.Lock()
			if s.standby == nil && !s.closed {
				s.standby = sb
				sb = nil
			}
			s.mu.Unlock()
			if sb != nil {
				s.discard(sb)
			}
			return ctx.Err()
		}
	}
	if c == nil {
		if !sn.use() {
			return fmt.Errorf("docker: restore: snapshot %s was released", sn.id)
		}
		var err error
		if c, err = s.startContainer(ctx, sn.image, sn); err != nil {
			sn.unuse(ctx)
			return fmt.Errorf("docker: restore: %w", err)
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.Join(sandbox.ErrClosed, s.removeContainer(ctx, c))
	}
	old := s.cur
	s.cur, s.gone = c, nil
	procs := s.procsOfLocked(old)
	s.mu.Unlock()
	for _, p := range procs {
		p.closeConn()
	}
	s.b.background(func() {
		if err := s.removeContainer(context.Background(), old); err != nil {
			s.b.log.Warn("removing a restored sandbox's old container", "sandbox", s.id, "err", err)
		}
	})
	s.prepareStandby(sn)
	return nil
}

// KillAll implements sandbox.Killer. The quick way first (killInPlace):
// the keeper's own running bash kills every other process, and the
// engine's process list must then show the keeper alone. Failing that, the
// sure way (teardown): the engine kills PID 1, the kernel then kills every
// other process of the namespace whatever session or group it is in, and
// the container starts again, its filesystem as it was. Neither trusts
// anything of the container's that the agent could have replaced (its
// shell, its kill, its ps). Persistent shells end.
func (s *Sandbox) KillAll(ctx context.Context) error {
	s.restoreMu.Lock()
	defer s.restoreMu.Unlock()
	c, err := s.current()
	if err != nil {
		return err
	}
	// Calls still running on c see a restore, not a death, when they
	// find it stopped.
	next := &ctr{id: c.id, name: c.name, snap: c.snap}
	s.mu.Lock()
	if s.cur != c {
		s.mu.Unlock()
		return errors.New("docker: kill all: the sandbox was restored meanwhile")
	}
	s.cur = next
	procs := s.procsOfLocked(c)
	s.mu.Unlock()
	// The processes' connections are let go of only once they are dead:
	// a shell whose stdin closed would exit first, and something waiting
	// for that could act before the kill.
	defer func() {
		for _, p := range procs {
			p.closeConn()
		}
	}()
	if s.killInPlace(ctx, c) {
		return nil
	}
	return s.teardown(ctx, c, next)
}

// teardown is KillAll's sure way: the engine kills c's PID 1, which ends
// its PID namespace, and starts the container again; next is c's record
// from now on.
func (s *Sandbox) teardown(ctx context.Context, c, next *ctr) error {
	cli := s.e.cli
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the wait's request if the kill fails
	wait := cli.ContainerWait(wctx, c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	if _, err := cli.ContainerKill(ctx, c.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return s.check(ctx, next, fmt.Errorf("docker: kill all: %w", err))
	}
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		return s.check(ctx, next, fmt.Errorf("docker: kill all: waiting for the container to stop: %w", err))
	}
	if _, err := cli.ContainerStart(ctx, c.id, client.ContainerStartOptions{}); err != nil {
		return s.check(ctx, next, fmt.Errorf("docker: kill all: starting the container again: %w", err))
	}
	return nil
}

// killInPlace is KillAll's quick way, taken when it works: the keeper's
// own bash (/proc/1/exe, the running binary, which nothing in the
// container can change) runs kill -9 -1, and then the engine's process
// list (ps on the engine's host, nothing of the container's) must show the
// keeper alone, zombies aside. It reports whether that held; when not
// (the agent replaced a library bash loads, a process was forking), the
// caller tears the namespace down instead.
func (s *Sandbox) killInPlace(ctx context.Context, c *ctr) bool {
	cli := s.e.cli
	created, err := cli.ExecCreate(ctx, c.id, client.ExecCreateOptions{
		Cmd: []string{"/proc/1/exe", "-c", "kill -9 -1 2>/dev/null; exit 0"},
	})
	if err != nil {
		return false
	}
	if _, err := cli.ExecStart(ctx, created.ID, client.ExecStartOptions{Detach: true}); err != nil {
		return false
	}
	if code, err := s.exitCode(ctx, created.ID); err != nil || code != 0 {
		return false
	}
	top, err := cli.ContainerTop(ctx, c.id, client.ContainerTopOptions{Arguments: []string{"-o", "pid,stat"}})
	if err != nil {
		return false
	}
	stat := slices.Index(top.Titles, "STAT")
	live := 0
	for _, p := range top.Processes {
		if stat < 0 || stat >= len(p) || !strings.HasPrefix(p[stat], "Z") {
			live++
		}
	}
	return live == 1
}

// standby is a container started ahead for the next Restore of snap.
type standby struct {
	snap  *Snapshot
	ready chan struct{} // closed when c or err is set
	c     *ctr
	err   error
}

// standbyTimeout bounds the start of a standby container.
const standbyTimeout = 2 * time.Minute

// prepareStandby starts a standby container of snap in the background,
// replacing (and removing) a standby of another snapshot.
func (s *Sandbox) prepareStandby(sn *Snapshot) {
	if !sn.use() {
		return
	}
	sb := &standby{snap: sn, ready: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sn.unuse(context.Background())
		return
	}
	prev := s.standby
	s.standby = sb
	s.mu.Unlock()
	if prev != nil {
		s.discard(prev)
	}
	s.b.background(func() { // Close and Restore wait on ready
		defer close(sb.ready)
		ctx, cancel := context.WithTimeout(context.Background(), standbyTimeout)
		defer cancel()
		sb.c, sb.err = s.startContainer(ctx, sn.image, sn)
		if sb.err != nil {
			sn.unuse(ctx)
			s.b.log.Warn("starting a standby container", "sandbox", s.id, "err", sb.err)
		}
	})
}

// discard removes a standby that is no longer wanted, in the background.
func (s *Sandbox) discard(sb *standby) {
	s.b.background(func() {
		<-sb.ready
		if sb.c != nil {
			if err := s.removeContainer(context.Background(), sb.c); err != nil {
				s.b.log.Warn("removing a standby container", "sandbox", s.id, "err", err)
			}
		}
	})
}

// dropStandby discards the sandbox's standby if it is one of sn.
func (s *Sandbox) dropStandby(sn *Snapshot) {
	s.mu.Lock()
	sb := s.standby
	if sb == nil || sb.snap != sn {
		s.mu.Unlock()
		return
	}
	s.standby = nil
	s.mu.Unlock()
	s.discard(sb)
}

// Snapshot is an image committed from a sandbox's container.
type Snapshot struct {
	b     *Backend
	e     *engine
	id    string
	image string

	mu       sync.Mutex
	users    int // containers restored from it that still exist
	released bool
	removed  atomic.Bool
}

// ID is the snapshot's ID (the LabelSnapshot value).
func (sn *Snapshot) ID() string { return sn.id }

// Image is the committed image's ID.
func (sn *Snapshot) Image() string { return sn.image }

func (sn *Snapshot) use() bool {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.released {
		return false
	}
	sn.users++
	return true
}

func (sn *Snapshot) unuse(ctx context.Context) {
	sn.mu.Lock()
	sn.users--
	last := sn.released && sn.users == 0
	sn.mu.Unlock()
	if last {
		_ = sn.remove(ctx)
	}
}

// Release removes the snapshot's image, once no container restored from it
// remains. Idempotent.
func (sn *Snapshot) Release(ctx context.Context) error {
	sn.mu.Lock()
	if sn.released {
		sn.mu.Unlock()
		return nil
	}
	sn.released = true
	sn.mu.Unlock()
	sn.b.mu.Lock()
	delete(sn.b.snaps, sn)
	live := make([]*Sandbox, 0, len(sn.b.live))
	for s := range sn.b.live {
		live = append(live, s)
	}
	sn.b.mu.Unlock()
	for _, s := range live {
		s.dropStandby(sn)
	}
	sn.mu.Lock()
	inUse := sn.users > 0
	sn.mu.Unlock()
	if inUse {
		return nil // the last container restored from it removes it
	}
	return sn.remove(ctx)
}

func (sn *Snapshot) remove(ctx context.Context) error {
	if sn.removed.Swap(true) {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	_, err := sn.e.cli.ImageRemove(rctx, sn.image, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	sn.b.unhold(sn.id)
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: removing snapshot image %s: %w", shortID(sn.image), err)
	}
	return nil
}

// IsValid reports, without asking the engine, whether the sandbox is
// usable: not closed, and not found dead by an earlier call
// (sandbox.Validator).
func (s *Sandbox) IsValid() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && s.gone == nil
}

// Usage reports the container's memory use, process count and CPU time,
// from one stats sample of the engine (sandbox.Stats).
func (s *Sandbox) Usage(ctx context.Context) (sandbox.Usage, error) {
	c, err := s.current()
	if err != nil {
		return sandbox.Usage{}, err
	}
	res, err := s.e.cli.ContainerStats(ctx, c.id, client.ContainerStatsOptions{})
	if err != nil {
		return sandbox.Usage{}, s.check(ctx, c, fmt.Errorf("docker: stats: %w", err))
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return sandbox.Usage{}, fmt.Errorf("docker: stats: %w", err)
	}
	return sandbox.Usage{
		MemoryBytes: int64(st.MemoryStats.Usage),
		PIDs:        int64(st.PidsStats.Current),
		CPU:         time.Duration(st.CPUStats.CPUUsage.TotalUsage),
	}, nil
}

// SetLabels changes the sandbox's labels (an empty value removes one)
// (sandbox.Labeler). A container's labels cannot change once it exists, so
// the change is kept here: Labels reports it, and containers started
// later (by Restore) carry it. The reserved owner and sandbox labels do
// not change.
func (s *Sandbox) SetLabels(_ context.Context, labels map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.ErrClosed
	}
	s.spec.Labels = sandbox.MergeLabels(s.spec.Labels, labels)
	return nil
}

// Labels returns the sandbox's labels as SetLabels left them (without the
// owner and sandbox labels the backend adds).
func (s *Sandbox) Labels() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.spec.Labels)
}
