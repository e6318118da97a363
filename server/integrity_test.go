package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// hidden-v1 is a test kind whose verifier knows answers the agent never
// types: "submit" terminates, and the verifier's info holds the expected
// answer and the hidden tests' names, each carrying hiddenSecret.
type hiddenKind struct{}

const hiddenSecret = "EXPECTED-7f3a9c"

func (hiddenKind) Spec() gym.Spec {
	return gym.Spec{Name: "hidden-v1", Description: "test: a verifier with hidden answers",
		ActionSchema: gym.PartsSchema(1, 1, gym.PartText), ObservationSchema: gym.PartsSchema(1, 1, gym.PartText),
		Tasks: []gym.Task{{ID: "hidden-1", Env: "hidden-v1", Instruction: "Submit when done.",
			Verifier: json.RawMessage(`{"expected":"` + hiddenSecret + `"}`)}}}
}

func (hiddenKind) New(context.Context) (gym.Env, error) { return hiddenEnv{}, nil }

type hiddenEnv struct{}

func (hiddenEnv) Reset(context.Context, *gym.Task, int64, gym.Options) (gym.Observation, gym.Info, error) {
	return gym.TextObservation("go"), gym.Info{"note": "reset info is public"}, nil
}

func (hiddenEnv) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	return gym.Transition{Observation: gym.TextObservation("ok"), Terminated: a.Text() == "submit",
		Info: gym.Info{"exit_code": 0}}, nil
}

func (hiddenEnv) Verify(context.Context) (float64, gym.Info, error) {
	return 0.5, gym.Info{"expected": hiddenSecret, "tests": map[string]string{"test_answer_is_" + hiddenSecret: "failed", "test_runs": "passed"}}, nil
}

func (hiddenEnv) Close(context.Context) error { return nil }

func init() { gym.Register(hiddenKind{}) }

// TestVerifierInfoNeverReachesAgents plays an episode to its verification,
// adds a late verifier reward whose info holds the answer, closes the
// session, and then reads the episode back every way an agent holding the
// token can: a live subscription and a replaying one, session.resume over
// WebSocket and over POST /v1/rpc, GET /v1/sessions/{id}/events, GET
// /v1/events, and a retried step answered from the record. No frame holds
// the verifier's details; the rewards and the rest of the info are there.
// The store keeps the details, for trainers.
func TestVerifierInfoNeverReachesAgents(t *testing.T) {
	ts := startServer(t)
	agent := ts.dial()
	live := ts.dial()
	var liveSub wire.SubscribeResult
	live.mustCall(wire.MethodEventsSubscribe, wire.SubscribeParams{Env: "hidden-v1", AfterSeq: -1}, &liveSub)

	r := agent.create(gym.CreateRequest{TaskID: "hidden-1"})
	agent.step(r.Session, "s1", "work")
	last := agent.step(r.Session, "s2", "submit")
	if !last.Terminated || last.Reward != 0.5 || last.Info["reward_source"] != "verifier" || last.Info["verifier"] != nil {
		t.Fatalf("the terminating step answered %+v, want the verifier's reward 0.5 and no details", last)
	}
	var rr wire.RewardResult
	agent.mustCall(wire.MethodRewardAdd, wire.RewardParams{Session: r.Session, StepID: "s2", Reward: ptr(1.0), Source: "verifier:late",
		Info: gym.Info{"expected": hiddenSecret}}, &rr)
	agent.mustCall(wire.MethodSessionClose, wire.CloseParams{Session: r.Session}, nil)

	// The record keeps the details: the trainer's side.
	raw, err := ts.Store().Events(t.Context(), store.Filter{Session: r.Session})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(raw); strings.Count(string(b), hiddenSecret) != 3 {
		t.Fatalf("the store holds the secret %d times, want 3 (the verifier's expected answer and test, the late reward): %s",
			strings.Count(string(b), hiddenSecret), b)
	}

	// frames collects what the agent's side received, for the check at
	// the end, and checks the events themselves.
	var frames []string
	checkEvents := func(how string, evs []gym.Event) {
		t.Helper()
		var sawStep, sawReward bool
		for _, ev := range evs {
			switch {
			case ev.Type == gym.EventStep && ev.StepID == "s2":
				sawStep = ev.Info["reward_source"] == "verifier" && ev.Info["exit_code"] != nil && ev.Reward != nil && *ev.Reward == 0.5
			case ev.Type == gym.EventReward:
				sawReward = ev.Source == "verifier:late" && ev.Reward != nil && *ev.Reward == 1 && ev.Info == nil
			}
		}
		if !sawStep || !sawReward {
			t.Errorf("%s: the verified step (%v) or the late reward (%v) is missing or changed: %+v", how, sawStep, sawReward, evs)
		}
	}

	// subscribed takes a subscription's n events, keeping the frames.
	subscribed := func(c *wsClient, n int) []gym.Event {
		t.Helper()
		var evs []gym.Event
		for len(evs) < n {
			m := c.next()
			e := m.event()
			if e == nil {
				t.Fatalf("got %s, want events", m)
			}
			frames = append(frames, string(m.Raw))
			evs = append(evs, *e.Event)
		}
		return evs
	}
	// The live subscription saw the episode as it happened; another
	// replays it from the store.
	checkEvents("live subscription", subscribed(live, len(raw)))
	replay := ts.dial()
	replay.mustCall(wire.MethodEventsSubscribe, wire.SubscribeParams{Session: r.Session, AfterSeq: 0}, nil)
	checkEvents("replaying subscription", subscribed(replay, len(raw)))

	m := agent.call(wire.MethodSessionResume, wire.ResumeParams{Session: r.Session})
	frames = append(frames, string(m.Raw))
	var res wire.ResumeResult
	mustUnmarshal(t, m.Result, &res)
	checkEvents("session.resume", res.Events)

	// A retried step of the closed session is answered from the record.
	m = agent.call(wire.MethodSessionStep, stepArgs(r.Session, "s2", "submit"))
	frames = append(frames, string(m.Raw))
	var again gym.StepResult
	mustUnmarshal(t, m.Result, &again)
	if !again.Replayed || again.Reward != 0.5 || again.Info["reward_source"] != "verifier" {
		t.Errorf("the retried step answered %s, want the recorded answer", m)
	}

	for _, path := range []string{"/v1/sessions/" + r.Session + "/events", "/v1/events?session=" + r.Session, "/v1/events?env=hidden-v1"} {
		status, _, body := ts.do("GET", path, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d %s", path, status, body)
		}
		frames = append(frames, string(body))
		var page struct {
			Events []gym.Event `json:"events"`
		}
		mustUnmarshal(t, body, &page)
		checkEvents("GET "+path, page.Events)
	}
	status, _, body := ts.do("POST", "/v1/rpc", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"session.resume","params":{"session":%q}}`, r.Session))
	if status != http.StatusOK {
		t.Fatalf("POST /v1/rpc: HTTP %d %s", status, body)
	}
	frames = append(frames, string(body))

	for _, f := range frames {
		if strings.Contains(f, hiddenSecret) || strings.Contains(f, `"verifier":{`) || strings.Contains(f, "test_answer_is") {
			t.Errorf("an agent was sent the verifier's details: %s", f)
		}
	}
}

// TestGuessSecretNotResumed plays guess-v1 to its verified end while a
// subscription watches, then resumes and replays it: the verifier's info
// ({"secret": N}) is in no frame the agent's side gets.
func TestGuessSecretNotResumed(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	var sr wire.SubscribeResult
	c.mustCall(wire.MethodEventsSubscribe, wire.SubscribeParams{Env: "guess-v1", AfterSeq: -1}, &sr)
	r := c.create(gym.CreateRequest{TaskID: "guess-1-100", Seed: 42})
	lo, hi := 1, 100
	for i := 1; ; i++ {
		if i > 10 {
			t.Fatal("binary search over 1..100 took more than 10 guesses")
		}
		g := (lo + hi) / 2
		st := c.step(r.Session, fmt.Sprint("g", i), fmt.Sprint(g))
		if st.Terminated {
			break
		}
		if st.Observation.Text() == "higher" {
			lo = g + 1
		} else {
			hi = g - 1
		}
	}
	c.mustCall(wire.MethodSessionClose, wire.CloseParams{Session: r.Session}, nil)
	raw, err := ts.Store().Events(t.Context(), store.Filter{Session: r.Session})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(raw); !strings.Contains(string(b), `"secret":`) {
		t.Fatalf("the store lacks the verifier's secret: %s", b)
	}
	var frames []string
	for n := 0; n < len(raw); {
		m := c.next()
		frames = append(frames, string(m.Raw))
		if m.event() != nil {
			n++
		}
	}
	replay := ts.dial()
	replay.mustCall(wire.MethodEventsSubscribe, wire.SubscribeParams{Session: r.Session, AfterSeq: 0}, nil)
	for range raw {
		frames = append(frames, string(replay.next().Raw))
	}
	frames = append(frames, string(c.call(wire.MethodSessionResume, wire.ResumeParams{Session: r.Session}).Raw))
	_, _, body := ts.do("GET", "/v1/sessions/"+r.Session+"/events", nil)
	frames = append(frames, string(body))
	for _, f := range frames {
		if strings.Contains(f, `"secret"`) || strings.Contains(f, `"verifier":{`) {
			t.Errorf("the agent's side was sent the verifier's secret: %s", f)
		}
	}
	if !strings.Contains(frames[len(frames)-1], `"reward_source":"verifier"`) {
		t.Errorf("the resumed events lack the verified step: %s", frames[len(frames)-1])
	}
}
