package bfcl_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/bfcl"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
)

// callsAction makes one action of several tool calls, each with its own id.
func callsAction(nameArgs ...string) gym.Action {
	var a gym.Action
	for i := 0; i+1 < len(nameArgs); i += 2 {
		a.Parts = append(a.Parts, gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: fmt.Sprintf("c%d", i/2+1),
			Type: "function", Function: gym.FunctionCall{Name: nameArgs[i], Arguments: nameArgs[i+1]}}})
	}
	return a
}

var (
	lockAll  = []string{"lockDoors", `{"unlock": false, "door": ["driver", "passenger", "rear_left", "rear_right"]}`}
	pressAll = []string{"pressBrakePedal", `{"pedalPosition": 1.0}`}
	start    = []string{"startEngine", `{"ignitionMode": "START"}`}
)

// learnSuite is make learn's tool-call suite: BFCL's VehicleControlAPI
// asked to start the engine, its doors and brake hidden.
func learnSuite(t *testing.T) *gym.Suite {
	t.Helper()
	s, err := gym.LoadSuite(filepath.Join("..", "..", "..", "examples", "learn", "vehicle.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The step rule scores a step by what the classes answered: a failed call
// is -1 with a hint quoting the failure, calls that all ran are 1, the
// message that ends the turn is 0.
func TestMultiStepRule(t *testing.T) {
	spec, err := gym.Lookup(bfcl.MultiKindName)
	if err != nil || spec.StepRule == nil {
		t.Fatalf("%s declares no step rule (%v)", bfcl.MultiKindName, err)
	}
	var task *gym.Task
	for _, tk := range learnSuite(t).Tasks {
		if strings.Contains(string(tk.Verifier), "lockDoors") && strings.Contains(string(tk.Verifier), "pressBrakePedal") {
			task = &tk
			break
		}
	}
	h := newHarness(t)
	judge := func(actions ...gym.Action) (score int, hint string) {
		steps, _ := h.playTurns(*task, actions)
		last := len(actions) - 1
		var hist []gym.RuleTurn
		for i := range last {
			hist = append(hist, gym.RuleTurn{Action: rl.ActionText(actions[i]), NextState: rl.ObservationText(steps[i].Observation)})
		}
		return spec.StepRule(gym.RuleInput{Instruction: task.Instruction, History: hist,
			Action: rl.ActionText(actions[last]), NextState: rl.ObservationText(steps[last].Observation)})
	}
	if s, hint := judge(callsAction(start...)); s != -1 || !strings.Contains(hint, "The call of startEngine failed: All doors must be locked before starting the engine.") {
		t.Errorf("starting with unlocked doors: %d %q; want -1 and a hint quoting the failure", s, hint)
	}
	if s, hint := judge(callsAction(slices.Concat(lockAll, pressAll, start)...)); s != 1 || hint != "" {
		t.Errorf("locking, pressing and starting: %d %q; want 1", s, hint)
	}
	if s, hint := judge(callsAction(lockAll...), callsAction(start...)); s != -1 || !strings.Contains(hint, "Brake pedal needs to be pressed") {
		t.Errorf("starting after locking, the brake released: %d %q; want -1 and the brake's failure", s, hint)
	}
	if s, _ := judge(callsAction(lockAll...)); s != 1 {
		t.Errorf("locking: %d; want 1", s)
	}
	if s, _ := judge(callsAction(slices.Concat(lockAll, pressAll, start)...), gym.TextAction(bfcl.TurnDone)); s != 0 {
		t.Errorf("the message that ends the turn: %d; want 0", s)
	}
	if s, hint := judge(callsAction("nope", `{}`)); s != -1 || !strings.Contains(hint, "name 'nope' is not defined") {
		t.Errorf("an unknown function: %d %q; want -1 quoting Python's NameError", s, hint)
	}
}

// make learn's vehicle suite holds what the demo needs: in both splits,
// cases whose ground truth starts at once and cases that must lock or
// press first; locking, pressing and starting passes every case, starting
// alone exactly those whose ground truth is that.
func TestLearnVehicleSuite(t *testing.T) {
	s := learnSuite(t)
	h := newHarness(t)
	seen := map[string]map[bool]int{}
	for _, task := range s.Tasks {
		alone := !strings.Contains(string(task.Verifier), "lockDoors") && !strings.Contains(string(task.Verifier), "pressBrakePedal")
		if seen[task.Split] == nil {
			seen[task.Split] = map[bool]int{}
		}
		seen[task.Split][alone]++
		for name, tc := range map[string]struct {
			action gym.Action
			pass   bool
		}{
			"lock, press, start": {callsAction(slices.Concat(lockAll, pressAll, start)...), true},
			"start":              {callsAction(start...), alone},
		} {
			steps, info := h.playTurns(task, []gym.Action{tc.action, gym.TextAction(bfcl.TurnDone)})
			if got := steps[len(steps)-1].Reward == 1; got != tc.pass {
				t.Errorf("%s: %s passed %v; want %v (%v)", task.ID, name, got, tc.pass, info)
			}
		}
	}
	for _, split := range []string{"train", "test"} {
		if seen[split][true] == 0 || seen[split][false] == 0 {
			t.Errorf("split %s: %d cases that start at once, %d that need more; want both", split, seen[split][true], seen[split][false])
		}
	}
}
