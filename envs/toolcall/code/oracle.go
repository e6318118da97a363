package code

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// OracleCallID is the id of the oracle's code_interpreter call.
const OracleCallID = "oracle_1"

// NewOracle returns the oracle of a task: a gym.Oracle that first calls
// code_interpreter with the task's Python solution (verifier.solution),
// then reads that call's result from the observation and answers "The
// answer is \boxed{<output>}" (the output trimmed of surrounding space),
// which ends the episode. So the oracle checks both that the solution
// runs in the sandbox and that what it prints is the reference answer. A
// task without a solution returns an error wrapping gym.ErrNoOracle.
//
// A task whose verifier.oracle is "answer" has the oracle of a
// demonstrator that knows the answer: it replies "The answer is
// \boxed{<verifier.answer>}" at once, without the tool. It checks only the
// answer's format; its use is demonstrations of answering without the
// tool (examples/learn's warm start mixes both).
func NewOracle(task *gym.Task) (gym.Oracle, error) {
	v, err := oracleData(task)
	if err != nil {
		return nil, err
	}
	return &oracle{solution: v.Solution, answer: v.Answer, direct: v.Oracle == "answer"}, nil
}

type oracle struct {
	solution, answer string
	direct           bool
	step             int
}

// Next implements gym.Oracle.
func (o *oracle) Next(obs gym.Observation, _ gym.Info) (gym.Action, bool, error) {
	o.step++
	if o.direct {
		if o.step == 1 {
			return gym.TextAction("The answer is \\boxed{" + strings.TrimSpace(o.answer) + "}"), false, nil
		}
		return gym.Action{}, true, nil
	}
	switch o.step {
	case 1:
		args, _ := json.Marshal(map[string]string{"code": o.solution})
		return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			ID: OracleCallID, Type: "function", Function: gym.FunctionCall{Name: ToolCode, Arguments: string(args)},
		}}}}, false, nil
	case 2:
		for _, p := range obs.Parts {
			if p.Type != gym.PartToolResult || p.ToolResult.CallID != OracleCallID {
				continue
			}
			if p.ToolResult.IsError {
				return gym.Action{}, false, fmt.Errorf("the solution's call was refused: %s", p.ToolResult.Content)
			}
			return gym.TextAction("The answer is \\boxed{" + strings.TrimSpace(p.ToolResult.Content) + "}"), false, nil
		}
		return gym.Action{}, false, errors.New("the observation holds no result of the solution's call")
	}
	return gym.Action{}, true, nil
}
