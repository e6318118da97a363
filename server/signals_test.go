package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// TestJudgeRewardEvents judges each step with a scripted endpoint: the
// results are reward events keyed by the step ids, recorded after their
// steps, and the complete trajectory's samples carry the process rewards,
// the mixed rewards and the hint.
func TestJudgeRewardEvents(t *testing.T) {
	j := newScriptedJudge(t)
	ts := startServer(t, withJudge(j, nil))
	a := ts.dial()
	sess := a.create(gym.CreateRequest{TaskID: "sig-win", Run: "r1"}).Session
	steps := map[string]gym.StepResult{}
	for _, st := range []struct{ id, text string }{{"g1", "ACT_GOOD"}, {"b1", "ACT_BAD"}, {"w1", "win"}} {
		steps[st.id] = a.step(sess, st.id, st.text)
	}
	got := ts.waitRewards("g1", "b1", "w1")
	for id, want := range map[string]float64{"g1": 1, "b1": -1, "w1": 0} {
		ev := got[id]
		if ev.Reward == nil || !near(*ev.Reward, want) {
			t.Errorf("%s: judge reward %v, want %v", id, ev.Reward, want)
		}
		if ev.Seq <= steps[id].Seq || ev.Session != sess || ev.Step != steps[id].Step || ev.Run != "r1" || ev.Env != "signal-v1" {
			t.Errorf("%s: reward event %+v does not follow step seq %d of session %s", id, ev, steps[id].Seq, sess)
		}
		if ev.Info["judged"] != true || ev.Info["valid"] != float64(3) || ev.Info["model"] != "judge-test" {
			t.Errorf("%s: info %v, want judged with 3 valid votes by judge-test", id, ev.Info)
		}
	}
	if h, _ := got["b1"].Info["hint"].(string); !strings.Contains(h, "say look") {
		t.Errorf("b1: hint %q", h)
	}

	samples := ts.waitSamples(sess)
	if len(samples) != 3 {
		t.Fatalf("%d samples, want one per step (3)", len(samples))
	}
	// o = 1; r = [1, -1, 0]; R_t = o + r_t; sequence = o + mean(r) = 1.
	for i, want := range []struct {
		r, R float64
		hint bool
	}{{1, 2, false}, {-1, 0, true}, {0, 1, false}} {
		s := samples[i]
		sw := s.Metadata.StepWise
		if !near(s.Reward, 1) || !near(sw.StepScores[0], want.r) || !near(sw.StepScoresWithOutcome[0], want.R) ||
			sw.StepIndices[0] != i || !near(sw.OutcomeReward, 1) {
			t.Errorf("sample %d: reward %v, step_wise %+v; want reward 1, r %v, R %v", i, s.Reward, sw, want.r, want.R)
		}
		if s.Status != rl.StatusCompleted || s.RemoveSample || !s.Metadata.Origin.Judged || s.Metadata.Origin.StepID != []string{"g1", "b1", "w1"}[i] {
			t.Errorf("sample %d: status %s remove %v origin %+v", i, s.Status, s.RemoveSample, s.Metadata.Origin)
		}
		if (s.Metadata.OPD != nil) != want.hint {
			t.Errorf("sample %d: opd %+v, want a hint: %v", i, s.Metadata.OPD, want.hint)
		}
	}
	if opd := samples[1].Metadata.OPD; opd != nil {
		last := opd.TeacherPrompt[len(opd.TeacherPrompt)-1]
		if !strings.Contains(last.Content, rl.HintHeader) || !strings.Contains(last.Content, "say look") {
			t.Errorf("teacher prompt's last turn %q lacks the hint", last.Content)
		}
	}
}

// TestJudgeDoesNotDelaySteps holds the judge's calls and steps on: every
// step is answered while the judge of the first is still blocked.
func TestJudgeDoesNotDelaySteps(t *testing.T) {
	j := newScriptedJudge(t)
	ts := startServer(t, withJudge(j, func(c *SignalsConfig) { c.Concurrency = 1 }))
	a := ts.dial()
	sess := a.create(gym.CreateRequest{Env: "signal-v1"}).Session
	other := a.create(gym.CreateRequest{Env: "echo-v1"}).Session
	a.step(sess, "h1", "ACT_HANG")
	j.waitEntered(t, "ACT_HANG") // the judge is now blocked on step h1
	for i := range 20 {
		id := "s" + string(rune('a'+i))
		if r := a.step(sess, id, "ACT_GOOD"); r.Step != i+2 {
			t.Fatalf("step %s answered step %d", id, r.Step)
		}
		a.step(other, id, "echo")
	}
	// Still blocked: its reward is not in, and one worker is in flight.
	if _, ok := ts.judgeRewards()["h1"]; ok {
		t.Fatal("the blocked judge's reward is recorded already")
	}
	if st := ts.sig.judgeStats(); st.InFlight != 1 {
		t.Errorf("judge stats %+v, want the blocked step in flight", st)
	}
	j.releaseAll()
	got := ts.waitRewards("h1", "sa", "st")
	if r := got["h1"].Reward; r == nil || *r != 1 {
		t.Errorf("h1 reward %v after release, want 1", r)
	}
}

// TestTrajectoryWaitsForItsJudges: the samples of an episode come only
// when its outcome and all its judges are in; a judge that times out is
// recorded as such, and the trajectory completes with it unjudged.
func TestTrajectoryWaitsForItsJudges(t *testing.T) {
	j := newScriptedJudge(t)
	ts := startServer(t, withJudge(j, nil))
	a := ts.dial()
	sess := a.create(gym.CreateRequest{TaskID: "sig-win"}).Session
	a.step(sess, "g1", "ACT_GOOD")
	a.step(sess, "h1", "ACT_HANG")
	j.waitEntered(t, "ACT_HANG")
	a.step(sess, "w1", "win") // the outcome is in
	ts.waitRewards("g1", "w1")
	ts.flushSignals()
	key := rl.TrajectoryKey{Session: sess, Episode: 1}
	// The Tracker hears of a result just after its reward event is stored.
	waitFor(t, "the tracker to wait for the blocked judge only", func() bool {
		n, outcome, open := ts.sig.tracker.Pending(key)
		return open && outcome && n == 1
	})
	if got := ts.samples(store.SampleFilter{Session: sess}); len(got) != 0 {
		t.Fatalf("%d samples before the last judge answered", len(got))
	}
	j.releaseAll()
	if got := ts.waitSamples(sess); len(got) != 3 || !got[1].Metadata.Origin.Judged {
		t.Fatalf("samples after the judge answered: %+v", got)
	}

	// A judge that times out: 2s per call (far beyond what an answering
	// call takes, however loaded the machine), no retry.
	j2 := newScriptedJudge(t)
	ts2 := startServer(t, withJudge(j2, func(c *SignalsConfig) {
		c.Judge.Timeout, c.Judge.Retries = gym.Duration(2*time.Second), -1
	}))
	b := ts2.dial()
	sess2 := b.create(gym.CreateRequest{TaskID: "sig-win"}).Session
	b.step(sess2, "g1", "ACT_GOOD")
	b.step(sess2, "h1", "ACT_HANG")
	b.step(sess2, "w1", "win")
	got := ts2.waitRewards("h1")
	if ev := got["h1"]; ev.Info["judged"] != false || ev.Info["reason"] != rl.ReasonTimeout || ev.Info["timeouts"] != float64(3) {
		t.Errorf("timed-out judge recorded as %v, want judged false, reason timeout, 3 timeouts", ev.Info)
	}
	samples := ts2.waitSamples(sess2)
	if len(samples) != 3 || samples[1].Metadata.Origin.Judged || samples[1].Metadata.StepWise.StepScores[0] != 0 ||
		!samples[0].Metadata.Origin.Judged {
		t.Fatalf("samples with a timed-out judge: %+v", samples)
	}
	// o = 1, r = [1, 0 (timed out), 0]: sequence 1 + 1/3.
	if !near(samples[0].Reward, 1+1.0/3) {
		t.Errorf("sequence reward %v, want 4/3", samples[0].Reward)
	}
}

// TestSamplesMixMasksAndTurns checks samples against hand-worked values: a
// suite's own mix (2acc-1, c and gamma), token ids from a step's Turn and
// text from a step without one, groups and indexes, and masks: an
// infrastructure failure masks its trajectory, an agent's failure does not.
func TestSamplesMixMasksAndTurns(t *testing.T) {
	j := newScriptedJudge(t)
	suite := &gym.Suite{Name: "mixed", Signals: &gym.SuiteSignals{Mix: json.RawMessage(`{"c":0.5,"gamma":0.5,"outcome_map":"2acc-1"}`)},
		Tasks: []gym.Task{{ID: "frac", Env: "signal-v1", Instruction: "Pass three tests of four.", Data: json.RawMessage(`{"score":0.75}`)}}}
	ts := startServer(t, withJudge(j, nil), func(c *Config) { c.Suites = []*gym.Suite{suite} })
	a := ts.dial()
	sess := a.create(gym.CreateRequest{TaskID: "frac", Run: "r"}).Session
	turn := &gym.Turn{Messages: json.RawMessage(`[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Pass "},{"type":"image_url","image_url":{"url":"data:"}}]}]`),
		Response: "ACT_GOOD", PromptIDs: []int{1, 2, 3}, ResponseIDs: []int{4, 5}, LogProbs: []float64{-0.1, -0.2}, Model: "policy"}
	var r gym.StepResult
	a.mustCall(wire.MethodSessionStep, wire.StepParams{Session: sess, StepID: "t1", Action: gym.TextAction("ACT_GOOD"), Turn: turn}, &r)
	a.step(sess, "t2", "ACT_BAD")
	a.step(sess, "t3", "win")
	s := ts.waitSamples(sess)
	if len(s) != 3 {
		t.Fatalf("%d samples, want 3", len(s))
	}
	// o = 2·0.75 − 1 = 0.5; r = [1, −1, 0]; c = 0.5, γ = 0.5, T = 3:
	// R = [0.5·0.25 + 0.5, 0.5·0.5 − 0.5, 0.5] = [0.625, −0.25, 0.5];
	// sequence = 0.5 + 0.5·0 = 0.5.
	for i, R := range []float64{0.625, -0.25, 0.5} {
		if got := s[i].Metadata.StepWise.StepScoresWithOutcome[0]; !near(got, R) || !near(s[i].Reward, 0.5) || !near(s[i].Metadata.StepWise.OutcomeReward, 0.5) {
			t.Errorf("sample %d: R %v reward %v o %v; want R %v, reward 0.5, o 0.5", i, got, s[i].Reward, s[i].Metadata.StepWise.OutcomeReward, R)
		}
	}
	// The Turn's tokens and messages.
	if !slices.Equal(s[0].Tokens, []int{1, 2, 3, 4, 5}) || s[0].ResponseLength != 2 || !slices.Equal(s[0].LossMask, []int{1, 1}) ||
		!slices.Equal(s[0].RolloutLogProbs, []float64{-0.1, -0.2}) || s[0].Response != "ACT_GOOD" ||
		len(s[0].Prompt) != 2 || s[0].Prompt[1].Content != "Pass [image]" {
		t.Errorf("sample from a Turn: %+v", s[0])
	}
	// Text only: the context is the instruction and the first observation,
	// then the earlier action and next state; the response is the action.
	want := []rl.Message{{Role: "user", Content: "Pass three tests of four.\n\nstart"}, {Role: "assistant", Content: "ACT_GOOD"}, {Role: "user", Content: "saw ACT_GOOD"}}
	sameMsg := func(a, b rl.Message) bool { return a.Role == b.Role && a.Content == b.Content }
	if !slices.EqualFunc(s[1].Prompt, want, sameMsg) || s[1].Response != "ACT_BAD" || len(s[1].Tokens) != 0 || s[1].RolloutLogProbs != nil {
		t.Errorf("text-only sample: prompt %+v response %q tokens %v", s[1].Prompt, s[1].Response, s[1].Tokens)
	}

	// A second trajectory of the same run and task shares the group, not
	// the index; another task gets another group.
	a.mustCall(wire.MethodSessionReset, wire.ResetParams{Session: sess}, nil)
	a.step(sess, "u1", "win")
	other := a.create(gym.CreateRequest{TaskID: "sig-half", Run: "r"}).Session
	a.step(other, "o1", "win")
	ts.waitSamples(other)
	waitFor(t, "the second episode's samples", func() bool {
		return len(ts.samples(store.SampleFilter{Session: sess})) == 4
	})
	s = ts.samples(store.SampleFilter{Session: sess})
	o := ts.samples(store.SampleFilter{Session: other})
	if s[3].GroupIndex != s[0].GroupIndex || s[3].Index == s[0].Index || o[0].GroupIndex == s[0].GroupIndex {
		t.Errorf("groups/indexes: episode 1 (%d, %d), episode 2 (%d, %d), other task (%d, %d)",
			s[0].GroupIndex, s[0].Index, s[3].GroupIndex, s[3].Index, o[0].GroupIndex, o[0].Index)
	}

	// Failures: the infrastructure's (an env error, a panicking env) masks
	// the whole trajectory; the agent's is trained on, truncated.
	for _, c := range []struct {
		env, action string
		status      rl.Status
		masked      bool
	}{
		{"signal-v1", "crash", rl.StatusAborted, true},
		{"panic-v1", "x", rl.StatusAborted, true},
		{"signal-v1", "agentfail", rl.StatusTruncated, false},
	} {
		id := a.create(gym.CreateRequest{Env: c.env}).Session
		if c.env == "signal-v1" {
			a.step(id, "ok", "ACT_GOOD")
		}
		a.step(id, "f", c.action)
		got := ts.waitSamples(id)
		for _, x := range got {
			zero := !slices.Contains(x.LossMask, 1)
			if x.Status != c.status || x.RemoveSample != c.masked || (c.masked && !zero) || !near(x.Metadata.StepWise.OutcomeReward, 0) {
				t.Errorf("%s %s: sample status %s remove %v loss_mask %v o %v; want %s, masked %v",
					c.env, c.action, x.Status, x.RemoveSample, x.LossMask, x.Metadata.StepWise.OutcomeReward, c.status, c.masked)
			}
		}
	}
}

// TestJudgeScreensFromBlobs: a screenshot stored as a blob reaches the
// judge as an image, read back from the store.
func TestJudgeScreensFromBlobs(t *testing.T) {
	j := newScriptedJudge(t)
	ts := startServer(t, withJudge(j, nil))
	a := ts.dial()
	sess := a.create(gym.CreateRequest{Env: "signal-v1"}).Session
	a.step(sess, "s1", "shot ACT_GOOD")
	ts.waitRewards("s1")
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(bigScreenshot)
	if urls := j.imageURLs(); len(urls) != 3 || urls[0] != want {
		t.Errorf("the judge got %d images (first %.60s...), want the screenshot in each of 3 votes", len(urls), strings.Join(urls, ""))
	}
}

// TestSessionCloseEndsEpisode: a session closed mid-episode gives a
// truncated trajectory, and no judge means unjudged samples.
func TestSessionCloseEndsEpisode(t *testing.T) {
	ts := startServer(t)
	a := ts.dial()
	sess := a.create(gym.CreateRequest{Env: "echo-v1"}).Session
	a.step(sess, "e1", "hello")
	a.step(sess, "e2", "again")
	a.mustCall(wire.MethodSessionClose, wire.CloseParams{Session: sess}, nil)
	s := ts.waitSamples(sess)
	if len(s) != 2 || s[0].Status != rl.StatusTruncated || s[0].RemoveSample || s[0].Metadata.Origin.Judged || s[1].Response != "again" {
		t.Fatalf("samples of a closed session: %+v", s)
	}
	if len(ts.judgeRewards()) != 0 {
		t.Error("reward events recorded with no judge")
	}
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

// TestSignalsConfigErrors: a bad mix or judge is refused at New.
func TestSignalsConfigErrors(t *testing.T) {
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"suite mix field": {Config{Suites: []*gym.Suite{{Name: "s", Signals: &gym.SuiteSignals{Mix: json.RawMessage(`{"gama":1}`)},
			Tasks: []gym.Task{{ID: "x1", Env: "echo-v1"}}}}}, `unknown field(s) gama`},
		"suite mix value": {Config{Suites: []*gym.Suite{{Name: "s", Signals: &gym.SuiteSignals{Mix: json.RawMessage(`{"gamma":2}`)},
			Tasks: []gym.Task{{ID: "x2", Env: "echo-v1"}}}}}, "gamma"},
		"mix":            {Config{Signals: SignalsConfig{Mix: &rl.Mix{C: 1, Gamma: 1, OutcomeMap: "square"}}}, "outcome_map"},
		"judge url":      {Config{Signals: SignalsConfig{Judge: rl.JudgeConfig{Endpoint: "localhost", Model: "m"}}}, "base URL"},
		"judge no url":   {Config{Signals: SignalsConfig{Judge: rl.JudgeConfig{Model: "m"}}}, "no endpoint"},
		"judge no model": {Config{Signals: SignalsConfig{Judge: rl.JudgeConfig{Endpoint: "http://localhost:1/v1"}}}, "model"},
	} {
		c.cfg.DataDir = t.TempDir()
		srv, err := New(c.cfg)
		if err == nil {
			srv.Shutdown(context.Background())
			t.Errorf("%s: New succeeded, want an error", name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", name, err, c.want)
		}
	}
	for s, ok := range map[string]bool{"": true, "c=0.5, gamma=0.9,outcome=2acc-1": true, "outcome_map=identity": true,
		"c=x": false, "gamma=0": false, "delta=1": false, "c": false, "outcome=sq": false} {
		if _, err := ParseMix(s); (err == nil) != ok {
			t.Errorf("ParseMix(%q): %v", s, err)
		}
	}
	if m, _ := ParseMix("c=0.5,gamma=0.9,outcome=2acc-1"); m != (rl.Mix{C: 0.5, Gamma: 0.9, OutcomeMap: rl.OutcomeTwoAcc}) {
		t.Errorf("ParseMix: %+v", m)
	}
}

// TestSignalsCatchUp: when the pipeline's backlog overflows, the events it
// dropped are read back from the store, and every trajectory still
// completes.
func TestSignalsCatchUp(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Signals.Backlog = 2 })
	a := ts.dial()
	// Hold the worker while the events pile up.
	gate := make(chan struct{})
	ts.sig.mu.Lock()
	ts.sig.gate = gate
	ts.sig.mu.Unlock()
	var sessions []string
	for range 5 {
		sessions = append(sessions, a.create(gym.CreateRequest{Env: "echo-v1"}).Session)
	}
	for i, s := range sessions {
		for k := range 3 {
			a.step(s, string(rune('a'+k)), "x")
		}
		if i%2 == 0 {
			a.step(s, "d", "/done")
		} else {
			a.mustCall(wire.MethodSessionClose, wire.CloseParams{Session: s}, nil)
		}
	}
	ts.sig.mu.Lock()
	lost := ts.sig.lost
	ts.sig.gate = nil
	ts.sig.mu.Unlock()
	close(gate)
	if !lost {
		t.Fatal("the backlog of 2 did not overflow")
	}
	for i, s := range sessions {
		got := ts.waitSamples(s)
		if want := 3 + (1-i%2)*1; len(got) != want {
			t.Errorf("session %d: %d samples, want %d", i, len(got), want)
		}
	}
	if ts.sig.catchUps.Load() == 0 {
		t.Error("the backlog of 2 never overflowed: the test did not read events back from the store")
	}
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
