package rl

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/gym"
)

// textContextLimit and textContextSteps bound the earlier steps of the
// context built for a step that came without a gym.Turn's messages: their
// characters and their number; past either the oldest are left out (the
// instruction and the first observation stay).
const (
	textContextLimit = 32000
	textContextSteps = 32
)

// complete is the Tracker's onComplete: a trajectory's outcome and judges
// are all in, so its samples are built and stored.
func (g *Follower) complete(st *TrajectoryState) {
	g.finMu.Lock()
	ep := g.finished[st.Key]
	delete(g.finished, st.Key)
	g.finMu.Unlock()
	if ep == nil || len(ep.steps) == 0 {
		if ep != nil && ep.tooLong {
			g.trajectory("too_long", 0)
		}
		return // an episode with no step (or too many) has nothing to train on
	}
	steps, err := ep.events()
	if err != nil {
		g.log.Error("signals: building the samples of a trajectory", "session", ep.key.Session, "episode", ep.key.Episode,
			"task", ep.task, "err", err)
		g.trajectory("error", 0)
		return
	}
	turns := policyTurns(ep, steps)
	ApplyJudgements(turns, st)
	mix, ok := g.suiteMix[ep.task]
	if !ok {
		mix = g.mix
	}
	var status Status
	t := SampleTrajectory{Run: ep.run, Env: ep.env, Task: ep.task, Session: ep.key.Session, Episode: ep.key.Episode}
	first, last, err := g.st.AppendSamples(context.Background(), t, func(group, index int) ([][]byte, error) {
		samples, err := BuildSamples(Rollout{GroupIndex: group, Index: index, Session: ep.key.Session,
			Episode: ep.key.Episode, Env: ep.env, Task: ep.task, Outcome: st.Outcome, Turns: turns}, mix)
		if err != nil {
			return nil, err
		}
		out := make([][]byte, len(samples))
		for i := range samples {
			if out[i], err = json.Marshal(&samples[i]); err != nil {
				return nil, err
			}
		}
		if len(samples) > 0 {
			status = samples[0].Status
		}
		return out, nil
	})
	if err != nil {
		g.log.Error("signals: building the samples of a trajectory", "session", ep.key.Session, "episode", ep.key.Episode,
			"task", ep.task, "err", err)
		g.trajectory("error", 0)
		return
	}
	if last > 0 {
		g.trajectory(string(status), int(last-first+1))
	}
}

// trajectory reports a complete trajectory to OnTrajectory.
func (g *Follower) trajectory(status string, samples int) {
	if g.onTrajectory != nil {
		g.onTrajectory(status, samples)
	}
}

// policyTurns makes one PolicyTurn per step of an episode: from the
// step's gym.Turn when the agent sent one (token ids and log-probs only
// when it sent both prompt and response ids, log-probs only one per
// response token), else from the record as text. A context the Turn does
// not give as messages is built from the record: the instruction with the
// first observation, then the earlier actions (assistant) and next states
// (user), at most textContextSteps of them; a response it does not give is
// the action's text.
func policyTurns(ep *episode, steps []*gym.Event) []PolicyTurn {
	turns := make([]PolicyTurn, len(steps))
	for i, ev := range steps {
		pt := PolicyTurn{Step: ev.Step, StepID: ev.StepID, Failure: ev.Failure}
		if ev.Type == gym.EventRefused {
			pt.Refused, pt.Process, pt.Judged = true, RefusedProcess, true
		}
		if t := ev.Turn; t != nil {
			pt.Messages = chatMessages(t.Messages)
			pt.Response, pt.WeightVersion = t.Response, t.WeightVersion
			if len(t.PromptIDs) > 0 && len(t.ResponseIDs) > 0 {
				pt.PromptIDs, pt.ResponseIDs = t.PromptIDs, t.ResponseIDs
				if len(t.LogProbs) == len(t.ResponseIDs) {
					pt.LogProbs = t.LogProbs
				}
			}
		}
		if len(pt.Messages) == 0 {
			pt.Messages = textContext(ep, steps, i) // also beside token ids, for readers of the text
		}
		if pt.Response == "" && len(pt.ResponseIDs) == 0 {
			pt.Response = actionResponse(ev)
		}
		turns[i] = pt
	}
	return turns
}

// actionResponse is the response of a step that came without one: its
// action as text, or as JSON when it has no text.
func actionResponse(ev *gym.Event) string {
	if ev.Action == nil {
		return "{}"
	}
	if t := ActionText(*ev.Action); t != "" {
		return t
	}
	b, _ := json.Marshal(ev.Action)
	return string(b)
}

// textContext builds the context of step i from the record: the
// instruction with the first observation, then each earlier step's action
// (assistant) and next state (user), the oldest left out past
// textContextLimit.
func textContext(ep *episode, steps []*gym.Event, i int) []Message {
	first := ep.instruction
	if ep.resetText != "" {
		if first != "" {
			first += "\n\n"
		}
		first += ep.resetText
	}
	// The earlier steps, newest first, as far as the bounds allow.
	var shown [][2]string
	size := 0
	for j := i - 1; j >= 0 && len(shown) < textContextSteps; j-- {
		a, o := stepTexts(steps[j])
		n := utf8.RuneCountInString(a) + utf8.RuneCountInString(o)
		if size+n > textContextLimit {
			break
		}
		size += n
		shown = append(shown, [2]string{a, o})
	}
	if left := i - len(shown); left > 0 {
		first += fmt.Sprintf("\n\n[%d earlier steps left out]", left)
	}
	msgs := make([]Message, 1, 1+2*len(shown))
	msgs[0] = Message{Role: "user", Content: first}
	for k := len(shown) - 1; k >= 0; k-- {
		msgs = append(msgs, Message{Role: "assistant", Content: shown[k][0]}, Message{Role: "user", Content: shown[k][1]})
	}
	return msgs
}

// chatMessages reads a Turn's messages (FromChat). Messages that are
// not an array of chat messages give nil (the context is then built from
// the record).
func chatMessages(raw json.RawMessage) []Message {
	if len(raw) == 0 {
		return nil
	}
	var in []ChatMessage
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil
	}
	return FromChat(in)
}
