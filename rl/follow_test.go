package rl

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
)

// TestJudgeRewardEvents judges each step with a scripted endpoint: the
// results are reward events keyed by the step ids, recorded after their
// steps, and the complete trajectory's samples carry the process rewards,
// the mixed rewards and the hint.
func TestJudgeRewardEvents(t *testing.T) {
	j := newScriptedJudge(t, byJudgedAction)
	h := startFollower(t, followJudge(j, nil))
	sess := h.create(gym.CreateRequest{TaskID: "sig-win", Run: "r1"})
	steps := map[string]gym.StepResult{}
	for _, st := range []struct{ id, text string }{{"g1", "ACT_GOOD"}, {"b1", "ACT_BAD"}, {"w1", "win"}} {
		steps[st.id] = h.step(sess, st.id, st.text)
	}
	got := h.waitRewards("g1", "b1", "w1")
	for id, want := range map[string]float64{"g1": 1, "b1": -1, "w1": 0} {
		ev := got[id]
		if ev.Reward == nil || !near(*ev.Reward, want) {
			t.Errorf("%s: judge reward %v, want %v", id, ev.Reward, want)
		}
		if ev.Seq <= steps[id].Seq || ev.Session != sess.ID || ev.Step != steps[id].Step || ev.Run != "r1" || ev.Env != "signal-v1" {
			t.Errorf("%s: reward event %+v does not follow step seq %d of session %s", id, ev, steps[id].Seq, sess.ID)
		}
		if ev.Info["judged"] != true || ev.Info["valid"] != float64(3) || ev.Info["model"] != "judge-test" {
			t.Errorf("%s: info %v, want judged with 3 valid votes by judge-test", id, ev.Info)
		}
	}
	if hint, _ := got["b1"].Info["hint"].(string); !strings.Contains(hint, "ls -la first") {
		t.Errorf("b1: hint %q", hint)
	}

	samples := h.waitSamples(sess.ID)
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
		if s.Status != StatusCompleted || s.RemoveSample || !s.Metadata.Origin.Judged || s.Metadata.Origin.StepID != []string{"g1", "b1", "w1"}[i] {
			t.Errorf("sample %d: status %s remove %v origin %+v", i, s.Status, s.RemoveSample, s.Metadata.Origin)
		}
		if (s.Metadata.OPD != nil) != want.hint {
			t.Errorf("sample %d: opd %+v, want a hint: %v", i, s.Metadata.OPD, want.hint)
		}
	}
	if opd := samples[1].Metadata.OPD; opd != nil {
		last := opd.TeacherPrompt[len(opd.TeacherPrompt)-1]
		if !strings.Contains(last.Content, HintHeader) || !strings.Contains(last.Content, "ls -la first") {
			t.Errorf("teacher prompt's last turn %q lacks the hint", last.Content)
		}
	}
}

// TestJudgeDoesNotDelaySteps holds the judge's calls and steps on: every
// step is answered while the judge of the first is still blocked.
func TestJudgeDoesNotDelaySteps(t *testing.T) {
	j := newScriptedJudge(t, byJudgedAction)
	h := startFollower(t, followJudge(j, func(c *FollowerConfig) { c.Concurrency = 1 }))
	sess := h.create(gym.CreateRequest{Env: "signal-v1"})
	other := h.create(gym.CreateRequest{Env: "echo-v1"})
	h.step(sess, "h1", "ACT_HANG")
	j.waitEntered(t, "ACT_HANG") // the judge is now blocked on step h1
	for i := range 20 {
		id := "s" + string(rune('a'+i))
		if r := h.step(sess, id, "ACT_GOOD"); r.Step != i+2 {
			t.Fatalf("step %s answered step %d", id, r.Step)
		}
		h.step(other, id, "echo")
	}
	// Still blocked: its reward is not in, and one worker is in flight.
	if _, ok := h.judgeRewards()["h1"]; ok {
		t.Fatal("the blocked judge's reward is recorded already")
	}
	if st := h.f.JudgeStats(); st.InFlight != 1 {
		t.Errorf("judge stats %+v, want the blocked step in flight", st)
	}
	j.releaseAll()
	got := h.waitRewards("h1", "sa", "st")
	if r := got["h1"].Reward; r == nil || *r != 1 {
		t.Errorf("h1 reward %v after release, want 1", r)
	}
}

// TestTrajectoryWaitsForItsJudges: the samples of an episode come only
// when its outcome and all its judges are in; a judge that times out is
// recorded as such, and the trajectory completes with it unjudged.
func TestTrajectoryWaitsForItsJudges(t *testing.T) {
	j := newScriptedJudge(t, byJudgedAction)
	h := startFollower(t, followJudge(j, nil))
	sess := h.create(gym.CreateRequest{TaskID: "sig-win"})
	h.step(sess, "g1", "ACT_GOOD")
	h.step(sess, "h1", "ACT_HANG")
	j.waitEntered(t, "ACT_HANG")
	h.step(sess, "w1", "win") // the outcome is in
	h.waitRewards("g1", "w1")
	h.flush()
	key := TrajectoryKey{Session: sess.ID, Episode: 1}
	// The Tracker hears of a result just after its reward event is stored.
	waitFor(t, "the tracker to wait for the blocked judge only", func() bool {
		n, outcome, open := h.f.tracker.Pending(key)
		return open && outcome && n == 1
	})
	if got := h.samples(store.SampleFilter{Session: sess.ID}); len(got) != 0 {
		t.Fatalf("%d samples before the last judge answered", len(got))
	}
	j.releaseAll()
	if got := h.waitSamples(sess.ID); len(got) != 3 || !got[1].Metadata.Origin.Judged {
		t.Fatalf("samples after the judge answered: %+v", got)
	}

	// A judge that times out: 50ms per call, no retry (the steps that do
	// not hang get a minute, so a loaded machine cannot time them out).
	j2 := newScriptedJudge(t, byJudgedAction)
	h2 := startFollower(t, followJudge(j2, func(c *FollowerConfig) {
		c.Judge.Retries = -1
		short, long := c.Judge, c.Judge
		short.Timeout, long.Timeout = gym.Duration(50*time.Millisecond), gym.Duration(time.Minute)
		c.Scorer = slowApart{marker: "ACT_HANG", slow: mustJudge(t, short), rest: mustJudge(t, long)}
	}))
	sess2 := h2.create(gym.CreateRequest{TaskID: "sig-win"})
	h2.step(sess2, "g1", "ACT_GOOD")
	h2.step(sess2, "h1", "ACT_HANG")
	h2.step(sess2, "w1", "win")
	got := h2.waitRewards("h1")
	if ev := got["h1"]; ev.Info["judged"] != false || ev.Info["reason"] != ReasonTimeout || ev.Info["timeouts"] != float64(3) {
		t.Errorf("timed-out judge recorded as %v, want judged false, reason timeout, 3 timeouts", ev.Info)
	}
	samples := h2.waitSamples(sess2.ID)
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
	j := newScriptedJudge(t, byJudgedAction)
	suite := &gym.Suite{Name: "mixed", Signals: &gym.SuiteSignals{Mix: json.RawMessage(`{"c":0.5,"gamma":0.5,"outcome_map":"2acc-1"}`)},
		Tasks: []gym.Task{{ID: "frac", Env: "signal-v1", Instruction: "Pass three tests of four.", Data: json.RawMessage(`{"score":0.75}`)}}}
	h := startFollower(t, followJudge(j, nil), func(c *FollowerConfig) { c.Suites = []*gym.Suite{suite} })
	sess := h.create(gym.CreateRequest{TaskID: "frac", Run: "r"})
	turn := &gym.Turn{Messages: json.RawMessage(`[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Pass "},{"type":"image_url","image_url":{"url":"data:"}}]}]`),
		Response: "ACT_GOOD", PromptIDs: []int{1, 2, 3}, ResponseIDs: []int{4, 5}, LogProbs: []float64{-0.1, -0.2}, Model: "policy",
		WeightVersion: new(3)}
	h.stepTurn(sess, "t1", "ACT_GOOD", turn)
	h.step(sess, "t2", "ACT_BAD")
	h.step(sess, "t3", "win")
	s := h.waitSamples(sess.ID)
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
	if v := s[0].Metadata.Origin.WeightVersion; v == nil || *v != 3 || s[1].Metadata.Origin.WeightVersion != nil {
		t.Errorf("weight versions %v, %v; want the Turn's 3, then none", v, s[1].Metadata.Origin.WeightVersion)
	}
	// Text only: the context is the instruction (from the reset event) and
	// the first observation, then the earlier action and next state; the
	// response is the action.
	want := []Message{{Role: "user", Content: "Pass three tests of four.\n\nstart"}, {Role: "assistant", Content: "ACT_GOOD"}, {Role: "user", Content: "saw ACT_GOOD"}}
	sameMsg := func(a, b Message) bool { return a.Role == b.Role && a.Content == b.Content }
	if !slices.EqualFunc(s[1].Prompt, want, sameMsg) || s[1].Response != "ACT_BAD" || len(s[1].Tokens) != 0 || s[1].RolloutLogProbs != nil {
		t.Errorf("text-only sample: prompt %+v response %q tokens %v", s[1].Prompt, s[1].Response, s[1].Tokens)
	}

	// A second trajectory of the same run and task shares the group, not
	// the index; another task gets another group.
	h.reset(sess)
	h.step(sess, "u1", "win")
	other := h.create(gym.CreateRequest{TaskID: "sig-half", Run: "r"})
	h.step(other, "o1", "win")
	h.waitSamples(other.ID)
	waitFor(t, "the second episode's samples", func() bool {
		return len(h.samples(store.SampleFilter{Session: sess.ID})) == 4
	})
	s = h.samples(store.SampleFilter{Session: sess.ID})
	o := h.samples(store.SampleFilter{Session: other.ID})
	if s[3].GroupIndex != s[0].GroupIndex || s[3].Index == s[0].Index || o[0].GroupIndex == s[0].GroupIndex {
		t.Errorf("groups/indexes: episode 1 (%d, %d), episode 2 (%d, %d), other task (%d, %d)",
			s[0].GroupIndex, s[0].Index, s[3].GroupIndex, s[3].Index, o[0].GroupIndex, o[0].Index)
	}

	// Failures: the infrastructure's (an env error, a panicking env) masks
	// the whole trajectory; the agent's is trained on, truncated.
	for _, c := range []struct {
		action string
		status Status
		masked bool
	}{
		{"crash", StatusAborted, true},
		{"panic", StatusAborted, true},
		{"agentfail", StatusTruncated, false},
	} {
		id := h.create(gym.CreateRequest{Env: "signal-v1"})
		h.step(id, "ok", "ACT_GOOD")
		h.step(id, "f", c.action)
		got := h.waitSamples(id.ID)
		for _, x := range got {
			zero := !slices.Contains(x.LossMask, 1)
			if x.Status != c.status || x.RemoveSample != c.masked || (c.masked && !zero) || !near(x.Metadata.StepWise.OutcomeReward, 0) {
				t.Errorf("%s: sample status %s remove %v loss_mask %v o %v; want %s, masked %v",
					c.action, x.Status, x.RemoveSample, x.LossMask, x.Metadata.StepWise.OutcomeReward, c.status, c.masked)
			}
		}
	}
}

// TestJudgeScreensFromBlobs: a screenshot stored as a blob reaches the
// judge as an image, read back from the store.
func TestJudgeScreensFromBlobs(t *testing.T) {
	j := newScriptedJudge(t, byJudgedAction)
	h := startFollower(t, followJudge(j, nil))
	sess := h.create(gym.CreateRequest{Env: "signal-v1"})
	h.step(sess, "s1", "shot ACT_GOOD")
	h.waitRewards("s1")
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(bigScreenshot)
	if urls := j.imageURLs(); len(urls) != 3 || urls[0] != want {
		t.Errorf("the judge got %d images (first %.60s...), want the screenshot in each of 3 votes", len(urls), strings.Join(urls, ""))
	}
}

// TestJudgePromptKind: the judge's prompt kind is the one the env kind
// declares (gym.Spec.JudgePrompt); a kind that declares none gets toolcall
// when its reset info lists tools, else default.
func TestJudgePromptKind(t *testing.T) {
	for _, c := range []struct {
		env  string
		info gym.Info
		want string
	}{
		{"prompt-kind-v1", nil, KindGUI},
		{"signal-v1", nil, KindDefault},
		{"signal-v1", gym.Info{"tools": []any{}}, KindToolCall},
		{"no-such-kind-v1", nil, KindDefault},
	} {
		if got := promptKind(c.env, c.info); got != c.want {
			t.Errorf("promptKind(%s, %v) = %q, want %q", c.env, c.info, got, c.want)
		}
	}
}

// promptKindKind declares its judge prompt.
type promptKindKind struct{ signalKind }

func init() { gym.Register(promptKindKind{}) }

func (promptKindKind) Spec() gym.Spec {
	return gym.Spec{Name: "prompt-kind-v1", Description: "test: declares a judge prompt", JudgePrompt: KindGUI,
		ActionSchema: gym.PartsSchema(1, 1, gym.PartText), ObservationSchema: gym.PartsSchema(0, 1, gym.PartText)}
}

// TestInstructionFromResetEvent: the judge reads the instruction from the
// reset event, for a task of the catalog and for a task given inline.
func TestInstructionFromResetEvent(t *testing.T) {
	j := newScriptedJudge(t, byJudgedAction)
	h := startFollower(t, followJudge(j, nil))
	a := h.create(gym.CreateRequest{TaskID: "sig-half"})
	h.step(a, "a1", "ACT_GOOD")
	b := h.create(gym.CreateRequest{Task: &gym.Task{ID: "inline", Env: "signal-v1", Instruction: "Lose with grace."}})
	h.step(b, "b1", "ACT_GOOD")
	h.waitRewards("a1", "b1")
	var sawA, sawB bool
	for _, r := range j.requests() {
		text := r.userText()
		sawA = sawA || strings.Contains(text, "Win half the game.")
		sawB = sawB || strings.Contains(text, "Lose with grace.")
	}
	if !sawA || !sawB {
		t.Errorf("the judge's prompts show the catalog task's instruction: %v, the inline task's: %v", sawA, sawB)
	}
}

// TestSessionCloseEndsEpisode: a session closed mid-episode gives a
// truncated trajectory, and no judge means unjudged samples.
func TestSessionCloseEndsEpisode(t *testing.T) {
	h := startFollower(t)
	sess := h.create(gym.CreateRequest{Env: "echo-v1"})
	h.step(sess, "e1", "hello")
	h.step(sess, "e2", "again")
	h.close(sess)
	s := h.waitSamples(sess.ID)
	if len(s) != 2 || s[0].Status != StatusTruncated || s[0].RemoveSample || s[0].Metadata.Origin.Judged || s[1].Response != "again" {
		t.Fatalf("samples of a closed session: %+v", s)
	}
	if len(h.judgeRewards()) != 0 {
		t.Error("reward events recorded with no judge")
	}
}

// TestFollowerConfigErrors: a bad mix or judge is refused by NewFollower;
// ParseMix reads --mix.
func TestFollowerConfigErrors(t *testing.T) {
	st := nopStore{}
	for name, c := range map[string]struct {
		cfg  FollowerConfig
		want string
	}{
		"suite mix field": {FollowerConfig{Suites: []*gym.Suite{{Name: "s", Signals: &gym.SuiteSignals{Mix: json.RawMessage(`{"gama":1}`)},
			Tasks: []gym.Task{{ID: "x1", Env: "echo-v1"}}}}}, `unknown field(s) gama`},
		"suite mix value": {FollowerConfig{Suites: []*gym.Suite{{Name: "s", Signals: &gym.SuiteSignals{Mix: json.RawMessage(`{"gamma":2}`)},
			Tasks: []gym.Task{{ID: "x2", Env: "echo-v1"}}}}}, "gamma"},
		"mix":            {FollowerConfig{Mix: &Mix{C: 1, Gamma: 1, OutcomeMap: "square"}}, "outcome_map"},
		"judge url":      {FollowerConfig{Judge: JudgeConfig{Endpoint: "localhost", Model: "m"}}, "base URL"},
		"judge no url":   {FollowerConfig{Judge: JudgeConfig{Model: "m"}}, "no endpoint"},
		"judge no model": {FollowerConfig{Judge: JudgeConfig{Endpoint: "http://localhost:1/v1"}}, "model"},
		"no store":       {FollowerConfig{}, "Store"},
	} {
		if name != "no store" {
			c.cfg.Store = st
		}
		if _, err := NewFollower(c.cfg); err == nil {
			t.Errorf("%s: NewFollower succeeded, want an error", name)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", name, err, c.want)
		}
	}
	for s, ok := range map[string]bool{"": true, "c=0.5, gamma=0.9,outcome=2acc-1": true, "outcome_map=identity": true,
		"c=x": false, "gamma=0": false, "delta=1": false, "c": false, "outcome=sq": false} {
		if _, err := ParseMix(s); (err == nil) != ok {
			t.Errorf("ParseMix(%q): %v", s, err)
		}
	}
	if m, _ := ParseMix("c=0.5,gamma=0.9,outcome=2acc-1"); m != (Mix{C: 0.5, Gamma: 0.9, OutcomeMap: OutcomeTwoAcc}) {
		t.Errorf("ParseMix: %+v", m)
	}
}

// TestFollowerCatchUp: when the follower's backlog overflows, the events
// it dropped are read back from the store, and every trajectory still
// completes.
func TestFollowerCatchUp(t *testing.T) {
	h := startFollower(t, func(c *FollowerConfig) { c.Backlog = 2 })
	// Hold the worker while the events pile up.
	gate := make(chan struct{})
	h.f.mu.Lock()
	h.f.gate = gate
	h.f.mu.Unlock()
	var sessions []*gym.Session
	for range 5 {
		sessions = append(sessions, h.create(gym.CreateRequest{Env: "echo-v1"}))
	}
	for i, s := range sessions {
		for k := range 3 {
			h.step(s, string(rune('a'+k)), "x")
		}
		if i%2 == 0 {
			h.step(s, "d", "/done")
		} else {
			h.close(s)
		}
	}
	h.f.mu.Lock()
	lost := h.f.lost
	h.f.gate = nil
	h.f.mu.Unlock()
	close(gate)
	if !lost {
		t.Fatal("the backlog of 2 did not overflow")
	}
	for i, s := range sessions {
		got := h.waitSamples(s.ID)
		if want := 3 + (1-i%2)*1; len(got) != want {
			t.Errorf("session %d: %d samples, want %d", i, len(got), want)
		}
	}
	if h.f.catchUps.Load() == 0 {
		t.Error("the backlog of 2 never overflowed: the test did not read events back from the store")
	}
}

// TestEpisodeTooLong: an episode past MaxEpisodeSteps is let go (no
// samples, reported too_long); the next episode of the session gives
// samples again.
func TestEpisodeTooLong(t *testing.T) {
	reports := make(chan string, 16)
	h := startFollower(t, func(c *FollowerConfig) {
		c.MaxEpisodeSteps = 3
		c.OnTrajectory = func(status string, samples int) { reports <- status }
	})
	sess := h.create(gym.CreateRequest{Env: "echo-v1"})
	for _, id := range []string{"a", "b", "c", "d"} {
		h.step(sess, id, "x")
	}
	h.step(sess, "e", "/done")
	h.reset(sess)
	h.step(sess, "f", "/done")
	got := h.waitSamples(sess.ID)
	if len(got) != 1 || got[0].Metadata.Origin.Episode != 2 || got[0].Response != "/done" {
		t.Fatalf("samples: %+v, want only the second episode's", got)
	}
	if a, b := <-reports, <-reports; a != "too_long" || b != string(StatusCompleted) {
		t.Errorf("reported %s then %s, want too_long then completed", a, b)
	}
}

func mustJudge(t testing.TB, cfg JudgeConfig) *Judge {
	t.Helper()
	j, err := NewJudge(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// nopStore is a Store for config checks: NewFollower keeps it, nothing
// calls it.
type nopStore struct{ Store }

// TestRefusedActionSample: an action the gym refused gives a sample of its
// own, with its turn, the refusal as its next state and r_t = −1 without
// asking the judge; the later steps see the refusal in their context.
func TestRefusedActionSample(t *testing.T) {
	j := newScriptedJudge(t, byJudgedAction)
	h := startFollower(t, followJudge(j, nil))
	sess := h.create(gym.CreateRequest{TaskID: "sig-win"})
	h.step(sess, "g1", "ACT_GOOD")
	two := gym.Action{Parts: []gym.Part{gym.TextPart("ACT_GOOD"), gym.TextPart("again")}} // signal-v1 takes one part
	turn := &gym.Turn{Response: "ACT_GOOD twice", PromptIDs: []int{1, 2}, ResponseIDs: []int{7, 8, 9}, Model: "policy"}
	if _, err := sess.StepTurn(t.Context(), "r1", two, turn); !errors.Is(err, gym.ErrBadAction) {
		t.Fatalf("two parts for signal-v1: got %v, want a refusal", err)
	}
	h.step(sess, "w1", "win")
	s := h.waitSamples(sess.ID)
	if len(s) != 3 {
		t.Fatalf("%d samples, want 3 (two steps and the refused action)", len(s))
	}
	r := s[1]
	o := r.Metadata.Origin
	if !o.Refused || !o.Judged || o.Step != 2 || o.StepID != "r1" || r.Response != "ACT_GOOD twice" ||
		!slices.Equal(r.Tokens, []int{1, 2, 7, 8, 9}) || !slices.Equal(r.LossMask, []int{1, 1, 1}) ||
		r.Metadata.StepWise.StepScores[0] != RefusedProcess || r.Status != StatusCompleted || r.Metadata.OPD != nil {
		t.Errorf("the refused action's sample: %+v", r)
	}
	if s[0].Metadata.Origin.Refused || s[2].Metadata.Origin.Refused || s[2].Metadata.Origin.Step != 2 ||
		s[0].Metadata.StepWise.StepScores[0] != 1 || !s[2].Metadata.Origin.Judged {
		t.Errorf("the steps' samples: %+v, %+v", s[0].Metadata, s[2].Metadata)
	}
	// o = 1, r = [1, −1, 0]: sequence 1 + 0.
	if !near(r.Reward, 1) {
		t.Errorf("sequence reward %v, want 1", r.Reward)
	}
	// The judge was asked about the two steps only; the last step's text
	// context shows the refusal as the next state of the refused action.
	if got := h.judgeRewards(); len(got) != 2 || got["r1"].Type != "" {
		t.Errorf("judge rewards for %v, want g1 and w1 only", slices.Collect(maps.Keys(got)))
	}
	p := s[2].Prompt
	if len(p) != 5 || p[3].Content != "ACT_GOOD\nagain" && p[3].Content != "ACT_GOOD again" ||
		!strings.HasPrefix(p[4].Content, "The gym refused the action: action for signal-v1") {
		t.Errorf("context after a refusal: %+v", p)
	}
}
