package desktop

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
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

// xvfbStartTimeout bounds how long an Xvfb may take to say it is ready.
const xvfbStartTimeout = 20 * time.Second

// errDisplayBusy: another X server holds the display number.
var errDisplayBusy = errors.New("display number is in use")

// displayRange is the range of display numbers a kind allocates from.
type displayRange struct{ lo, hi int }

// parseDisplayRange reads "100-199" (or one number).
func parseDisplayRange(s string) (displayRange, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b := a
	var err2 error
	if found {
		b, err2 = strconv.Atoi(strings.TrimSpace(hi))
	}
	if err1 != nil || err2 != nil || a < 1 || b < a || b > 65535-6000 {
		return displayRange{}, fmt.Errorf("setting %s=%q: want a range of display numbers such as 100-199 (1 to 59535)", SettingDisplays, s)
	}
	return displayRange{a, b}, nil
}

// allocator hands out display numbers of a range: a number is free when
// its instance (one Manager's) does not use it and no live X server holds
// its lock file
// (/tmp/.X<N>-lock). Another process may still take a number between the
// check and the start; Xvfb then fails and the next number is tried.
type allocator struct {
	mu   sync.Mutex
	r    displayRange
	next int
	used map[int]bool
}

func newAllocator(r displayRange) *allocator {
	return &allocator{r: r, next: r.lo, used: map[int]bool{}}
}

// take reserves a free display number, starting after the last one given.
func (a *allocator) take() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.r.hi - a.r.lo + 1
	for i := 0; i < n; i++ {
		d := a.r.lo + (a.next-a.r.lo+i)%n
		if a.used[d] || displayLocked(d) {
			continue
		}
		a.used[d] = true
		a.next = d + 1
		return d, nil
	}
	return 0, fmt.Errorf("no free display number in %d-%d (%d used by this manager): widen %s",
		a.r.lo, a.r.hi, len(a.used), SettingDisplays)
}

func (a *allocator) release(d int) {
	a.mu.Lock()
	delete(a.used, d)
	a.mu.Unlock()
}

// lockPath is the X server lock file of display d.
func lockPath(d int) string { return fmt.Sprintf("/tmp/.X%d-lock", d) }

// socketPath is the X server's socket for display d.
func socketPath(d int) string { return fmt.Sprintf("/tmp/.X11-unix/X%d", d) }

// displayLocked reports whether a live process holds display d's lock.
func displayLocked(d int) bool {
	b, err := os.ReadFile(lockPath(d))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // unreadable: someone else's
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return true // being written, or not a server's: leave it
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// xserver is one Xvfb on display :num, with its state directory (pid
// file, Xauthority) and the cookie clients need.
type xserver struct {
	num      int
	dir      string
	authFile string
	cookie   []byte
	width    int
	height   int
	cmd      *exec.Cmd
	stderr   *tailBuffer
	done     chan struct{} // closed when Xvfb has exited
	exitErr  error         // Xvfb's exit status, set before done closes
}

// startXvfb starts an Xvfb of width×height on a display of the kind's
// range, retrying the next number when another server took one. The
// display's state lives in ownerDir/<num>.
func startXvfb(ctx context.Context, inst *instance, width, height int) (*xserver, error) {
	var last error
	for range 8 {
		num, err := inst.alloc.take()
		if err != nil {
			return nil, err
		}
		x, err := launchXvfb(ctx, inst, num, width, height)
		if err == nil {
			return x, nil
		}
		inst.alloc.release(num)
		if !errors.Is(err, errDisplayBusy) {
			return nil, err
		}
		last = err
	}
	return nil, last
}

func launchXvfb(ctx context.Context, inst *instance, num, width, height int) (*xserver, error) {
	dir := filepath.Join(inst.ownerDir, strconv.Itoa(num))
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	x := &xserver{num: num, dir: dir, authFile: filepath.Join(dir, "Xauthority"), width: width, height: height,
		cookie: make([]byte, 16), stderr: &tailBuffer{max: 8 << 10}, done: make(chan struct{})}
	rand.Read(x.cookie)
	if err := writeXauthority(x.authFile, num, x.cookie); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// No MIT-SHM: the apps' IPC namespaces are their own (and a
	// segment id a client names must not reach the host's segments).
	cmd := exec.Command(inst.xvfb, ":"+strconv.Itoa(num), "-screen", "0", fmt.Sprintf("%dx%dx24", width, height),
		"-nolisten", "tcp", "-noreset", "-auth", x.authFile, "-extension", "MIT-SHM")
	cmd.Env = []string{"PATH=" + defaultPath, markerEnv + "=" + inst.owner + "/" + strconv.Itoa(num) + "/xvfb"}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = x.stderr, x.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", inst.xvfb, err)
	}
	x.cmd = cmd
	writePidFile(filepath.Join(dir, "xvfb.pid"), cmd.Process.Pid)
	inst.wg.Add(1)
	go func() { // owned by the instance: the process ends at x.close, at the latest
		defer inst.wg.Done()
		x.exitErr = cmd.Wait()
		close(x.done)
	}()

	// Xvfb is ready once it holds the display's lock file (which it takes
	// before listening; -displayfd would tell readiness but skips the
	// lock, leaving the display unclaimed for other servers) and its
	// socket accepts connections. If another server holds the display,
	// Xvfb exits saying so.
	rctx, cancel := context.WithTimeout(ctx, xvfbStartTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var err error
	for {
		if lockHolder(num) == cmd.Process.Pid {
			if c, derr := net.Dial("unix", socketPath(num)); derr == nil {
				c.Close()
				return x, nil
			}
		}
		select {
		case <-tick.C:
			continue
		case <-rctx.Done():
			err = fmt.Errorf("Xvfb :%d did not start within %s: %w", num, xvfbStartTimeout, rctx.Err())
		case <-x.done:
			msg := strings.TrimSpace(x.stderr.String())
			if strings.Contains(msg, "already active") || strings.Contains(msg, "Cannot establish any listening sockets") {
				err = fmt.Errorf("Xvfb :%d: %w: %s", num, errDisplayBusy, lastLine(msg))
			} else {
				err = fmt.Errorf("Xvfb :%d failed to start (%v): %s", num, x.exitErr, msg)
			}
		}
		break
	}
	x.close()
	return nil, err
}

// lockHolder returns the pid in display d's lock file (0: none).
func lockHolder(d int) int {
	b, err := os.ReadFile(lockPath(d))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// alive reports whether Xvfb still runs.
func (x *xserver) alive() bool {
	select {
	case <-x.done:
		return false
	default:
		return true
	}
}

// close stops Xvfb (SIGTERM, then SIGKILL to its process group after a
// grace period), waits for it, and removes what it left: its state
// directory, and its lock file and socket when it was killed.
func (x *xserver) close() {
	if x.cmd != nil && x.alive() {
		pid := x.cmd.Process.Pid
		syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-x.done:
		case <-time.After(2 * time.Second):
			syscall.Kill(-pid, syscall.SIGKILL)
			<-x.done
		}
	}
	if x.cmd != nil {
		// A killed server leaves its lock file and socket; remove them
		// while they are still ours.
		if lockHolder(x.num) == x.cmd.Process.Pid {
			os.Remove(socketPath(x.num))
			os.Remove(lockPath(x.num))
		}
	}
	os.RemoveAll(x.dir)
}

// writeXauthority writes an Xauthority file with one MIT-MAGIC-COOKIE-1
// entry for display num, valid from any host name (FamilyWild).
func writeXauthority(path string, num int, cookie []byte) error {
	var b []byte
	put := func(s []byte) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	b = binary.BigEndian.AppendUint16(b, 0xffff) // FamilyWild
	put(nil)
	put([]byte(strconv.Itoa(num)))
	put([]byte("MIT-MAGIC-COOKIE-1"))
	put(cookie)
	return os.WriteFile(path, b, 0o600)
}

// writePidFile records a process as "pid starttime", so that a reaper
// can tell it from a later process with the same pid.
func writePidFile(path string, pid int) {
	st, _ := procStart(pid)
	os.WriteFile(path, []byte(fmt.Sprintf("%d %d\n", pid, st)), 0o600)
}

// readPidFile returns the pid a pid file names if that process still runs
// and started when the file says.
func readPidFile(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	st, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return 0, false
	}
	now, err := procStart(pid)
	return pid, err == nil && now == st
}

// procStart reads a process's start time (sandbox.ProcStartTime).
func procStart(pid int) (uint64, error) {
	st, _, err := sandbox.ProcStartTime(pid)
	return st, err
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent
// use (a process's stdout and stderr may share one).
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	b       []byte
	dropped bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
		t.dropped = true
	}
	return len(p), nil
}

// String returns what was kept, with a marker when the start was cut.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped {
		return "[…earlier output cut]\n" + string(t.b)
	}
	return string(t.b)
}
