// Package multiturn is BFCL's multi-turn API classes in Go (GorillaFileSystem,
// MathAPI, MessageAPI, TwitterAPI, TicketAPI, TradingBot, TravelAPI,
// VehicleControlAPI), their executor and their state checker, behaving as
// BFCL's Python (bfcl_eval/eval_checker/multi_turn_eval) does.
//
// A Class is one class: Load is its _load_scenario, Methods its public
// methods with their Python signatures, State the attributes BFCL's state
// checker compares. Instances are one run's instances of a case's
// involved classes; Run executes a Call (ParseCall reads the ground
// truth's Python call strings) as BFCL's execute_multi_turn_func_call
// does: the arguments bound as Python binds them (its TypeError texts), a
// str result as it is, a dict as json.dumps writes it, anything else as
// str() writes it, an exception as "Error during execution: " and its
// text. SameState is the state checker. Random is Python's random.Random,
// for the classes that draw ids and readings from their scenario's seed.
//
// The classes are one file each (filesystem, mathapi, message, posting,
// ticket, trading, travel, vehicle; the larger with an _ops file, and
// MathAPI with the part of mpmath and Decimal it reaches); Python's
// operations they share are in pyops.go (subscripting, iteration, in,
// comparisons, AttributeError), pykeys.go (dict keys of any hashable
// value), pynum.go (int(), float(), arithmetic with Python's errors) and
// pystr.go (strptime).
//
// # Deviations, on purpose
//
// TwitterAPI.post_tweet's default mentions list is one per instance, not
// one per Python process (in BFCL a mention() in one case changes the
// tweets of the later cases of the process). Sets print in their order
// under PYTHONHASHSEED=0. TradingBot formats its timestamps in UTC (Python
// uses the local timezone). MathAPI's float powers are correctly rounded,
// where glibc's pow is not always. Each class's doc says the rest.
//
// # Fidelity
//
// testdata/record.py runs BFCL's own classes over every case of
// multi_turn_base, its ground truth and mutations of it (calls dropped,
// repeated, given other values, wrong types, missing or unknown
// arguments, unknown names), and records every call's result and every
// turn's state verdict; TestDifferential replays them on the Go classes
// and wants every result text and every verdict to be BFCL's.
package multiturn
