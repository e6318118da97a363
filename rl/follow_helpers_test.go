package rl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs" // echo-v1
	"github.com/nextstate-rl/nextstate/store"
)

// signal-v1 is a test kind whose steps do what their action says, so the
// judge's rules and the outcome are known in advance: "win" terminates (the
// verifier then gives the task's score), "crash" fails the infrastructure,
// "panic" panics (the infrastructure's failure too), "agentfail" is the
// agent's failure, "shot" answers with a screenshot too large to keep
// inline (a blob), anything else with "saw <action>".
type signalKind struct{}

// signalData is signal-v1's task data.
type signalData struct {
	Score float64 `json:"score"`
}

var bigScreenshot = bytes.Repeat([]byte("PNG!"), 8<<10) // 32 KiB: stored as a blob

func (signalKind) Spec() gym.Spec {
	return gym.Spec{Name: "signal-v1", Description: "test: steps that do what they say",
		ActionSchema: gym.PartsSchema(1, 1, gym.PartText), ObservationSchema: gym.PartsSchema(0, 2, gym.PartText, gym.PartImage),
		Tasks: []gym.Task{
			{ID: "sig-win", Env: "signal-v1", Instruction: "Win the game.", Data: json.RawMessage(`{"score":1}`)},
			{ID: "sig-half", Env: "signal-v1", Instruction: "Win half the game.", Data: json.RawMessage(`{"score":0.5}`)},
		}}
}

func (signalKind) New(context.Context) (gym.Env, error) { return &signalEnv{}, nil }

type signalEnv struct{ data signalData }

func (e *signalEnv) Reset(_ context.Context, task *gym.Task, _ int64, _ gym.Options) (gym.Observation, gym.Info, error) {
	e.data = signalData{Score: 1}
	if len(task.Data) > 0 {
		if err := json.Unmarshal(task.Data, &e.data); err != nil {
			return gym.Observation{}, nil, err
		}
	}
	return gym.TextObservation("start"), nil, nil
}

func (e *signalEnv) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	t := a.Text()
	switch {
	case t == "win":
		return gym.Transition{Observation: gym.TextObservation("won"), Terminated: true}, nil
	case t == "crash":
		return gym.Transition{}, gym.InfraFault("crashed", errors.New("the test env crashed"))
	case t == "panic":
		panic("env bug")
	case t == "agentfail":
		return gym.Transition{}, gym.AgentFault("bad_move", errors.New("the agent broke the rules"))
	case strings.HasPrefix(t, "shot"):
		return gym.Transition{Observation: gym.Observation{Parts: []gym.Part{gym.TextPart("a screen"),
			{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: bigScreenshot}}}}}, nil
	}
	return gym.Transition{Observation: gym.TextObservation("saw " + t)}, nil
}

func (e *signalEnv) Verify(context.Context) (float64, gym.Info, error) {
	return e.data.Score, gym.Info{"score": e.data.Score}, nil
}

func (e *signalEnv) Close(context.Context) error { return nil }

func init() { gym.Register(signalKind{}) }

// waitTimeout bounds every wait in the follower's tests: generous, so that
// a loaded machine or the race detector does not fail them, yet a hang
// fails fast.
const waitTimeout = time.Minute

// judgedAction finds the action of the step to judge in a prompt.
func judgedAction(prompt string) string {
	_, rest, ok := strings.Cut(prompt, "the step to judge\nAction:\n")
	if !ok {
		return ""
	}
	action, _, _ := strings.Cut(rest, "\n\nNext state")
	return action
}

// byJudgedAction votes by the marker in the action of the step to judge
// (not in the earlier steps the prompt shows): ACT_GOOD 1, ACT_BAD -1 with
// a hint, ACT_HANG 1 once released, anything else 0.
func byJudgedAction(_ int, req chatRequest) reply {
	action := judgedAction(req.userText())
	text := replyNeutral
	switch {
	case strings.Contains(action, "ACT_HANG"):
		return reply{hold: true, texts: []string{replyGood}}
	case strings.Contains(action, "ACT_GOOD"):
		text = replyGood
	case strings.Contains(action, "ACT_BAD"):
		text = replyBadHint
	}
	return reply{texts: []string{text}}
}

// imageURLs returns the image data URLs the judge's calls carried.
func (s *scriptedJudge) imageURLs() []string {
	var out []string
	for _, r := range s.requests() {
		for _, m := range r.Messages {
			for _, p := range m.parts() {
				if p.ImageURL != nil {
					out = append(out, p.ImageURL.URL)
				}
			}
		}
	}
	return out
}

// waitEntered waits for a judge call on a step whose action contains
// marker.
func (s *scriptedJudge) waitEntered(tb testing.TB, marker string) {
	tb.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case text := <-s.entered:
			if strings.Contains(judgedAction(text), marker) {
				return
			}
		case <-deadline:
			tb.Fatalf("no judge call on %q came in %s", marker, waitTimeout)
		}
	}
}

// followJudge configures a follower's judge on s: 3 votes, fast retries,
// no kept-alive connections (so none outlives the test), a short drain.
func followJudge(s *scriptedJudge, edit func(*FollowerConfig)) func(*FollowerConfig) {
	return func(c *FollowerConfig) {
		c.Judge = JudgeConfig{Endpoint: s.url(), Model: "judge-test", Votes: 3, Backoff: gym.Duration(time.Millisecond),
			HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
		c.Drain = 200 * time.Millisecond
		if edit != nil {
			edit(c)
		}
	}
}

// following is a Follower wired as the trainer of `nextstate train` wires
// it, with no server: a store whose commit hook publishes to it, and a
// session Manager recording into that store. Tests drive sessions through
// the Manager.
type following struct {
	tb  testing.TB
	st  *store.Store
	mgr *gym.Manager
	f   *Follower
}

// startFollower starts a follower on a fresh store; edits change its
// config (their Suites are served by the Manager too). The scripted judge
// is started before it, so that the judge's goroutines are in the
// goroutine baseline, and stopped after.
func startFollower(tb testing.TB, edits ...func(*FollowerConfig)) *following {
	tb.Helper()
	baseline := runtime.NumGoroutine()
	h := &following{tb: tb}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := FollowerConfig{Logger: log}
	for _, e := range edits {
		e(&cfg)
	}
	st, err := store.Open(tb.TempDir(), store.Options{OnCommit: func(evs []*gym.Event, bodies []string) { h.f.Publish(evs, bodies) }})
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Store = st
	if h.f, err = NewFollower(cfg); err != nil {
		st.Close()
		tb.Fatal(err)
	}
	catalog := gym.NewCatalog()
	for _, su := range cfg.Suites {
		if err := catalog.AddSuite(su); err != nil {
			tb.Fatal(err)
		}
	}
	h.st, h.mgr = st, gym.NewManager(gym.Config{Recorder: st, Tasks: catalog, Logger: log})
	h.f.Start(st.LastSeq())
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := h.mgr.Shutdown(ctx); err != nil {
			tb.Errorf("Manager.Shutdown: %v", err)
		}
		if err := h.f.Close(ctx); err != nil {
			tb.Errorf("Follower.Close: %v", err)
		}
		if err := st.Close(); err != nil {
			tb.Errorf("store: %v", err)
		}
		checkGoroutines(tb, baseline)
	})
	return h
}

// create creates a session.
func (h *following) create(req gym.CreateRequest) *gym.Session {
	h.tb.Helper()
	sess, _, err := h.mgr.Create(context.Background(), req)
	if err != nil {
		h.tb.Fatalf("create %+v: %v", req, err)
	}
	return sess
}

// step steps a session with a text action.
func (h *following) step(sess *gym.Session, id, text string) gym.StepResult {
	h.tb.Helper()
	return h.stepTurn(sess, id, text, nil)
}

func (h *following) stepTurn(sess *gym.Session, id, text string, turn *gym.Turn) gym.StepResult {
	h.tb.Helper()
	r, err := sess.StepTurn(context.Background(), id, gym.TextAction(text), turn)
	if err != nil {
		h.tb.Fatalf("step %s %q: %v", id, text, err)
	}
	return r
}

// reset starts the next episode of a session's task.
func (h *following) reset(sess *gym.Session) {
	h.tb.Helper()
	if _, err := sess.Reset(context.Background(), nil, 0, nil); err != nil {
		h.tb.Fatal(err)
	}
}

// close closes a session, as its client would.
func (h *following) close(sess *gym.Session) {
	h.tb.Helper()
	if err := h.mgr.Close(context.Background(), sess.ID, gym.CloseClient); err != nil {
		h.tb.Fatal(err)
	}
}

// judgeRewards returns the judge's reward events by step id.
func (h *following) judgeRewards() map[string]gym.Event {
	h.tb.Helper()
	evs, err := h.st.Events(context.Background(), store.Filter{Types: []gym.EventType{gym.EventReward}})
	if err != nil {
		h.tb.Fatal(err)
	}
	out := map[string]gym.Event{}
	for _, ev := range evs {
		if ev.Source == DefaultSource {
			out[ev.StepID] = ev
		}
	}
	return out
}

// waitRewards waits until the judge's reward events of every step id are
// recorded, and returns them by step id.
func (h *following) waitRewards(ids ...string) map[string]gym.Event {
	h.tb.Helper()
	var got map[string]gym.Event
	waitFor(h.tb, fmt.Sprintf("judge rewards of %v", ids), func() bool {
		got = h.judgeRewards()
		for _, id := range ids {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	})
	return got
}

// samples returns the stored samples, decoded, in offset order.
func (h *following) samples(f store.SampleFilter) []Sample {
	h.tb.Helper()
	rows, err := h.st.Samples(context.Background(), f)
	if err != nil {
		h.tb.Fatal(err)
	}
	out := make([]Sample, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal(r.Body, &out[i]); err != nil {
			h.tb.Fatalf("sample %d: %v", r.Offset, err)
		}
	}
	return out
}

// waitSamples waits until a session's samples are stored and returns them.
func (h *following) waitSamples(session string) []Sample {
	h.tb.Helper()
	var got []Sample
	waitFor(h.tb, "the samples of session "+session, func() bool {
		got = h.samples(store.SampleFilter{Session: session})
		return len(got) > 0
	})
	return got
}

// flush waits until the follower has handled every event committed so far.
func (h *following) flush() {
	h.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := h.f.Flush(ctx); err != nil {
		h.tb.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing the test after waitTimeout.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkGoroutines waits until no more goroutines run than at baseline, and
// fails with every goroutine's stack if that does not happen in time.
func checkGoroutines(tb testing.TB, baseline int) {
	tb.Helper()
	deadline := time.Now().Add(waitTimeout)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			tb.Errorf("%d goroutines still running, %d before the follower started:\n%s",
				runtime.NumGoroutine(), baseline, buf)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
