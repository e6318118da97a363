package rl

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func TestTeacherMessages(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: "You are an agent."},
		{Role: "user", Content: "Fix the bug."},
		{Role: "assistant", ToolCalls: []gym.ToolCall{{ID: "c1", Type: "function", Function: gym.FunctionCall{Name: "shell_exec", Arguments: `{"command":"ls"}`}}}},
		{Role: "tool", ToolCallID: "c1", Content: "app.py"},
	}
	orig := slices.Clone(msgs)
	got := TeacherMessages(msgs, "Open app.py and read the traceback.")
	want := "Fix the bug.\n\n" + HintHeader + "\nOpen app.py and read the traceback."
	if len(got) != 4 || got[1].Content != want || got[3].Content != "app.py" || !reflect.DeepEqual(got[0], msgs[0]) {
		t.Fatalf("teacher messages %+v", got)
	}
	if !reflect.DeepEqual(msgs, orig) {
		t.Fatal("the original messages changed")
	}
	got[2].ToolCalls[0].ID = "changed"
	if msgs[2].ToolCalls[0].ID != "c1" {
		t.Fatal("tool calls are shared with the original")
	}
	// No user turn: the hint becomes one.
	got = TeacherMessages([]Message{{Role: "system", Content: "s"}}, "Do X.")
	if len(got) != 2 || !reflect.DeepEqual(got[1], Message{Role: "user", Content: HintHeader + "\nDo X."}) {
		t.Fatalf("no user turn: %+v", got)
	}
	// No hint: an unchanged copy.
	if got := TeacherMessages(msgs, ""); !reflect.DeepEqual(got, msgs) {
		t.Fatalf("empty hint: %+v", got)
	}
}

func twoTurnRollout() Rollout {
	return Rollout{
		GroupIndex: 3, Index: 7, Session: "s1", Episode: 2, Env: "terminal-v1", Task: "hello",
		Outcome: Outcome{Reward: 1, Terminated: true},
		Turns: []PolicyTurn{
			{Step: 1, StepID: "a", Messages: []Message{{Role: "user", Content: "make hello.txt"}},
				PromptIDs: []int{10, 11, 12}, ResponseIDs: []int{20, 21}, LogProbs: []float64{-0.1, -0.2},
				Response: "echo hi", Process: 1, Judged: true},
			{Step: 2, StepID: "b", Messages: []Message{{Role: "user", Content: "make hello.txt"}, {Role: "assistant", Content: "echo hi"}, {Role: "user", Content: "ok"}},
				PromptIDs: []int{10, 11, 12, 20, 21, 13}, ResponseIDs: []int{30, 31, 32}, LogProbs: []float64{-1, -2, -3},
				Response: "rm -rf /", Process: -1, Judged: true, Hint: "Check the file with cat hello.txt instead."},
		},
	}
}

func TestBuildSamples(t *testing.T) {
	ss, err := BuildSamples(twoTurnRollout(), DefaultMix())
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 {
		t.Fatalf("%d samples", len(ss))
	}
	a, b := ss[0], ss[1]
	// o = 1, r = [1, −1]: R = [2, 0], sequence 1 + 0 = 1.
	if !slices.Equal(a.Tokens, []int{10, 11, 12, 20, 21}) || a.ResponseLength != 2 || !slices.Equal(a.LossMask, []int{1, 1}) ||
		!slices.Equal(a.RolloutLogProbs, []float64{-0.1, -0.2}) || a.Reward != 1 || a.Status != StatusCompleted || a.RemoveSample {
		t.Fatalf("sample 0: %+v", a)
	}
	if a.GroupIndex != 3 || a.Index != 7 || b.Index != 7 || a.Response != "echo hi" || a.Prompt[0].Content != "make hello.txt" {
		t.Fatalf("sample 0 ids: %+v", a)
	}
	sw := a.Metadata.StepWise
	if !slices.Equal(sw.StepScores, []float64{1}) || !slices.Equal(sw.StepScoresWithOutcome, []float64{2}) ||
		!slices.Equal(sw.StepIndices, []int{0}) || !slices.Equal(sw.StepTokenSpans, [][2]int{{0, 2}}) || sw.OutcomeReward != 1 {
		t.Fatalf("sample 0 step_wise: %+v", sw)
	}
	sw = b.Metadata.StepWise
	if !slices.Equal(sw.StepScores, []float64{-1}) || !slices.Equal(sw.StepScoresWithOutcome, []float64{0}) ||
		!slices.Equal(sw.StepIndices, []int{1}) || !slices.Equal(sw.StepTokenSpans, [][2]int{{0, 3}}) {
		t.Fatalf("sample 1 step_wise: %+v", sw)
	}
	if a.Metadata.OPD != nil {
		t.Fatalf("sample 0 has no hint but has OPD %+v", a.Metadata.OPD)
	}
	opd := b.Metadata.OPD
	if opd == nil || opd.Hint != "Check the file with cat hello.txt instead." || len(opd.TeacherPrompt) != 3 ||
		opd.TeacherPrompt[2].Content != "ok\n\n"+HintHeader+"\n"+opd.Hint || b.Prompt[2].Content != "ok" {
		t.Fatalf("sample 1 OPD: %+v", opd)
	}
	if o := b.Metadata.Origin; o != (Origin{Session: "s1", Episode: 2, Step: 2, StepID: "b", Env: "terminal-v1", Task: "hello", Judged: true}) {
		t.Fatalf("origin %+v", o)
	}
}

func TestSampleJSONNames(t *testing.T) {
	ss, err := BuildSamples(twoTurnRollout(), DefaultMix())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ss[1])
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		sort.Strings(k)
		return k
	}
	// slime's Sample fields, as Sample.from_dict reads them.
	want := []string{"group_index", "index", "loss_mask", "metadata", "prompt", "remove_sample", "response",
		"response_length", "reward", "rollout_log_probs", "status", "tokens"}
	if got := keys(m); !slices.Equal(got, want) {
		t.Fatalf("sample keys %v, want %v", got, want)
	}
	meta := m["metadata"].(map[string]any)
	if got := keys(meta); !slices.Equal(got, []string{"nextstate", "opd", "step_wise"}) {
		t.Fatalf("metadata keys %v", got)
	}
	if got := keys(meta["step_wise"].(map[string]any)); !slices.Equal(got, []string{"outcome_reward", "step_indices",
		"step_scores", "step_scores_with_outcome", "step_token_spans"}) {
		t.Fatalf("step_wise keys %v", got)
	}
	if got := keys(meta["opd"].(map[string]any)); !slices.Equal(got, []string{"hint", "teacher_prompt"}) {
		t.Fatalf("opd keys %v", got)
	}
	if !strings.Contains(string(b), `"step_token_spans":[[0,3]]`) || !strings.Contains(string(b), `"status":"completed"`) {
		t.Fatalf("json %s", b)
	}
}

func TestBuildSamplesStatusAndMasking(t *testing.T) {
	r := twoTurnRollout()
	r.Outcome = Outcome{Reward: 0, Truncated: true}
	ss, _ := BuildSamples(r, DefaultMix())
	if ss[0].Status != StatusTruncated || ss[0].RemoveSample || ss[0].LossMask[0] != 1 {
		t.Fatalf("truncated: %+v", ss[0])
	}
	// The agent's failure is its own: trained on, as truncated.
	r.Outcome = Outcome{Reward: 0, Failure: &gym.Failure{Fault: gym.FaultAgent, Reason: "timeout"}}
	ss, _ = BuildSamples(r, DefaultMix())
	if ss[1].Status != StatusTruncated || ss[1].RemoveSample {
		t.Fatalf("agent failure: %+v", ss[1])
	}
	// An infrastructure failure on any turn masks the whole trajectory.
	r = twoTurnRollout()
	r.Turns[1].Failure = &gym.Failure{Fault: gym.FaultInfra, Reason: "sandbox_died"}
	ss, _ = BuildSamples(r, DefaultMix())
	for i, s := range ss {
		if s.Status != StatusAborted || !s.RemoveSample || slices.Contains(s.LossMask, 1) {
			t.Fatalf("infra failure, sample %d: %+v", i, s)
		}
	}
	// A turn's own loss mask is kept.
	r = twoTurnRollout()
	r.Turns[1].LossMask = []int{1, 0, 1}
	ss, _ = BuildSamples(r, DefaultMix())
	if !slices.Equal(ss[1].LossMask, []int{1, 0, 1}) {
		t.Fatalf("loss mask %v", ss[1].LossMask)
	}
	// 2acc-1 with a fraction of tests: o = 2·0.25 − 1 = −0.5; R = [0.5, −1.5]; sequence −0.5.
	r = twoTurnRollout()
	r.Outcome.Reward = 0.25
	ss, _ = BuildSamples(r, Mix{C: 1, Gamma: 1, OutcomeMap: OutcomeTwoAcc})
	if ss[0].Reward != -0.5 || ss[0].Metadata.StepWise.StepScoresWithOutcome[0] != 0.5 ||
		ss[1].Metadata.StepWise.StepScoresWithOutcome[0] != -1.5 || ss[1].Metadata.StepWise.OutcomeReward != -0.5 {
		t.Fatalf("2acc-1: %+v / %+v", ss[0].Metadata.StepWise, ss[1].Metadata.StepWise)
	}
}

func TestBuildSamplesTextOnly(t *testing.T) {
	r := Rollout{Outcome: Outcome{Reward: 1, Terminated: true}, Turns: []PolicyTurn{
		{Messages: []Message{{Role: "user", Content: "hi"}}, Response: "hello"}}}
	ss, err := BuildSamples(r, DefaultMix())
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	b, _ := json.Marshal(s)
	if len(s.Tokens) != 0 || s.ResponseLength != 0 || len(s.LossMask) != 0 || s.RolloutLogProbs != nil ||
		s.Metadata.Origin.Step != 1 || s.Metadata.Origin.Judged ||
		!strings.Contains(string(b), `"tokens":[]`) || !strings.Contains(string(b), `"rollout_log_probs":null`) ||
		!strings.Contains(string(b), `"step_token_spans":[]`) || !strings.Contains(string(b), `"loss_mask":[]`) {
		t.Fatalf("text-only sample %s", b)
	}
}

func TestBuildSamplesErrors(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "x"}}
	cases := []struct {
		name string
		turn PolicyTurn
		want string
	}{
		{"no response", PolicyTurn{Messages: msgs}, "no response"},
		{"no context", PolicyTurn{Response: "r"}, "no context"},
		{"no prompt ids", PolicyTurn{Messages: msgs, ResponseIDs: []int{1}}, "without prompt ids"},
		{"no response ids", PolicyTurn{Messages: msgs, PromptIDs: []int{1}, Response: "r"}, "without response ids"},
		{"log-probs", PolicyTurn{PromptIDs: []int{1}, ResponseIDs: []int{2, 3}, LogProbs: []float64{-1}}, "1 log-probs for 2"},
		{"loss mask", PolicyTurn{PromptIDs: []int{1}, ResponseIDs: []int{2}, LossMask: []int{1, 1}}, "loss mask of 2 for 1"},
	}
	for _, c := range cases {
		_, err := BuildSamples(Rollout{Turns: []PolicyTurn{c.turn}}, DefaultMix())
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "turn 0") {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	if _, err := BuildSamples(twoTurnRollout(), Mix{}); err == nil || !strings.Contains(err.Error(), "gamma") {
		t.Errorf("zero Mix: %v", err)
	}
	r := twoTurnRollout()
	r.Outcome.Reward = 3
	if _, err := BuildSamples(r, Mix{C: 1, Gamma: 1, OutcomeMap: OutcomeTwoAcc}); err == nil {
		t.Error("2acc-1 of 3 accepted")
	}
}

func TestApplyJudgements(t *testing.T) {
	st := &TrajectoryState{Results: []JudgeResult{
		{Ref: StepRef{Step: 1}, Verdict: &Verdict{Tally: Tally{Reward: 0.5, Valid: 2}}},
		{Ref: StepRef{Step: 2}, Reason: ReasonTimeout, Verdict: &Verdict{TimedOut: true}},
		{Ref: StepRef{Step: 3}, Verdict: &Verdict{Tally: Tally{Reward: -1, Valid: 3}, Hint: "Use the search box."}},
	}}
	turns := []PolicyTurn{{}, {Step: 2, Process: 9}, {}, {Step: 4}} // steps 1, 2, 3, 4
	ApplyJudgements(turns, st)
	want := []struct {
		p      float64
		judged bool
		hint   string
	}{{0.5, true, ""}, {0, false, ""}, {-1, true, "Use the search box."}, {0, false, ""}}
	for i, w := range want {
		if turns[i].Process != w.p || turns[i].Judged != w.judged || turns[i].Hint != w.hint {
			t.Errorf("turn %d: %+v, want %+v", i, turns[i], w)
		}
	}
}

// slime declares Sample.reward a float: a whole-number score must reach a
// Python reader as 1.0, not 1, and so must the step-wise scores.
func TestSampleJSONFloats(t *testing.T) {
	ss, err := BuildSamples(twoTurnRollout(), DefaultMix())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&ss[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"reward":1.0`, `"step_scores":[1.0]`, `"step_scores_with_outcome":[2.0]`,
		`"outcome_reward":1.0`, `"rollout_log_probs":[-0.1,-0.2]`, `"tokens":[10,11,12,20,21]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("json lacks %s: %s", want, b)
		}
	}
	var back Sample
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, ss[0]) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, ss[0])
	}
	for f, want := range map[float64]string{0.5: "0.5", -2: "-2.0", 1e21: "1e+21", 0: "0.0"} {
		if got, _ := json.Marshal(floatJSON(f)); string(got) != want {
			t.Errorf("floatJSON(%v) = %s, want %s", f, got, want)
		}
	}
}
