package bwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The host's system view a sandbox without an image gets (the package
// doc's Layout says what it holds); the GUI envs' app and browser
// sandboxes get it too, through SystemArgs.

// systemEntries are the top-level host directories bound read-only.
var systemEntries = map[string]bool{
	"usr": true, "bin": true, "sbin": true, "lib": true, "lib32": true, "lib64": true,
	"libx32": true, "etc": true, "opt": true,
}

// varEntries are the parts of the host's /var a sandbox reads.
var varEntries = []string{"/var/lib/dpkg", "/var/cache/fontconfig"}

// secretPaths are masked wherever they exist; a trailing "*" is a prefix
// match in that directory.
var secretPaths = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/security/opasswd", "/etc/ssl/private", "/etc/ssh/ssh_host_*",
	"/etc/docker", "/etc/kubernetes", "/etc/containerd", "/etc/nextstate",
}

// SystemArgs returns the bwrap arguments that build the host's read-only
// system view described above onto a root the caller has made a tmpfs
// ("--tmpfs /" before them; "--remount-ro /" after the caller's own binds).
// hide names further host paths (files or directories) to mask; a path
// that is not inside a bound directory is not visible anyway and is
// skipped, one that would hide a whole system directory is an error.
// skip names top-level entries the caller binds itself.
func SystemArgs(hide []string, skip ...string) ([]string, error) {
	args, err := rootArgs("/", func(n string) bool { return systemEntries[n] && !slices.Contains(skip, n) })
	if err != nil {
		return nil, fmt.Errorf("bwrap: host root: %w", err)
	}
	if !slices.Contains(skip, "var") {
		args = append(args, "--dir", "/var", "--dir", "/var/lib", "--dir", "/var/cache",
			"--symlink", "/run", "/var/run", "--symlink", "/run/lock", "/var/lock",
			"--tmpfs", "/var/tmp", "--chmod", "1777", "/var/tmp")
		for _, p := range varEntries {
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				args = append(args, "--ro-bind", p, p)
			}
		}
	}
	masks, err := maskPaths(hide)
	if err != nil {
		return nil, err
	}
	for _, m := range masks {
		args = append(args, maskArgs(m)...)
	}
	return args, nil
}

// rootArgs returns the bwrap arguments that put the top-level entries of
// root that keep accepts at the sandbox's root: a directory (or file)
// bound read-only, a symbolic link made as the same link. An entry whose
// link cannot be read is left out.
func rootArgs(root string, keep func(name string) bool) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var args []string
	for _, e := range ents {
		n := e.Name()
		if !keep(n) {
			continue
		}
		src := filepath.Join(root, n)
		if e.Type()&os.ModeSymlink != 0 {
			t, err := os.Readlink(src)
			if err != nil {
				continue
			}
			args = append(args, "--symlink", t, "/"+n)
			continue
		}
		args = append(args, "--ro-bind", src, "/"+n)
	}
	return args, nil
}

// maskPaths lists the existing host paths to mask: the secrets and hide,
// resolved through symlinks, each inside a bound directory, sorted and
// without one inside another.
func maskPaths(hide []string) ([]string, error) {
	var cands []string
	for _, p := range secretPaths {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			ents, _ := os.ReadDir(filepath.Dir(pre))
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), filepath.Base(pre)) {
					cands = append(cands, filepath.Join(filepath.Dir(pre), e.Name()))
				}
			}
			continue
		}
		cands = append(cands, p)
	}
	for _, p := range hide {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("bwrap: hidden path %q is not absolute", p)
		}
		cands = append(cands, p)
	}
	var out []string
	for _, p := range cands {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("bwrap: hidden path %s: %w", p, err)
		}
		if !visible(real) {
			continue
		}
		if parts := strings.Split(real, "/"); len(parts) == 2 {
			return nil, fmt.Errorf("bwrap: hidden path %s would hide the system directory %s of every sandbox", p, real)
		}
		out = append(out, real)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	// A mask inside another mask is redundant, and bwrap could not make
	// its mount point in the masking tmpfs.
	var kept []string
	for _, p := range out {
		if len(kept) > 0 && within(kept[len(kept)-1], p) {
			continue
		}
		kept = append(kept, p)
	}
	return kept, nil
}

// visible reports whether a host path lies in what SystemArgs binds.
func visible(p string) bool {
	top := strings.Split(p, "/")[1]
	if systemEntries[top] {
		return true
	}
	return slices.ContainsFunc(varEntries, func(v string) bool { return within(v, p) })
}

// within reports whether p is dir or lies below it.
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// maskArgs hides one host path: a directory under an empty read-only
// tmpfs, a file under /dev/null.
func maskArgs(p string) []string {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return []string{"--tmpfs", p, "--remount-ro", p}
	}
	return []string{"--ro-bind", "/dev/null", p}
}

// ProcArgs returns the bwrap arguments for a sandbox's own /proc, hardened
// as container engines do: uid 0 without capabilities may still write
// what root owns there (a sysctl such as kernel.core_pattern, which runs a
// program as the host's root; /proc/sysrq-trigger), so /proc/sys, the
// trigger and the bus, fs and irq trees are read-only, and the files that
// show the host's keys and timers are empty. Entries this kernel lacks are
// left out.
func ProcArgs() []string {
	args := []string{"--proc", "/proc"}
	for _, p := range []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/bus", "/proc/fs", "/proc/irq"} {
		if _, err := os.Stat(p); err == nil {
			args = append(args, "--ro-bind", p, p)
		}
	}
	for _, p := range []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats"} {
		if _, err := os.Stat(p); err == nil {
			args = append(args, "--ro-bind", "/dev/null", p)
		}
	}
	return args
}
