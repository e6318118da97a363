package bfcl_test

import (
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/bfcl"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// playTurns plays a multi-turn task with one session: each action in
// turn; it returns the steps' results and the verifier's info.
func (h *harness) playTurns(task gym.Task, actions []gym.Action) ([]gym.StepResult, gym.Info) {
	h.t.Helper()
	ctx := h.t.Context()
	s, _, err := h.m.Create(ctx, gym.CreateRequest{Task: &task})
	if err != nil {
		h.t.Fatalf("%s: %v", task.ID, err)
	}
	defer s.Close(ctx)
	var out []gym.StepResult
	for i, a := range actions {
		res, err := s.Step(ctx, "", a)
		if err != nil {
			h.t.Fatalf("%s: step %d: %v", task.ID, i+1, err)
		}
		out = append(out, res)
		if res.Terminated || res.Truncated {
			break
		}
	}
	for _, ev := range h.mem.Session(s.ID) {
		if ev.Type == gym.EventStep {
			if info, ok := ev.Info["verifier"].(gym.Info); ok {
				return out, info
			}
		}
	}
	return out, nil
}

func oracleActions(t *testing.T, task *gym.Task) []gym.Action {
	t.Helper()
	o, err := gym.OracleFor(task)
	if err != nil {
		t.Fatalf("%s: %v", task.ID, err)
	}
	var out []gym.Action
	for {
		a, done, err := o.Next(gym.Observation{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return out
		}
		out = append(out, a)
	}
}

// The smoke cases play turn by turn: the ground truth (the oracle) earns
// 1, each turn's message follows a step without calls, and the results
// are the class's.
func TestMultiTurnSmoke(t *testing.T) {
	gymtest.CheckKind(t, bfcl.MultiKindName)
	tasks := bfcl.MultiSmokeTasks()
	if len(tasks) != 2 {
		t.Fatalf("%d multi-turn smoke tasks; want 2", len(tasks))
	}
	h := newHarness(t)
	for _, task := range tasks {
		steps, info := h.playTurns(task, oracleActions(t, &task))
		last := steps[len(steps)-1]
		if !last.Terminated || last.Reward != 1 || info["valid"] != true {
			t.Errorf("%s: the ground truth got reward %v (terminated %v): %v", task.ID, last.Reward, last.Terminated, info)
		}
	}
	task := tasks[0]
	steps, _ := h.playTurns(task, oracleActions(t, &task))
	if got := steps[0].Observation.Parts[0].ToolResult.Content; !strings.HasPrefix(got, `{"id": 2, "title": "VPN drops every hour", "description": "", "status": "Open", "priority": 4, "created_by": "dana"}`) {
		t.Errorf("create_ticket's result %s", got)
	}
	if got := steps[1].Observation.Parts; len(got) != 1 || got[0].Text != "The printer is fixed: resolve ticket 1 with the resolution 'Roller replaced'." {
		t.Errorf("after turn 1 ended, the observation %+v; want the second turn's message", got)
	}
}

// The checks fail a case as BFCL's do: a turn without calls, a state that
// differs, a result the ground truth has and the model does not, a call
// of a name no class has, too many steps in a turn. A failed turn does not
// end the case: every turn is played, as in BFCL.
func TestMultiTurnChecks(t *testing.T) {
	h := newHarness(t)
	task := bfcl.MultiSmokeTasks()[0]
	done := gym.TextAction(bfcl.TurnDone)
	tool := func(name, args string) gym.Action { return gym.Action{Parts: []gym.Part{call(name, args)}} }
	create := tool("create_ticket", `{"title": "VPN drops every hour", "priority": 4}`)
	resolve := tool("resolve_ticket", `{"ticket_id": 1, "resolution": "Roller replaced"}`)
	for name, tc := range map[string]struct {
		actions []gym.Action
		want    string
		turn    int
	}{
		"empty turn":  {[]gym.Action{done}, "multi_turn:empty_turn_model_response", 0},
		"state":       {[]gym.Action{tool("create_ticket", `{"title": "VPN drops", "priority": 4}`), done}, "multi_turn:instance_state_mismatch", 0},
		"response":    {[]gym.Action{create, done, resolve, done, tool("get_user_tickets", `{}`), done}, "multi_turn:execution_response_mismatch", 2},
		"unknown":     {[]gym.Action{tool("nope", `{}`), done}, "multi_turn:instance_state_mismatch", 0},
		"wrong types": {[]gym.Action{tool("create_ticket", `{"title": "VPN drops every hour", "priority": "4"}`), done}, "multi_turn:instance_state_mismatch", 0},
	} {
		// Every turn is played, as in BFCL; the first failure is the verdict.
		steps, info := h.playTurns(task, append(tc.actions, done, done, done))
		if info["valid"] != false || info["error_type"] != tc.want || info["turn"] != float64(tc.turn) && info["turn"] != tc.turn {
			t.Errorf("%s: verdict %v; want %s at turn %d", name, info, tc.want, tc.turn)
		}
		if last := steps[len(steps)-1]; !last.Terminated || last.Reward != 0 {
			t.Errorf("%s: last step terminated %v reward %v", name, last.Terminated, last.Reward)
		}
	}
	// Unknown names and wrong types reach the class, which answers as
	// BFCL's Python does.
	steps, _ := h.playTurns(task, []gym.Action{tool("nope", `{"x": 1}`), tool("create_ticket", `{"title": "t", "priority": "4"}`)})
	if got := steps[0].Observation.Parts[0].ToolResult.Content; got != "Error during execution: name 'nope' is not defined" {
		t.Errorf("an unknown name: %s", got)
	}
	if got := steps[1].Observation.Parts[0].ToolResult.Content; got != "Error during execution: '<' not supported between instances of 'str' and 'int'" {
		t.Errorf("a string priority: %s", got)
	}
	// More than 20 calling steps in one turn: force-quit, truncated.
	var many []gym.Action
	for range bfcl.MaxStepsPerTurn + 1 {
		many = append(many, tool("ticket_get_login_status", `{}`))
	}
	steps, _ = h.playTurns(task, many)
	if last := steps[len(steps)-1]; len(steps) != bfcl.MaxStepsPerTurn+1 || !last.Truncated || last.Info["truncated_reason"] != "force_terminated" {
		t.Errorf("%d steps, the last %+v; want %d, truncated by force_terminated", len(steps), last, bfcl.MaxStepsPerTurn+1)
	}
}
