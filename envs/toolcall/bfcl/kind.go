package bfcl

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/gym"
)

// KindName is the kind's registered name.
const KindName = "bfcl-v1"

// IrrelevanceReply is the reference answer's message where no function
// fits the question.
const IrrelevanceReply = "None of the available functions can do this, so I will not call any."

func init() {
	gym.Register(toolcall.NewKind(toolcall.Config{
		Name: KindName,
		Description: "BFCL single-turn function calling: one answer (tool calls, or a message where no " +
			"function fits), scored by BFCL's AST checker",
		Tasks: SmokeTasks(),
	}, Domain{}))
	gym.RegisterSuiteFormat("bfcl", Detect, LoadTasks)
}

// Domain is the toolcall.Domain of bfcl-v1; it also gives each task's
// reference answer (gym.OracleKind).
type Domain struct{}

// Start begins a one-shot episode of a bfcl-v1 task.
func (Domain) Start(_ context.Context, task *gym.Task, _ int64, _ gym.Options) (toolcall.Episode, error) {
	c, err := CaseFromTask(task)
	if err != nil {
		return nil, gym.InfraFault("bad_task", err)
	}
	return &episode{c: c, tools: c.Tools()}, nil
}

// Oracle implements gym.OracleKind: one action holding the reference
// answer (Case.Reference) as tool calls, or for irrelevance a message.
func (Domain) Oracle(task *gym.Task) (gym.Oracle, error) {
	c, err := CaseFromTask(task)
	if err != nil {
		return nil, err
	}
	a, err := c.Reference()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", gym.ErrNoOracle, err)
	}
	return gym.ScriptOracle([]gym.Action{ActionOf(a)}), nil
}

// ActionOf is an answer as the action an agent sends: one tool_call part
// per call, or a text part for a message.
func ActionOf(a Answer) gym.Action {
	if a.Text || len(a.Calls) == 0 {
		return gym.TextAction(IrrelevanceReply)
	}
	act := gym.Action{}
	for i, c := range a.Calls {
		act.Parts = append(act.Parts, gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			ID: "call_" + strconv.Itoa(i+1), Type: "function",
			Function: gym.FunctionCall{Name: c.Name, Arguments: c.Arguments},
		}})
	}
	return act
}

type episode struct {
	c        *Case
	tools    []toolcall.Tool
	answered bool
	answer   Answer
}

func (e *episode) Tools() []toolcall.Tool { return e.tools }
func (e *episode) Opening() string        { return e.c.Opening() }

var errOneShot = errors.New("bfcl-v1 episodes are one-shot: the first action is the answer and nothing is run")

func (e *episode) Call(context.Context, string, json.RawMessage) (toolcall.Result, error) {
	return toolcall.Result{}, errOneShot
}

func (e *episode) Say(context.Context, string) (string, bool, error) { return "", false, errOneShot }

// Answer implements toolcall.Answerer: an action without tool calls is a
// message.
func (e *episode) Answer(calls []gym.ToolCall, _ string) {
	e.answered = true
	e.answer = Answer{Text: len(calls) == 0}
	for _, c := range calls {
		e.answer.Calls = append(e.answer.Calls, Call{Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
}

// Verify scores the answer: reward 1 when BFCL's checker accepts it.
func (e *episode) Verify(context.Context) (float64, gym.Info, error) {
	r := Result{Reason: ReasonNoAnswer, ErrorType: "no_answer", Detail: "the episode ended before an answer"}
	if e.answered {
		r = e.c.Check(e.answer)
	}
	info := gym.Info{"category": e.c.Category, "valid": r.Valid, "reason": r.Reason, "detail": r.Detail}
	if r.ErrorType != "" {
		info["error_type"] = r.ErrorType
	}
	if r.Valid {
		return 1, info, nil
	}
	return 0, info, nil
}

func (e *episode) Close(context.Context) error { return nil }

// Task returns the case as a bfcl-v1 task. Data holds what the agent may
// see: {"question", "function", "language"}; Verifier holds {"category",
// "ground_truth"}; Labels {"category"}.
func (c *Case) Task() gym.Task {
	fns := make([]any, len(c.Functions))
	for i, f := range c.Functions {
		fns[i] = f
	}
	ver := dictOf("category", c.Category)
	if c.GroundTruth != nil {
		ver.Set("ground_truth", c.GroundTruth)
	}
	return gym.Task{
		ID: c.ID, Env: KindName, Instruction: c.Opening(),
		Data:     json.RawMessage(pyval.Dumps(dictOf("question", c.Question, "function", fns, "language", c.Language()))),
		Verifier: json.RawMessage(pyval.Dumps(ver)),
		Labels:   map[string]string{"category": c.Category},
	}
}

// CaseFromTask reads a bfcl-v1 task back into a Case. The category comes
// from the Verifier, else from the "category" label.
func CaseFromTask(task *gym.Task) (*Case, error) {
	if len(task.Data) == 0 {
		return nil, fmt.Errorf("bfcl task %q has no data: want {\"question\": [[{\"role\",\"content\"}]], \"function\": [function docs]}", task.ID)
	}
	dv, err := pyval.Decode(task.Data)
	if err != nil {
		return nil, fmt.Errorf("bfcl task %q: data is not JSON: %w", task.ID, err)
	}
	data, ok := dv.(*Dict)
	if !ok {
		return nil, fmt.Errorf("bfcl task %q: data must be an object {\"question\", \"function\"}", task.ID)
	}
	c := &Case{ID: task.ID, Category: task.Labels["category"]}
	var gt any
	if len(task.Verifier) > 0 {
		vv, err := pyval.Decode(task.Verifier)
		if err != nil {
			return nil, fmt.Errorf("bfcl task %q: verifier is not JSON: %w", task.ID, err)
		}
		ver, ok := vv.(*Dict)
		if !ok {
			return nil, fmt.Errorf("bfcl task %q: verifier must be an object {\"category\", \"ground_truth\"}", task.ID)
		}
		if cat, ok := ver.Value("category").(string); ok && cat != "" {
			c.Category = cat
		}
		gt = ver.Value("ground_truth")
	}
	if !supported[c.Category] {
		return nil, fmt.Errorf("bfcl task %q: category %q: %s", task.ID, c.Category, outOfScope(c.Category))
	}
	if err := c.setQuestion(data.Value("question")); err != nil {
		return nil, fmt.Errorf("bfcl task %q: %w", task.ID, err)
	}
	if err := c.setFunctions(data.Value("function")); err != nil {
		return nil, fmt.Errorf("bfcl task %q: %w", task.ID, err)
	}
	if HasGroundTruth(c.Category) {
		list, ok := gt.([]any)
		if !ok {
			return nil, fmt.Errorf("bfcl task %q (%s): the verifier has no \"ground_truth\" list", task.ID, c.Category)
		}
		if err := checkGroundTruth(list); err != nil {
			return nil, fmt.Errorf("bfcl task %q: %w", task.ID, err)
		}
		c.GroundTruth = list
	}
	return c, nil
}

// Detect reports whether dir is a BFCL data folder: BFCL_v<N>_<category>.json
// files beside a possible_answer folder.
func Detect(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "possible_answer")); err != nil || !fi.IsDir() {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && categoryOf(e.Name()) != "" {
			return true
		}
	}
	return false
}

// LoadTasks reads a BFCL data folder as bfcl-v1 tasks (the suite format
// "bfcl"). Categories out of scope are logged and left out.
func LoadTasks(dir string) ([]gym.Task, error) {
	ds, err := Load(dir)
	if err != nil {
		return nil, err
	}
	for _, s := range ds.Skipped {
		slog.Info("bfcl: category not loaded", "dir", dir, "skipped", s)
	}
	return ds.Tasks(), nil
}

// Tasks returns every case as a task: single-turn cases of bfcl-v1, then
// multi-turn cases of bfcl-multiturn-v1.
func (d *Dataset) Tasks() []gym.Task {
	out := make([]gym.Task, 0, len(d.Cases)+len(d.Multi))
	for _, c := range d.Cases {
		out = append(out, c.Task())
	}
	for _, c := range d.Multi {
		out = append(out, c.Task())
	}
	return out
}

// smokeFS is the smoke suite: a BFCL data folder of six cases written for
// nextstate, one per category it covers.
//
//go:embed smoke
var smokeFS embed.FS

// SmokeTasks returns the built-in smoke tasks, bfcl-smoke-1 to -6.
func SmokeTasks() []gym.Task {
	sub, err := fs.Sub(smokeFS, "smoke")
	if err != nil {
		panic("bfcl: embedded smoke suite: " + err.Error())
	}
	ds, err := LoadFS(sub)
	if err != nil {
		panic("bfcl: embedded smoke suite: " + err.Error())
	}
	tasks := ds.Tasks()
	for i := range tasks {
		tasks[i].Labels["suite"] = "bfcl-smoke"
	}
	sortTasks(tasks)
	return tasks
}

// sortTasks orders tasks by the number that ends their ids.
func sortTasks(ts []gym.Task) {
	num := func(id string) int {
		n, _ := strconv.Atoi(id[strings.LastIndexByte(id, '-')+1:])
		return n
	}
	sort.Slice(ts, func(i, j int) bool { return num(ts[i].ID) < num(ts[j].ID) })
}
