package rl

import (
	"encoding/json"
	"fmt"

	"github.com/nextstate-rl/nextstate/gym"
)

// episode is what the worker keeps of an episode until it is complete.
type episode struct {
	key            TrajectoryKey
	run, env, task string
	prompt         string     // the judge's prompt kind
	instruction    string     // from the reset event
	tooLong        bool       // over maxSteps: steps dropped, no samples
	resetText      string     // the first observation, as text
	steps          []keptStep // the step and step.refused events, in order
	history        []Turn     // the judge's view of the steps so far
	lastImage      *gym.Blob  // the latest screen, the next step's "before"
}

// keptStep is a step of an open episode as the follower keeps it: its
// JSON as stored (with seq 0, as the store encodes it) and its seq.
type keptStep struct {
	seq  int64
	body string
}

// events decodes an episode's steps.
func (ep *episode) events() ([]*gym.Event, error) {
	out := make([]*gym.Event, len(ep.steps))
	for i, k := range ep.steps {
		ev := new(gym.Event)
		if err := json.Unmarshal([]byte(k.body), ev); err != nil {
			return nil, fmt.Errorf("decoding step event %d: %w", k.seq, err)
		}
		ev.Seq = k.seq
		out[i] = ev
	}
	return out, nil
}

// handle follows one committed event; body is its JSON as stored, or "".
func (g *Follower) handle(ev *gym.Event, body string) {
	if ev.Seq <= g.cursor {
		return
	}
	g.cursor = ev.Seq
	switch ev.Type {
	case gym.EventReset:
		if ep := g.episodes[ev.Session]; ep != nil {
			g.end(ep, Outcome{Truncated: true}) // reset before the episode ended
		}
		ep := g.open(ev)
		ep.instruction = ev.Instruction
		if ev.Observation != nil {
			ep.resetText = ObservationText(*ev.Observation)
			ep.lastImage = ObservationImage(*ev.Observation)
		}
		ep.prompt = promptKind(ev.Env, ev.Info)
	case gym.EventStep, gym.EventRefused:
		ep := g.episodes[ev.Session]
		if ep == nil || ep.key.Episode != ev.Episode {
			// An episode whose reset was not seen: no instruction, no
			// first observation.
			if ep != nil {
				g.end(ep, Outcome{Truncated: true})
			}
			ep = g.open(ev)
			ep.prompt = promptKind(ev.Env, nil)
		}
		g.step(ep, ev, body)
		if ev.Type == gym.EventStep && (ev.Terminated || ev.Truncated) {
			g.end(ep, OutcomeOf(ev))
		}
	case gym.EventSessionClosed:
		if ep := g.episodes[ev.Session]; ep != nil {
			g.end(ep, closedOutcome(ev))
		}
	}
}

func (g *Follower) open(ev *gym.Event) *episode {
	ep := &episode{key: TrajectoryKey{Session: ev.Session, Episode: ev.Episode}, run: ev.Run, env: ev.Env, task: ev.Task}
	g.episodes[ev.Session] = ep
	return ep
}

// promptKind is the judge's prompt kind for an episode of env: what the
// kind declares (gym.Spec.JudgePrompt); for a kind that declares none,
// KindToolCall when the reset info lists "tools", else KindDefault.
func promptKind(env string, resetInfo gym.Info) string {
	if spec, err := gym.Lookup(env); err == nil && spec.JudgePrompt != "" {
		return spec.JudgePrompt
	}
	if _, ok := resetInfo[gym.InfoTools]; ok {
		return KindToolCall
	}
	return KindDefault
}

// step records a step (its JSON: body, or encoded here) and submits it to
// the judge. A refused action is not judged: the gym's refusal is its
// verdict (RefusedProcess).
func (g *Follower) step(ep *episode, ev *gym.Event, body string) {
	if ep.tooLong {
		return
	}
	if len(ep.steps) >= g.maxSteps {
		g.log.Warn("signals: an episode ran past the steps kept for samples; it gives none", "session", ep.key.Session,
			"episode", ep.key.Episode, "max_steps", g.maxSteps)
		ep.tooLong, ep.steps, ep.history, ep.lastImage = true, nil, nil, nil
		return
	}
	if body == "" {
		b, err := json.Marshal(ev)
		if err != nil {
			g.log.Error("signals: encoding a step event; its episode gives no samples", "session", ep.key.Session,
				"episode", ep.key.Episode, "seq", ev.Seq, "err", err)
			ep.tooLong, ep.steps, ep.history, ep.lastImage = true, nil, nil, nil
			return
		}
		body = string(b)
	}
	ep.steps = append(ep.steps, keptStep{seq: ev.Seq, body: body})
	if !g.judgesEpisode(ep) {
		return // texts are made when the samples are, if at all
	}
	action, next := stepTexts(ev)
	var after *gym.Blob
	if ev.Observation != nil {
		after = ObservationImage(*ev.Observation)
	}
	code := ExitCode(ev.Info)
	if ev.Type == gym.EventStep && judges(ev) {
		ref := StepRefOf(ev)
		in := JudgeInput{Kind: ep.prompt, Env: ep.env, Instruction: ep.instruction, History: ep.history[:len(ep.history):len(ep.history)],
			Step: ev.Step, Action: action, NextState: next, ExitCode: code, Before: ep.lastImage, After: after}
		g.tracker.Submitted(ref)
		g.judger.Submit(ref, in)
	}
	ep.history = append(ep.history, Turn{Action: action, NextState: next, ExitCode: code})
	if after != nil {
		ep.lastImage = after
	}
}

// judgesEpisode says whether an episode's steps go to the judge: there is
// one, and the episode's kind and run are selected.
func (g *Follower) judgesEpisode(ep *episode) bool {
	return g.judger != nil && (g.kinds == nil || g.kinds[ep.env]) && (g.runs == nil || g.runs[ep.run])
}

// judges says whether a step of a judged episode goes to the judge: it has
// a step id (the judge's reward event is keyed by it) and the
// infrastructure did not fail it (its trajectory is masked).
func judges(ev *gym.Event) bool {
	return (ev.Failure == nil || ev.Failure.Fault != gym.FaultInfra) && ev.StepID != ""
}

// stepTexts returns a step's action and next state as text; a refused
// action's next state is its refusal (RefusalText).
func stepTexts(ev *gym.Event) (action, next string) {
	if ev.Action != nil {
		action = ActionText(*ev.Action)
	}
	switch {
	case ev.Type == gym.EventRefused:
		next = RefusalText(ev.Failure)
	case ev.Observation != nil:
		next = ObservationText(*ev.Observation)
	}
	return action, next
}

// RefusedProcess is the process reward of a refused action's turn: the
// gym refused it before the env saw it (it did not match the kind's action
// schema), a verdict as certain as a judge's unanimous "bad".
const RefusedProcess = -1.0

// RefusalText is a refused action's next state as text: what the gym
// answered.
func RefusalText(f *gym.Failure) string {
	msg := "the action does not match the env's action schema"
	if f != nil && f.Message != "" {
		msg = f.Message
	}
	return "The gym refused the action: " + msg
}

// end reports an episode's outcome; the Tracker completes the trajectory
// now or when its last judge answers.
func (g *Follower) end(ep *episode, o Outcome) {
	if g.episodes[ep.key.Session] == ep {
		delete(g.episodes, ep.key.Session)
	}
	g.finMu.Lock()
	g.finished[ep.key] = ep
	g.finMu.Unlock()
	g.tracker.SetOutcome(ep.key, o)
}

// closedOutcome is the outcome of an episode its session's close cut off:
// truncated; the infrastructure's fault when the env failed or the server
// shut down or died (server_restart), the agent's when it closed the
// session or left it idle.
func closedOutcome(ev *gym.Event) Outcome {
	o := Outcome{Truncated: true, Failure: ev.Failure}
	if o.Failure == nil {
		switch ev.Reason {
		case gym.CloseShutdown, gym.CloseInfra, gym.CloseCreate, gym.CloseServerRestart:
			o.Failure = &gym.Failure{Fault: gym.FaultInfra, Reason: ev.Reason, Message: "the session closed before the episode ended: " + ev.Reason}
		}
	}
	return o
}
