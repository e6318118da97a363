package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

func openT(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ptr[T any](v T) *T { return &v }

func resetEv(session string, episode int) *gym.Event {
	obs := gym.TextObservation(fmt.Sprintf("%s reset %d", session, episode))
	return &gym.Event{Type: gym.EventReset, Session: session, Run: "run-" + session[:1], Env: "echo-v1",
		Task: "t1", Episode: episode, Seed: ptr(int64(episode)), Observation: &obs}
}

func stepEv(session string, episode, step int, stepID string, reward float64) *gym.Event {
	obs := gym.TextObservation(fmt.Sprintf("out %d", step))
	act := gym.TextAction(fmt.Sprintf("cmd %d", step))
	return &gym.Event{Type: gym.EventStep, Session: session, Run: "run-" + session[:1], Env: "echo-v1",
		Task: "t1", Episode: episode, Step: step, StepID: stepID, Action: &act, Observation: &obs,
		Reward: ptr(reward), DurationUS: 12}
}

func rewardEv(session string, episode int, stepID, source string, reward float64) *gym.Event {
	return &gym.Event{Type: gym.EventReward, Session: session, Run: "run-" + session[:1], Env: "echo-v1",
		Episode: episode, StepID: stepID, Source: source, Reward: ptr(reward)}
}

func appendT(t testing.TB, s *Store, evs ...*gym.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := s.Append(context.Background(), ev); err != nil {
			t.Fatalf("Append %s: %v", ev.Type, err)
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRoundTrip(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	in := []*gym.Event{
		{Type: gym.EventSessionCreated, Session: "s1", Env: "echo-v1"},
		resetEv("s1", 1),
		stepEv("s1", 1, 1, "a", 0.5),
		stepEv("s1", 1, 2, "b", 1),
	}
	in[3].Info = gym.Info{"k": "v"}
	in[3].Failure = &gym.Failure{Fault: gym.Fault("agent"), Reason: "bad_action"}
	appendT(t, s, in...)
	for i, ev := range in {
		if ev.Seq != int64(i+1) {
			t.Errorf("event %d: Seq = %d, want %d", i, ev.Seq, i+1)
		}
	}
	if got := s.LastSeq(); got != 4 {
		t.Errorf("LastSeq = %d, want 4", got)
	}
	got, err := s.Events(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("Events returned %d, want %d", len(got), len(in))
	}
	for i, ev := range got {
		if ev.Seq != in[i].Seq || ev.Type != in[i].Type || ev.Session != "s1" {
			t.Errorf("event %d = seq %d %s %s", i, ev.Seq, ev.Type, ev.Session)
		}
		if ev.Time.IsZero() {
			t.Errorf("event %d has no time", i)
		}
	}
	last := got[3]
	if last.Action.Text() != "cmd 2" || last.Observation.Text() != "out 2" || *last.Reward != 1 ||
		last.Info["k"] != "v" || last.Failure.Reason != "bad_action" || last.StepID != "b" {
		t.Errorf("step event did not round-trip: %+v", last)
	}

	ev, ok, err := s.StepEvent(ctx, "s1", "a")
	if err != nil || !ok || ev.Seq != 3 || ev.Observation.Text() != "out 1" {
		t.Errorf("StepEvent(s1, a) = %+v, %v, %v", ev, ok, err)
	}
	if _, ok, err := s.StepEvent(ctx, "s1", "nope"); ok || err != nil {
		t.Errorf("StepEvent(s1, nope) = %v, %v", ok, err)
	}
	if _, ok, err := s.StepEvent(ctx, "s2", "a"); ok || err != nil {
		t.Errorf("StepEvent(s2, a) = %v, %v", ok, err)
	}
}

func TestConcurrentAppends(t *testing.T) {
	var mu sync.Mutex
	var commits [][]int64
	s := openT(t, t.TempDir(), Options{OnCommit: func(evs []*gym.Event) {
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

func TestOnCommitBeforeAppendReturns(t *testing.T) {
	var mu sync.Mutex
	var last int64
	s := openT(t, t.TempDir(), Options{OnCommit: func(evs []*gym.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			if ev.Seq <= last {
				panic(fmt.Sprintf("OnCommit seq %d after %d", ev.Seq, last))
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

func TestReopenContinuesSeq(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendT(t, s, resetEv("s1", 1), stepEv("s1", 1, 1, "a", 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	s = openT(t, dir, Options{})
	if s.LastSeq() != 2 {
		t.Fatalf("reopened LastSeq = %d, want 2", s.LastSeq())
	}
	ev := stepEv("s1", 1, 2, "b", 1)
	appendT(t, s, ev)
	if ev.Seq != 3 {
		t.Fatalf("seq after reopen = %d, want 3", ev.Seq)
	}
	got, err := s.Events(context.Background(), Filter{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1].StepID != "a" || got[2].StepID != "b" {
		t.Fatalf("after reopen: %+v", got)
	}
}

func TestOpenLocked(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no directory lock on windows")
	}
	dir := t.TempDir()
	openT(t, dir, Options{})
	if s, err := Open(dir, Options{}); err == nil {
		s.Close()
		t.Fatal("second Open of the same directory succeeded")
	} else if !strings.Contains(err.Error(), "open elsewhere") {
		t.Fatalf("second Open: %v", err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", dsn(dir+"/"+dbFile, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
	// The failed Open released the lock.
	if err := db.Ping(); err == nil {
		t.Fatal("closed db answered")
	}
	db, _ = sql.Open("sqlite", dsn(dir+"/"+dbFile, nil))
	db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion))
	db.Close()
	s = openT(t, dir, Options{})
}

func TestPragmas(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	var mode string
	var sync, busy, version int
	row := s.wdb.QueryRow("SELECT * FROM pragma_journal_mode, pragma_synchronous, pragma_busy_timeout, pragma_user_version")
	if err := row.Scan(&mode, &sync, &busy, &version); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 1 || busy != int(DefaultBusyTimeout.Milliseconds()) || version != SchemaVersion {
		t.Fatalf("journal_mode %s synchronous %d busy_timeout %d user_version %d", mode, sync, busy, version)
	}
	// The read pool cannot write.
	if _, err := s.rdb.Exec("DELETE FROM events"); err == nil {
		t.Fatal("read pool wrote")
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
	s, err := Open(t.TempDir(), Options{QueueLen: 2, MaxBatch: 1, OnCommit: func([]*gym.Event) {
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
	waitFor(t, "queue full", 5*time.Second, func() bool { return len(s.queue) == 2 })

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
	s, err := Open(dir, Options{MaxBatch: 1, OnCommit: func([]*gym.Event) {
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
	waitFor(t, "queued", 5*time.Second, func() bool { return len(s.queue) == N-1 })
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	waitFor(t, "Close to start", 5*time.Second, s.isClosing)
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

func TestNoGoroutineLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Go(func() {
			for i := range 10 {
				if err := s.Append(context.Background(), stepEv(fmt.Sprintf("s%d", g), 1, i, "", 0)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if _, err := s.Events(context.Background(), Filter{Limit: 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "goroutines back to baseline", 5*time.Second, func() bool { return runtime.NumGoroutine() <= base })
}

func TestFilters(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	a := func(ev *gym.Event, run, env string) *gym.Event { ev.Run, ev.Env = run, env; return ev }
	appendT(t, s,
		a(resetEv("s1", 1), "r1", "e1"),       // 1
		a(resetEv("s2", 1), "r2", "e2"),       // 2
		a(stepEv("s1", 1, 1, "x", 0), "r1", "e1"), // 3
		a(stepEv("s2", 1, 1, "x", 0), "r2", "e2"), // 4
		a(rewardEv("s1", 1, "x", "judge", 1), "r1", "e1"), // 5
		a(stepEv("s1", 1, 2, "y", 0), "r1", "e1"), // 6
	)
	seqs := func(f Filter) []int64 {
		t.Helper()
		evs, err := s.Events(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, ev := range evs {
			out = append(out, ev.Seq)
		}
		return out
	}
	for _, c := range []struct {
		name string
		f    Filter
		want []int64
	}{
		{"all", Filter{}, []int64{1, 2, 3, 4, 5, 6}},
		{"session", Filter{Session: "s1"}, []int64{1, 3, 5, 6}},
		{"run", Filter{Run: "r2"}, []int64{2, 4}},
		{"env", Filter{Env: "e1"}, []int64{1, 3, 5, 6}},
		{"task", Filter{Task: "t1"}, []int64{1, 2, 3, 4, 6}},
		{"types", Filter{Types: []gym.EventType{gym.EventStep, gym.EventReward}}, []int64{3, 4, 5, 6}},
		{"after", Filter{AfterSeq: 4}, []int64{5, 6}},
		{"session after", Filter{Session: "s1", AfterSeq: 3}, []int64{5, 6}},
		{"limit", Filter{Limit: 2, AfterSeq: 1}, []int64{2, 3}},
		{"combined", Filter{Run: "r1", Types: []gym.EventType{gym.EventStep}, AfterSeq: 3}, []int64{6}},
		{"none", Filter{Session: "nope"}, nil},
	} {
		if got := seqs(c.f); !slices.Equal(got, c.want) {
			t.Errorf("%s: seqs %v, want %v", c.name, got, c.want)
		}
	}
}

// TestScanPages reads more events than a page holds, with and without a limit
// that ends mid-page, and stops early on the callback's error.
func TestScanPages(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	const N = 3*scanPage + 7
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range N / 4 {
				appendT(t, s, stepEv(fmt.Sprintf("s%d", g), 1, i+1, "", 0))
			}
		})
	}
	wg.Wait()
	total := int(s.LastSeq())
	for _, limit := range []int{0, scanPage, scanPage + 1, total - 1} {
		var n int
		var prev int64
		err := s.Scan(ctx, Filter{Limit: limit}, func(ev *gym.Event) error {
			if ev.Seq <= prev {
				return fmt.Errorf("seq %d after %d", ev.Seq, prev)
			}
			prev = ev.Seq
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := total
		if limit > 0 {
			want = limit
		}
		if n != want {
			t.Errorf("Scan limit %d: %d events, want %d", limit, n, want)
		}
	}
	stop := errors.New("stop")
	n := 0
	err := s.Scan(ctx, Filter{}, func(*gym.Event) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if err != stop || n != 10 {
		t.Fatalf("Scan stopped with %v after %d", err, n)
	}
}
