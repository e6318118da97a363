package rl

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The rule judge scores a step by its kind's rule (guess-v1's, from
// gym/testenvs) and gives one invalid vote where the kind has none.
func TestRuleJudge(t *testing.T) {
	in := JudgeInput{Env: "guess-v1", Instruction: "Guess the secret integer between 1 and 100.",
		History: []Turn{{Action: "50", NextState: "higher"}}, Action: "20", NextState: "higher"}
	v, err := RuleJudge{}.Score(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != 1 || v.Reward != -1 || !strings.Contains(v.Hint, "between 51 and 100") {
		t.Errorf("guess 20 after 50 higher: %+v; want one valid vote of -1 with the range as a hint", v)
	}
	in.Action = "75"
	if v, _ := (RuleJudge{}).Score(context.Background(), in); v.Reward != 1 || v.Hint != "" {
		t.Errorf("guess 75 after 50 higher: %+v; want 1, no hint", v)
	}
	v, err = RuleJudge{}.Score(context.Background(), JudgeInput{Env: "echo-v1", Action: "x"})
	if err != nil || v.Valid != 0 || v.Invalid != 1 || !errors.Is(v.Votes[0].Err, ErrNoStepRule) {
		t.Errorf("a kind without a rule: %+v, %v; want one invalid vote, ErrNoStepRule", v, err)
	}
}
