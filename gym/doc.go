// Package gym is nextstate's core: the environment contract, the registry
// of env kinds, tasks and suites, and the sessions that drive envs and record
// every step. It does no I/O of its own; the server wires it to a store and
// to the network, and env kinds plug into it by name.
//
// # Writing an env kind
//
// A kind implements Kind (Spec and New) and registers itself from its
// package's init with Register, as database/sql drivers do; the binary
// imports the package for that side effect. Spec.Name carries a version
// ("guess-v1"): a changed contract is a new name. Spec.ActionSchema and
// Spec.ObservationSchema are JSON Schemas of {"parts": [...]}, most simply
// built with PartsSchema, which also gives the action check a native fast
// path. Spec.JudgePrompt names the prompt an LLM judge of the kind's steps
// uses (terminal, gui, swe, toolcall), so that no package downstream lists
// kinds by name. New returns an Env, which implements Reset, Step and Close:
//
//   - Reset(ctx, task, seed, options) starts an episode. The same task, seed
//     and actions must give the same observations (gymtest checks it).
//   - Step(ctx, action) applies a schema-checked action and returns the next
//     state as a Transition: Terminated when the task reached an end state,
//     Truncated when it was cut off. A mistake the agent can recover from is
//     an observation, not an error; an error ends the episode and is labelled
//     with AgentFault or InfraFault (unlabelled errors are the
//     infrastructure's).
//   - Close releases everything, once.
//
// Optional interfaces add capabilities, found by type assertion: an Env
// that implements Verifier is judged after its terminating step, from inputs
// the agent never saw; a Kind that implements Configurer gets a Manager's
// Settings once, before the Manager's first session of the kind, and
// returns an Instance that holds what they opened (a sandbox backend, say),
// makes that Manager's envs in place of Kind.New, and is shut down at the
// Manager's Shutdown. The registered Kind stays stateless, as a
// database/sql Driver does with its DriverContext's Connectors: two
// Managers of one process configure a kind each with their own Settings
// and share nothing of it (Manager.Instance returns a Manager's). Every
// kind's tests run gym/gymtest.CheckKind.
//
// # Sessions
//
// A Manager owns the live sessions. Create admits a session under
// Config.MaxSessions (over it, a *CapacityError with a retry hint, at once),
// makes its env, and runs the first reset. A Session serializes its
// requests; enforces the step limit and the step and episode deadlines
// (Limits: the task's, else the kind's, else the Manager's); answers a
// retried step id from its record instead of running the action twice;
// validates actions against the kind's schema before the env sees them; runs
// the verifier on termination; and appends every reset and step to the
// Recorder before returning it. Sessions idle past Config.IdleTTL are
// closed by the Manager's reaper; Shutdown closes them all. Every close is
// recorded with a reason (CloseClient, CloseIdle, CloseShutdown,
// CloseInfra, CloseCreate). A panicking env fails only its own session.
//
// Concurrency: Manager and Session methods are safe for concurrent use.
// Lock order: a Session's mutex may be held while taking the Manager's,
// never the reverse. Env methods are never called concurrently for one Env.
//
// # Events
//
// Each reset, step, late reward and session end is an Event; a reset event
// carries the task's instruction and the first observation, as its answer
// gave them to the agent, so a reader of the record (package rl's
// Follower) needs nothing but events. A Recorder
// (the server's store) assigns each a global, increasing Seq and makes it
// durable before Append returns, so an acknowledged step survives a crash.
// A Recorder that can read a step back (StepReader, as the store can) lets
// a session keep only its last few answers in memory: the retry of an
// older step id is answered from the record (Event.StepResult).
// Rewards that arrive later (a judge's vote) are EventReward events keyed by
// the step's id, added with Manager.AddReward. The record keeps the
// verifier's details (a verified step's Info "verifier", a verifier reward
// event's Info); Event.Public is the copy without them, and it is the only
// form in which events may reach an agent: the step's answer is built from
// it, and the server passes every event it sends through it. A session the
// record shows open after its server died is closed by the next server on
// the store, with reason CloseServerRestart.
//
// # Tasks
//
// A Task names its kind, its instruction, its Limits, the kind's own Data,
// and the Verifier's inputs, which are never sent to agents (Task.Public).
// LoadSuite reads suites from JSON, YAML or JSON Lines files and from
// directories, with strict fields; kinds with a folder format of their own
// (Terminal-Bench's) hook in with RegisterTaskFormat. A Catalog indexes the
// kinds' built-in tasks and the loaded suites by id.
package gym
