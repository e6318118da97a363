package multiturn

import (
	"fmt"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// BFCL's multi-turn error types.
const (
	ErrEmptyTurn        = "multi_turn:empty_turn_model_response"
	ErrStateMismatch    = "multi_turn:instance_state_mismatch"
	ErrResponseMismatch = "multi_turn:execution_response_mismatch"
	ErrIrrelevance      = "multi_turn:irrelevance_error:decoder_success"
	ErrForceTerminated  = "multi_turn:force_terminated"
)

// Failure is why a case failed, as BFCL's multi_turn_checker says it.
type Failure struct {
	Turn      int    // from 0
	ErrorType string // one of the Err constants
	Message   string
}

// Checker is BFCL's multi_turn_checker, run while a case is played: the
// model's calls run live on its Instances (their results are what the
// model reads), and when a turn ends the ground truth's calls of that
// turn run on instances of their own, and the turn is checked as BFCL
// checks it: a turn whose ground truth makes calls needs calls of the
// model; the classes' states must then be equal; and the results of the
// ground truth's calls must all be among the model's results of this and
// the earlier turns (as a multiset, in any order). A turn whose ground
// truth makes no call must get none. The first failure is kept.
type Checker struct {
	model, truth *Instances
	gt           [][]Call
	turn         int
	calls        int      // the model's calls this turn
	results      []string // the model's results, every turn so far
	fail         *Failure
}

// NewChecker parses the ground truth (a list of turns, each a list of
// Python calls) and makes the two runs' instances.
func NewChecker(involved []string, config *pyval.Dict, groundTruth [][]string) (*Checker, error) {
	c := &Checker{gt: make([][]Call, len(groundTruth))}
	for t, turn := range groundTruth {
		for _, src := range turn {
			call, err := ParseCall(src)
			if err != nil {
				return nil, fmt.Errorf("ground truth of turn %d: %w", t, err)
			}
			c.gt[t] = append(c.gt[t], call)
		}
	}
	var err error
	if c.model, err = NewInstances(involved, config); err != nil {
		return nil, err
	}
	if c.truth, err = NewInstances(involved, config); err != nil {
		return nil, err
	}
	return c, nil
}

// Turns is the number of turns; Turn the current one, from 0 (Turns once
// every turn has ended).
func (c *Checker) Turns() int { return len(c.gt) }
func (c *Checker) Turn() int  { return c.turn }

// GroundTruth returns turn t's ground-truth calls.
func (c *Checker) GroundTruth(t int) []Call { return c.gt[t] }

// Run executes a model call of the current turn and returns its result.
func (c *Checker) Run(call Call) string {
	r := c.model.Run(call)
	c.calls++
	c.results = append(c.results, r)
	return r
}

// EndTurn checks the current turn and moves to the next; it returns the
// case's first failure so far (nil while every turn passed).
func (c *Checker) EndTurn() *Failure {
	if c.turn >= len(c.gt) {
		return c.fail
	}
	t := c.turn
	gtResults := c.truth.Execute(c.gt[t])
	calls := c.calls
	c.turn++
	c.calls = 0
	if c.fail != nil {
		return c.fail
	}
	if len(c.gt[t]) == 0 {
		if calls > 0 {
			c.fail = &Failure{Turn: t, ErrorType: ErrIrrelevance,
				Message: fmt.Sprintf("Model outputs valid function calls when it should not for turn %d.", t)}
		}
		return c.fail
	}
	if calls == 0 {
		c.fail = &Failure{Turn: t, ErrorType: ErrEmptyTurn, Message: fmt.Sprintf("Model response list is empty for turn %d", t)}
		return c.fail
	}
	if class, differ := SameState(c.model, c.truth); class != "" {
		c.fail = &Failure{Turn: t, ErrorType: ErrStateMismatch, Message: fmt.Sprintf(
			"Model instance for %s does not match the state with ground truth instance (differing: %s).", class, strings.Join(differ, ", "))}
		return c.fail
	}
	if missing := missingFrom(gtResults, c.results); len(missing) > 0 {
		c.fail = &Failure{Turn: t, ErrorType: ErrResponseMismatch, Message: fmt.Sprintf(
			"Model response execution results so far does not contain all the ground truth response execution results for turn %d (missing: %s).",
			t, pyval.Repr(anyList(missing)))}
	}
	return c.fail
}

// Verdict is the case's result: valid once every turn has ended and
// passed; a case that ended before its last turn did (BFCL's force-quit,
// an episode's limit) is force-terminated.
func (c *Checker) Verdict() (bool, *Failure) {
	if c.fail == nil && c.turn < len(c.gt) {
		return false, &Failure{Turn: c.turn, ErrorType: ErrForceTerminated, Message: fmt.Sprintf(
			"The case ended in turn %d of %d: the model was force-terminated or the episode cut off.", c.turn, len(c.gt))}
	}
	return c.fail == nil, c.fail
}

// missingFrom is BFCL's unordered subsequence check: the items of want
// that have no match left in have (each item of have matches once).
func missingFrom(want, have []string) []string {
	left := map[string]int{}
	for _, h := range have {
		left[h]++
	}
	var missing []string
	for _, w := range want {
		if left[w] > 0 {
			left[w]--
			continue
		}
		missing = append(missing, w)
	}
	return missing
}

func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Keywords returns the call with its positional arguments passed by
// keyword, named by the signature of the method it goes to (an oracle
// sends the ground truth's calls as JSON objects). A call of no method is
// returned as it is.
func (in *Instances) Keywords(c Call) Call {
	o, ok := in.methods[c.Name]
	if !ok || len(c.Args) == 0 || len(c.Args) > len(o.method.Params) {
		return c
	}
	kw := pyval.NewDict()
	for i, a := range c.Args {
		kw.Set(o.method.Params[i].Name, a)
	}
	if c.Kwargs != nil {
		for i, k := range c.Kwargs.Keys {
			kw.Set(k, c.Kwargs.Vals[i])
		}
	}
	return Call{Name: c.Name, Kwargs: kw}
}

// Model returns the instances the model's calls run on.
func (c *Checker) Model() *Instances { return c.model }
