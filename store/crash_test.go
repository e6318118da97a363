package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

const crashDirEnv = "NEXTSTATE_STORE_CRASH_DIR"

// TestCrashChild is the child process of TestCrashKeepsAcknowledged: it
// appends from several goroutines and prints "acked <seq> <session> <step>"
// after each Append returns, until it is killed (or a minute passes).
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestCrashKeepsAcknowledged")
	}
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	deadline := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			sess := fmt.Sprintf("c%d", g)
			for i := 1; time.Now().Before(deadline); i++ {
				ev := stepEv(sess, 1, i, fmt.Sprint(i), 0)
				if err := s.Append(context.Background(), ev); err != nil {
					fmt.Println("append:", err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "acked %d %s %d\n", ev.Seq, sess, i)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	os.Exit(3) // never reached in the test: the parent kills us first
}

// TestCrashKeepsAcknowledged kills -9 a process that is appending and checks
// that every event it acknowledged is in the store when it is reopened.
func TestCrashKeepsAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type ack struct {
		sess string
		step int
	}
	acked := map[int64]ack{}
	const N = 2000
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		line := sc.Text()
		var seq int64
		var a ack
		if _, err := fmt.Sscanf(line, "acked %d %s %d", &seq, &a.sess, &a.step); err != nil {
			if !killed && !strings.HasPrefix(line, "PASS") {
				t.Logf("child: %s", line)
			}
			continue
		}
		acked[seq] = a
		if len(acked) == N && !killed {
			// Everything printed from here on was acknowledged before the
			// kill; keep reading until the pipe closes.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended after %d acks without being killed: %v", len(acked), err)
	}
	t.Logf("child killed after %d acknowledged appends", len(acked))

	s := openT(t, dir, Options{})
	if s.LastSeq() < int64(len(acked)) {
		t.Fatalf("reopened store has LastSeq %d, fewer than the %d acknowledged", s.LastSeq(), len(acked))
	}
	evs, err := s.Events(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]ack{}
	for _, ev := range evs {
		got[ev.Seq] = ack{ev.Session, ev.Step}
	}
	for seq, a := range acked {
		if g, ok := got[seq]; !ok || g != a {
			t.Fatalf("acknowledged event seq %d (%v) is %v after the crash (present: %v)", seq, a, g, ok)
		}
	}
	// The store still takes appends, with seqs after the crash's.
	ev := stepEv("after", 1, 1, "", 0)
	appendT(t, s, ev)
	if ev.Seq != s.LastSeq() || ev.Seq <= int64(len(evs)) {
		t.Fatalf("seq after crash %d, %d events before", ev.Seq, len(evs))
	}
}
