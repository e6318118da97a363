package telecom

import (
	"context"
	"fmt"
	"slices"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
)

// maxDiffs caps the differences the verifier info lists.
const maxDiffs = 20

// Verify implements toolcall.Episode with tau2's evaluation: the reward is
// the product of the components the task's reward_basis names.
//
//   - ENV_ASSERTION: each env assertion, a function of the agent's or the
//     user's toolkit run on the episode's final world, returns its
//     assert_value (one that fails to run is not met).
//   - DB: the gold actions (the agent's and the user's) replayed from the
//     task's initial state (those that fail skipped, as tau2 does) give
//     the episode's agent database and user database: the same hashes,
//     tau2's get_db_hash and get_user_db_hash.
//   - ACTION: each gold action matches a call of the agent's or the
//     user's (tau2.ActionsMatched).
//   - COMMUNICATE: tau2.Communicated over the agent's messages.
//   - NL_ASSERTION needs an LLM judge: not evaluated, and left out of the
//     product (info "nl_assertions": "not_evaluated").
func (e *Episode) Verify(context.Context) (float64, gym.Info, error) {
	info := e.Info()
	info["agent_calls"], info["user_calls"] = e.agentN, len(e.calls)-e.agentN
	if len(e.userLog) > 0 {
		info["user_tool_calls"] = e.userLog
	}
	if e.crit == nil {
		info["note"] = "the task has no evaluation criteria"
		return 1, info, nil
	}
	db, dbReward, err := e.checkDB()
	if err != nil {
		return 0, nil, err
	}
	r, checks, err := e.checkAssertions()
	if err != nil {
		return 0, nil, err
	}
	env := &tau2.Component{Reward: r, Info: checks}
	return tau2.Reward(e.crit, info, tau2.Component{Reward: dbReward, Info: db}, env, e.Messages, e.calls), info, nil
}

// checkDB replays the gold actions and compares the databases' hashes.
func (e *Episode) checkDB() (gym.Info, float64, error) {
	if e.crit.NoActions {
		return gym.Info{"note": "no gold actions or env assertions: the databases are not checked", "reward": 1.0}, 1, nil
	}
	gold := e.init.clone()
	var failed []string
	for _, a := range e.crit.Actions {
		if _, err := gold.call(a.Requestor, a.Name, a.Arguments); err != nil {
			if _, isTool := toolcall.IsToolError(err); !isTool {
				return nil, 0, err
			}
			failed = append(failed, a.ActionID+" "+a.Name+": "+err.Error())
		}
	}
	info := gym.Info{"agent_db_hash": e.w.agentHash(), "user_db_hash": e.w.userHash(),
		"gold_agent_db_hash": gold.agentHash(), "gold_user_db_hash": gold.userHash()}
	match := info["agent_db_hash"] == info["gold_agent_db_hash"] && info["user_db_hash"] == info["gold_user_db_hash"]
	info["match"] = match
	if !match {
		diffs := worldDiff(e.w, gold)
		info["differences_total"] = len(diffs)
		if len(diffs) > maxDiffs {
			diffs = diffs[:maxDiffs]
		}
		info["differences"] = diffs
	}
	if len(failed) > 0 {
		info["gold_actions_failed"] = failed
	}
	r := 0.0
	if match {
		r = 1
	}
	info["reward"] = r
	return info, r, nil
}

// worldDiff names the records (the agent's side) and the fields (the
// user's) in which two worlds whose hashes differ differ.
func worldDiff(a, b *world) []string {
	var out []string
	records := func(w *world) map[string]string {
		m := map[string]string{}
		add := func(kind, id string, o *obj) { m[kind+"/"+id] = string(appendPy(nil, o, true)) }
		for i := range w.db.Plans {
			add("plans", w.db.Plans[i].PlanID, w.db.Plans[i].py())
		}
		for _, c := range w.db.Customers {
			add("customers", c.CustomerID, c.py())
		}
		for _, l := range w.db.Lines {
			add("lines", l.LineID, l.py())
		}
		for _, x := range w.db.Bills {
			add("bills", x.BillID, x.py())
		}
		for i := range w.db.Devices {
			add("devices", w.db.Devices[i].DeviceID, w.db.Devices[i].py())
		}
		for _, side := range []struct {
			name string
			o    *obj
		}{{"device", w.user.Device.py()}, {"surroundings", w.user.Surroundings.py()}} {
			for i, k := range side.o.keys {
				m["user/"+side.name+"."+k] = string(appendPy(nil, side.o.vals[i], true))
			}
		}
		return m
	}
	ra, rb := records(a), records(b)
	for k, v := range ra {
		if w, ok := rb[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range rb {
		if _, ok := ra[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		out = append(out, "the order of the records") // the same records, listed otherwise
	}
	return out
}

// checkAssertions runs the env assertions on a copy of the final world
// (each followed by a sync, as tau2 runs them).
func (e *Episode) checkAssertions() (float64, []gym.Info, error) {
	w := e.w.clone()
	reward := 1.0
	var checks []gym.Info
	for _, a := range e.crit.EnvAssertions {
		check := gym.Info{"env_type": a.EnvType, "func_name": a.FuncName, "arguments": a.Arguments, "assert_value": a.AssertValue}
		out, err := w.call(a.EnvType, a.FuncName, a.Arguments)
		met := false
		switch b, isBool := out.(bool); {
		case err != nil:
			if _, isTool := toolcall.IsToolError(err); !isTool {
				return 0, nil, fmt.Errorf("env assertion %s: %w", a.FuncName, err)
			}
			check["error"] = err.Error()
		case !isBool:
			return 0, nil, fmt.Errorf("env assertion %s returned %T, not a bool", a.FuncName, out)
		default:
			met = b == a.AssertValue
		}
		check["met"] = met
		if a.Message != nil {
			check["message"] = *a.Message
		}
		if !met {
			reward = 0
		}
		checks = append(checks, check)
	}
	return reward, checks, nil
}
