package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

func TestConcurrentAppends(t *testing.T) {
	var mu sync.Mutex
	var commits [][]int64
	s := openT(t, t.TempDir(), Options{OnCommit: func(evs []*gym.Event, _ []string) {
		seqs := make([]int64, len(evs))
		for i, ev := range evs {
			seqs[i] = ev.Seq
		}
		mu.Lock()
		commits = append(commits, seqs)
		mu.Unlock()
	}})
	const G, N = 100, 50
	seqs := make([][]int64, G)
	var wg sync.WaitGroup
	for g := range G {
		wg.Go(func() {
			sess := fmt.Sprintf("s%03d", g)
			for i := range N {
				ev := stepEv(sess, 1, i+1, fmt.Sprint(i), 0)
				if err := s.Append(context.Background(), ev); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				seqs[g] = append(seqs[g], ev.Seq)
			}
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for g, ss := range seqs {
		if !slices.IsSorted(ss) {
			t.Errorf("goroutine %d got seqs out of order: %v", g, ss)
		}
		for _, q := range ss {
			if seen[q] {
				t.Fatalf("seq %d assigned twice", q)
			}
			seen[q] = true
		}
	}
	if len(seen) != G*N || s.LastSeq() != G*N {
		t.Fatalf("%d distinct seqs, LastSeq %d; want %d", len(seen), s.LastSeq(), G*N)
	}
	got, err := s.Events(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != G*N {
		t.Fatalf("read %d events, want %d", len(got), G*N)
	}
	for i, ev := range got {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	// Each goroutine's events read back in its order.
	for g := range G {
		sess := fmt.Sprintf("s%03d", g)
		evs, err := s.Events(context.Background(), Filter{Session: sess})
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if ev.Step != i+1 || ev.Seq != seqs[g][i] {
				t.Fatalf("%s event %d: step %d seq %d, want step %d seq %d", sess, i, ev.Step, ev.Seq, i+1, seqs[g][i])
			}
		}
	}
	// OnCommit saw every seq, strictly increasing across calls.
	mu.Lock()
	defer mu.Unlock()
	var all []int64
	for _, c := range commits {
		all = append(all, c...)
	}
	if len(all) != G*N {
		t.Fatalf("OnCommit saw %d events, want %d", len(all), G*N)
	}
	for i, q := range all {
		if q != int64(i+1) {
			t.Fatalf("OnCommit event %d has seq %d, want %d", i, q, i+1)
		}
	}
	t.Logf("%d commits for %d events", len(commits), G*N)
}

// TestOnCommitBeforeAppendReturns checks that OnCommit has seen an event
// when its Append returns.
func TestOnCommitBeforeAppendReturns(t *testing.T) {
	var mu sync.Mutex
	var last int64
	s := openT(t, t.TempDir(), Options{OnCommit: func(evs []*gym.Event, _ []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			if ev.Seq <= last {
				t.Errorf("OnCommit seq %d after %d", ev.Seq, last)
			}
			last = ev.Seq
		}
	}})
	for i := range 20 {
		ev := stepEv("s1", 1, i+1, "", 0)
		appendT(t, s, ev)
		mu.Lock()
		l := last
		mu.Unlock()
		if l < ev.Seq {
			t.Fatalf("Append returned seq %d before OnCommit saw it (last %d)", ev.Seq, l)
		}
	}
}

func TestAppendAfterClose(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendT(t, s, resetEv("s1", 1))
	s.Close()
	if err := s.Append(context.Background(), stepEv("s1", 1, 1, "", 0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Events(context.Background(), Filter{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Events after Close = %v, want ErrClosed", err)
	}
}

func TestAppendContext(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Append(ctx, resetEv("s1", 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a done ctx = %v", err)
	}
	if s.LastSeq() != 0 {
		t.Fatalf("a cancelled Append was recorded")
	}
}

// TestFullQueueWaitsOnContext holds the writer inside OnCommit so the queue
// fills, then checks that Append gives up when its ctx ends and that Close
// still drains what was queued.
func TestFullQueueWaitsOnContext(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s, err := Open(t.TempDir(), Options{QueueLen: 2, MaxBatch: 1, OnCommit: func([]*gym.Event, []string) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	go func() { errs <- s.Append(context.Background(), stepEv("s1", 1, 1, "", 0)) }()
	<-entered // the writer holds event 1 in OnCommit
	for i := 2; i <= 3; i++ {
		go func() { errs <- s.Append(context.Background(), stepEv("s1", 1, i, "", 0)) }()
	}
	waitFor(t, "queue full", time.Minute, func() bool { return len(s.queue) == 2 })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Append(ctx, stepEv("s1", 1, 4, "", 0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append to a full queue = %v, want DeadlineExceeded", err)
	}
	close(release)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("queued Append: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.LastSeq() != 3 {
		t.Fatalf("LastSeq = %d, want 3", s.LastSeq())
	}
}

// TestCloseDrainsQueue closes while Appends are queued behind a held writer:
// every Append that was queued is committed and returns nil.
func TestCloseDrainsQueue(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	dir := t.TempDir()
	s, err := Open(dir, Options{MaxBatch: 1, OnCommit: func([]*gym.Event, []string) {
		select {
		case entered <- struct{}{}:
			<-release
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	const N = 50
	errs := make(chan error, N)
	go func() { errs <- s.Append(context.Background(), stepEv("s1", 1, 0, "", 0)) }()
	<-entered
	for i := 1; i < N; i++ {
		go func() { errs <- s.Append(context.Background(), stepEv("s1", 1, i, "", 0)) }()
	}
	waitFor(t, "queued", time.Minute, func() bool { return len(s.queue) == N-1 })
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	waitFor(t, "Close to start", time.Minute, s.isClosing)
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for range N {
		if err := <-errs; err != nil {
			t.Fatalf("queued Append: %v", err)
		}
	}
	s = openT(t, dir, Options{})
	if s.LastSeq() != N {
		t.Fatalf("after Close and reopen LastSeq = %d, want %d", s.LastSeq(), N)
	}
}

// TestBadEventFailsAlone puts an event SQLite rejects (here by a trigger) in
// a batch with good ones: only its Append fails, and seqs stay gapless.
func TestBadEventFailsAlone(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := openT(t, t.TempDir(), Options{OnCommit: func([]*gym.Event, []string) {
		select {
		case entered <- struct{}{}:
			<-release
		default:
		}
	}})
	if _, err := s.wdb.Exec(`CREATE TRIGGER reject BEFORE INSERT ON events WHEN NEW.session = 'bad'
		BEGIN SELECT RAISE(ABORT, 'rejected'); END`); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() { errs <- s.Append(context.Background(), resetEv("s0", 1)) }()
	<-entered // the writer is held; what follows queues up as one batch
	sessions := []string{"s1", "bad", "s2", "s3"}
	results := make([]chan error, len(sessions))
	for i, sess := range sessions {
		results[i] = make(chan error, 1)
		go func() { results[i] <- s.Append(context.Background(), resetEv(sess, 1)) }()
	}
	waitFor(t, "batch queued", time.Minute, func() bool { return len(s.queue) == len(sessions) })
	close(release)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	for i, sess := range sessions {
		err := <-results[i]
		if (sess == "bad") != (err != nil) {
			t.Errorf("Append for %s: %v", sess, err)
		}
		if sess == "bad" && !strings.Contains(err.Error(), "rejected") {
			t.Errorf("bad event's error: %v", err)
		}
	}
	evs, err := s.Events(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) || ev.Session == "bad" {
			t.Fatalf("event %d: seq %d session %s", i, ev.Seq, ev.Session)
		}
	}
	if len(evs) != 4 {
		t.Fatalf("%d events stored, want 4", len(evs))
	}
}

// TestOnCommitBodies: the body OnCommit gives with each event makes, by
// AppendJSON, exactly the JSON encoding/json makes of the committed event,
// blobs moved to refs and seq included, so a subscriber's copy can be made
// without encoding the event again.
func TestOnCommitBodies(t *testing.T) {
	var mu sync.Mutex
	var got, want []string
	s := openT(t, t.TempDir(), Options{InlineMax: 4, OnCommit: func(evs []*gym.Event, bodies []string) {
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != len(evs) {
			t.Errorf("%d bodies for %d events", len(bodies), len(evs))
			return
		}
		for i, ev := range evs {
			enc, err := json.Marshal(ev)
			if err != nil {
				t.Error(err)
				return
			}
			got, want = append(got, string(AppendJSON(nil, bodies[i], ev.Seq))), append(want, string(enc))
		}
	}})
	big := gym.Observation{Parts: []gym.Part{{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: []byte("more than four bytes")}}}}
	for i, ev := range []*gym.Event{resetEv("a1", 1), stepEv("a1", 1, 1, "x", 0.5), rewardEv("a1", 1, "x", "judge:prm", 1),
		{Type: gym.EventStep, Session: "a1", Env: "echo-v1", Episode: 1, Step: 2, Observation: &big, Info: gym.Info{"k": "<&>"}}} {
		if err := s.Append(context.Background(), ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 {
		t.Fatalf("OnCommit saw %d events, want 4", len(got))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("event %d: AppendJSON gave\n%s\nencoding/json\n%s", i, got[i], want[i])
		}
	}
	if !strings.Contains(got[3], `"ref":"sha256:`) {
		t.Errorf("the stored form keeps its blob inline: %s", got[3])
	}
}
