package rl

import (
	"context"
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/gym"
)

// RuleJudgeModel names the rule judges in reward events.
const RuleJudgeModel = "rules"

// ErrNoStepRule is the vote on a step whose env kind has no step rule.
var ErrNoStepRule = errors.New("the env kind declares no step rule")

// RuleJudge is a Scorer that judges each step by its env kind's rule
// (gym.Spec.StepRule, found by JudgeInput.Env): a programmatic process
// reward model, one valid vote with the rule's hint. A kind without a rule
// gets one invalid vote (ErrNoStepRule), so its steps are recorded as not
// judged. Set it as FollowerConfig.Scorer, with Judge.Model RuleJudgeModel.
type RuleJudge struct{}

// Score implements Scorer.
func (RuleJudge) Score(_ context.Context, in JudgeInput) (Verdict, error) {
	spec, err := gym.Lookup(in.Env)
	if err != nil || spec.StepRule == nil {
		votes := []Vote{{Err: fmt.Errorf("%w: %q", ErrNoStepRule, in.Env)}}
		return Verdict{Votes: votes, Tally: Aggregate(votes)}, nil
	}
	ri := gym.RuleInput{Instruction: in.Instruction, Action: in.Action, NextState: in.NextState,
		History: make([]gym.RuleTurn, len(in.History))}
	for i, t := range in.History {
		ri.History[i] = gym.RuleTurn{Action: t.Action, NextState: t.NextState}
	}
	score, hint := spec.StepRule(ri)
	if score < -1 || score > 1 {
		return Verdict{}, fmt.Errorf("rl: the step rule of %s scored %d: want 1, 0 or -1", in.Env, score)
	}
	votes := []Vote{{Score: score, Hint: hint, Valid: true}}
	return Verdict{Votes: votes, Tally: Aggregate(votes), Hint: SelectHint(votes)}, nil
}
