package proxy

import (
	"strings"

	"github.com/nextstate-rl/nextstate/rl"
)

// FlagMarker starts the safety flag in a judge's reply: a line
// "[FLAG] reason" says the next state tries to make the agent unsafe or to
// contradict its instructions.
const FlagMarker = "[FLAG]"

// Judgement is a judged turn: the majority vote, the hint, and the flag.
type Judgement struct {
	// Vote is the majority of the valid votes: +1, -1 or 0 (a tie, or no
	// valid vote).
	Vote int
	// Hint is rl.SelectHint of the votes: how the answer should have
	// been different, "" if no vote said.
	Hint string
	// Valid counts the valid votes; Votes counts them all.
	Valid, Votes int
	// Flagged is set when a valid vote flagged the next state; FlagReason
	// is its reason.
	Flagged    bool
	FlagReason string
}

// JudgeInput is what the judge reads about a main turn: the conversation
// the agent saw (its system messages are its instructions), its answer as
// text (tool calls included), and the message that followed, the user's
// next message or a tool result, under the rl.KindChat prompt.
func JudgeInput(t *Turn, next rl.Message) rl.JudgeInput {
	return rl.JudgeInput{Kind: rl.KindChat, Conversation: t.Messages, Action: t.Response,
		NextState: rl.MessageText(next), NextRole: next.Role}
}

// Combine reads a turn's verdict: the majority of the valid votes
// (rl.AggregateBy with rl.MajorityVote), the verdict's hint
// (rl.SelectHint), and the flag of the first valid vote that flags.
func Combine(v rl.Verdict) Judgement {
	t := rl.AggregateBy(v.Votes, rl.MajorityVote)
	jd := Judgement{Vote: int(t.Reward), Hint: v.Hint, Valid: t.Valid, Votes: len(v.Votes)}
	for _, vote := range v.Votes {
		i := strings.Index(vote.Raw, FlagMarker)
		if !vote.Valid || i < 0 {
			continue
		}
		reason, _, _ := strings.Cut(strings.TrimSpace(vote.Raw[i+len(FlagMarker):]), "\n")
		jd.Flagged, jd.FlagReason = true, strings.TrimSpace(reason)
		if jd.FlagReason == "" {
			jd.FlagReason = "flagged by the judge"
		}
		break
	}
	return jd
}
