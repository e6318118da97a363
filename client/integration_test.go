package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs" // guess-v1, echo-v1
	"github.com/nextstate-rl/nextstate/server"
	"github.com/nextstate-rl/nextstate/wire"
)

const token = "test-token"

// startServer runs a real server on 127.0.0.1:0 with a store in a temp dir
// and returns its base URL (http://host:port). Cleanup shuts it down and
// checks that every goroutine the server and the test's clients started
// has returned.
func startServer(t *testing.T) string {
	t.Helper()
	baseline := runtime.NumGoroutine()
	srv, err := server.New(server.Config{
		DataDir: t.TempDir(),
		Token:   token,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		srv.Shutdown(context.Background())
		t.Fatalf("Listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		http.DefaultClient.CloseIdleConnections()
		deadline := time.Now().Add(20 * time.Second)
		for runtime.NumGoroutine() > baseline {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines still running, %d before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	return "http://" + ln.Addr().String()
}

// solve binary-searches a guess-v1 episode to "correct" and returns the
// step results. lo and hi are the task's bounds.
func solve(t *testing.T, ctx context.Context, s *client.Session, lo, hi int, before func(step int)) []gym.StepResult {
	t.Helper()
	var out []gym.StepResult
	for step := 1; lo <= hi; step++ {
		if before != nil {
			before(step)
		}
		mid := (lo + hi) / 2
		res, err := s.Step(ctx, gym.TextAction(strconv.Itoa(mid)))
		if err != nil {
			t.Fatalf("step %d (guess %d): %v", step, mid, err)
		}
		out = append(out, res)
		switch obs := res.Observation.Text(); obs {
		case "higher":
			lo = mid + 1
		case "lower":
			hi = mid - 1
		case "correct":
			if !res.Terminated || res.Truncated || res.Reward != 1 {
				t.Fatalf("correct guess: %+v, want terminated with reward 1", res)
			}
			return out
		default:
			t.Fatalf("step %d: observation %q", step, obs)
		}
		if res.Terminated || res.Truncated {
			t.Fatalf("episode ended before the secret was found: %+v", res)
		}
	}
	t.Fatalf("binary search ran out of range")
	return nil
}

func TestIntegrationGuess(t *testing.T) {
	url := startServer(t)
	ctx := testCtx(t)
	c := dial(t, url, client.WithToken(token))

	info, err := c.ServerInfo(ctx)
	if err != nil || info.Protocol != wire.Version || !slices.Contains(info.Envs, "guess-v1") {
		t.Fatalf("ServerInfo: %+v, %v", info, err)
	}
	envs, err := c.Envs(ctx)
	if err != nil || !slices.ContainsFunc(envs, func(e wire.EnvSummary) bool { return e.Name == "guess-v1" && e.Tasks == 3 }) {
		t.Fatalf("Envs: %+v, %v", envs, err)
	}
	d, err := c.Describe(ctx, "guess-v1")
	if err != nil || d.Name != "guess-v1" || len(d.ActionSchema) == 0 || len(d.PartSchemas) == 0 {
		t.Fatalf("Describe: %+v, %v", d, err)
	}
	tasks, err := c.Tasks(ctx, "guess-v1", "test")
	if err != nil || len(tasks) != 1 || tasks[0].ID != "guess-1-50" || tasks[0].Verifier != nil {
		t.Fatalf("Tasks: %+v, %v", tasks, err)
	}
	if _, err := c.Describe(ctx, "nope-v1"); !errors.Is(err, gym.ErrUnknownKind) {
		t.Fatalf("Describe of an unknown kind: %v, want ErrUnknownKind", err)
	}

	s, first, err := c.Create(ctx, gym.CreateRequest{Env: "guess-v1", TaskID: "guess-1-100", Seed: 42})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if first.Session != s.ID() || first.Episode != 1 || first.Seq != s.LastSeq() || first.Observation.Text() == "" {
		t.Fatalf("Create: %+v (session %s, last seq %d)", first, s.ID(), s.LastSeq())
	}
	steps := solve(t, ctx, s, 1, 100, nil)
	if last := steps[len(steps)-1]; last.Seq != s.LastSeq() {
		t.Errorf("LastSeq %d, want the last step's seq %d", s.LastSeq(), last.Seq)
	}
	if _, err := s.Step(ctx, gym.TextAction("1")); !errors.Is(err, gym.ErrEpisodeOver) {
		t.Errorf("step after the end: %v, want ErrEpisodeOver", err)
	}

	all, err := s.Resume(ctx, 0)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	// session.created, reset, the steps and the verifier's reward, if it
	// records one as its own event.
	if !all.Live || len(all.Events) < 2+len(steps) || all.Events[0].Type != gym.EventSessionCreated || all.Events[1].Type != gym.EventReset {
		t.Fatalf("Resume(0): live %v, %d events, want session.created, reset and %d steps", all.Live, len(all.Events), len(steps))
	}
	for i := 1; i < len(all.Events); i++ {
		if all.Events[i].Seq <= all.Events[i-1].Seq {
			t.Fatalf("events out of order: %d after %d", all.Events[i].Seq, all.Events[i-1].Seq)
		}
	}

	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Step(ctx, gym.TextAction("1")); !errors.Is(err, gym.ErrUnknownSession) && !errors.Is(err, gym.ErrSessionClosed) {
		t.Fatalf("step on a closed session: %v, want ErrUnknownSession or ErrSessionClosed", err)
	}
}

func TestIntegrationUnauthorized(t *testing.T) {
	url := startServer(t)
	_, err := client.Dial(testCtx(t), url, client.WithToken("wrong"))
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnauthorized {
		t.Fatalf("Dial with a wrong token: %v, want code %d", err, wire.CodeUnauthorized)
	}
}

func TestIntegrationDropMidEpisode(t *testing.T) {
	url := startServer(t)
	ctx := testCtx(t)
	c := dial(t, url, client.WithToken(token))
	judge := dial(t, url, client.WithToken(token))

	s, _, err := c.Create(ctx, gym.CreateRequest{TaskID: "guess-1-1000", Seed: 7})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	var seen int64
	var rewardSeqs []int64
	steps := solve(t, ctx, s, 1, 1000, func(step int) {
		switch step {
		case 2:
			// The socket breaks between steps: the next step waits for
			// the new connection.
			client.DropConn(c)
		case 3:
			// While this client is away, a judge scores step 1 twice.
			seen = s.LastSeq()
			res, err := judge.Attach(s.ID()).Resume(ctx, 0)
			if err != nil {
				t.Fatalf("judge Resume: %v", err)
			}
			var first string
			for _, ev := range res.Events {
				if ev.Type == gym.EventStep {
					first = ev.StepID
					break
				}
			}
			for _, r := range []float64{0.25, 0.5} {
				seq, err := judge.AddReward(ctx, wire.RewardParams{Session: s.ID(), StepID: first, Reward: &r, Source: "judge:prm"})
				if err != nil {
					t.Fatalf("AddReward: %v", err)
				}
				rewardSeqs = append(rewardSeqs, seq)
			}
		case 4:
			// This step's answer is lost with the connection after the
			// server ran it; the client re-sends it with its step id.
			client.DropResponse(c, wire.MethodSessionStep)
		}
	})
	if g := client.Generation(c); g != 3 {
		t.Errorf("%d connections, want 3", g)
	}
	if len(steps) < 4 {
		t.Fatalf("solved in %d steps; the test needs at least 4", len(steps))
	}
	for i, r := range steps {
		if r.Replayed != (i == 3) {
			t.Errorf("step %d: Replayed %v, want %v", i+1, r.Replayed, i == 3)
		}
	}

	// Retrying a step id by hand is answered from the record too.
	again, err := s.StepWithID(ctx, steps[3].StepID, gym.TextAction(mustLastGuess(t, ctx, s, steps[3].StepID)))
	if err != nil || !again.Replayed || again.Seq != steps[3].Seq || again.Observation.Text() != steps[3].Observation.Text() {
		t.Fatalf("StepWithID(%s) again: %+v, %v; want the recorded answer, replayed", steps[3].StepID, again, err)
	}
	// The same id with another action is refused.
	if _, err := s.StepWithID(ctx, steps[3].StepID, gym.TextAction("-1")); !errors.Is(err, gym.ErrStepIDReused) {
		t.Fatalf("StepWithID with a reused id: %v, want ErrStepIDReused", err)
	}

	// Resume from what this client had seen when the judge came returns the
	// judge's rewards and this client's steps after them, nothing else.
	res, err := s.Resume(ctx, seen)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	var want []int64
	want = append(want, rewardSeqs...)
	for _, r := range steps[2:] {
		want = append(want, r.Seq)
	}
	var got []int64
	for _, ev := range res.Events {
		if ev.Type == gym.EventReward && ev.Source != "judge:prm" {
			continue // the verifier's own verdict, if it records one
		}
		got = append(got, ev.Seq)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Resume(%d) = seqs %v, want %v", seen, got, want)
	}

	// A reset whose answer is lost is not re-sent: its outcome is unknown,
	// and Resume shows that it happened, as the only event missed.
	last := s.LastSeq()
	client.DropResponse(c, wire.MethodSessionReset)
	_, err = s.Reset(ctx, wire.ResetParams{Seed: 8})
	if !errors.Is(err, client.ErrConnectionLost) {
		t.Fatalf("Reset with its answer lost: %v, want ErrConnectionLost", err)
	}
	missed, err := s.Resume(ctx, last)
	if err != nil {
		t.Fatalf("Resume after the lost reset: %v", err)
	}
	if len(missed.Events) != 1 || missed.Events[0].Type != gym.EventReset || missed.Events[0].Episode != 2 || !missed.Live {
		t.Fatalf("Resume(%d) after the lost reset = %+v, want one reset event of episode 2", last, missed)
	}
	if s.LastSeq() != missed.Events[0].Seq {
		t.Errorf("LastSeq %d, want %d", s.LastSeq(), missed.Events[0].Seq)
	}
	solve(t, ctx, s, 1, 1000, nil) // the session carries on, on the fourth connection
	if g := client.Generation(c); g != 4 {
		t.Errorf("%d connections, want 4", g)
	}
}

// mustLastGuess returns the action text recorded for a step id.
func mustLastGuess(t *testing.T, ctx context.Context, s *client.Session, stepID string) string {
	t.Helper()
	res, err := s.Resume(ctx, 0)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	for _, ev := range res.Events {
		if ev.StepID == stepID && ev.Type == gym.EventStep {
			return ev.Action.Text()
		}
	}
	t.Fatalf("no step %s recorded", stepID)
	return ""
}

func TestIntegrationSubscribe(t *testing.T) {
	url := startServer(t)
	ctx := testCtx(t)
	agent := dial(t, url, client.WithToken(token))
	watcher := dial(t, url, client.WithToken(token))

	s, _, err := agent.Create(ctx, gym.CreateRequest{Env: "echo-v1"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	sub, err := watcher.Subscribe(ctx, wire.SubscribeParams{Session: s.ID(), AfterSeq: s.LastSeq()})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer sub.Close()
	other, _, err := agent.Create(ctx, gym.CreateRequest{Env: "echo-v1"}) // filtered out
	if err != nil {
		t.Fatalf("Create: %v", err)
	}

	var want []int64
	next := func(i int) {
		t.Helper()
		res, err := s.Step(ctx, gym.TextAction("hello "+strconv.Itoa(i)))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if _, err := other.Step(ctx, gym.TextAction("noise")); err != nil {
			t.Fatalf("other step: %v", err)
		}
		want = append(want, res.Seq)
	}
	var got []*gym.Event
	recv := func(n int) {
		t.Helper()
		for len(got) < n {
			select {
			case ev, ok := <-sub.C():
				if !ok {
					t.Fatalf("subscription ended after %d events: %v", len(got), sub.Err())
				}
				got = append(got, ev)
			case <-ctx.Done():
				t.Fatalf("waiting for event %d of %d: %v", len(got)+1, n, ctx.Err())
			}
		}
	}
	for i := range 10 {
		next(i)
	}
	recv(5)
	client.DropConn(watcher) // live events keep coming after the reconnect
	for i := 10; i < 20; i++ {
		next(i)
	}
	recv(20)
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	recv(21)
	for i, ev := range got[:20] {
		if ev.Type != gym.EventStep || ev.Session != s.ID() || ev.Seq != want[i] || ev.Action.Text() != "hello "+strconv.Itoa(i) {
			t.Fatalf("event %d: %s seq %d of %s (%q), want the step with seq %d", i, ev.Type, ev.Seq, ev.Session, ev.Action.Text(), want[i])
		}
	}
	if ev := got[20]; ev.Type != gym.EventSessionClosed || ev.Reason != gym.CloseClient {
		t.Fatalf("last event: %+v, want session.closed by the client", ev)
	}
	if g := client.Generation(watcher); g != 2 {
		t.Errorf("watcher made %d connections, want 2", g)
	}
	// Closing the client ends the subscription. (Closing the client
	// rather than the subscription leaves no request in flight when the
	// server shuts down.)
	watcher.Close()
	if _, ok := <-sub.C(); ok {
		t.Fatal("subscription open after the client's Close")
	}
	if err := sub.Err(); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("subscription Err after the client's Close: %v, want ErrClosed", err)
	}
}
