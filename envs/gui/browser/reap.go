package browser

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// DefaultDir is where pools keep their browsers' profile directories
// unless Options.Dir says otherwise: <temp>/nextstate-browsers/<owner>/b<n>.
func DefaultDir() string { return filepath.Join(os.TempDir(), "nextstate-browsers") }

// userDataFlag starts the command-line argument that names a browser's
// profile directory. Chromium passes it on to every child process, so it
// finds a browser's processes without a process group.
const userDataFlag = "--user-data-dir="

// proc is one process that runs with a profile directory under a pool
// directory.
type proc struct {
	pid   int
	dir   string // the profile directory
	owner string // the first path element below the pool directory
}

// killGroup kills p and, when p leads its process group (a pool's
// browsers do: their children, which do not carry --user-data-dir, are in
// it), the whole group.
func (p proc) killGroup() error {
	if pgid, err := syscall.Getpgid(p.pid); err == nil && pgid == p.pid {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return syscall.Kill(p.pid, syscall.SIGKILL)
}

// scanProcs lists the processes whose --user-data-dir lies below base: a
// browser's main process (its helpers do not carry the flag).
func scanProcs(base string) []proc {
	base = filepath.Clean(base) + string(filepath.Separator)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			dir, ok := strings.CutPrefix(string(arg), userDataFlag)
			if !ok {
				continue
			}
			rest, ok := strings.CutPrefix(dir, base)
			if !ok {
				break
			}
			owner, _, _ := strings.Cut(rest, string(filepath.Separator))
			out = append(out, proc{pid: pid, dir: dir, owner: owner})
			break
		}
	}
	return out
}

// killDir kills every process group led by a process that runs with the
// profile directory dir,
// looking again until a few passes in a row find none (a dying browser's
// children can fork late), for at most two seconds.
func killDir(base, dir string) {
	deadline := time.Now().Add(2 * time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		n := 0
		for _, p := range scanProcs(base) {
			if p.dir == dir {
				p.killGroup()
				n++
			}
		}
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}

// removeAll removes dir, retrying briefly: a dying browser can still write
// into its profile as it goes.
func removeAll(dir string) error {
	var err error
	for range 5 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Reap collects what pools of ended processes left under the pool
// directory base (DefaultDir when empty): it kills the browser processes
// and removes the profile directories of every owner whose lease has ended
// (sandbox.OwnerAlive says known and not alive). Owners that are alive or
// unknown are left alone. NewPool calls it, so a server that crashed has
// its browsers collected when the next one starts. It returns how many
// processes it killed and owner directories it removed.
func Reap(base string) (killed, removed int, err error) {
	if base == "" {
		base = DefaultDir()
	}
	dead := map[string]bool{}
	isDead := func(owner string) bool {
		d, ok := dead[owner]
		if !ok {
			alive, known := sandbox.OwnerAlive(owner)
			d = known && !alive
			dead[owner] = d
		}
		return d
	}
	for _, p := range scanProcs(base) {
		if isDead(p.owner) && p.killGroup() == nil {
			killed++
		}
	}
	entries, rerr := os.ReadDir(base)
	if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return killed, 0, fmt.Errorf("browser: reading %s: %w", base, rerr)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !isDead(e.Name()) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		// A killed browser's children can outlive it for a moment.
		for _, p := range scanProcs(base) {
			if p.owner == e.Name() {
				p.killGroup()
			}
		}
		if err := removeAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return killed, removed, errors.Join(errs...)
}

// Leftovers lists what is left under the pool directory base (DefaultDir
// when empty) by owners whose id starts with ownerPrefix: the pids of
// browser processes and the owner directories. Leak checks call it after a
// test run with the prefix of this process's owners (OwnerPrefix).
func Leftovers(base, ownerPrefix string) (pids []int, dirs []string) {
	if base == "" {
		base = DefaultDir()
	}
	for _, p := range scanProcs(base) {
		if strings.HasPrefix(p.owner, ownerPrefix) {
			pids = append(pids, p.pid)
		}
	}
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ownerPrefix) {
			dirs = append(dirs, filepath.Join(base, e.Name()))
		}
	}
	return pids, dirs
}

// OwnerPrefix is the part that every owner id sandbox.NewOwnerID makes in
// this process starts with ("<host>-<pid>-<start>-"), for Leftovers.
func OwnerPrefix() string {
	id := sandbox.NewOwnerID()
	return id[:strings.LastIndexByte(id, '-')+1]
}

// mkdirOwner makes the owner directory below base. Another process may
// remove base when it empties it at its own Close; the retry covers that
// race.
func mkdirOwner(dir string) error {
	var err error
	for range 3 {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	return err
}
