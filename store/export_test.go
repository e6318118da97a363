package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func decodeLines[T any](t *testing.T, b []byte) []T {
	t.Helper()
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, v)
	}
	return out
}

// recordTwoSessions writes s1 with two episodes (a late judge reward for a
// step of episode 1 arrives during episode 2, the verifier's for the last
// step at the end, the session closes) interleaved with s2 (one episode).
func recordTwoSessions(t *testing.T, s *Store) {
	t.Helper()
	closed := &gym.Event{Type: gym.EventSessionClosed, Session: "s1", Run: "run-s", Env: "echo-v1", Task: "t1",
		Episode: 2, Reason: gym.CloseClient}
	appendT(t, s,
		&gym.Event{Type: gym.EventSessionCreated, Session: "s1", Run: "run-s", Env: "echo-v1"}, // 1
		resetEv("s1", 1),                             // 2
		resetEv("s2", 1),                             // 3
		stepEv("s1", 1, 1, "a", 0),                   // 4
		stepEv("s2", 1, 1, "z", 0.25),                // 5
		stepEv("s1", 1, 2, "b", 1),                   // 6
		resetEv("s1", 2),                             // 7
		rewardEv("s1", 1, "a", "judge:prm", 0.5),     // 8
		stepEv("s1", 2, 1, "c", 0),                   // 9
		rewardEv("s1", 2, "c", "verifier", 1),        // 10
		rewardEv("s1", 2, "", "verifier:episode", 2), // 11
		closed, // 12
	)
}

func TestExportTrajectories(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	recordTwoSessions(t, s)
	var buf bytes.Buffer
	if err := s.Export(context.Background(), &buf, Filter{}, "jsonl"); err != nil {
		t.Fatal(err)
	}
	eps := decodeLines[Episode](t, buf.Bytes())
	if len(eps) != 3 {
		t.Fatalf("%d episodes, want 3:\n%s", len(eps), buf.String())
	}
	e1, e2, e3 := eps[0], eps[1], eps[2]
	if e1.Session != "s1" || e1.Episode != 1 || e2.Session != "s1" || e2.Episode != 2 || e3.Session != "s2" {
		t.Fatalf("episode order: %s/%d %s/%d %s/%d", e1.Session, e1.Episode, e2.Session, e2.Episode, e3.Session, e3.Episode)
	}
	if e1.Env != "echo-v1" || e1.Task != "t1" || e1.Run != "run-s" || *e1.Seed != 1 ||
		e1.ResetObservation.Text() != "s1 reset 1" || e1.Instruction != "Echo s1" {
		t.Errorf("episode 1 header: %+v", e1)
	}
	if len(e1.Steps) != 2 || e1.Steps[0].StepID != "a" || e1.Steps[1].StepID != "b" ||
		e1.Steps[1].Observation.Text() != "out 2" || e1.Steps[1].Action.Text() != "cmd 2" || e1.Steps[0].DurationUS != 12 {
		t.Fatalf("episode 1 steps: %s", buf.String())
	}
	if r := e1.Steps[0].Rewards; len(r) != 1 || r[0].Source != "judge:prm" || r[0].Reward != 0.5 || r[0].Seq != 8 {
		t.Errorf("late reward for step a: %+v", r)
	}
	if len(e1.Steps[1].Rewards) != 0 {
		t.Errorf("step b got rewards: %+v", e1.Steps[1].Rewards)
	}
	if e1.Return != 1 || e1.FirstSeq != 2 || e1.LastSeq != 8 || e1.ClosedReason != "" {
		t.Errorf("episode 1: return %v seqs %d..%d closed %q", e1.Return, e1.FirstSeq, e1.LastSeq, e1.ClosedReason)
	}
	if len(e2.Steps) != 1 || len(e2.Steps[0].Rewards) != 1 || e2.Steps[0].Rewards[0].Source != "verifier" {
		t.Errorf("episode 2 steps: %+v", e2.Steps)
	}
	if len(e2.Rewards) != 1 || e2.Rewards[0].Reward != 2 {
		t.Errorf("episode 2 episode-level rewards: %+v", e2.Rewards)
	}
	if e2.ClosedReason != gym.CloseClient || e2.FirstSeq != 7 || e2.LastSeq != 12 {
		t.Errorf("episode 2: closed %q seqs %d..%d", e2.ClosedReason, e2.FirstSeq, e2.LastSeq)
	}
	if e3.Return != 0.25 || len(e3.Steps) != 1 || e3.FirstSeq != 3 || e3.LastSeq != 5 {
		t.Errorf("s2 episode: %+v", e3)
	}
	// The raw form has the keys the brief lists.
	line, _, _ := strings.Cut(buf.String(), "\n")
	for _, k := range []string{`"session"`, `"run"`, `"env"`, `"task"`, `"episode"`, `"seed"`, `"steps"`,
		`"reset_observation"`, `"return"`, `"terminated"`, `"truncated"`, `"first_seq"`, `"last_seq"`,
		`"step_id"`, `"duration_us"`, `"rewards"`, `"reward"`, `"source"`} {
		if !strings.Contains(line, k) {
			t.Errorf("export line lacks %s: %s", k, line)
		}
	}

	// Filters select episodes.
	for _, c := range []struct {
		name string
		f    Filter
		want int
	}{
		{"session", Filter{Session: "s2"}, 1},
		{"limit", Filter{Limit: 2}, 2},
		{"after", Filter{AfterSeq: 6}, 1}, // only s1 episode 2 began after seq 6
		{"task", Filter{Task: "nope"}, 0},
		{"types ignored", Filter{Types: []gym.EventType{gym.EventReward}}, 3},
	} {
		buf.Reset()
		if err := s.Export(context.Background(), &buf, c.f, ""); err != nil {
			t.Fatal(err)
		}
		if got := decodeLines[Episode](t, buf.Bytes()); len(got) != c.want {
			t.Errorf("%s: %d episodes, want %d", c.name, len(got), c.want)
		}
	}
}

func TestExportEvents(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	recordTwoSessions(t, s)
	var buf bytes.Buffer
	if err := s.Export(context.Background(), &buf, Filter{Session: "s1", AfterSeq: 4}, FormatEvents); err != nil {
		t.Fatal(err)
	}
	evs := decodeLines[gym.Event](t, buf.Bytes())
	var seqs []int64
	for _, ev := range evs {
		seqs = append(seqs, ev.Seq)
	}
	want := []int64{6, 7, 8, 9, 10, 11, 12}
	if len(seqs) != len(want) {
		t.Fatalf("seqs %v, want %v", seqs, want)
	}
	for i := range want {
		if seqs[i] != want[i] {
			t.Fatalf("seqs %v, want %v", seqs, want)
		}
	}
}

func TestExportInlinesBlobsWhenAsked(t *testing.T) {
	s := openT(t, t.TempDir(), Options{InlineMax: 8})
	img := bigData(100, 3)
	ev := resetEv("s1", 1)
	ev.Observation.Parts = append(ev.Observation.Parts, gym.Part{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: img}})
	appendT(t, s, ev)
	for _, read := range []bool{false, true} {
		var buf bytes.Buffer
		if err := s.Export(context.Background(), &buf, Filter{ReadBlobs: read}, "jsonl"); err != nil {
			t.Fatal(err)
		}
		eps := decodeLines[Episode](t, buf.Bytes())
		im := eps[0].ResetObservation.Parts[1].Image
		if read != bytes.Equal(im.Data, img) || im.Ref == "" {
			t.Errorf("ReadBlobs %v: image %+v", read, im)
		}
	}
}

func TestExportBadFormat(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	err := s.Export(context.Background(), &bytes.Buffer{}, Filter{}, "csv")
	if err == nil || !strings.Contains(err.Error(), `"csv"`) || !strings.Contains(err.Error(), "jsonl") ||
		!strings.Contains(err.Error(), "events") {
		t.Fatalf("Export csv = %v", err)
	}
}

// TestExportPublic exports with and without the verifier's details: a
// public export (Filter.Public, what `nextstate export` writes by default)
// holds none of them in any format, a private one keeps them all.
func TestExportPublic(t *testing.T) {
	const secret = "hidden-test-answer-42"
	s := openT(t, t.TempDir(), Options{})
	step := stepEv("s1", 1, 1, "a", 1)
	step.Terminated = true
	step.Info = gym.Info{"reward_source": "verifier", "verifier": gym.Info{"expected": secret}}
	late := rewardEv("s1", 1, "a", "verifier:tests", 1)
	late.Info = gym.Info{"failed": []string{"test_" + secret}}
	judge := rewardEv("s1", 1, "a", "judge:prm", 0.5)
	judge.Info = gym.Info{"hint": "fine"}
	appendT(t, s, resetEv("s1", 1), step, late, judge)
	for _, format := range []string{FormatTrajectories, FormatEvents} {
		for _, public := range []bool{true, false} {
			var buf bytes.Buffer
			if err := s.Export(context.Background(), &buf, Filter{Public: public}, format); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if has := strings.Contains(out, secret); has == public {
				t.Errorf("%s export, public %v: holds the verifier's details %v:\n%s", format, public, has, out)
			}
			for _, keep := range []string{`"reward_source":"verifier"`, `"hint":"fine"`, `"source":"verifier:tests"`} {
				if !strings.Contains(out, keep) {
					t.Errorf("%s export, public %v: lacks %s:\n%s", format, public, keep, out)
				}
			}
		}
	}
	evs, err := s.Events(context.Background(), Filter{Public: true, Types: []gym.EventType{gym.EventStep}})
	if err != nil || len(evs) != 1 || evs[0].Info["verifier"] != nil || evs[0].Info["reward_source"] != "verifier" {
		t.Errorf("Events with Public: %+v, %v; want the step without info.verifier", evs, err)
	}
}

// A refused action is exported beside the steps, numbered as the step it
// would have been, with its refusal.
func TestExportRefused(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	refused := &gym.Event{Type: gym.EventRefused, Session: "s1", Run: "run-s", Env: "echo-v1", Task: "t1", Episode: 1, Step: 1,
		StepID: "r", Action: &gym.Action{Parts: []gym.Part{}},
		Failure: &gym.Failure{Fault: gym.FaultAgent, Reason: gym.RefusedReason, Message: "action for echo-v1 has no parts"}}
	appendT(t, s, resetEv("s1", 1), refused, stepEv("s1", 1, 1, "a", 1))
	var buf bytes.Buffer
	if err := s.Export(context.Background(), &buf, Filter{}, "jsonl"); err != nil {
		t.Fatal(err)
	}
	eps := decodeLines[Episode](t, buf.Bytes())
	if len(eps) != 1 || len(eps[0].Steps) != 1 || len(eps[0].Refused) != 1 {
		t.Fatalf("export: %s", buf.String())
	}
	r := eps[0].Refused[0]
	if r.Step != 1 || r.StepID != "r" || r.Seq != 2 || r.Failure == nil || r.Failure.Reason != gym.RefusedReason || eps[0].Return != 1 {
		t.Errorf("refused action exported as %+v (episode return %v)", r, eps[0].Return)
	}
}
