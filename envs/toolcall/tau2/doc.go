// Package tau2 holds what tau2-bench's domains share, for the kinds that
// port them (envs/toolcall/retail, envs/toolcall/telecom): the task format
// (ReadEntries, UserScenario, Criteria with its gold actions and env
// assertions, InitialState, SplitIndex), tau2's COMMUNICATE and ACTION
// checks (Communicated, ActionsMatched), the simulated user (Simulator,
// configured by the tau2.* settings through UserConfigOf, with tools of
// its own for a domain of dual control), Python's renderings of values as
// tau2's tools return them (AppendString, AppendFloat and Repr as
// json.dumps and repr write them, Lower as str.lower, Quote as a str's
// repr), and the folder formats: each domain registers its own
// (RegisterDomain), and a folder of tau2 tasks of any other domain fails
// to load with a message that names the domain and the supported ones.
//
// Everything here is safe for concurrent use but Simulator, which is used
// by one goroutine at a time (its episode's).
package tau2
