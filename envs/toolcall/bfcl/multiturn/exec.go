package multiturn

import (
	"fmt"
	"slices"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Instances are one run's instances of a case's involved classes, as
// BFCL's executor keeps them across the turns of a case: the model's run
// and the ground truth's are two Instances.
type Instances struct {
	names   []string         // the involved classes, in the case's order
	byName  map[string]Class // by class name
	methods map[string]owned // by method name: a later class's wins, as in BFCL
}

type owned struct {
	class  string
	method Method
}

// NewInstances makes and loads the involved classes, each with its entry
// of initialConfig (a *pyval.Dict keyed by class name; nil for none).
// MathAPI, stateless in BFCL, is not loaded with a config.
func NewInstances(involved []string, initialConfig *pyval.Dict) (*Instances, error) {
	in := &Instances{names: slices.Clone(involved), byName: map[string]Class{}, methods: map[string]owned{}}
	for _, name := range involved {
		var cfg *pyval.Dict
		if initialConfig != nil && name != "MathAPI" {
			if v, ok := initialConfig.Get(name); ok {
				d, ok := v.(*pyval.Dict)
				if !ok {
					return nil, fmt.Errorf("bfcl: initial_config.%s is a %T, not an object", name, v)
				}
				cfg = d
			}
		}
		c, err := New(name, cfg)
		if err != nil {
			return nil, err
		}
		in.byName[name] = c
		for _, m := range c.Methods() {
			in.methods[m.Name] = owned{class: name, method: m}
		}
	}
	return in, nil
}

// Class returns an instance by class name.
func (in *Instances) Class(name string) Class { return in.byName[name] }

// forbidden are the method names BFCL's executor refuses to evaluate.
var forbidden = []string{"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"}

// Run executes one call and returns its result as BFCL's executor records
// it: a str as it is, a dict as json.dumps writes it, anything else as
// str() writes it; an exception as "Error during execution: " and its
// text. A name that is no method of the involved classes is Python's
// NameError.
func (in *Instances) Run(c Call) string {
	if slices.Contains(forbidden, c.Name) {
		return fmt.Sprintf("Error during execution: Function call %s is not allowed.", c.Name)
	}
	o, ok := in.methods[c.Name]
	if !ok {
		return fmt.Sprintf("Error during execution: name %s is not defined", pyval.Quote(c.Name))
	}
	args, err := bind(o.class, o.method, c.Args, c.Kwargs)
	if err != nil {
		return "Error during execution: " + err.Error()
	}
	res, err := o.method.Call(args)
	if err != nil {
		return "Error during execution: " + err.Error()
	}
	return Render(res)
}

// Execute runs calls in order and returns their results (Run).
func (in *Instances) Execute(calls []Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = in.Run(c)
	}
	return out
}

// Render is a method's return value as BFCL's executor records it.
func Render(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case *pyval.Dict:
		return pyval.Dumps(t)
	}
	return pyval.Str(v)
}

// SameState is BFCL's state checker: for each involved class, the
// attributes of gt's instance (its State) compared with model's by
// Python's ==. It returns the first class whose state differs, with the
// attributes that differ, or "" when every state matches.
func SameState(model, gt *Instances) (class string, differ []string) {
	for _, name := range gt.names {
		ms, gs := model.byName[name].State(), gt.byName[name].State()
		for i, k := range gs.Keys {
			if v, ok := ms.Get(k); !ok || !pyval.Eq(v, gs.Vals[i]) {
				differ = append(differ, k)
			}
		}
		if len(differ) > 0 {
			return name, differ
		}
	}
	return "", nil
}
