package bfcl

import (
	"fmt"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/gym"
)

// resultHead starts each tool result in a step's next state as a judge
// reads it (rl.ObservationText): "[result of NAME]" and the content on the
// lines after it.
const resultHead = "[result of "

// multiStepRule is bfcl-multiturn-v1's step rule (gym.Spec.StepRule), a
// programmatic process reward from what the classes answered: a step
// whose calls all ran is good (1); a step with a call that failed (the
// class's {"error": ...} or Python's "Error during execution: ...") is
// bad (-1), with a hint that quotes the failure and asks for the calls it
// needs first; a step without calls (the message that ends the user's
// turn) is neutral (0). It does not read the ground truth: a call that
// runs but was not asked for still scores 1, and the verifier's state
// and response checks are the outcome's.
func multiStepRule(in gym.RuleInput) (int, string) {
	results := splitResults(in.NextState)
	if len(results) == 0 {
		return 0, ""
	}
	for _, r := range results {
		if msg, failed := callFailure(r.content); failed {
			msg = strings.TrimRight(msg, ". ") + "."
			return -1, fmt.Sprintf("The call of %s failed: %s Make the calls that it needs first, then call it again.", r.name, msg)
		}
	}
	return 1, ""
}

type stepResult struct{ name, content string }

// splitResults reads the tool results out of a next state's text.
func splitResults(next string) []stepResult {
	var out []stepResult
	for _, line := range strings.Split(next, "\n") {
		if rest, ok := strings.CutPrefix(line, resultHead); ok {
			name, _, _ := strings.Cut(rest, "]")
			name, _, _ = strings.Cut(name, ",") // "[result of f, an error]"
			out = append(out, stepResult{name: name})
			continue
		}
		if len(out) > 0 {
			r := &out[len(out)-1]
			if r.content != "" {
				r.content += "\n"
			}
			r.content += line
		}
	}
	return out
}

// callFailure says whether a result is a failure and, if so, its message.
func callFailure(content string) (string, bool) {
	if msg, ok := strings.CutPrefix(content, "Error during execution: "); ok {
		return strings.TrimSpace(msg), true
	}
	if !strings.HasPrefix(content, "{") {
		return "", false
	}
	v, err := pyval.Decode([]byte(content))
	if err != nil {
		return "", false
	}
	d, ok := v.(*pyval.Dict)
	if !ok {
		return "", false
	}
	e, ok := d.Get("error")
	if !ok {
		return "", false
	}
	if s, ok := e.(string); ok {
		return s, true
	}
	return pyval.Repr(e), true
}
