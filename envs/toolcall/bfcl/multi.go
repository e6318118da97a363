package bfcl

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/bfcl/multiturn"
	"github.com/nextstate-rl/nextstate/gym"
)

// MultiKindName is the multi-turn kind's registered name.
const MultiKindName = "bfcl-multiturn-v1"

// MaxStepsPerTurn is BFCL's MAXIMUM_STEP_LIMIT: a turn whose agent makes
// calls in more steps than this is force-quit, and the case fails.
const MaxStepsPerTurn = 20

// TurnDone is the oracle's message that ends each turn.
const TurnDone = "Done."

func init() {
	gym.Register(toolcall.NewKind(toolcall.Config{
		Name: MultiKindName,
		Description: "BFCL multi-turn function calling: a user's turns over stateful APIs (file system, " +
			"messaging, posting, tickets, trading, travel, vehicle, math), scored by BFCL's state and response checks",
		Unchecked: true,
		Tasks:     MultiSmokeTasks(),
		StepRule:  multiStepRule,
	}, MultiDomain{}))
}

// MultiCase is a case of BFCL's multi-turn categories.
type MultiCase struct {
	ID       string
	Category string // multi_turn_base
	// Turns are the user's turns, each a list of {"role","content"}
	// messages.
	Turns [][]*Dict
	// Involved are the classes the case runs, InitialConfig their
	// scenarios by class name.
	Involved      []string
	InitialConfig *Dict
	// Functions are the function docs offered: the involved classes'
	// docs, less the case's excluded functions.
	Functions []*Dict
	// GroundTruth is each turn's calls, in Python.
	GroundTruth [][]string
}

// TurnText is a turn's messages as the agent reads them: a lone user
// message is its content, otherwise "role: content" per message.
func (c *MultiCase) TurnText(t int) string {
	st := &Case{Question: []any{dictsOf(c.Turns[t])}}
	return st.Opening()
}

func dictsOf(ds []*Dict) []any {
	out := make([]any, len(ds))
	for i, d := range ds {
		out[i] = d
	}
	return out
}

// tools are the case's functions as tools, prepared as BFCL prepares them
// for function-calling models (Case.Tools).
func (c *MultiCase) tools() []toolcall.Tool {
	st := &Case{Category: c.Category}
	st.Functions = c.Functions
	st.offers, st.names = offeredNames(c.Functions)
	return st.Tools()
}

// Task returns the case as a bfcl-multiturn-v1 task. Data holds
// {"question", "involved_classes", "initial_config", "function"};
// Verifier {"category", "ground_truth"}; Labels {"category"}. The step
// limit allows every turn its MaxStepsPerTurn calling steps and the step
// that ends it.
func (c *MultiCase) Task() gym.Task {
	q := make([]any, len(c.Turns))
	for i, t := range c.Turns {
		q[i] = dictsOf(t)
	}
	inv := make([]any, len(c.Involved))
	for i, n := range c.Involved {
		inv[i] = n
	}
	gt := make([]any, len(c.GroundTruth))
	for i, t := range c.GroundTruth {
		calls := make([]any, len(t))
		for j, s := range t {
			calls[j] = s
		}
		gt[i] = calls
	}
	return gym.Task{
		ID: c.ID, Env: MultiKindName, Instruction: c.TurnText(0),
		Data: json.RawMessage(pyval.Dumps(dictOf("question", q, "involved_classes", inv,
			"initial_config", c.InitialConfig, "function", dictsOf(c.Functions)))),
		Verifier: json.RawMessage(pyval.Dumps(dictOf("category", c.Category, "ground_truth", gt))),
		Labels:   map[string]string{"category": c.Category},
		Limits:   gym.Limits{MaxSteps: (MaxStepsPerTurn + 2) * len(c.Turns)},
	}
}

// MultiCaseFromTask reads a bfcl-multiturn-v1 task back into a case.
func MultiCaseFromTask(task *gym.Task) (*MultiCase, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("bfcl multi-turn task %q: %s", task.ID, fmt.Sprintf(format, args...))
	}
	dv, err := pyval.Decode(task.Data)
	if err != nil {
		return nil, bad(`data is not JSON (%v): want {"question", "involved_classes", "initial_config", "function"}`, err)
	}
	data, ok := dv.(*Dict)
	if !ok {
		return nil, bad(`data must be an object {"question", "involved_classes", "initial_config", "function"}`)
	}
	c := &MultiCase{ID: task.ID, Category: "multi_turn_base"}
	if err := c.set(data); err != nil {
		return nil, bad("%v", err)
	}
	vv, err := pyval.Decode(task.Verifier)
	if err != nil {
		return nil, bad(`verifier is not JSON (%v): want {"ground_truth": [[python calls], ...]}`, err)
	}
	ver, ok := vv.(*Dict)
	if !ok {
		return nil, bad(`verifier must be an object {"ground_truth": [[python calls], ...]}`)
	}
	if cat, ok := ver.Value("category").(string); ok && cat != "" {
		c.Category = cat
	}
	if err := c.setGroundTruth(ver.Value("ground_truth")); err != nil {
		return nil, bad("%v", err)
	}
	return c, nil
}

// set reads a case's question, classes, scenarios and functions.
func (c *MultiCase) set(d *Dict) error {
	q, ok := d.Value("question").([]any)
	if !ok || len(q) == 0 {
		return fmt.Errorf(`"question" must be a non-empty list of turns, each a list of {"role","content"} messages`)
	}
	c.Turns = nil
	for i, t := range q {
		st := &Case{}
		if err := st.setQuestion([]any{t}); err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		var msgs []*Dict
		for _, m := range st.Question[0].([]any) {
			msgs = append(msgs, m.(*Dict))
		}
		c.Turns = append(c.Turns, msgs)
	}
	inv, ok := d.Value("involved_classes").([]any)
	if !ok || len(inv) == 0 {
		return fmt.Errorf(`"involved_classes" must be a non-empty list of class names (%v)`, multiturn.ClassNames())
	}
	c.Involved = nil
	for _, v := range inv {
		n, _ := v.(string)
		if !slices.Contains(multiturn.ClassNames(), n) {
			return fmt.Errorf(`involved class %s is not one of %v`, pyval.Repr(v), multiturn.ClassNames())
		}
		c.Involved = append(c.Involved, n)
	}
	switch cfg := d.Value("initial_config").(type) {
	case nil:
		c.InitialConfig = NewDict()
	case *Dict:
		c.InitialConfig = cfg
	default:
		return fmt.Errorf(`"initial_config" must be an object of each class's scenario`)
	}
	st := &Case{}
	if err := st.setFunctions(d.Value("function")); err != nil {
		return err
	}
	c.Functions = st.Functions
	return nil
}

func (c *MultiCase) setGroundTruth(v any) error {
	turns, ok := v.([]any)
	if !ok || len(turns) != len(c.Turns) {
		return fmt.Errorf(`"ground_truth" must be a list of %d turns (one per question turn), each a list of Python calls`, len(c.Turns))
	}
	c.GroundTruth = make([][]string, len(turns))
	for i, t := range turns {
		calls, ok := t.([]any)
		if !ok {
			return fmt.Errorf("ground truth turn %d is not a list of calls", i)
		}
		for _, s := range calls {
			src, ok := s.(string)
			if !ok {
				return fmt.Errorf("ground truth turn %d: %s is not a Python call string", i, pyval.Repr(s))
			}
			if _, err := multiturn.ParseCall(src); err != nil {
				return fmt.Errorf("ground truth turn %d: %w", i, err)
			}
			c.GroundTruth[i] = append(c.GroundTruth[i], src)
		}
	}
	return nil
}

// groundTruthCalls are the ground truth's calls, parsed.
func (c *MultiCase) groundTruthCalls() ([][]multiturn.Call, error) {
	out := make([][]multiturn.Call, len(c.GroundTruth))
	for t, turn := range c.GroundTruth {
		for _, src := range turn {
			call, err := multiturn.ParseCall(src)
			if err != nil {
				return nil, err
			}
			out[t] = append(out[t], call)
		}
	}
	return out, nil
}

// Check plays an answer to the case, each turn's calls in order, on
// fresh instances, and returns BFCL's verdict: valid, or the first
// failure. An answer with fewer turns than the case is force-terminated.
func (c *MultiCase) Check(turns [][]multiturn.Call) (bool, *multiturn.Failure, error) {
	chk, err := multiturn.NewChecker(c.Involved, c.InitialConfig, c.GroundTruth)
	if err != nil {
		return false, nil, err
	}
	for t := 0; t < len(turns) && t < chk.Turns(); t++ {
		for _, call := range turns[t] {
			chk.Run(call)
		}
		chk.EndTurn()
	}
	valid, f := chk.Verdict()
	return valid, f, nil
}

// MultiDomain is the toolcall.Domain of bfcl-multiturn-v1; its oracle
// plays the ground truth (gym.OracleKind).
type MultiDomain struct{}

// Start begins a case: the model's and the ground truth's instances of
// the involved classes, loaded with their scenarios.
func (MultiDomain) Start(_ context.Context, task *gym.Task, _ int64, _ gym.Options) (toolcall.Episode, error) {
	c, err := MultiCaseFromTask(task)
	if err != nil {
		return nil, gym.InfraFault("bad_task", err)
	}
	chk, err := multiturn.NewChecker(c.Involved, c.InitialConfig, c.GroundTruth)
	if err != nil {
		return nil, gym.InfraFault("bad_task", fmt.Errorf("bfcl multi-turn task %q: %w", task.ID, err))
	}
	return &multiEpisode{c: c, tools: c.tools(), check: chk}, nil
}

// Oracle implements gym.OracleKind: each turn's ground-truth calls in one
// step (their positional arguments passed by keyword), then TurnDone.
func (MultiDomain) Oracle(task *gym.Task) (gym.Oracle, error) {
	c, err := MultiCaseFromTask(task)
	if err != nil {
		return nil, err
	}
	chk, err := multiturn.NewChecker(c.Involved, c.InitialConfig, c.GroundTruth)
	if err != nil {
		return nil, err
	}
	var actions []gym.Action
	for t := range c.GroundTruth {
		if calls := chk.GroundTruth(t); len(calls) > 0 {
			act := gym.Action{}
			for i, call := range calls {
				kw := chk.Model().Keywords(call)
				args := "{}"
				if kw.Kwargs != nil {
					args = pyval.Dumps(kw.Kwargs)
				}
				act.Parts = append(act.Parts, gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
					ID: "call_" + strconv.Itoa(t+1) + "_" + strconv.Itoa(i+1), Type: "function",
					Function: gym.FunctionCall{Name: kw.Name, Arguments: args}}})
			}
			actions = append(actions, act)
		}
		actions = append(actions, gym.TextAction(TurnDone))
	}
	return gym.ScriptOracle(actions), nil
}

// multiEpisode plays a case: calls run on the model's instances; a step
// without a call ends the user's turn (BFCL's rule), which is then
// checked and followed by the next turn's message.
type multiEpisode struct {
	c     *MultiCase
	tools []toolcall.Tool
	check *multiturn.Checker
	steps int // calling steps in this turn
}

func (e *multiEpisode) Tools() []toolcall.Tool { return e.tools }
func (e *multiEpisode) Opening() string        { return e.c.TurnText(0) }

// Call runs one call on the model's instances; its result is BFCL's
// executor's text, errors included (the agent reads them as results).
func (e *multiEpisode) Call(_ context.Context, name string, args json.RawMessage) (toolcall.Result, error) {
	v, err := pyval.Decode(args)
	if err != nil {
		return toolcall.Result{}, toolcall.Errorf("Error during execution: the arguments of %s are not JSON: %v", name, err)
	}
	kw, ok := v.(*Dict)
	if !ok {
		kw = NewDict()
	}
	return toolcall.Result{Content: e.check.Run(multiturn.Call{Name: name, Kwargs: kw})}, nil
}

// Say takes the agent's message: in BFCL a step's text is not a call, and
// only a step without calls ends the turn (EndStep).
func (e *multiEpisode) Say(context.Context, string) (string, bool, error) { return "", false, nil }

// EndStep implements toolcall.StepEnder.
func (e *multiEpisode) EndStep(_ context.Context, calls int) (string, bool, string, error) {
	if calls > 0 {
		if e.steps++; e.steps > MaxStepsPerTurn {
			return "", false, "force_terminated", nil
		}
		return "", false, "", nil
	}
	e.check.EndTurn()
	e.steps = 0
	if t := e.check.Turn(); t < e.check.Turns() {
		return e.c.TurnText(t), false, "", nil
	}
	return "", true, "", nil
}

// Verify scores the case: reward 1 when every turn ended and passed
// BFCL's checks. Info: {"category", "valid", "turns", "turns_done", and
// for a failure "error_type", "turn", "detail"}.
func (e *multiEpisode) Verify(context.Context) (float64, gym.Info, error) {
	valid, f := e.check.Verdict()
	info := gym.Info{"category": e.c.Category, "valid": valid, "turns": e.check.Turns(), "turns_done": e.check.Turn()}
	if f != nil {
		info["error_type"], info["turn"], info["detail"] = f.ErrorType, f.Turn, f.Message
	}
	if valid {
		return 1, info, nil
	}
	return 0, info, nil
}

func (e *multiEpisode) Close(context.Context) error { return nil }
