package retail

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// Every tau2 retail task's gold actions, replayed through the Env as an
// agent would send them, score 1.
func TestGoldReplayScoresOneOnEveryTask(t *testing.T) {
	tasks := realTasks(t)
	if len(tasks) != 114 {
		t.Fatalf("%d tasks, want 114", len(tasks))
	}
	env := newEnv(t, nil)
	for i := range tasks {
		r, info := play(t, env, &tasks[i], oracleActions(t, &tasks[i]))
		if r != 1 {
			t.Errorf("%s: reward %v, want 1: %v", tasks[i].ID, r, info)
		}
		if info["nl_assertions"] != "not_evaluated" && slices.Contains(info["reward_basis"].([]string), tau2.BasisNLAssertion) {
			t.Errorf("%s: NL_ASSERTION in the basis but info %v", tasks[i].ID, info)
		}
	}
}

// A wrong write action (another order, another reason, another item)
// scores 0, and the info says which record differs.
func TestWrongActionScoresZero(t *testing.T) {
	tasks := realTasks(t)
	env := newEnv(t, nil)
	mutations := map[string]func(a *tau2.Action) bool{
		"cancel another order": func(a *tau2.Action) bool {
			if a.Name != ToolCancel {
				return false
			}
			a.Arguments = setArg(t, a.Arguments, "order_id", "#W0000000x") // fails: nothing cancelled
			return true
		},
		"cancel with the other reason": func(a *tau2.Action) bool {
			if a.Name != ToolCancel {
				return false
			}
			var args map[string]string
			json.Unmarshal(a.Arguments, &args)
			other := reasonNotNeeded
			if args["reason"] == reasonNotNeeded {
				other = reasonMistake
			}
			a.Arguments = setArg(t, a.Arguments, "reason", other)
			return true
		},
		"return one item fewer": func(a *tau2.Action) bool {
			if a.Name != ToolReturn {
				return false
			}
			var args struct {
				ItemIDs []string `json:"item_ids"`
			}
			json.Unmarshal(a.Arguments, &args)
			a.Arguments = setArg(t, a.Arguments, "item_ids", args.ItemIDs[:len(args.ItemIDs)-1])
			return true
		},
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			n := 0
			for i := range tasks {
				task := tasks[i]
				c, _ := CriteriaOf(&task)
				if len(c.Actions) == 0 || !slices.Contains(c.RewardBasis, tau2.BasisDB) {
					continue
				}
				actions := slices.Clone(c.Actions)
				changed := false
				for k := range actions {
					if mutate(&actions[k]) {
						changed = true
						break
					}
				}
				if !changed {
					continue
				}
				c.Actions = actions
				r, info := play(t, env, &task, OracleActions(c))
				if r != 0 {
					t.Errorf("%s: reward %v after %s, want 0", task.ID, r, name)
				}
				db := info["db"].(gym.Info)
				if db["match"] != false || len(db["differences"].([]string)) == 0 {
					t.Errorf("%s: db info %v", task.ID, db)
				}
				if n++; n == 5 {
					break
				}
			}
			if n == 0 {
				t.Fatal("no task to mutate")
			}
		})
	}
}

func setArg(t testing.TB, args json.RawMessage, key string, v any) json.RawMessage {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		t.Fatal(err)
	}
	m[key] = v
	b, _ := json.Marshal(m)
	return b
}

// Doing nothing scores 0 on a task whose gold actions change the database.
func TestDoingNothingScoresZero(t *testing.T) {
	env := newEnv(t, nil)
	r, info := play(t, env, smokeTask(t, 1), []gym.Action{gym.TextAction("Goodbye.")})
	if r != 0 {
		t.Fatalf("reward %v, want 0 (%v)", r, info)
	}
	db := info["db"].(gym.Info)
	want := []string{"users/tomas_reyes_1002: payment_methods", "orders/#S1004: status, payment_history, cancel_reason"}
	if !slices.Equal(db["differences"].([]string), want) {
		t.Fatalf("differences %q, want %q", db["differences"], want)
	}
}

// Bad calls are is_error results, not failures; max_tool_errors of them
// truncate the episode.
func TestToolErrorsTruncate(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	if _, _, err := env.Reset(ctx, smokeTask(t, 1), 1, gym.Options{"max_tool_errors": 4.0}); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		action gym.Action
		want   string
		reason string
	}{
		{rawCall("get_order", `{"order_id":"#S1004"}`), `unknown tool "get_order"`, toolcall.ReasonUnknownTool},
		{rawCall(ToolOrderDetails, `{"order_id":`), "not valid JSON", toolcall.ReasonBadJSON},
		{rawCall(ToolCancel, `{"order_id":"#S1004"}`), "reason", toolcall.ReasonBadArguments},
		{rawCall(ToolOrderDetails, `{"order_id":1004}`), "string", toolcall.ReasonBadArguments},
	}
	for i, b := range bad {
		tr, err := env.Step(ctx, b.action)
		if err != nil {
			t.Fatalf("bad call %d: %v", i, err)
		}
		res := result(t, tr)
		if !res.IsError || !strings.Contains(res.Content, b.want) {
			t.Errorf("bad call %d: result %+v, want an error saying %q", i, res, b.want)
		}
		errs, _ := tr.Info["tool_errors"].([]map[string]string)
		if len(errs) != 1 || errs[0]["reason"] != b.reason {
			t.Errorf("bad call %d: info %v, want reason %s", i, tr.Info, b.reason)
		}
		if last := i == len(bad)-1; tr.Truncated != last {
			t.Errorf("bad call %d: truncated %v", i, tr.Truncated)
		}
	}
}

// A tool's own failure (policy) is an is_error result that does not count
// towards max_tool_errors.
func TestPolicyErrorsAreResults(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	if _, _, err := env.Reset(ctx, smokeTask(t, 1), 1, gym.Options{"max_tool_errors": 1.0}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		action gym.Action
		want   string
	}{
		{call(ToolCancel, map[string]string{"order_id": "#S1003", "reason": "no longer needed"}), "Error: Non-pending order cannot be cancelled"},
		{call(ToolCancel, map[string]string{"order_id": "#S1004", "reason": "too expensive"}), "Error: Invalid reason"},
		{call(ToolOrderDetails, map[string]string{"order_id": "S1004"}), "Error: Order not found"},
	} {
		tr, err := env.Step(ctx, c.action)
		if err != nil {
			t.Fatal(err)
		}
		if res := result(t, tr); !res.IsError || res.Content != c.want {
			t.Errorf("got %+v, want error %q", res, c.want)
		}
		if tr.Truncated || tr.Terminated {
			t.Errorf("a tool's error ended the episode: %+v", tr)
		}
	}
}

// transfer_to_human_agents ends the episode at once.
func TestTransferEndsEpisode(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	if _, _, err := env.Reset(ctx, smokeTask(t, 5), 1, nil); err != nil {
		t.Fatal(err)
	}
	tr, err := env.Step(ctx, call(ToolTransfer, map[string]string{"summary": "wants paypal"}))
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Terminated || result(t, tr).Content != transferResult {
		t.Fatalf("transfer: %+v", tr)
	}
	r, info, err := env.Verify(ctx)
	if err != nil || r != 1 || info["ended"] != "transfer" {
		t.Fatalf("verify: %v %v %v", r, info, err)
	}
}

// The COMMUNICATE component: the agent must say the information.
func TestCommunicate(t *testing.T) {
	task := smokeTask(t, 3)
	env := newEnv(t, nil)
	actions := oracleActions(t, task)
	if r, info := play(t, env, task, actions); r != 1 {
		t.Fatalf("oracle: reward %v: %v", r, info)
	}
	actions[len(actions)-1] = gym.TextAction("The exchange is requested; the difference is seven dollars fifty.")
	r, info := play(t, env, task, actions)
	if r != 0 {
		t.Fatalf("without the amount: reward %v, want 0: %v", r, info)
	}
	if info["db"].(gym.Info)["match"] != true {
		t.Fatalf("the database should match: %v", info)
	}
	// tau2 removes commas from the message and ignores case.
	actions[len(actions)-1] = gym.TextAction("Done: you pay 7,.5 MORE.")
	if r, info := play(t, env, task, actions); r != 1 {
		t.Fatalf("with the amount: reward %v: %v", r, info)
	}
}

// The ACTION component: every gold action must be among the agent's calls.
func TestActionBasis(t *testing.T) {
	task := smokeTask(t, 4)
	env := newEnv(t, nil)
	actions := oracleActions(t, task)
	// The same database changes without the gold lookup of the order.
	without := append(slices.Clone(actions[:1]), actions[2:]...)
	r, info := play(t, env, task, without)
	if r != 0 || info["db"].(gym.Info)["match"] != true {
		t.Fatalf("reward %v, want 0 with a matching database: %v", r, info)
	}
	checks := info["action"].([]gym.Info)
	if checks[1]["met"] != false || checks[0]["met"] != true {
		t.Fatalf("action checks %v", checks)
	}
}

func TestResetOptions(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	for _, opts := range []gym.Options{{"user": "robot"}, {"user": tau2.ModeSimulated}, {"think": "yes"}} {
		_, _, err := env.Reset(ctx, smokeTask(t, 1), 1, opts)
		var fe *gym.FaultError
		if !errors.As(err, &fe) || fe.Fault != gym.FaultAgent {
			t.Errorf("options %v: got %v, want an agent fault", opts, err)
		}
	}
	obs, info, err := env.Reset(ctx, smokeTask(t, 1), 1, gym.Options{"think": true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info["tools"].([]map[string]any)); n != len(toolDefs)+1 {
		t.Fatalf("%d tools with think, want %d", n, len(toolDefs)+1)
	}
	mustContain(t, obs.Text(), "<policy>", "Policy of the smoke store", "acting for the user", "Tomas Reyes", "first message")
}

// Inline tasks with no folder and no built-in store fail with a clear
// error.
func TestTaskWithoutData(t *testing.T) {
	env := newEnv(t, nil)
	task := *smokeTask(t, 1)
	task.Data = json.RawMessage(`{"task_id":"1","user_scenario":{"instructions":"hi"}}`)
	_, _, err := env.Reset(context.Background(), &task, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "has no folder") {
		t.Fatalf("got %v", err)
	}
}

func TestConformance(t *testing.T) {
	var cases []gymtest.Case
	for _, task := range SmokeTasks() {
		cases = append(cases, gymtest.Case{Task: &task, Seed: 3, Actions: oracleActions(t, &task)})
	}
	gymtest.CheckKind(t, KindName, cases...)
}
