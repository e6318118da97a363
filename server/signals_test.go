package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// The signals follower (package rl, whose tests drive it without a
// server) is wired to the server's store and metrics; these tests check the
// wiring end to end, and the turn a step records for it.

// samples returns the stored samples, decoded, in offset order.
func (ts *testServer) samples(f store.SampleFilter) []rl.Sample {
	ts.tb.Helper()
	rows, err := ts.store.Samples(context.Background(), f)
	if err != nil {
		ts.tb.Fatal(err)
	}
	out := make([]rl.Sample, len(rows))
	for i, r := range rows {
		mustUnmarshal(ts.tb, r.Body, &out[i])
	}
	return out
}

// waitSamples waits until a session's samples are stored and returns them.
func (ts *testServer) waitSamples(session string) []rl.Sample {
	ts.tb.Helper()
	var got []rl.Sample
	waitFor(ts.tb, "the samples of session "+session, func() bool {
		got = ts.samples(store.SampleFilter{Session: session})
		return len(got) > 0
	})
	return got
}

// TestStepTurnRecorded: session.step takes "turn" (WebSocket and HTTP), the
// step event records it, and a replayed step id records nothing new.
func TestStepTurnRecorded(t *testing.T) {
	ts := startServer(t)
	a := ts.dial()
	sess := a.create(gym.CreateRequest{Env: "echo-v1"}).Session
	turn := &gym.Turn{Messages: json.RawMessage(`[{"role":"user","content":"say hi"}]`), Response: "hi", ResponseIDs: []int{7}, PromptIDs: []int{1}}
	var r gym.StepResult
	a.mustCall(wire.MethodSessionStep, wire.StepParams{Session: sess, StepID: "t1", Action: gym.TextAction("hi"), Turn: turn}, &r)
	other := *turn
	other.Response = "something else"
	var again gym.StepResult
	a.mustCall(wire.MethodSessionStep, wire.StepParams{Session: sess, StepID: "t1", Action: gym.TextAction("hi"), Turn: &other}, &again)
	if !again.Replayed || again.Seq != r.Seq {
		t.Errorf("replayed step: %+v, want the recorded answer", again)
	}
	status, _, body := ts.do("POST", "/v1/sessions/"+sess+"/step", map[string]any{"step_id": "t2",
		"action": gym.TextAction("ho"), "turn": map[string]any{"response": "ho", "model": "m"}})
	if status != http.StatusOK {
		t.Fatalf("HTTP step with a turn: %d %s", status, body)
	}
	evs, err := ts.store.Events(context.Background(), store.Filter{Session: sess, Types: []gym.EventType{gym.EventStep}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Turn == nil || evs[0].Turn.Response != "hi" || !slices.Equal(evs[0].Turn.ResponseIDs, []int{7}) ||
		evs[1].Turn == nil || evs[1].Turn.Model != "m" {
		t.Fatalf("recorded steps: %d, turns %+v", len(evs), evs)
	}
	e := a.callErr(wire.MethodSessionStep, map[string]any{"session": sess, "action": gym.TextAction("x"), "turns": 1})
	wantCode(t, e, wire.CodeInvalidParams, `unknown field "turns"`, "turn")
	e = a.callErr(wire.MethodSessionStep, map[string]any{"session": sess, "action": gym.TextAction("x"), "turn": "not an object"})
	wantCode(t, e, wire.CodeInvalidParams, "turn")
}

// TestEpisodeTooLong: an episode past MaxEpisodeSteps is let go (no
// samples); the next episode of the session gives samples again.
func TestEpisodeTooLong(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Signals.MaxEpisodeSteps = 3 })
	a := ts.dial()
	sess := a.create(gym.CreateRequest{Env: "echo-v1"}).Session
	for _, id := range []string{"a", "b", "c", "d"} {
		a.step(sess, id, "x")
	}
	a.step(sess, "e", "/done")
	a.mustCall(wire.MethodSessionReset, wire.ResetParams{Session: sess}, nil)
	a.step(sess, "f", "/done")
	got := ts.waitSamples(sess)
	if len(got) != 1 || got[0].Metadata.Origin.Episode != 2 || got[0].Response != "/done" {
		t.Fatalf("samples: %+v, want only the second episode's", got)
	}
	status, _, body := ts.do("GET", "/metrics", nil)
	if status != http.StatusOK || !strings.Contains(string(body), `nextstate_trajectories_total{status="too_long"} 1`) {
		t.Errorf("metrics do not count the long episode:\n%s", body)
	}
}
