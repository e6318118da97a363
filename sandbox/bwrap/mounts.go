package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// checkMounts checks a Spec's Mounts for this backend and returns them
// cleaned, parents before children (bwrap binds them in order). A Source
// must exist on this host. A Target must not lie in /proc, /dev, /sys or
// /run, nor be the root; one inside a directory bound read-only from the
// host or the image rootfs must exist there, since bwrap cannot make a
// mount point in a read-only directory.
func checkMounts(spec sandbox.Spec, rootDir, workTop string) ([]sandbox.Mount, error) {
	if err := sandbox.CheckMounts(spec.Mounts); err != nil {
		return nil, fmt.Errorf("bwrap: %w", err)
	}
	out := make([]sandbox.Mount, 0, len(spec.Mounts))
	for _, m := range spec.Mounts {
		m.Source, m.Target = filepath.Clean(m.Source), filepath.Clean(m.Target)
		if _, err := os.Stat(m.Source); err != nil {
			return nil, fmt.Errorf("bwrap: mount source %s: %w", m.Source, err)
		}
		top := strings.Split(m.Target, "/")[1]
		switch top {
		case "proc", "dev", "sys", "run":
			return nil, fmt.Errorf("bwrap: mount target %s lies in the sandbox's own /%s", m.Target, top)
		}
		bound := spec.Image == "" && hostEntries[top] || spec.Image != "" && !skipImageEntries[top]
		if bound && top != workTop && top != m.Target[1:] {
			if _, err := os.Lstat(filepath.Join(rootDir, top)); err != nil {
				bound = false // not in the rootfs: made on the sandbox's own root
			}
		}
		if bound && top != workTop && top != m.Target[1:] {
			if _, err := os.Stat(filepath.Join(rootDir, m.Target)); err != nil {
				return nil, fmt.Errorf("bwrap: mount target %s lies in the read-only /%s and does not exist there "+
					"(bwrap cannot make a mount point in it; pick a target such as /mnt/...): %w", m.Target, top, err)
			}
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b sandbox.Mount) int { return pathDepth(a.Target) - pathDepth(b.Target) })
	return out, nil
}

// pathDepth is the number of elements of a clean absolute path.
func pathDepth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}
