package rl

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Markers of a judge's reply: the score is the last \boxed{...}; the hint is
// the text between HintStart and HintEnd.
const (
	HintStart = "[HINT_START]"
	HintEnd   = "[HINT_END]"
	// MinHintRunes is the length a hint must exceed, in characters (runes),
	// to be kept: shorter ones ("none", "n/a") carry no direction.
	MinHintRunes = 10
)

// Errors a Vote's Err wraps, for errors.Is.
var (
	ErrNoBox        = errors.New(`no \boxed{...} in the judge's reply`)
	ErrBadBox       = errors.New(`the last \boxed{...} is not 1, 0 or -1`)
	ErrJudgeTimeout = errors.New("the judge did not answer within its timeout")
)

// Vote is one sampled judgement of a step.
type Vote struct {
	// Score is -1, 0 or 1 when Valid; 0 otherwise.
	Score int
	// Hint is the text between [HINT_START] and [HINT_END], trimmed; "" if none.
	Hint string
	// Valid is set when the reply's last \boxed{...} held 1, 0 or -1.
	Valid bool
	// TimedOut is set when every attempt of the call ran past the judge's
	// per-call timeout; Err then wraps ErrJudgeTimeout.
	TimedOut bool
	// Err says why the vote is not valid: ErrNoBox, ErrBadBox, a timeout,
	// an HTTP error.
	Err error
	// Raw is the judge's reply as received ("" when the call failed).
	Raw string
}

// ParseVote reads a judge's reply. The last complete \boxed{...} counts;
// spaces around the value and a leading "+" are accepted ("\boxed{ -1 }",
// "\boxed{+1}", and decimal spellings such as "1.0"), anything that is not
// exactly 1, 0 or -1 is refused (ok false). The hint is the last
// [HINT_START]...[HINT_END] block, trimmed; it is returned even when the
// score is not valid, but SelectHint only takes hints of valid votes.
func ParseVote(text string) (score int, hint string, ok bool) {
	score, err := parseScore(text)
	return score, parseHint(text), err == nil
}

// parseVote is ParseVote with the reason for a refusal.
func parseVote(text string) Vote {
	score, err := parseScore(text)
	return Vote{Score: score, Hint: parseHint(text), Valid: err == nil, Err: err, Raw: text}
}

// numberRE is a plain decimal number: an optional sign, digits, an
// optional fraction.
var numberRE = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?$`)

// parseScore finds the last complete \boxed{...} and reads its value.
func parseScore(text string) (int, error) {
	content, found := lastBox(text)
	if !found {
		return 0, ErrNoBox
	}
	v := strings.TrimSpace(content)
	if !numberRE.MatchString(v) {
		return 0, fmt.Errorf("%w: got %q", ErrBadBox, content)
	}
	f, err := strconv.ParseFloat(strings.TrimPrefix(v, "+"), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: got %q", ErrBadBox, content)
	}
	switch f {
	case 1:
		return 1, nil
	case 0:
		return 0, nil
	case -1:
		return -1, nil
	}
	return 0, fmt.Errorf("%w: got %q", ErrBadBox, content)
}

// lastBox returns the content of the last complete \boxed{...} (braces
// nested inside are kept). "\boxed {x}" with spaces before the brace counts.
func lastBox(text string) (string, bool) {
	const kw = `\boxed`
	var last string
	found := false
	for i := 0; ; {
		j := strings.Index(text[i:], kw)
		if j < 0 {
			break
		}
		k := i + j + len(kw)
		i = k
		for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
			k++
		}
		if k >= len(text) || text[k] != '{' {
			continue
		}
		depth := 0
		for e := k; e < len(text); e++ {
			switch text[e] {
			case '{':
				depth++
			case '}':
				depth--
			}
			if depth == 0 {
				last, found = text[k+1:e], true
				i = e + 1
				break
			}
		}
	}
	return last, found
}

// parseHint returns the last [HINT_START]...[HINT_END] block, trimmed.
func parseHint(text string) string {
	end := strings.LastIndex(text, HintEnd)
	if end < 0 {
		return ""
	}
	start := strings.LastIndex(text[:end], HintStart)
	if start < 0 {
		return ""
	}
	return strings.TrimSpace(text[start+len(HintStart) : end])
}

// SelectHint picks the hint a step's teacher context gets: among the valid
// votes whose hint is longer than MinHintRunes characters, the longest; on
// a tie, the earliest vote's. It returns "" when no vote qualifies.
func SelectHint(votes []Vote) string {
	best, bestLen := "", MinHintRunes
	for _, v := range votes {
		if !v.Valid {
			continue
		}
		h := strings.TrimSpace(v.Hint)
		if n := utf8.RuneCountInString(h); n > bestLen {
			best, bestLen = h, n
		}
	}
	return best
}

// Tally is the aggregate of a step's votes.
type Tally struct {
	// Reward is the step's reward under the Rule that aggregated the
	// votes: by Aggregate, the process reward, the mean score of the valid
	// votes; 0 when none is valid.
	Reward float64 `json:"reward"`
	// Valid, Invalid and Timeouts count the votes; they add up to the
	// number of votes. A timed-out vote is counted in Timeouts only.
	Valid    int `json:"valid"`
	Invalid  int `json:"invalid"`
	Timeouts int `json:"timeouts"`
}

// Rule says how the valid votes of a step become its reward.
type Rule int

// Rules of AggregateBy.
const (
	// MeanVote is the mean score of the valid votes (OpenClaw-RL's process
	// reward r_t): Aggregate's rule.
	MeanVote Rule = iota
	// MajorityVote is the score most valid votes gave, +1, -1 or 0; a tie
	// for the most is 0 (the proxy's rule: a turn's reward is one vote).
	MajorityVote
)

// Aggregate computes the process reward of a step from its votes: the
// mean of the valid ones (AggregateBy with MeanVote).
func Aggregate(votes []Vote) Tally { return AggregateBy(votes, MeanVote) }

// AggregateBy counts a step's votes and combines the valid ones by rule;
// with no valid vote the reward is 0.
func AggregateBy(votes []Vote, rule Rule) Tally {
	var t Tally
	sum := 0
	count := map[int]int{} // valid votes by score
	for _, v := range votes {
		switch {
		case v.Valid:
			t.Valid++
			sum += v.Score
			count[v.Score]++
		case v.TimedOut:
			t.Timeouts++
		default:
			t.Invalid++
		}
	}
	if t.Valid == 0 {
		return t
	}
	switch rule {
	case MajorityVote:
		best, bestN, tie := 0, 0, false
		for _, s := range []int{-1, 0, 1} {
			switch n := count[s]; {
			case n > bestN:
				best, bestN, tie = s, n, false
			case n == bestN && n > 0:
				tie = true
			}
		}
		if !tie {
			t.Reward = float64(best)
		}
	default:
		t.Reward = float64(sum) / float64(t.Valid)
	}
	return t
}
