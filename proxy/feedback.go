package proxy

import (
	"context"
	"regexp"
	"strings"

	"github.com/nextstate-rl/nextstate/rl"
)

// FeedbackJudgeModel names the feedback judge in logs and reports.
const FeedbackJudgeModel = "feedback-rules"

// FeedbackJudge is a programmatic judge of a user's next message, an
// rl.Scorer for Config.Judge when no LLM judge is at hand (simulated
// users, tests, a baseline): one valid vote read from the words of the
// next state alone, as a judge model reads them, never from the answer.
//
//   - A next state that asks the agent to ignore its instructions or to
//     reveal secrets (its system prompt, a password) is flagged: the turn
//     goes to the quarantine.
//   - One that opens with thanks ("thanks", "thank you", "great",
//     "perfect") votes +1.
//   - A correction votes −1 and its requests are the hint: the sentences
//     that begin with "please" (on-policy distillation's teacher reads
//     them after rl.HintHeader).
//   - A re-query ("not what I wanted", "ask again", "try again") votes −1
//     without a hint.
//   - Anything else (a new question, a tool result) votes 0.
//
// It hears what users say plainly, as the simulated users of package
// simuser do; irony, praise in the middle of a complaint or a correction
// without "please" need a judge model (rl.Judge on the chat prompt).
type FeedbackJudge struct{}

var (
	unsafeNextState = regexp.MustCompile(`(?i)\bignore (all |your |the |any )?(previous |prior )?instructions\b|\b(admin|root) password\b|\bsystem prompt\b`)
	thanksOpening   = regexp.MustCompile(`(?i)^\W*(thanks|thank you|great|perfect)\b`)
	requery         = regexp.MustCompile(`(?i)\bnot what i (wanted|asked)|\bask again\b|\btry again\b`)
	sentenceEnd     = regexp.MustCompile(`[.!?]+(\s+|$)`)
)

// Score implements rl.Scorer.
func (FeedbackJudge) Score(_ context.Context, in rl.JudgeInput) (rl.Verdict, error) {
	next := strings.TrimSpace(in.NextState)
	vote := rl.Vote{Valid: true}
	switch {
	case in.NextRole != "" && in.NextRole != "user":
		// a tool result: not the user's feedback
	case unsafeNextState.MatchString(next):
		vote.Score = -1
		vote.Raw = FlagMarker + " the next message asks the agent to ignore its instructions or to reveal a secret"
	case thanksOpening.MatchString(next):
		vote.Score = 1
	default:
		if hint := pleaseSentences(next); hint != "" {
			vote.Score, vote.Hint = -1, hint
		} else if requery.MatchString(next) {
			vote.Score = -1
		}
	}
	votes := []rl.Vote{vote}
	return rl.Verdict{Votes: votes, Tally: rl.Aggregate(votes), Hint: rl.SelectHint(votes)}, nil
}

// pleaseSentences returns the sentences of s that begin with "please",
// joined by a space.
func pleaseSentences(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		start := 0
		for _, loc := range append(sentenceEnd.FindAllStringIndex(line, -1), []int{len(line), len(line)}) {
			sent := strings.TrimSpace(line[start:loc[1]])
			start = loc[1]
			if len(sent) > 7 && strings.EqualFold(sent[:7], "please ") {
				out = append(out, sent)
			}
		}
	}
	return strings.Join(out, " ")
}
