// Package bfcl is the Berkeley Function Calling Leaderboard: its
// single-turn categories as the bfcl-v1 kind, scored by BFCL's AST checker
// written in Go, and its multi-turn base category as the
// bfcl-multiturn-v1 kind, played on BFCL's stateful classes in Go
// (package multiturn) and scored by BFCL's state and response checks. A
// single-turn case is a question and some function docs; the model
// answers with function calls (or, where no function fits, with none),
// and the answer is right or wrong by BFCL's rules. Import the package for
// its side effects: it registers both kinds and the "bfcl" suite format.
//
// # Episodes
//
// Each case is a one-shot episode (toolcall.Answerer) of the shared
// tool-call env (package toolcall). The reset observation is the question
// as text (a lone user message is its content; otherwise every message,
// system prompts included, as "role: content") and the tools in the OpenAI
// shape, prepared as BFCL prepares them for function-calling models: a
// note of the language appended to each description, types mapped to JSON
// Schema (dict→object, float→number with format "float", tuple→array,
// any→string), Java and JavaScript parameters declared as strings whose
// descriptions name their language type, and names made OpenAI-safe (dots
// and other characters outside [a-zA-Z0-9_-] become "_"; a clash gets a
// _2 suffix). The first action is the answer: its tool calls, or a message
// when it has none. Nothing is run and the episode terminates. Calls are
// mapped back to BFCL's names, by the offered name or BFCL's own.
//
// The verifier's reward is 1 when the checker accepts the answer, else 0;
// its info is {"category", "valid", "reason", "error_type", "detail"}:
// reason is one of the Reason constants, error_type is BFCL's own name for
// the failure, detail says what was wrong.
//
// # The checker
//
// Case.Check follows BFCL's ast_checker, and a differential run against
// BFCL's Python over the whole data and hundreds of thousands of mutated
// answers agreed on every verdict and error type:
//
//   - Decoding: an answer without calls fails (decoder_failed), as do
//     arguments that are not JSON; arguments that are JSON but not an
//     object are output in the wrong format (wrong_output_format). Empty
//     arguments are an empty object. A bad answer is the answer's failure,
//     never an error.
//   - irrelevance passes when the answer makes no call (a call that does
//     not decode counts as none, as in BFCL); live_relevance when it makes
//     one.
//   - parallel and parallel_multiple need as many calls as expected
//     (wrong_count), matched in any order (cannot_find_match, whose detail
//     gives each call's own failure); multiple needs exactly one call, of
//     the expected function; the rest exactly one call.
//   - A call is checked like BFCL's simple function checker: the name
//     (wrong_func_name); the required parameters (missing_required); every
//     parameter given must be declared and listed by the ground truth
//     (unexpected_param); its type (type_error; type_error_nested for a
//     list element), where an int is accepted for a float but not a float
//     for an int, and a value of another type passes as a variable name
//     when the acceptable values are of that type; its value, one of the
//     acceptable values: strings compare after dropping spaces and
//     ,./-_*^, lower-casing, and turning ' into " (value_error_string);
//     lists likewise element by element (value_error_list); dicts key by
//     key against acceptable dicts (value_error_dict_key,
//     value_error_dict_value); lists of dicts in order; anything else by
//     equality (value_mismatch). A parameter of the ground truth that the
//     call leaves out fails unless its acceptable values include ""
//     (missing_optional).
//   - Java and JavaScript arguments must be strings (type_error_java,
//     type_error_js) of source text, parsed by the declared type as BFCL
//     parses them: "42" an integer, "42L" a long, "1.5f" a float,
//     "new int[]{1, 2}", "new ArrayList<>(Arrays.asList(\"a\"))",
//     "new HashMap<String, Object>() {{ put(\"k\", 1); }}", "[1, 2]",
//     "{key: 'value'}"; text that does not parse stays a string.
//   - Where BFCL's Python would raise (a type its tables lack, a malformed
//     ground truth), the answer fails with checker_exception.
//
// The reference answer (Case.Reference, the kind's oracle) is each
// parameter's first acceptable value ("" skipped; parameters the function
// does not declare left out), written as source text for Java and
// JavaScript; for irrelevance, a message. It passes every case of the
// data except three simple_java cases no answer can pass under BFCL's own
// rules (simple_java_36 and _65: elements of an ArrayList of "any" always
// parse to strings while the ground truth holds numbers and booleans;
// simple_java_64: a ground-truth dict value that is a string, not a list).
//
// # Task format
//
// A bfcl-v1 task's Data is {"question": BFCL's list of turns, "function":
// the function docs, "language": "python", "java" or "javascript"}; its
// Verifier is {"category", "ground_truth"} (no ground truth for
// irrelevance); its label "category" names the category. The suite format
// "bfcl" reads BFCL's data folder as it is published: files
// BFCL_v<N>_<category>.json (JSON Lines despite the name) beside
// possible_answer/ with the ground truth under the same names, paired by
// id (or by line, as BFCL does, where ids differ). So
//
//	nextstate serve --tasks path/to/bfcl_eval/data
//
// serves every case, its id BFCL's. Loaded categories are simple_python,
// simple_java, simple_javascript, multiple, parallel, parallel_multiple,
// irrelevance and their live_ versions (and v3's simple), and
// multi_turn_base as bfcl-multiturn-v1 tasks (below). The other
// multi-turn categories (long_context, miss_func, miss_param) and the
// agentic ones (memory, web_search) are skipped, and listed in
// Dataset.Skipped. The built-in tasks bfcl-smoke-1 to -6 are a small
// suite written for nextstate in the same format (the smoke folder):
// simple Python, multiple, parallel, irrelevance, Java and JavaScript.
//
// # Multi-turn cases (bfcl-multiturn-v1)
//
// A multi_turn_base case is a user's turns over stateful APIs: the
// classes of package multiturn (file system, math, messaging, posting,
// tickets, trading, travel booking, vehicle control), loaded with the
// case's initial_config. The reset observation is the first turn's
// message and the tools are the involved classes' function docs (from
// multi_turn_func_doc/, less the case's excluded_function), prepared as
// for single-turn cases. Each call runs on the classes at once and its
// result is the text BFCL's executor gives, errors included: the kind is
// toolcall.Config.Unchecked, so unknown names and arguments that do not
// match a schema reach the class, which answers as BFCL's Python does. A
// step without a call ends the turn (as BFCL's inference loop does; a
// step's text is otherwise ignored): the turn is checked and the next
// turn's message follows, until the last turn terminates the episode. A
// turn with more than MaxStepsPerTurn (20) calling steps is BFCL's
// force-quit: the episode is truncated. Every turn is played, whatever
// the earlier turns' verdicts, as in BFCL.
//
// The verifier is BFCL's multi_turn_checker (multiturn.Checker): after
// each turn, the ground truth's calls of that turn run on their own
// instances; a turn whose ground truth calls something needs calls of
// the model, the classes' states must be equal, and every result of the
// ground truth's calls must be among the model's results of this and the
// earlier turns. The reward is 1 when every turn passes; the info has
// "valid", "turns", "turns_done" and, for a failure, BFCL's "error_type"
// (multi_turn:instance_state_mismatch, ...), the "turn" and a "detail".
// The kind's step rule (gym.Spec.StepRule, the process reward of `train
// --judge rule`) reads what the classes answered: a step whose calls all
// ran is 1, a step with a failed call -1 (its hint quotes the failure), a
// step without calls 0; it does not read the ground truth.
// The oracle plays the ground truth, each turn's calls in one step then
// the message TurnDone. MultiSmokeTasks are two cases written for
// nextstate (the smoke_multi folder). Task Data is {"question",
// "involved_classes", "initial_config", "function"}, Verifier
// {"category", "ground_truth"}. Score does not read multi-turn answers
// (their category is not scored); SelfCheck plays the ground truth of
// every multi-turn case through the checker.
//
// # Scoring files
//
// Load reads a data folder; ReadAnswers reads model outputs, one
// {"id", "result"} per line, the result in BFCL's result shape (a list of
// {"function name": arguments}), as OpenAI tool calls, or as a string of
// either (another string is a message); Score checks them per category,
// counting answers for unknown ids and cases without an answer (a wrong
// answer); SelfCheck scores the reference answers. A category none of
// whose cases has an answer is not scored (CategoryScore.NotScored, as
// BFCL leaves out categories without results): shown as "not scored" with
// the reason, and left out of the overall accuracy and the category mean.
// That is always so for live_relevance in the self-check, since BFCL
// publishes no ground truth for it (any call passes) and so it has no
// reference answer. `nextstate bench bfcl
// --data DIR [--answers FILE] [--json]` prints that report. Python-syntax
// results of BFCL's prompting models ("[f(x=1)]") are not parsed: they
// score as messages.
//
// The kind has no settings. Episodes are independent and cheap (no
// sandbox); Case values are safe for concurrent Check calls.
package bfcl
