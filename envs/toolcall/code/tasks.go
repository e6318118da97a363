package code

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// TaskData is a task's Data: the problem, shown to the agent (the task's
// Instruction when empty), the interpreter mode the task asks for
// ("stateless", the default, or "session"; the reset option "mode" wins),
// and files written into the working directory of the code before the
// first call, by relative path (their content is not shown to the agent:
// it reads them with code).
type TaskData struct {
	Problem string            `json:"problem"`
	Mode    string            `json:"mode,omitempty"`
	Files   map[string]string `json:"files,omitempty"`
}

// VerifierData is a task's Verifier: the reference answer (a number, a
// fraction or a simple expression; see Normalize) and, for the oracle, a
// Python program that prints it. Oracle "answer" makes the oracle answer
// the reference at once, without the tool (see the package doc, Oracle).
type VerifierData struct {
	Answer   string `json:"answer"`
	Solution string `json:"solution,omitempty"`
	Oracle   string `json:"oracle,omitempty"`
}

// mathJSONL is the generated task set (package envs/toolcall/code/gen).
//
//go:embed tasks/math.jsonl
var mathJSONL []byte

// TasksFile is the generated task set's path in the repository; `nextstate
// serve --tasks` loads it.
const TasksFile = "envs/toolcall/code/tasks/math.jsonl"

// MathTasks returns the generated task set shipped with the package, as
// the file holds it.
func MathTasks() []gym.Task {
	var out []gym.Task
	for i, line := range bytes.Split(mathJSONL, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var t gym.Task
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			panic(fmt.Sprintf("code: embedded %s:%d: %v", TasksFile, i+1, err))
		}
		out = append(out, t)
	}
	return out
}

// smokeIDs are the generated tasks the kind offers as built-in tasks, one
// or two per category.
var smokeIDs = []string{
	"math-arithmetic-001", "math-arithmetic-003",
	"math-algebra-001",
	"math-combinatorics-001", "math-combinatorics-007",
}

// SmokePrefix starts the ids of the built-in tasks: "code-" and the id of
// the generated task, so that they do not collide with the task set's
// ids when both are loaded.
const SmokePrefix = "code-"

// SmokeTasks returns the kind's built-in tasks: five of the generated set
// (see smokeIDs), with ids prefixed by SmokePrefix and the label suite
// "code-smoke".
func SmokeTasks() []gym.Task {
	byID := map[string]gym.Task{}
	for _, t := range MathTasks() {
		byID[t.ID] = t
	}
	out := make([]gym.Task, 0, len(smokeIDs))
	for _, id := range smokeIDs {
		t, ok := byID[id]
		if !ok {
			panic("code: smoke task " + id + " is not in " + TasksFile)
		}
		t.ID = SmokePrefix + id
		t.Labels = maps.Clone(t.Labels)
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels["suite"] = "code-smoke"
		t.Split = ""
		out = append(out, t)
	}
	return out
}

// oracleData returns a task's verifier data once it is checked to hold
// what its oracle needs: the solution, or with Oracle "answer" the answer.
func oracleData(task *gym.Task) (VerifierData, error) {
	var v VerifierData
	if len(task.Verifier) == 0 {
		return v, fmt.Errorf("task %s: %w: it has no verifier", task.ID, gym.ErrNoOracle)
	}
	if err := strictUnmarshal(task.Verifier, &v); err != nil {
		return v, fmt.Errorf("task %s: verifier: %w", task.ID, err)
	}
	switch v.Oracle {
	case "", "solution":
		if strings.TrimSpace(v.Solution) == "" {
			return v, fmt.Errorf("task %s: %w: verifier.solution is empty", task.ID, gym.ErrNoOracle)
		}
	case "answer":
		if strings.TrimSpace(v.Answer) == "" {
			return v, fmt.Errorf("task %s: %w: verifier.answer is empty", task.ID, gym.ErrNoOracle)
		}
	default:
		return v, fmt.Errorf("task %s: verifier.oracle %q: want solution (the default: run verifier.solution through the tool) or answer (answer verifier.answer without the tool)", task.ID, v.Oracle)
	}
	return v, nil
}
