package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func TestFilters(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	a := func(ev *gym.Event, run, env string) *gym.Event { ev.Run, ev.Env = run, env; return ev }
	appendT(t, s,
		a(resetEv("s1", 1), "r1", "e1"),                   // 1
		a(resetEv("s2", 1), "r2", "e2"),                   // 2
		a(stepEv("s1", 1, 1, "x", 0), "r1", "e1"),         // 3
		a(stepEv("s2", 1, 1, "x", 0), "r2", "e2"),         // 4
		a(rewardEv("s1", 1, "x", "judge", 1), "r1", "e1"), // 5
		a(stepEv("s1", 1, 2, "y", 0), "r1", "e1"),         // 6
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

// TestQueryPlans checks that the reads the server makes often are index
// searches, not scans of the whole table.
func TestQueryPlans(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	appendT(t, s, resetEv("s1", 1))
	plan := func(query string, args ...any) string {
		t.Helper()
		rows, err := s.rdb.Query("EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			out = append(out, detail)
		}
		return strings.Join(out, "; ")
	}
	for _, c := range []struct {
		f    Filter
		want string
	}{
		{Filter{Session: "s1", AfterSeq: 10}, "events_session (session=? AND seq>? AND seq<?)"},
		{Filter{Run: "r", Types: []gym.EventType{gym.EventStep}}, "events_run (run=? AND seq>? AND seq<?)"},
		{Filter{Env: "e"}, "events_env (env=? AND seq>? AND seq<?)"},
		{Filter{AfterSeq: 5}, "INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
	} {
		where, args := c.f.where(100, true)
		got := plan("SELECT seq, body FROM events WHERE "+where+" ORDER BY seq LIMIT 10", args...)
		if !strings.Contains(got, c.want) || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("plan for %+v: %s; want a search using %s", c.f, got, c.want)
		}
	}
	got := plan("SELECT seq, body FROM events WHERE session = ? AND step_id = ? AND type = ? ORDER BY seq DESC LIMIT 1",
		"s1", "a", "step")
	if !strings.Contains(got, "USING INDEX events_session (session=?)") || strings.Contains(got, "TEMP B-TREE") {
		t.Errorf("StepEvent plan: %s", got)
	}
	// Unclosed reads by index only: no scan of the table, nor of an index.
	got = plan(unclosedQuery, string(gym.EventSessionClosed))
	for _, step := range strings.Split(got, "; ") {
		if strings.HasPrefix(step, "SCAN ") && step != "SCAN ids" || strings.Contains(step, "TEMP B-TREE") {
			t.Errorf("Unclosed plan has %q: %s", step, got)
		}
	}
}

// TestUnclosed finds the sessions a dead server left open: those with
// events and no session.closed, however many late rewards follow a close.
func TestUnclosed(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	if evs, err := s.Unclosed(ctx); err != nil || len(evs) != 0 {
		t.Fatalf("an empty store: Unclosed = %v, %v; want none", evs, err)
	}
	closed := func(session string, episode int) *gym.Event {
		return &gym.Event{Type: gym.EventSessionClosed, Session: session, Run: "run-" + session[:1], Env: "echo-v1",
			Episode: episode, Reason: gym.CloseClient}
	}
	appendT(t, s,
		resetEv("a1", 1), stepEv("a1", 1, 1, "x", 0), closed("a1", 1), // closed last
		resetEv("b1", 1), stepEv("b1", 1, 1, "x", 0), // cut off after a step
		resetEv("c1", 1), stepEv("c1", 1, 1, "x", 0), closed("c1", 1),
		rewardEv("c1", 1, "x", "judge:prm", 1), rewardEv("c1", 1, "x", "judge:prm", 0), // rewards after the close
		resetEv("d1", 1), resetEv("d1", 2), rewardEv("d1", 1, "", "human", 1), // cut off in episode 2, a reward for 1 last
		&gym.Event{Type: gym.EventSessionCreated, Session: "e1", Env: "echo-v1"}, // cut off before its first reset
	)
	evs, err := s.Unclosed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s:%s:%d", ev.Session, ev.Type, ev.Episode))
	}
	if want := []string{"b1:step:1", "d1:reset:2", "e1:session.created:0"}; !slices.Equal(got, want) {
		t.Errorf("Unclosed = %v, want each cut-off session's last event but late rewards %v", got, want)
	}
	appendT(t, s, closed("b1", 1), closed("d1", 2), closed("e1", 0))
	if evs, err := s.Unclosed(ctx); err != nil || len(evs) != 0 {
		t.Errorf("after their closes: Unclosed = %v, %v; want none", evs, err)
	}
}
