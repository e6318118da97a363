package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// TestGuessBinarySearch plays guess-v1 to the end: the verifier, which
// knows the secret, gives reward 1 for the right number.
func TestGuessBinarySearch(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	r := c.create(gym.CreateRequest{TaskID: "guess-1-100", Seed: 42})
	if r.Task != "guess-1-100" || r.Episode != 1 || r.Observation.Text() == "" {
		t.Fatalf("create answered %+v", r)
	}
	lo, hi := 1, 100
	var last gym.StepResult
	secret := 0
	for i := 1; ; i++ {
		if i > 10 {
			t.Fatal("binary search over 1..100 took more than 10 guesses")
		}
		guess := (lo + hi) / 2
		last = c.step(r.Session, fmt.Sprint("g", i), fmt.Sprint(guess))
		if last.Step != i {
			t.Fatalf("guess %d answered step %d", i, last.Step)
		}
		switch last.Observation.Text() {
		case "higher":
			lo = guess + 1
			continue
		case "lower":
			hi = guess - 1
			continue
		case "correct":
			secret = guess
		default:
			t.Fatalf("guess %d answered %q", guess, last.Observation.Text())
		}
		if last.Reward != 1 || !last.Terminated || last.Truncated {
			t.Errorf("the right guess answered reward %v terminated %v truncated %v, want 1 true false", last.Reward, last.Terminated, last.Truncated)
		}
		if src := last.Info["reward_source"]; src != "verifier" {
			t.Errorf("info.reward_source = %v, want verifier (info %v)", src, last.Info)
		}
		if v, ok := last.Info["verifier"]; ok {
			t.Errorf("the agent was shown the verifier's details %v", v)
		}
		break
	}
	// The step event in the store has the verdict and the verifier's details.
	evs, err := ts.Store().Events(t.Context(), store.Filter{Session: r.Session, Types: []gym.EventType{gym.EventStep}})
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[len(evs)-1]
	if len(evs) != last.Step || ev.Reward == nil || *ev.Reward != 1 || !ev.Terminated || ev.Info["reward_source"] != "verifier" {
		t.Errorf("the store has %d steps, the last %+v", len(evs), ev)
	}
	if v, _ := ev.Info["verifier"].(map[string]any); v == nil || v["secret"] != float64(secret) {
		t.Errorf("the recorded info.verifier = %v, want the secret %d", ev.Info["verifier"], secret)
	}
}

// TestStepsAnsweredInOrder pipelines 50 steps of one session on one
// connection: they run and are answered in the order sent.
func TestStepsAnsweredInOrder(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	s := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	var ids []string
	for i := 1; i <= 50; i++ {
		ids = append(ids, c.send(wire.MethodSessionStep, stepArgs(s, fmt.Sprint("o", i), fmt.Sprint("msg ", i))))
	}
	for i := 1; i <= 50; i++ {
		m := c.next()
		if string(m.ID) != ids[i-1] || m.Error != nil {
			t.Fatalf("answer %d is %s, want the result of request %s", i, m, ids[i-1])
		}
		var r gym.StepResult
		if err := json.Unmarshal(m.Result, &r); err != nil {
			t.Fatal(err)
		}
		if r.Step != i || r.StepID != fmt.Sprint("o", i) || r.Observation.Text() != fmt.Sprint("msg ", i) {
			t.Fatalf("answer %d is step %d id %q %q", i, r.Step, r.StepID, r.Observation.Text())
		}
	}
}

// TestStepRetryReplays sends the same step id twice: the second answer is
// the recorded one, marked replayed, and the action does not run again.
func TestStepRetryReplays(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	s := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	first := c.step(s, "retry-me", "once")
	again := c.step(s, "retry-me", "once")
	if !again.Replayed || first.Replayed {
		t.Fatalf("replayed: first %v, again %v; want false, true", first.Replayed, again.Replayed)
	}
	again.Replayed = false
	if !reflect.DeepEqual(first, again) {
		t.Errorf("the retry answered\n%+v\nthe first\n%+v", again, first)
	}
	if next := c.step(s, "", "next"); next.Step != 2 {
		t.Errorf("the step after a retry is %d, want 2: the retry must not run again", next.Step)
	}
	evs, _ := ts.Store().Events(t.Context(), store.Filter{Session: s, Types: []gym.EventType{gym.EventStep}})
	if len(evs) != 2 {
		t.Errorf("the store has %d step events, want 2", len(evs))
	}
}

// TestResumeAfterSeq returns exactly the session's events after a seq.
func TestResumeAfterSeq(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	s := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	noise := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	var seqs []int64
	for i := range 6 {
		seqs = append(seqs, c.step(s, "", fmt.Sprint(i)).Seq)
		c.step(noise, "", "noise")
	}
	var res wire.ResumeResult
	c.mustCall(wire.MethodSessionResume, wire.ResumeParams{Session: s, AfterSeq: seqs[2]}, &res)
	if !res.Live || res.More || res.LastSeq != seqs[5] {
		t.Errorf("resume: live %v more %v last_seq %d, want true false %d", res.Live, res.More, res.LastSeq, seqs[5])
	}
	if got := eventSeqs(res.Events); !slices.Equal(got, seqs[3:]) {
		t.Errorf("resume after %d gave seqs %v, want %v", seqs[2], got, seqs[3:])
	}
	// A limit pages the answer.
	c.mustCall(wire.MethodSessionResume, wire.ResumeParams{Session: s, AfterSeq: seqs[2], Limit: 2}, &res)
	if got := eventSeqs(res.Events); !res.More || !slices.Equal(got, seqs[3:5]) || res.LastSeq != seqs[4] {
		t.Errorf("resume with limit 2 gave %v more %v last_seq %d", got, res.More, res.LastSeq)
	}
	// A closed session keeps its events.
	c.mustCall(wire.MethodSessionClose, wire.CloseParams{Session: s}, nil)
	c.mustCall(wire.MethodSessionResume, wire.ResumeParams{Session: s, AfterSeq: seqs[5]}, &res)
	if res.Live || len(res.Events) != 1 || res.Events[0].Type != gym.EventSessionClosed || res.Events[0].Reason != gym.CloseClient {
		t.Errorf("resume of a closed session: live %v events %+v", res.Live, res.Events)
	}
}

func eventSeqs(evs []gym.Event) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

// TestReconnectResume drops a connection with two steps unanswered. A new
// connection resumes from the last acknowledged seq, receives exactly the
// events it missed, and the session goes on.
func TestReconnectResume(t *testing.T) {
	ts := startServer(t)
	c1 := ts.dial()
	s := c1.create(gym.CreateRequest{Env: "echo-v1", Run: "reconnect"}).Session
	var acked int64
	for i := 1; i <= 3; i++ {
		acked = c1.step(s, fmt.Sprint("r", i), fmt.Sprint("step ", i)).Seq
	}
	c1.send(wire.MethodSessionStep, stepArgs(s, "r4", "step 4"))
	c1.send(wire.MethodSessionStep, stepArgs(s, "r5", "step 5"))
	c1.close() // no close frame: the client went away
	// Requests in flight are not cancelled with their connection.
	waitFor(t, "the two unanswered steps to be recorded", func() bool {
		evs, err := ts.Store().Events(t.Context(), store.Filter{Session: s, AfterSeq: acked})
		return err == nil && len(evs) == 2
	})

	c2 := ts.dial()
	var res wire.ResumeResult
	c2.mustCall(wire.MethodSessionResume, wire.ResumeParams{Session: s, AfterSeq: acked}, &res)
	if !res.Live || len(res.Events) != 2 {
		t.Fatalf("resume: live %v, %d events, want the 2 missed steps: %+v", res.Live, len(res.Events), res.Events)
	}
	for i, ev := range res.Events {
		id := fmt.Sprint("r", i+4)
		if ev.Type != gym.EventStep || ev.StepID != id || ev.Step != i+4 || ev.Observation.Text() != fmt.Sprint("step ", i+4) {
			t.Errorf("missed event %d is %+v, want step %s", i, ev, id)
		}
	}
	// The client may also retry what it did not see answered.
	if r := c2.step(s, "r5", "step 5"); !r.Replayed || r.Step != 5 {
		t.Errorf("retrying r5 answered step %d replayed %v", r.Step, r.Replayed)
	}
	if r := c2.step(s, "r6", "step 6"); r.Step != 6 || r.Seq <= res.LastSeq {
		t.Errorf("the session went on with step %d seq %d", r.Step, r.Seq)
	}
}

// TestOverCapacity refuses a session past MaxSessions at once, with a retry
// hint, and admits one again once a session closes.
func TestOverCapacity(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Sessions.MaxSessions = 2 })
	c := ts.dial()
	a := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	c.create(gym.CreateRequest{Env: "echo-v1"})
	e := c.callErr(wire.MethodSessionCreate, gym.CreateRequest{Env: "echo-v1"})
	wantCode(t, e, wire.CodeOverCapacity, "over capacity", "retry")
	if e.Data == nil || e.Data.RetryAfterMS <= 0 {
		t.Errorf("data = %+v, want retry_after_ms", e.Data)
	}
	// Live sessions are unaffected.
	c.step(a, "", "fine")
	c.mustCall(wire.MethodSessionClose, wire.CloseParams{Session: a}, nil)
	c.create(gym.CreateRequest{Env: "echo-v1"})
}

// TestRewardAdd records a late reward for a recorded step as a reward
// event keyed by the step's id.
func TestRewardAdd(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	cr := c.create(gym.CreateRequest{Env: "echo-v1", Run: "judged"})
	st := c.step(cr.Session, "judge-me", "an answer")
	var rr wire.RewardResult
	c.mustCall(wire.MethodRewardAdd, wire.RewardParams{Session: cr.Session, StepID: "judge-me", Reward: ptr(0.25),
		Source: "judge:prm", Info: gym.Info{"hint": "be brief"}}, &rr)
	if rr.Seq <= st.Seq {
		t.Fatalf("the reward's seq %d is not after the step's %d", rr.Seq, st.Seq)
	}
	var res wire.ResumeResult
	c.mustCall(wire.MethodSessionResume, wire.ResumeParams{Session: cr.Session, AfterSeq: st.Seq}, &res)
	if len(res.Events) != 1 {
		t.Fatalf("resume after the step: %+v, want the reward", res.Events)
	}
	ev := res.Events[0]
	if ev.Type != gym.EventReward || ev.Seq != rr.Seq || ev.StepID != "judge-me" || ev.Reward == nil || *ev.Reward != 0.25 ||
		ev.Source != "judge:prm" || ev.Run != "judged" || ev.Step != 1 || ev.Info["hint"] != "be brief" {
		t.Errorf("reward event %+v", ev)
	}
	// Rewards may come after the session closed.
	c.mustCall(wire.MethodSessionClose, wire.CloseParams{Session: cr.Session}, nil)
	c.mustCall(wire.MethodRewardAdd, wire.RewardParams{Session: cr.Session, StepID: "judge-me", Reward: ptr(1.0), Source: "verifier"}, &rr)
	wantCode(t, c.callErr(wire.MethodRewardAdd, wire.RewardParams{Session: cr.Session, StepID: "judge-me"}), wire.CodeInvalidParams, "source")
	wantCode(t, c.callErr(wire.MethodRewardAdd, wire.RewardParams{Session: cr.Session, StepID: "judge-me", Source: "judge"}), wire.CodeInvalidParams, "reward")
}

// TestInfoAndCatalog covers the read-only methods.
func TestInfoAndCatalog(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	var info wire.ServerInfo
	c.mustCall(wire.MethodServerInfo, nil, &info)
	if info.Protocol != wire.Version || info.MaxFrameBytes != 64<<10 || !slices.Contains(info.Envs, "guess-v1") {
		t.Errorf("server.info = %+v", info)
	}
	var el wire.EnvListResult
	c.mustCall(wire.MethodEnvList, nil, &el)
	if len(el.Envs) < 2 {
		t.Errorf("env.list = %+v", el)
	}
	var d wire.EnvDescribeResult
	c.mustCall(wire.MethodEnvDescribe, wire.EnvDescribeParams{Env: "guess-v1"}, &d)
	if d.Name != "guess-v1" || len(d.Tasks) != 3 || len(d.ActionSchema) == 0 || len(d.PartSchemas) != len(gym.PartTypes) {
		t.Errorf("env.describe = %+v", d)
	}
	var tl wire.TaskListResult
	c.mustCall(wire.MethodTaskList, wire.TaskListParams{Env: "guess-v1", Split: "test"}, &tl)
	if len(tl.Tasks) != 1 || tl.Tasks[0].ID != "guess-1-50" {
		t.Errorf("task.list guess-v1 test = %+v", tl)
	}
}

// TestRetryAfterSessionEnded answers a retried step id from the store once
// the session is gone (here: the step that ended it and then closed it), so
// a client that lost the answer still gets it.
func TestRetryAfterSessionEnded(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	cr := c.create(gym.CreateRequest{Env: "echo-v1"})
	st := c.step(cr.Session, "last", "/done")
	if !st.Terminated {
		t.Fatalf("/done did not terminate: %+v", st)
	}
	c.mustCall(wire.MethodSessionClose, wire.CloseParams{Session: cr.Session}, nil)

	var again gym.StepResult
	c.mustCall(wire.MethodSessionStep, stepArgs(cr.Session, "last", "/done"), &again)
	if !again.Replayed || again.Seq != st.Seq || !again.Terminated || again.Step != st.Step || again.Observation.Text() != "/done" {
		t.Errorf("retry after close = %+v, want the recorded answer %+v, replayed", again, st)
	}
	wantCode(t, c.callErr(wire.MethodSessionStep, stepArgs(cr.Session, "last", "something else")), wire.CodeStepIDReused, "last")
	wantCode(t, c.callErr(wire.MethodSessionStep, stepArgs(cr.Session, "never", "x")), wire.CodeUnknownSession, cr.Session)
}
