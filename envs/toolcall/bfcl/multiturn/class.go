package multiturn

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// A Class is one of BFCL's multi-turn API classes in Go, behaving as its
// Python original (bfcl_eval/eval_checker/multi_turn_eval/func_source_code)
// does under BFCL's executor: the same results, the same errors, the same
// state after the same calls.
type Class interface {
	// Load is the class's _load_scenario(config, long_context=False):
	// config is the case's initial_config entry for the class (an empty
	// Dict when the case has none). It is called once, on a new instance.
	Load(config *pyval.Dict) error
	// Methods are the class's public methods (the names BFCL maps calls
	// to: not starting with "_"), with their Python signatures.
	Methods() []Method
	// State is vars(instance) without the private attributes (those
	// starting with "_"): the attributes BFCL's state checker compares,
	// as values whose pyval.Eq is Python's == on them (an object with an
	// __eq__ is the Dict of the attributes its __eq__ compares).
	State() *pyval.Dict
}

// Method is one public method: its Python signature (without self) and
// its body in Go.
type Method struct {
	Name   string
	Params []Param
	// Call runs the method on bound arguments, one per Param in order
	// (defaults filled in). It returns the method's return value as a
	// Python value (pyval's types; a str is the text itself), or an error
	// for an exception the method raises, whose Error() is str(exception).
	Call func(args []any) (any, error)
}

// Param is a parameter: its name and, when it has one, its default.
type Param struct {
	Name       string
	HasDefault bool
	Default    any
}

// Req is a required parameter; Opt one with a default.
func Req(name string) Param          { return Param{Name: name} }
func Opt(name string, def any) Param { return Param{Name: name, HasDefault: true, Default: def} }

// Exception is a Python exception raised where BFCL's executor catches
// it: its text is what str(e) gives, and its class (Kind: "TypeError",
// "ValueError", ...), which a ported method's except clause tests; Raise
// leaves it "" where no such clause can meet the exception.
type Exception struct{ Kind, Text string }

func (e *Exception) Error() string { return e.Text }

// Raise makes an Exception from a format.
func Raise(format string, args ...any) error { return &Exception{Text: fmt.Sprintf(format, args...)} }

// raiseKind makes an Exception of class kind ("TypeError", "ValueError",
// ...) from a format.
func raiseKind(kind, format string, args ...any) error {
	return &Exception{Kind: kind, Text: fmt.Sprintf(format, args...)}
}

// isExc is whether err is an Exception of one of the classes: what
// `except (A, B):` catches.
func isExc(err error, kinds ...string) bool {
	e, ok := err.(*Exception)
	return ok && slices.Contains(kinds, e.Kind)
}

// KeyError is str(KeyError(key)): the key's repr.
func KeyError(key any) error { return &Exception{Kind: "KeyError", Text: pyval.Repr(key)} }

// bind binds a call's positional and keyword arguments to m's parameters
// as Python does, with Python's TypeError messages for a method of class
// (qualified "Class.method()", as Python 3.10 and later write them).
func bind(class string, m Method, args []any, kwargs *pyval.Dict) ([]any, error) {
	q := class + "." + m.Name + "()"
	if len(args) > len(m.Params) {
		most, least := len(m.Params)+1, 1
		for _, p := range m.Params {
			if !p.HasDefault {
				least++
			}
		}
		takes := fmt.Sprintf("%d positional argument%s", most, plural(most))
		if least < most {
			takes = fmt.Sprintf("from %d to %d positional arguments", least, most)
		}
		return nil, Raise("%s takes %s but %d were given", q, takes, len(args)+1)
	}
	out := make([]any, len(m.Params))
	set := make([]bool, len(m.Params))
	for i, a := range args {
		out[i], set[i] = a, true
	}
	if kwargs != nil {
		for i, k := range kwargs.Keys {
			j := -1
			for pi, p := range m.Params {
				if p.Name == k {
					j = pi
				}
			}
			if j < 0 {
				return nil, Raise("%s got an unexpected keyword argument %s", q, pyval.Quote(k))
			}
			if set[j] {
				return nil, Raise("%s got multiple values for argument %s", q, pyval.Quote(k))
			}
			out[j], set[j] = kwargs.Vals[i], true
		}
	}
	var missing []string
	for i, p := range m.Params {
		if !set[i] {
			if !p.HasDefault {
				missing = append(missing, pyval.Quote(p.Name))
				continue
			}
			out[i] = pyval.Copy(p.Default)
		}
	}
	if len(missing) > 0 {
		return nil, Raise("%s missing %d required positional argument%s: %s", q, len(missing), plural(len(missing)), joinNames(missing))
	}
	return out, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// joinNames lists names as Python's TypeError does: 'a', 'a' and 'b',
// 'a', 'b', and 'c'.
func joinNames(ns []string) string {
	switch len(ns) {
	case 1:
		return ns[0]
	case 2:
		return ns[0] + " and " + ns[1]
	}
	return strings.Join(ns[:len(ns)-1], ", ") + ", and " + ns[len(ns)-1]
}

// Classes are the classes of the multi-turn categories, by BFCL's class
// name: each makes a new instance.
var classes = map[string]func() Class{}

// register adds a class; each class's file registers itself in an init.
func register(name string, New func() Class) {
	if _, dup := classes[name]; dup {
		panic("multiturn: class " + name + " registered twice")
	}
	classes[name] = New
}

// ClassNames lists the classes there are, sorted.
func ClassNames() []string {
	out := make([]string, 0, len(classes))
	for n := range classes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New makes an instance of a class by its BFCL name, loaded with config
// (nil for none).
func New(name string, config *pyval.Dict) (Class, error) {
	mk, ok := classes[name]
	if !ok {
		return nil, fmt.Errorf("bfcl: unknown multi-turn class %q (known: %s)", name, strings.Join(ClassNames(), ", "))
	}
	c := mk()
	if config == nil {
		config = pyval.NewDict()
	}
	if err := c.Load(pyval.Copy(config).(*pyval.Dict)); err != nil {
		return nil, fmt.Errorf("bfcl: loading %s's initial_config: %w", name, err)
	}
	return c, nil
}
