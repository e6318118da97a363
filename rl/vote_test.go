package rl

import (
	"errors"
	"strings"
	"testing"
)

func TestParseVote(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		score int
		ok    bool
		err   error
	}{
		{"one", `reasoning... \boxed{1}`, 1, true, nil},
		{"minus one", `\boxed{-1}`, -1, true, nil},
		{"zero", `\boxed{0}`, 0, true, nil},
		{"plus one", `\boxed{+1}`, 1, true, nil},
		{"spaces", `\boxed{ -1 }`, -1, true, nil},
		{"space before brace", `\boxed {1}`, 1, true, nil},
		{"decimal", `\boxed{1.0}`, 1, true, nil},
		{"minus zero", `\boxed{-0}`, 0, true, nil},
		{"last counts", `first \boxed{-1}, on reflection \boxed{1}`, 1, true, nil},
		{"last malformed counts", `\boxed{1} no wait \boxed{2}`, 0, false, ErrBadBox},
		{"two", `\boxed{2}`, 0, false, ErrBadBox},
		{"half", `\boxed{0.5}`, 0, false, ErrBadBox},
		{"empty box", `\boxed{}`, 0, false, ErrBadBox},
		{"word", `\boxed{good}`, 0, false, ErrBadBox},
		{"nested", `\boxed{\text{1}}`, 0, false, ErrBadBox},
		{"double sign", `\boxed{+-1}`, 0, false, ErrBadBox},
		{"exponent", `\boxed{1e0}`, 0, false, ErrBadBox},
		{"no box", `the step looks fine, score 1`, 0, false, ErrNoBox},
		{"unclosed", `\boxed{1`, 0, false, ErrNoBox},
		{"unclosed after a valid one", `\boxed{-1} then \boxed{1`, -1, true, nil},
		{"bare word", `\boxed 1`, 0, false, ErrNoBox},
		{"empty", ``, 0, false, ErrNoBox},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			score, _, ok := ParseVote(c.text)
			if score != c.score || ok != c.ok {
				t.Fatalf("ParseVote(%q) = %d, %v; want %d, %v", c.text, score, ok, c.score, c.ok)
			}
			v := parseVote(c.text)
			if c.err == nil && v.Err != nil || c.err != nil && !errors.Is(v.Err, c.err) {
				t.Fatalf("parseVote(%q).Err = %v, want %v", c.text, v.Err, c.err)
			}
			if v.Raw != c.text || v.Valid != c.ok {
				t.Fatalf("parseVote(%q) = %+v", c.text, v)
			}
		})
	}
}

func TestParseVoteHint(t *testing.T) {
	cases := []struct{ text, hint string }{
		{"[HINT_START]  Use grep -rn first. \n[HINT_END] \\boxed{-1}", "Use grep -rn first."},
		{"[HINT_START]old[HINT_END] [HINT_START]new one[HINT_END] \\boxed{1}", "new one"},
		{"[HINT_START]never closed \\boxed{-1}", ""},
		{"closed only[HINT_END] \\boxed{-1}", ""},
		{"\\boxed{-1}", ""},
	}
	for _, c := range cases {
		if _, hint, _ := ParseVote(c.text); hint != c.hint {
			t.Errorf("hint of %q = %q, want %q", c.text, hint, c.hint)
		}
	}
	// A hint comes back with an invalid score too; SelectHint ignores it.
	if score, hint, ok := ParseVote("[HINT_START]Check the path first.[HINT_END] \\boxed{5}"); ok || score != 0 || hint != "Check the path first." {
		t.Errorf("invalid vote with hint: %d %q %v", score, hint, ok)
	}
}

func TestSelectHint(t *testing.T) {
	ten := "0123456789"     // 10 characters: not over the minimum
	eleven := "Use ls -la." // 11 characters
	long := "Run the tests before editing."
	runes := strings.Repeat("é", 10) // 10 runes, 20 bytes: not kept
	cases := []struct {
		name  string
		votes []Vote
		want  string
	}{
		{"none", nil, ""},
		{"ten is too short", []Vote{{Valid: true, Score: -1, Hint: ten}}, ""},
		{"eleven is enough", []Vote{{Valid: true, Score: -1, Hint: eleven}}, eleven},
		{"runes, not bytes", []Vote{{Valid: true, Hint: runes}}, ""},
		{"longest wins", []Vote{{Valid: true, Hint: eleven}, {Valid: true, Hint: long}, {Valid: true, Hint: ten}}, long},
		{"invalid votes are ignored", []Vote{{Valid: false, Hint: long + " and more"}, {Valid: true, Hint: eleven}}, eleven},
		{"tie goes to the earliest", []Vote{{Valid: true, Hint: "Try A first!"}, {Valid: true, Hint: "Try B first!"}}, "Try A first!"},
		{"trimmed", []Vote{{Valid: true, Hint: "   " + eleven + "\n"}}, eleven},
		{"a score of 1 may carry one", []Vote{{Valid: true, Score: 1, Hint: long}}, long},
	}
	for _, c := range cases {
		if got := SelectHint(c.votes); got != c.want {
			t.Errorf("%s: SelectHint = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestAggregate(t *testing.T) {
	votes := []Vote{
		{Valid: true, Score: 1},
		{Valid: true, Score: -1},
		{Valid: true, Score: 1},
		{Err: ErrBadBox},
		{TimedOut: true, Err: ErrJudgeTimeout},
	}
	got := Aggregate(votes)
	// (1 − 1 + 1) / 3 valid votes
	if !near(got.Reward, 1.0/3) || got.Valid != 3 || got.Invalid != 1 || got.Timeouts != 1 {
		t.Fatalf("Aggregate = %+v, want reward 1/3, 3 valid, 1 invalid, 1 timeout", got)
	}
	if got := Aggregate([]Vote{{Valid: true, Score: 0}, {Valid: true, Score: -1}}); !near(got.Reward, -0.5) {
		t.Fatalf("mean of 0 and -1 = %v, want -0.5", got.Reward)
	}
	if got := Aggregate([]Vote{{Err: ErrNoBox}, {TimedOut: true}}); got.Reward != 0 || got.Valid != 0 || got.Invalid != 1 || got.Timeouts != 1 {
		t.Fatalf("no valid vote: %+v, want reward 0", got)
	}
	if got := Aggregate(nil); got != (Tally{}) {
		t.Fatalf("no votes: %+v", got)
	}
}

func TestAggregateMajority(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want int
	}{{[]int{1, 1, -1}, 1}, {[]int{-1, -1, 1}, -1}, {[]int{1, -1, 0}, 0}, {[]int{1, -1}, 0}, {nil, 0}, {[]int{0, 0, 1}, 0}, {[]int{1}, 1}} {
		votes := []Vote{{Err: ErrNoBox}} // an invalid vote counts for nothing
		for _, s := range c.in {
			votes = append(votes, Vote{Valid: true, Score: s})
		}
		got := AggregateBy(votes, MajorityVote)
		if got.Reward != float64(c.want) || got.Valid != len(c.in) || got.Invalid != 1 {
			t.Errorf("majority of %v = %+v, want %d", c.in, got, c.want)
		}
	}
}
