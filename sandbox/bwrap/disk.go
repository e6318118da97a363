package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// diskDir is the state directory's subdirectory that holds a sandbox's
// writable places (workspace, /tmp, /root): a tmpfs of Limits.DiskBytes
// where this process may mount one (root with CAP_SYS_ADMIN, as the
// backend needs anyway), so a sandbox that fills its files gets ENOSPC and
// the host's disk stays untouched. Its pages are memory: under cgroups they
// count against the sandbox's memory limit, the tighter of the two.
const diskDir = "disk"

// mountDisk mounts a tmpfs of size bytes on dir.
func mountDisk(dir string, size int64) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV,
		"size="+strconv.FormatInt(size, 10)+",mode=0755"); err != nil {
		return fmt.Errorf("bwrap: mounting the sandbox's disk (a tmpfs of %d bytes) on %s: %w", size, dir, err)
	}
	return nil
}

// unmountDisk unmounts a state directory's disk, if it has one mounted.
func unmountDisk(state string) {
	_ = syscall.Unmount(filepath.Join(state, diskDir), syscall.MNT_DETACH)
}

// probeDisk says whether sandboxes under dir can have a disk of their
// own: it mounts a small tmpfs there and unmounts it.
func probeDisk(dir string) error {
	d, err := os.MkdirTemp(dir, "probe-disk-")
	if err != nil {
		return err
	}
	defer os.Remove(d)
	if err := mountDisk(d, 1<<20); err != nil {
		return err
	}
	return syscall.Unmount(d, syscall.MNT_DETACH)
}
