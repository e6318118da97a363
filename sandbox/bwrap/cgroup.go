package bwrap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// Limits modes, as Backend.LimitsMode reports them.
const (
	ModeCgroup2 = "cgroup2" // memory.max, pids.max, cpu.max in a child cgroup per sandbox
	ModeCgroup1 = "cgroup1" // memory, pids and cpu hierarchies of cgroup v1
	ModeRlimit  = "rlimit"  // RLIMIT_AS and RLIMIT_NPROC only
)

// cgroupNamePrefix starts every cgroup this package makes:
// "nextstate_<owner>_<sandbox id>".
const cgroupNamePrefix = "nextstate_"

// cgroups places sandboxes in child cgroups of the server's own cgroup.
type cgroups struct {
	mode string
	// bases are the parent directories, one per hierarchy (one for v2;
	// memory, pids and cpu for v1).
	bases []string
}

// cgroup is one sandbox's cgroup: a directory per hierarchy.
type cgroup struct {
	mode string
	dirs []string
}

// detectCgroups finds a writable cgroup hierarchy with the memory, pids and
// cpu controllers, proving it by making and removing a probe cgroup with
// limits. It returns nil and the reason when there is none.
func detectCgroups(owner string) (*cgroups, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	var errs []error
	// cgroup v2 first: a unified hierarchy with the controllers delegated.
	for _, m := range mounts {
		if m.fstype != "cgroup2" {
			continue
		}
		base := filepath.Join(m.point, strings.TrimPrefix(own[""], m.root))
		c := &cgroups{mode: ModeCgroup2, bases: []string{base}}
		if err := c.enable2(); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.probe(owner); err != nil {
			errs = append(errs, err)
			continue
		}
		return c, nil
	}
	// cgroup v1: one hierarchy per controller.
	c := &cgroups{mode: ModeCgroup1}
	for _, ctl := range []string{"memory", "pids", "cpu"} {
		found := false
		for _, m := range mounts {
			if m.fstype != "cgroup" || !m.has(ctl) {
				continue
			}
			path, ok := own[m.key()]
			if !ok {
				continue
			}
			c.bases = append(c.bases, filepath.Join(m.point, strings.TrimPrefix(path, m.root)))
			found = true
			break
		}
		if !found {
			errs = append(errs, fmt.Errorf("no cgroup v1 %s hierarchy", ctl))
			return nil, errors.Join(errs...)
		}
	}
	if err := c.probe(owner); err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	return c, nil
}

// enable2 turns the memory, pids and cpu controllers on for the children of
// the v2 base cgroup.
func (c *cgroups) enable2() error {
	base := c.bases[0]
	have, err := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
	if err != nil {
		return err
	}
	for _, ctl := range []string{"memory", "pids", "cpu"} {
		if !strings.Contains(" "+strings.TrimSpace(string(have))+" ", " "+ctl+" ") {
			return fmt.Errorf("cgroup2 %s: controller %s not available", base, ctl)
		}
	}
	on, _ := os.ReadFile(filepath.Join(base, "cgroup.subtree_control"))
	if strings.Contains(string(on), "memory") && strings.Contains(string(on), "pids") && strings.Contains(string(on), "cpu") {
		return nil
	}
	if err := os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0); err != nil {
		return fmt.Errorf("cgroup2 %s: enable controllers: %w", base, err)
	}
	return nil
}

func (c *cgroups) probe(owner string) error {
	cg, err := c.create("probe-"+sandbox.RandomID(4), owner, sandbox.Limits{MemoryBytes: 64 << 20, CPUs: 0.5, PIDs: 16})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cg.remove(ctx)
}

func cgroupName(owner, id string) string { return cgroupNamePrefix + owner + "_" + id }

// create makes the cgroup of sandbox id and writes its limits.
func (c *cgroups) create(id, owner string, l sandbox.Limits) (*cgroup, error) {
	cg := &cgroup{mode: c.mode}
	name := cgroupName(owner, id)
	for _, b := range c.bases {
		d := filepath.Join(b, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			cg.rmdirs()
			return nil, fmt.Errorf("bwrap: cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, d)
	}
	if err := cg.limit(l); err != nil {
		cg.rmdirs()
		return nil, err
	}
	return cg, nil
}

func (cg *cgroup) limit(l sandbox.Limits) error {
	const period = 100000
	quota := int64(l.CPUs * period)
	if quota < 1000 {
		quota = 1000
	}
	type w struct{ file, val string }
	var ws []w
	switch cg.mode {
	case ModeCgroup2:
		d := cg.dirs[0]
		ws = []w{
			{filepath.Join(d, "memory.max"), strconv.FormatInt(l.MemoryBytes, 10)},
			{filepath.Join(d, "memory.swap.max"), "0"},
			{filepath.Join(d, "pids.max"), strconv.FormatInt(l.PIDs, 10)},
			{filepath.Join(d, "cpu.max"), fmt.Sprintf("%d %d", quota, period)},
		}
	case ModeCgroup1:
		mem, pids, cpu := cg.dirs[0], cg.dirs[1], cg.dirs[2]
		ws = []w{
			{filepath.Join(mem, "memory.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10)},
			{filepath.Join(mem, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10)},
			{filepath.Join(pids, "pids.max"), strconv.FormatInt(l.PIDs, 10)},
			{filepath.Join(cpu, "cpu.cfs_period_us"), strconv.Itoa(period)},
			{filepath.Join(cpu, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10)},
		}
	}
	for _, x := range ws {
		if err := os.WriteFile(x.file, []byte(x.val), 0); err != nil {
			if errors.Is(err, os.ErrNotExist) && (strings.HasSuffix(x.file, "swap.max") || strings.Contains(x.file, "memsw")) {
				continue // no swap accounting: nothing to limit
			}
			return fmt.Errorf("bwrap: cgroup limit: %w", err)
		}
	}
	return nil
}

// procsFiles are the cgroup.procs files a process writes its pid into to
// join the cgroup.
func (cg *cgroup) procsFiles() []string {
	out := make([]string, len(cg.dirs))
	for i, d := range cg.dirs {
		out[i] = filepath.Join(d, "cgroup.procs")
	}
	return out
}

// pids lists the processes in the cgroup.
func (cg *cgroup) pids() []int {
	seen := map[int]bool{}
	var out []int
	for _, f := range cg.procsFiles() {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(s); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// remove kills what is left in the cgroup and removes it, retrying while
// killed processes exit, until ctx ends.
func (cg *cgroup) remove(ctx context.Context) error {
	if len(cg.dirs) == 0 {
		return nil
	}
	if cg.mode == ModeCgroup2 {
		_ = os.WriteFile(filepath.Join(cg.dirs[0], "cgroup.kill"), []byte("1"), 0)
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		for _, p := range cg.pids() {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		err := cg.rmdirs()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bwrap: remove cgroup: %w", err)
		case <-time.After(delay):
		}
	}
}

func (cg *cgroup) rmdirs() error {
	var errs []error
	kept := cg.dirs[:0]
	for _, d := range cg.dirs {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
			kept = append(kept, d)
		}
	}
	cg.dirs = kept
	return errors.Join(errs...)
}

// usage reads memory, pids and (v2) CPU use.
func (cg *cgroup) usage() sandbox.Usage {
	var u sandbox.Usage
	readInt := func(f string) int64 {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n
	}
	switch cg.mode {
	case ModeCgroup2:
		if len(cg.dirs) == 0 {
			return u
		}
		d := cg.dirs[0]
		u.MemoryBytes = readInt(filepath.Join(d, "memory.current"))
		u.PIDs = readInt(filepath.Join(d, "pids.current"))
		if b, err := os.ReadFile(filepath.Join(d, "cpu.stat")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					u.CPU = time.Duration(n) * time.Microsecond
				}
			}
		}
	case ModeCgroup1:
		if len(cg.dirs) < 3 {
			return u
		}
		u.MemoryBytes = readInt(filepath.Join(cg.dirs[0], "memory.usage_in_bytes"))
		u.PIDs = readInt(filepath.Join(cg.dirs[1], "pids.current"))
	}
	return u
}

// orphans lists the cgroups whose owner pick chooses and whose sandbox id
// keep does not hold.
func (c *cgroups) orphans(pick func(owner string) bool, keep func(id string) bool) []*cgroup {
	byName := map[string]*cgroup{}
	var names []string
	for _, b := range c.bases {
		ents, err := os.ReadDir(b)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			rest, ok := strings.CutPrefix(n, cgroupNamePrefix)
			if !e.IsDir() || !ok {
				continue
			}
			o, id, ok := strings.Cut(rest, "_")
			if !ok || keep(id) || !pick(o) {
				continue
			}
			cg := byName[n]
			if cg == nil {
				cg = &cgroup{mode: c.mode}
				byName[n] = cg
				names = append(names, n)
			}
			cg.dirs = append(cg.dirs, filepath.Join(b, n))
		}
	}
	out := make([]*cgroup, 0, len(names))
	for _, n := range names {
		out = append(out, byName[n])
	}
	return out
}

// ownCgroups reads /proc/self/cgroup: hierarchy key ("" for v2, the
// controller list for v1) to path.
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) == 3 {
			out[parts[1]] = parts[2]
		}
	}
	return out, sc.Err()
}

type cgroupMount struct {
	point, root, fstype string
	opts                []string // super options: the controllers of a v1 hierarchy
}

func (m cgroupMount) has(ctl string) bool {
	for _, o := range m.opts {
		if o == ctl {
			return true
		}
	}
	return false
}

// key is the hierarchy's controller list as /proc/self/cgroup writes it.
func (m cgroupMount) key() string {
	var ctls []string
	for _, o := range m.opts {
		switch o {
		case "rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec":
		default:
			if !strings.Contains(o, "=") || strings.HasPrefix(o, "name=") {
				ctls = append(ctls, o)
			}
		}
	}
	return strings.Join(ctls, ",")
}

func cgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root point opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 || (b[0] != "cgroup" && b[0] != "cgroup2") {
			continue
		}
		out = append(out, cgroupMount{point: a[4], root: a[3], fstype: b[0], opts: strings.Split(b[2], ",")})
	}
	return out, sc.Err()
}
