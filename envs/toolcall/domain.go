package toolcall

import (
	"context"
	"encoding/json"

	"github.com/nextstate-rl/nextstate/gym"
)

// Domain starts episodes of one family of tool-call tasks: tau2 retail or
// telecom, BFCL, the code interpreter. NewKind turns a Domain into a gym
// kind; the shared Env does the rest (parsing actions, checking calls
// against the tools' schemas, counting the agent's bad calls, truncating).
//
// A Domain that also implements Configurer is configured by each Manager
// through its kind, and one that implements gym.OracleKind gives its
// tasks' reference solutions through it.
type Domain interface {
	// Start begins an episode of task (its Data and Verifier as the domain
	// defines them). An error fails the reset; label it with gym.InfraFault
	// or gym.AgentFault (an unlabelled error is the infrastructure's).
	Start(ctx context.Context, task *gym.Task, seed int64, opts gym.Options) (Episode, error)
}

// Configurer is implemented by a Domain that needs settings or resources
// (a user simulator, a sandbox backend): gym.Configurer for a domain. The
// kind's Configure calls it once per Manager, with the Manager's Settings,
// and the Manager's envs of the kind start their episodes in the Instance
// it returns, not in the registered Domain, which stays as it was.
type Configurer interface {
	Configure(ctx context.Context, s gym.Settings) (Instance, error)
}

// Instance is a Domain configured by one Manager (Configurer): Start
// begins the Manager's episodes, and Shutdown releases what the Instance
// holds, once, at the Manager's Shutdown (gym.Instance).
type Instance interface {
	Domain
	Shutdown(ctx context.Context) error
}

// Episode is one episode's state in a domain. Its methods are called from
// one goroutine at a time.
type Episode interface {
	// Tools are the tools offered in this episode, listed in the reset
	// observation. Call is only called with a tool of this list, with
	// arguments that passed its schema (unless the kind's Config is
	// Unchecked).
	Tools() []Tool
	// Opening is the text of the reset observation: the instruction, a
	// policy, the user's first message.
	Opening() string
	// Call runs one tool call. A *ToolError (see Errorf) is a failure the
	// agent reads as the call's result (an order that does not exist); any
	// other error ends the session as the infrastructure's fault.
	Call(ctx context.Context, name string, args json.RawMessage) (Result, error)
	// Say delivers the agent's message to the user and returns the user's
	// reply; done reports the conversation is over (the episode
	// terminates).
	Say(ctx context.Context, message string) (reply string, done bool, err error)
	// Verify scores the episode after it terminated (gym.Verifier).
	Verify(ctx context.Context) (float64, gym.Info, error)
	// Close releases what the episode holds (a sandbox, a user simulator).
	Close(ctx context.Context) error
}

// Result is what a tool call returned. End ends the episode after this step
// (a transfer to a human agent, a final answer tool).
type Result struct {
	Content string
	End     bool
}

// Answerer is implemented by one-shot episodes (BFCL single-turn): the
// agent's first action is its whole answer. The Env hands it the calls and
// message without running or checking them, and terminates the episode.
type Answerer interface {
	Answer(calls []gym.ToolCall, message string)
}

// Restarter is implemented by episodes that can start their Env's next
// episode in place, keeping what is costly to make (a sandbox): Env.Reset
// calls Restart instead of Close and Domain.Start. Restart ends the
// episode it is called on whether or not it succeeds; on an error it has
// released everything, as a failed Start does.
type Restarter interface {
	Restart(ctx context.Context, task *gym.Task, seed int64, opts gym.Options) (Episode, error)
}

// StepEnder is implemented by episodes whose turns end by the agent's
// steps rather than by its messages (BFCL's multi-turn cases: a step
// without a call ends the user's turn, and too many steps in one turn end
// the case). EndStep is called after each step, once its calls have run
// and its message (if any) has gone to Say, with the number of calls the
// step made. reply, when not empty, is added to the observation (the next
// user turn); done terminates the episode; cut, when not empty, truncates
// it with that reason.
type StepEnder interface {
	EndStep(ctx context.Context, calls int) (reply string, done bool, cut string, err error)
}
