package retail

import (
	"context"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
)

// maxDiffs caps the differences the verifier info lists.
const maxDiffs = 20

// Verify implements toolcall.Episode with tau2's evaluation: the reward is
// the product of the components the task's reward_basis names.
//
//   - DB: the task's gold actions are replayed on a fresh copy of the
//     database (at the task's initial state; gold actions that fail are
//     skipped, as tau2 does); 1 if it equals the episode's database, else
//     0. The info lists the records that differ ("orders/#W1: status").
//   - COMMUNICATE: 1 if every communicate_info string is in some message
//     of the agent's, both lower-cased and commas removed from the message.
//   - ACTION: 1 if every gold action matches a call of the agent's: the
//     same tool, and equal values for the arguments compare_args names (all
//     of the agent's call's arguments when it names none).
//   - NL_ASSERTION needs an LLM judge: not evaluated here, and left out of
//     the product (info "nl_assertions": "not_evaluated").
//   - ENV_ASSERTION: the retail tools have no assertion functions; a task
//     with none scores 1, one with some is not evaluated.
func (e *Episode) Verify(context.Context) (float64, gym.Info, error) {
	info := e.Info()
	info["agent_calls"] = len(e.calls)
	c := e.crit
	if c == nil {
		info["note"] = "the task has no evaluation criteria"
		return 1, info, nil
	}
	db := gym.Info{}
	dbReward := 1.0
	if c.NoActions {
		db["note"] = "no gold actions or env assertions: the database is not checked"
	} else {
		gold, err := e.fresh()
		if err != nil {
			return 0, nil, err
		}
		var failed []string
		for _, a := range c.Actions {
			if _, err := toolRuns[a.Name](gold, a.Arguments); err != nil {
				if _, isTool := toolcall.IsToolError(err); !isTool {
					return 0, nil, err
				}
				failed = append(failed, a.ActionID+" "+a.Name+": "+err.Error())
			}
		}
		diffs, total := dbDiff(e.st, gold, maxDiffs)
		if total > 0 {
			dbReward = 0
			db["differences"] = diffs
			db["differences_total"] = total
		}
		db["match"] = total == 0
		if len(failed) > 0 {
			db["gold_actions_failed"] = failed
		}
	}
	db["reward"] = dbReward
	// The retail tools have no assertion functions: none is met trivially,
	// some cannot be evaluated.
	var env *tau2.Component
	if len(c.EnvAssertions) == 0 {
		env = &tau2.Component{Reward: 1}
	}
	return tau2.Reward(c, info, tau2.Component{Reward: dbReward, Info: db}, env, e.Messages, e.calls), info, nil
}
