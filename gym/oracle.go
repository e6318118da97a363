package gym

import "errors"

// Oracle plays one episode of a task with its reference solution, through
// the same actions an agent would send. Demos, `nextstate run --oracle` and
// suite checks use it to show a task is solvable before anyone spends tokens.
//
// Next is given the latest observation and info (the reset's before the
// first step, then each step's) and returns the next action; done reports
// that the oracle has nothing more to send (the episode should have ended).
type Oracle interface {
	Next(obs Observation, info Info) (action Action, done bool, err error)
}

// OracleKind is implemented by a Kind whose tasks carry reference solutions.
// Oracle returns ErrNoOracle (wrapped) for a task without one.
type OracleKind interface {
	Oracle(task *Task) (Oracle, error)
}

// ErrNoOracle: the task has no reference solution.
var ErrNoOracle = errors.New("task has no oracle solution")

// OracleFor returns the oracle of a task from its registered kind.
func OracleFor(task *Task) (Oracle, error) {
	r, err := lookup(task.Env)
	if err != nil {
		return nil, err
	}
	ok, isOK := r.kind.(OracleKind)
	if !isOK {
		return nil, ErrNoOracle
	}
	return ok.Oracle(task)
}

// ScriptOracle is an Oracle that sends a fixed list of actions, whatever it
// observes.
func ScriptOracle(actions []Action) Oracle { return &script{actions: actions} }

type script struct {
	actions []Action
	n       int
}

func (s *script) Next(Observation, Info) (Action, bool, error) {
	if s.n >= len(s.actions) {
		return Action{}, true, nil
	}
	s.n++
	return s.actions[s.n-1], false, nil
}

// OracleOptions is implemented by an Oracle that needs its episode reset
// with certain options (a web page's element list, say); whoever runs the
// oracle creates or resets the session with them.
type OracleOptions interface {
	ResetOptions() Options
}
