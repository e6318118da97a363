package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/image"
)

// Name is the backend's registered name.
const Name = "docker"

// DefaultImage is the image of a Spec that names none: the base image that
// `nextstate image build` makes (package sandbox/image).
const DefaultImage = image.Base

// Labels this backend adds besides sandbox.LabelOwner.
const (
	// LabelSandbox is the sandbox's ID, on its containers.
	LabelSandbox = sandbox.LabelPrefix + "sandbox"
	// LabelSnapshot is the snapshot's ID, on the images Snapshot commits.
	LabelSnapshot = sandbox.LabelPrefix + "snapshot"
)

// DefaultWorkdir is the working directory of a Spec that names none.
const DefaultWorkdir = "/workspace"

// Capabilities are the only capabilities a sandbox's processes keep (all
// others are dropped). They let root inside the container own and read its
// files (CHOWN, DAC_OVERRIDE, FOWNER, FSETID), switch users as package
// managers and test harnesses do (SETUID, SETGID), signal its own processes
// (KILL) and listen on ports below 1024 (NET_BIND_SERVICE). Left out from
// Docker's default set: NET_RAW (raw sockets, ping), MKNOD, SETFCAP,
// SETPCAP, SYS_CHROOT and AUDIT_WRITE.
var Capabilities = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"}

// engineTimeout bounds one engine's answer to Open's first call.
const engineTimeout = 10 * time.Second

func init() {
	sandbox.Register(Name, func(ctx context.Context, o sandbox.Options) (sandbox.Backend, error) {
		b, err := Open(ctx, o)
		if err != nil {
			return nil, err
		}
		return b, nil
	})
}

// Backend places sandboxes on one or more Docker engines. Its methods are
// safe for concurrent use.
type Backend struct {
	owner   string
	engines []*engine
	log     *slog.Logger

	mu     sync.Mutex
	closed bool
	live   map[*Sandbox]struct{}
	snaps  map[*Snapshot]struct{}
	// held names what Reap must keep: container names and snapshot IDs,
	// entered before the engine creates them.
	held map[string]struct{}
	// bg counts background work (removing replaced containers, starting
	// standbys); Close waits for it. After Close, bgDone makes new work
	// run in its caller instead.
	bg     sync.WaitGroup
	bgDone bool
}

// engine is one Docker engine.
type engine struct {
	host string
	cli  *client.Client
	ncpu int
	live int // sandboxes placed here; under Backend.mu
	// noDiskQuota is set once the engine refused a container's size
	// (its storage driver has no per-container quota).
	noDiskQuota atomic.Bool
}

// DiskQuota reports whether the engine at host bounds each container's
// disk (Limits.DiskBytes as the container's storage size): known once a
// sandbox was created there; true until an engine refused it.
func (b *Backend) DiskQuota(host string) bool {
	for _, e := range b.engines {
		if e.host == host {
			return !e.noDiskQuota.Load()
		}
	}
	return false
}

// Engine is one engine a Backend places sandboxes on.
type Engine struct {
	// Host is the address it was opened with.
	Host string
	// Client talks to it; it belongs to the Backend, which closes it.
	Client *client.Client
}

var _ sandbox.Backend = (*Backend)(nil)

// Open connects to every engine of opts.Hosts (default $DOCKER_HOST or
// DefaultHost), keeps those that answer within 10 s, and reaps on each of
// them: it removes the containers and snapshot images labelled with its
// owner (an earlier run's, when the owner is explicit) and those labelled
// with any owner that sandbox.OwnerAlive knows (made on this host) and
// finds ended (a crashed process's); see the package doc. opts.Owner
// defaults to sandbox.NewOwnerID(). It fails with an error wrapping
// sandbox.ErrUnavailable when no engine answers; engines that do not
// answer while others do are left out, with a warning in the log. A
// failure to reap is logged, not returned.
func Open(ctx context.Context, opts sandbox.Options) (*Backend, error) {
	b := &Backend{
		owner: opts.Owner,
		log:   slog.Default().With("backend", Name),
		live:  map[*Sandbox]struct{}{},
		snaps: map[*Snapshot]struct{}{},
		held:  map[string]struct{}{},
	}
	if b.owner == "" {
		b.owner = sandbox.NewOwnerID()
	}
	if !sandbox.ValidOwner(b.owner) {
		return nil, fmt.Errorf("docker: invalid owner %q: want 1 to 64 letters, digits and '-'", b.owner)
	}
	hosts := opts.Hosts
	if len(hosts) == 0 {
		hosts = []string{""}
	}
	var errs []error
	seen := map[string]bool{}
	for _, h := range hosts {
		if h == "" {
			if h = os.Getenv("DOCKER_HOST"); h == "" {
				h = DefaultHost
			}
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		e, err := openEngine(ctx, h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b.engines = append(b.engines, e)
	}
	if len(b.engines) == 0 {
		return nil, fmt.Errorf("docker: no engine answers (%w): %w", sandbox.ErrUnavailable, errors.Join(errs...))
	}
	for _, err := range errs {
		b.log.Warn("docker engine left out", "err", err)
	}
	if n, err := b.reapAtOpen(ctx); err != nil {
		b.log.Warn("reaping at open", "err", err)
	} else if n > 0 {
		b.log.Info("reaped orphans at open", "removed", n)
	}
	return b, nil
}

// reapAtOpen removes, on every engine, the containers and snapshot images
// of this backend's own owner and of every owner of this host that has
// ended (sandbox.OwnerAlive: known and not alive). Live and unknown
// owners' are kept.
func (b *Backend) reapAtOpen(ctx context.Context) (int, error) {
	return b.sweep(ctx, "", func(owner string) bool {
		if owner == b.owner {
			return true
		}
		alive, known := sandbox.OwnerAlive(owner)
		return known && !alive
	})
}

func openEngine(ctx context.Context, host string) (*engine, error) {
	cli, err := NewClient(host)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	info, err := cli.Info(ictx, client.InfoOptions{})
	if err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker engine %s: %w", host, err)
	}
	return &engine{host: host, cli: cli, ncpu: max(info.Info.NCPU, 1)}, nil
}

// Name returns "docker".
func (b *Backend) Name() string { return Name }

// Owner returns the owner label value of the backend's resources.
func (b *Backend) Owner() string { return b.owner }

// Engines returns the engines sandboxes are placed on, in the order of
// Options.Hosts. Callers use them to build or import an image on every
// engine (package sandbox/image); the clients stay the Backend's.
func (b *Backend) Engines() []Engine {
	out := make([]Engine, len(b.engines))
	for i, e := range b.engines {
		out[i] = Engine{Host: e.host, Client: e.cli}
	}
	return out
}

// Load returns the number of live sandboxes on each engine, by host.
func (b *Backend) Load() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int, len(b.engines))
	for _, e := range b.engines {
		out[e.host] = e.live
	}
	return out
}

// place picks the least-loaded engine not in skip, by live sandboxes per
// CPU, and counts a sandbox on it. nil when none is left.
func (b *Backend) place(skip map[*engine]bool) *engine {
	b.mu.Lock()
	defer b.mu.Unlock()
	var best *engine
	for _, e := range b.engines {
		if skip[e] {
			continue
		}
		// e.live/e.ncpu < best.live/best.ncpu, without division.
		if best == nil || e.live*best.ncpu < best.live*e.ncpu {
			best = e
		}
	}
	if best != nil {
		best.live++
	}
	return best
}

func (b *Backend) unplace(e *engine) {
	b.mu.Lock()
	e.live--
	b.mu.Unlock()
}

func (b *Backend) hold(key string) {
	b.mu.Lock()
	b.held[key] = struct{}{}
	b.mu.Unlock()
}

func (b *Backend) unhold(key string) {
	b.mu.Lock()
	delete(b.held, key)
	b.mu.Unlock()
}

func (b *Backend) holds(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.held[key]
	return ok
}

// Create places a sandbox on the least-loaded engine and starts its
// container; on an engine that lacks the image or does not answer it tries
// the next. The sandbox is ready for Exec when Create returns.
func (b *Backend) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	s, err := b.create(ctx, spec)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (b *Backend) create(ctx context.Context, spec sandbox.Spec) (*Sandbox, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("docker: backend closed: %w", sandbox.ErrClosed)
	}
	if err := sandbox.CheckMounts(spec.Mounts); err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	if spec.Image == "" {
		spec.Image = DefaultImage
	}
	if spec.Workdir == "" {
		spec.Workdir = DefaultWorkdir
	}
	s := &Sandbox{b: b, id: newID(), spec: spec, limits: spec.Limits.Or(sandbox.DefaultLimits), procs: map[*process]struct{}{}}
	tried := map[*engine]bool{}
	var errs []error
	for {
		e := b.place(tried)
		if e == nil {
			return nil, fmt.Errorf("docker: no engine could start %s: %w", spec.Image, errors.Join(errs...))
		}
		tried[e] = true
		s.e = e
		c, err := s.startContainer(ctx, spec.Image, nil)
		if err == nil {
			s.cur = c
			b.mu.Lock()
			if b.closed {
				b.mu.Unlock()
				_ = s.Close(context.WithoutCancel(ctx))
				return nil, fmt.Errorf("docker: backend closed: %w", sandbox.ErrClosed)
			}
			b.live[s] = struct{}{}
			b.mu.Unlock()
			return s, nil
		}
		b.unplace(e)
		errs = append(errs, fmt.Errorf("%s: %w", e.host, err))
		if cerrdefs.IsNotFound(err) || client.IsErrConnectionFailed(err) {
			continue // the image is not on this engine, or it is down: try another
		}
		return nil, fmt.Errorf("docker: creating sandbox: %w", err)
	}
}

// Reap removes the containers labelled with owner that this Backend does
// not hold, and the snapshot images labelled with owner that no live
// Snapshot holds, on every engine. An image still used by a container is
// left for a later Reap. It returns how many containers and images it
// removed. It does not ask whether owner is alive.
func (b *Backend) Reap(ctx context.Context, owner string) (int, error) {
	if owner == "" {
		return 0, errors.New("docker: reap: empty owner")
	}
	return b.sweep(ctx, owner, func(string) bool { return true })
}

// sweep is the mark and sweep of Reap and Open, on every engine: it lists
// the containers, then the snapshot images, that carry the owner label
// (with the value owner, or any value when owner is ""), keeps those whose
// owner pick does not choose and those this Backend holds, and removes the
// rest. pick is asked once per owner.
func (b *Backend) sweep(ctx context.Context, owner string, pick func(owner string) bool) (int, error) {
	picked := map[string]bool{}
	choose := func(o string) bool {
		p, ok := picked[o]
		if !ok {
			p = pick(o)
			picked[o] = p
		}
		return p
	}
	label := sandbox.LabelOwner
	if owner != "" {
		label += "=" + owner
	}
	n := 0
	var errs []error
	for _, e := range b.engines {
		list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{
			All:     true,
			Filters: make(client.Filters).Add("label", label),
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: listing containers: %w", e.host, err))
			continue
		}
		for _, c := range list.Items {
			if !choose(c.Labels[sandbox.LabelOwner]) {
				continue
			}
			if len(c.Names) > 0 && b.holds(strings.TrimPrefix(c.Names[0], "/")) {
				continue
			}
			_, err := e.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			switch {
			case err == nil:
				n++
			case cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err): // gone meanwhile, or removal under way
			default:
				errs = append(errs, fmt.Errorf("%s: removing container %s: %w", e.host, shortID(c.ID), err))
			}
		}
		imgs, err := e.cli.ImageList(ctx, client.ImageListOptions{
			Filters: make(client.Filters).Add("label", label, LabelSnapshot),
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: listing images: %w", e.host, err))
			continue
		}
		for _, im := range imgs.Items {
			if !choose(im.Labels[sandbox.LabelOwner]) || b.holds(im.Labels[LabelSnapshot]) {
				continue
			}
			_, err := e.cli.ImageRemove(ctx, im.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			switch {
			case err == nil:
				n++
			case cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err): // gone, or in use: a later Reap
			default:
				errs = append(errs, fmt.Errorf("%s: removing image %s: %w", e.host, shortID(im.ID), err))
			}
		}
	}
	return n, errors.Join(errs...)
}

// Close closes every live sandbox and releases every snapshot, waits for
// background removals, reaps the owner's orphans, and closes the engine
// clients. It is idempotent; Create fails with sandbox.ErrClosed after it.
func (b *Backend) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	sbs := make([]*Sandbox, 0, len(b.live))
	for s := range b.live {
		sbs = append(sbs, s)
	}
	snaps := make([]*Snapshot, 0, len(b.snaps))
	for s := range b.snaps {
		snaps = append(snaps, s)
	}
	b.mu.Unlock()

	var mu sync.Mutex
	var errs []error
	note := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	// Close sandboxes eight at a time: each removal is one engine call.
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, s := range sbs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			note(s.Close(ctx))
		}()
	}
	wg.Wait()
	for _, s := range snaps {
		note(s.Release(ctx))
	}
	b.mu.Lock()
	b.bgDone = true
	b.mu.Unlock()
	b.bg.Wait()
	_, err := b.Reap(ctx, b.owner)
	note(err)
	for _, e := range b.engines {
		_ = e.cli.Close()
	}
	return errors.Join(errs...)
}

// background runs f in a goroutine the Backend owns (Close waits for
// it), or in the caller once Close has begun waiting.
func (b *Backend) background(f func()) {
	b.mu.Lock()
	if b.bgDone {
		b.mu.Unlock()
		f()
		return
	}
	b.bg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.bg.Done()
		f()
	}()
}

func (b *Backend) forget(s *Sandbox) {
	b.mu.Lock()
	if _, ok := b.live[s]; ok {
		delete(b.live, s)
		s.e.live--
	}
	b.mu.Unlock()
}

// containerConfig is the configuration of every sandbox container.
func (s *Sandbox) containerConfig(img, name string) (*container.Config, *container.HostConfig) {
	labels := sandbox.MergeLabels(s.Labels(), map[string]string{sandbox.LabelOwner: s.b.owner, LabelSandbox: s.id})
	cfg := &container.Config{
		Image: img,
		// Any image's own entrypoint is replaced by the keeper, PID 1
		// itself, so that nothing in the container can kill it (see
		// sandbox.KeeperLoop; its stdin stays open and empty). An image
		// without bash gets an idle sleep under sh, which does reap.
		Entrypoint: []string{"/bin/sh", "-c", keeper},
		Cmd:        []string{},
		OpenStdin:  true,
		WorkingDir: s.spec.Workdir,
		Env:        envList(s.spec.Env),
		Labels:     labels,
		Hostname:   "sandbox",
	}
	pids := s.limits.PIDs
	net := container.NetworkMode("none")
	if s.spec.Network {
		net = "bridge"
	}
	hc := &container.HostConfig{
		NetworkMode: net,
		CapDrop:     []string{"ALL"},
		CapAdd:      slices.Clone(Capabilities),
		SecurityOpt: []string{"no-new-privileges"},
		LogConfig:   container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     s.limits.MemoryBytes,
			MemorySwap: s.limits.MemoryBytes, // no swap beyond the memory limit
			NanoCPUs:   int64(s.limits.CPUs * 1e9),
			PidsLimit:  &pids,
		},
	}
	for _, m := range s.spec.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	return cfg, hc
}

// keeper is the container's PID 1: bash running sandbox.KeeperLoop, or,
// for an image without bash, sh waiting on a sleep (the loop is for images
// whose sleep does not know "infinity").
var keeper = "command -v bash >/dev/null 2>&1 && exec bash -c " + shellQuote(sandbox.KeeperLoop) + `
trap '' HUP INT QUIT TERM USR1 USR2 PIPE ALRM
while :; do sleep infinity 2>/dev/null || sleep 86400; done`

// shellQuote quotes s for sh, in single quotes.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startContainer creates and starts a container for s from img, named for
// its generation; Reap keeps it from before the engine creates it.
func (s *Sandbox) startContainer(ctx context.Context, img string, snap *Snapshot) (*ctr, error) {
	name := fmt.Sprintf("nextstate-%s-%d", s.id, s.gen.Add(1))
	s.b.hold(name)
	cfg, hc := s.containerConfig(img, name)
	cli := s.e.cli
	if !s.e.noDiskQuota.Load() {
		hc.StorageOpt = map[string]string{"size": strconv.FormatInt(s.limits.DiskBytes, 10)}
	}
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: name})
	if err != nil && hc.StorageOpt != nil && strings.Contains(err.Error(), "storage-opt") {
		// overlay2 on anything but xfs with pquota, among others: the
		// sandbox's disk is not bounded on this engine (see the doc).
		if !s.e.noDiskQuota.Swap(true) {
			s.b.log.Info("docker: the engine's storage driver has no per-container quota; sandboxes' disk is not bounded",
				"engine", s.e.host, "err", err)
		}
		hc.StorageOpt = nil
		created, err = cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: name})
	}
	if err != nil {
		s.b.unhold(name)
		return nil, err
	}
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		_, _ = cli.ContainerRemove(rctx, created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		cancel()
		s.b.unhold(name)
		return nil, fmt.Errorf("starting container: %w", err)
	}
	return &ctr{id: created.ID, name: name, snap: snap}, nil
}

// removeTimeout bounds one container removal.
const removeTimeout = 30 * time.Second

// removeContainer removes c and lets go of what it held: its name, and its
// snapshot image when that was released while c used it.
func (s *Sandbox) removeContainer(ctx context.Context, c *ctr) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	_, err := s.e.cli.ContainerRemove(rctx, c.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: removing container %s: %w", shortID(c.id), err)
	}
	s.b.unhold(c.name)
	if c.snap != nil {
		c.snap.unuse(rctx)
	}
	return nil
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func envList(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
