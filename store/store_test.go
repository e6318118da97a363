package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
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
		Task: "t1", Episode: episode, Seed: ptr(int64(episode)), Instruction: "Echo " + session, Observation: &obs}
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
	// The failed Open released the lock and left the data alone.
	db, err = sql.Open("sqlite", dsn(dir+"/"+dbFile, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	openT(t, dir, Options{})
}

func TestPragmas(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	var mode string
	var sync, busy, version, autockpt int
	row := s.wdb.QueryRow("SELECT * FROM pragma_journal_mode, pragma_synchronous, pragma_busy_timeout, pragma_user_version")
	if err := row.Scan(&mode, &sync, &busy, &version); err != nil {
		t.Fatal(err)
	}
	if err := s.wdb.QueryRow("PRAGMA wal_autocheckpoint").Scan(&autockpt); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 1 || busy != int(DefaultBusyTimeout.Milliseconds()) || version != SchemaVersion ||
		autockpt != backstopPages {
		t.Fatalf("journal_mode %s synchronous %d busy_timeout %d user_version %d wal_autocheckpoint %d",
			mode, sync, busy, version, autockpt)
	}
	// The read pool cannot write.
	if _, err := s.rdb.Exec("DELETE FROM events"); err == nil {
		t.Fatal("read pool wrote")
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
	waitFor(t, "goroutines back to baseline", time.Minute, func() bool { return runtime.NumGoroutine() <= base })
}

// TestOpenReadOnly reads a store another Store has open for writing,
// including what is appended after OpenReadOnly.
func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenReadOnly(dir); err == nil || !strings.Contains(err.Error(), "no store") {
		t.Fatalf("OpenReadOnly of an empty dir: %v", err)
	}
	w := openT(t, dir, Options{})
	appendT(t, w, resetEv("s1", 1), stepEv("s1", 1, 1, "a", 1))

	base := runtime.NumGoroutine()
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.LastSeq() != 2 {
		t.Fatalf("read-only LastSeq = %d, want 2", r.LastSeq())
	}
	appendT(t, w, stepEv("s1", 1, 2, "b", 1))
	evs, err := r.Events(context.Background(), Filter{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || r.LastSeq() != 3 {
		t.Fatalf("read-only store sees %d events, LastSeq %d; want 3", len(evs), r.LastSeq())
	}
	if ev, ok, err := r.StepEvent(context.Background(), "s1", "b"); err != nil || !ok || ev.Seq != 3 {
		t.Fatalf("read-only StepEvent = %v, %v, %v", ev, ok, err)
	}
	var buf strings.Builder
	if err := r.Export(context.Background(), &buf, Filter{}, FormatTrajectories); err != nil ||
		!strings.Contains(buf.String(), `"step_id":"b"`) {
		t.Fatalf("read-only export: %v\n%s", err, buf.String())
	}
	if err := r.Append(context.Background(), stepEv("s1", 1, 3, "", 0)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Append on a read-only store = %v", err)
	}
	if _, err := r.PutBlob([]byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("PutBlob on a read-only store = %v", err)
	}
	if _, err := r.Events(context.Background(), Filter{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Events(context.Background(), Filter{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Events after Close = %v", err)
	}
	waitFor(t, "goroutines back to baseline", time.Minute, func() bool { return runtime.NumGoroutine() <= base })
	// The writer is unaffected.
	appendT(t, w, stepEv("s1", 1, 3, "c", 1))
}
