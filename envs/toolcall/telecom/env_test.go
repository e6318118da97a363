package telecom

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// Every tau2 telecom task's gold actions (the user's on the phone too),
// replayed through the Env in solo mode as an agent would send them,
// score 1, as do the smoke tasks'.
func TestGoldReplayScoresOneOnEveryTask(t *testing.T) {
	tasks := append(realTasks(t), SmokeTasks()...)
	if len(tasks) != 25 {
		t.Fatalf("%d tasks, want 20 and 5 smoke tasks", len(tasks))
	}
	env := newEnv(t, nil)
	for i := range tasks {
		r, info := play(t, env, &tasks[i], oracleActions(t, &tasks[i]))
		if r != 1 {
			t.Errorf("%s: reward %v, want 1: %v", tasks[i].ID, r, info)
		}
		db := info["db"].(gym.Info)
		if db["match"] != true || db["agent_db_hash"] != db["gold_agent_db_hash"] || db["user_db_hash"] != db["gold_user_db_hash"] {
			t.Errorf("%s: db %v", tasks[i].ID, db)
		}
	}
}

// Doing nothing scores 0 on every task: its assertions fail, or (the
// tasks a transfer solves) its ACTION check does.
func TestDoingNothingScoresZero(t *testing.T) {
	tasks := realTasks(t)
	env := newEnv(t, nil)
	for i := range tasks {
		r, info := play(t, env, &tasks[i], []gym.Action{gym.TextAction("Goodbye.")})
		if r != 0 {
			t.Errorf("%s: reward %v, want 0: %v", tasks[i].ID, r, info)
		}
	}
	// The info says which assertion failed and where the databases differ.
	r, info := play(t, env, smokeTask(t, 4), []gym.Action{gym.TextAction("Goodbye.")})
	checks := info["env_assertions"].([]gym.Info)
	if r != 0 || checks[0]["met"] != false || checks[0]["func_name"] != "assert_service_status" {
		t.Fatalf("reward %v, assertions %v", r, checks)
	}
	db := info["db"].(gym.Info)
	want := []string{"bills/B2900", "lines/L2001", "user/device.network_connection_status", "user/device.network_signal_strength",
		"user/device.network_technology_connected", "user/surroundings.line_active"}
	if db["match"] != false || !slices.Equal(db["differences"].([]string), want) {
		t.Fatalf("differences %q, want %q", db["differences"], want)
	}
}

// Near misses score 0: too little data refueled, a line resumed and the
// phone rebooted with the bill left unpaid. A transfer with a summary of
// the agent's own matches the gold one (its compare_args is empty: the
// name alone counts).
func TestNearMissesScoreZero(t *testing.T) {
	env := newEnv(t, nil)
	tasks := realTasks(t)
	byName := func(s string) *gym.Task {
		for i := range tasks {
			if strings.Contains(tasks[i].ID, s) {
				return &tasks[i]
			}
		}
		t.Fatalf("no task %s", s)
		return nil
	}
	refuel := byName("data_usage_exceeded")
	actions := oracleActions(t, refuel)
	actions[0] = call(ToolRefuelData, map[string]any{"customer_id": "C1001", "line_id": "L1002", "gb_amount": 1.0})
	if r, info := play(t, env, refuel, actions); r != 0 {
		t.Errorf("1 GB refueled: reward %v: %v", r, info)
	}
	overdue := byName("overdue_bill_suspension")
	actions = oracleActions(t, overdue)
	actions = append(actions[:1:1], actions[2:]...) // no make_payment
	r, info := play(t, env, overdue, actions)
	checks := info["env_assertions"].([]gym.Info)
	if r != 0 || checks[1]["func_name"] != "assert_no_overdue_bill" || checks[1]["met"] != false {
		t.Errorf("bill unpaid: reward %v: %v", r, info)
	}
	transfer := byName("lock_sim_card_pin")
	r, info = play(t, env, transfer, []gym.Action{call(tau2.ToolTransfer, map[string]string{"summary": "SIM locked with a PIN"})})
	if r != 1 || info["reward_breakdown"].(map[string]float64)[tau2.BasisAction] != 1 || info["ended"] != "transfer" {
		t.Errorf("another summary: reward %v: %v", r, info)
	}
}

// Solo: the agent has the phone's tools and done, which ends the episode;
// the calls of the phone count for the ACTION check.
func TestSoloTools(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	obs, info, err := env.Reset(ctx, smokeTask(t, 1), 1, gym.Options{"user": tau2.ModeSolo})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info["tools"].([]map[string]any)); n != len(soloTools) {
		t.Fatalf("%d tools, want %d", n, len(soloTools))
	}
	mustContain(t, obs.Text(), "<main_policy>", "Smoke Carrier: agent policy (working a ticket alone)", "<tech_support_policy>",
		"<ticket>\nAna Pereira (555-200-0001) has no service", "call done")
	tr, err := env.Step(ctx, call(ToolStatusBar, map[string]any{}))
	if err != nil || result(t, tr).Content != "Status Bar: ✈️ Airplane Mode | 🔋 64%" {
		t.Fatalf("status bar: %+v %v", tr, err)
	}
	if tr, err = env.Step(ctx, call(ToolAirplane, map[string]any{})); err != nil || tr.Terminated {
		t.Fatal(err)
	}
	tr, err = env.Step(ctx, call(ToolDone, map[string]any{}))
	if err != nil || !tr.Terminated {
		t.Fatalf("done: %+v %v", tr, err)
	}
	r, vinfo, err := env.Verify(ctx)
	if err != nil || r != 1 || vinfo["ended"] != "agent_done" || vinfo["agent_calls"] != 2 {
		t.Fatalf("verify: %v %v %v", r, vinfo, err)
	}
}

// Bad calls are is_error results, not failures; max_tool_errors of them
// truncate the episode. A tool's own failure is a result too.
func TestToolErrors(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	if _, _, err := env.Reset(ctx, smokeTask(t, 3), 1, gym.Options{"max_tool_errors": 3.0}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		action gym.Action
		want   string
		schema bool
	}{
		{call(ToolRefuelData, map[string]any{"customer_id": "C2002", "line_id": "L2003", "gb_amount": "1"}), "number", true},
		{call(ToolRefuelData, map[string]any{"customer_id": "C2002", "line_id": "L2001", "gb_amount": 1}), "Error: Line L2001 not found for customer C2002", false},
		{call(ToolSetAPN, map[string]any{"apn_settings": map[string]any{"apn_name": "fast"}}), "apn_name", true},
		{call("check_signal", map[string]any{}), `unknown tool "check_signal"`, true},
	} {
		tr, err := env.Step(ctx, c.action)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		res := result(t, tr)
		if !res.IsError || !strings.Contains(res.Content, c.want) {
			t.Errorf("call %d: %+v, want an error with %q", i, res, c.want)
		}
		if _, listed := tr.Info["tool_errors"]; listed != c.schema {
			t.Errorf("call %d: info %v", i, tr.Info)
		}
		if last := i == 3; tr.Truncated != last {
			t.Errorf("call %d: truncated %v", i, tr.Truncated)
		}
	}
}

func TestResetOptions(t *testing.T) {
	env := newEnv(t, nil)
	ctx := context.Background()
	for _, opts := range []gym.Options{{"user": "robot"}, {"user": tau2.ModeSimulated}, {"policy": "rules"}} {
		_, _, err := env.Reset(ctx, smokeTask(t, 1), 1, opts)
		var fe *gym.FaultError
		if !errors.As(err, &fe) || fe.Fault != gym.FaultAgent {
			t.Errorf("options %v: got %v, want an agent fault", opts, err)
		}
	}
	obs, _, err := env.Reset(ctx, smokeTask(t, 1), 1, gym.Options{"policy": PolicyWorkflow})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, obs.Text(), "Smoke Carrier: tech support workflow")
	task := *smokeTask(t, 1)
	task.Data = json.RawMessage(`{"task_id":"1","user_scenario":{"instructions":"hi"}}`)
	if _, _, err := env.Reset(ctx, &task, 1, nil); err == nil || !strings.Contains(err.Error(), "has no folder") {
		t.Fatalf("a task without data: %v", err)
	}
}

func TestConformance(t *testing.T) {
	var cases []gymtest.Case
	for _, task := range SmokeTasks() {
		cases = append(cases, gymtest.Case{Task: &task, Seed: 3, Actions: oracleActions(t, &task)})
	}
	gymtest.CheckKind(t, KindName, cases...)
}
