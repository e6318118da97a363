package sandbox

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// maxOwnerHost bounds the host part of an owner id, so that ids stay
// within maxOwnerLen whatever the hostname.
const maxOwnerHost = 24

// maxOwnerLen bounds owner ids (ValidOwner): the longest NewOwnerID
// (24 + 1 + 7 + 1 + 20 + 1 + 8: pids have at most 7 digits) fits.
const maxOwnerLen = 64

// ownerRandomLen is the number of hex digits that end an owner id.
const ownerRandomLen = 8

// NewOwnerID returns a fresh owner id that is a lease on this process:
// "<host>-<pid>-<start>-<random>" (see OwnerAlive). Each call returns a
// new id, so two backends of one process have distinct owners and never
// reap each other's sandboxes; both stay alive as long as the process.
// Where this process's start time cannot be read (no /proc), it returns
// "ns" and 12 random hex digits, an id that OwnerAlive does not know.
func NewOwnerID() string {
	self, ok := selfLease()
	if !ok {
		return "ns" + RandomID(6)
	}
	return self + "-" + RandomID(ownerRandomLen/2)
}

// OwnerAlive checks the lease an owner id from NewOwnerID holds. known
// reports whether owner was made by NewOwnerID on this host (the same
// hostname, and a /proc that shows every process); alive, when known,
// whether the process that made it still runs: /proc/<pid>/stat exists, is
// not a zombie's, and shows the start time the id records. An owner that is
// not known is never alive; reapers leave its resources alone.
//
// The id's host part is the hostname with characters other than ASCII
// letters and digits made '-', cut to 24 characters. The pid is read in
// this process's PID namespace: processes that share a hostname but not a
// PID namespace (a container run with --uts=host) must not both use
// default owners on one docker engine or bwrap directory, or each would
// take the other's live lease for an ended one. Give one of them an
// explicit owner.
func OwnerAlive(owner string) (alive, known bool) {
	host, pid, start, ok := parseOwner(owner)
	if !ok || host != ownerHost() || !procComplete() {
		return false, false
	}
	st, zombie, err := ProcStartTime(pid)
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH):
		return false, true
	case err != nil:
		// Unreadable for another reason: take it for alive, the safe side.
		return true, true
	}
	return st == start && !zombie, true
}

// ValidOwner reports whether owner can name resources: 1 to 64 ASCII
// letters, digits and '-' (every id NewOwnerID makes is valid). Backends
// refuse other owners, because the owner is part of directory, cgroup and
// container names.
func ValidOwner(owner string) bool {
	if owner == "" || len(owner) > maxOwnerLen {
		return false
	}
	for _, c := range owner {
		if !isAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ownerHost is this host's name as owner ids carry it; read once, so that
// a process's ids and its checks agree.
var ownerHost = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return sanitizeHost(h)
})

func sanitizeHost(h string) string {
	b := []byte(h)
	for i, c := range b {
		if !isAlnum(rune(c)) {
			b[i] = '-'
		}
	}
	if len(b) > maxOwnerHost {
		b = b[:maxOwnerHost]
	}
	if len(b) == 0 {
		return "localhost"
	}
	return string(b)
}

// selfLease is "<host>-<pid>-<start>" for this process.
var selfLease = sync.OnceValues(func() (string, bool) {
	pid := os.Getpid()
	start, _, err := ProcStartTime(pid)
	if err != nil || start == 0 {
		return "", false
	}
	return ownerHost() + "-" + strconv.Itoa(pid) + "-" + strconv.FormatUint(start, 10), true
})

// procComplete reports whether /proc shows every process: with hidepid, a
// process of another user would look gone, and its lease ended. pid 1
// belongs to root, so it is hidden too when others are.
var procComplete = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/1/stat")
	return err == nil
})

// parseOwner splits an id of NewOwnerID's form, from the right (the host
// part may hold '-').
func parseOwner(owner string) (host string, pid int, start uint64, ok bool) {
	if !ValidOwner(owner) {
		return "", 0, 0, false
	}
	rest, rnd, ok1 := cutLast(owner)
	rest, startS, ok2 := cutLast(rest)
	host, pidS, ok3 := cutLast(rest)
	if !ok1 || !ok2 || !ok3 || host == "" || len(rnd) != ownerRandomLen || !isHex(rnd) {
		return "", 0, 0, false
	}
	p, err := strconv.Atoi(pidS)
	if err != nil || p <= 0 || !isDigits(pidS) {
		return "", 0, 0, false
	}
	s, err := strconv.ParseUint(startS, 10, 64)
	if err != nil || s == 0 || !isDigits(startS) {
		return "", 0, 0, false
	}
	return host, p, s, true
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ProcStartTime reads a process's start time (clock ticks after boot,
// field 22 of /proc/<pid>/stat) and whether it is a zombie. An error
// wrapping os.ErrNotExist means there is no such process. A pid with the
// same start time is the same process: the pair is how leases (owners,
// process groups of sandboxes, X servers, browsers) survive pid reuse.
func ProcStartTime(pid int) (start uint64, zombie bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and ')'
	if i < 0 {
		return 0, false, errors.New("sandbox: bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, false, errors.New("sandbox: bad /proc stat")
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, false, errors.New("sandbox: bad /proc stat")
	}
	return start, f[0] == "Z" || f[0] == "X", nil
}
