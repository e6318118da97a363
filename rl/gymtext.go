package rl

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// ActionText writes an action as a judge reads it: text parts as they
// are, a tool call as name(arguments), a GUI action as its JSON, other
// parts as a bracketed note. Parts are joined by newlines.
func ActionText(a gym.Action) string {
	lines := make([]string, 0, len(a.Parts))
	for _, p := range a.Parts {
		switch {
		case p.Type == gym.PartText:
			lines = append(lines, p.Text)
		case p.ToolCall != nil:
			lines = append(lines, p.ToolCall.Function.Name+"("+p.ToolCall.Function.Arguments+")")
		case p.GUIAction != nil:
			b, _ := json.Marshal(p.GUIAction)
			lines = append(lines, string(b))
		default:
			lines = append(lines, partNote(p))
		}
	}
	return strings.Join(lines, "\n")
}

// ObservationText writes an observation as a judge reads it: text parts as
// they are, a tool result as its content (marked when it is an error), an
// image or a file as a bracketed note. Parts are joined by newlines.
func ObservationText(o gym.Observation) string {
	lines := make([]string, 0, len(o.Parts))
	for _, p := range o.Parts {
		switch {
		case p.Type == gym.PartText:
			lines = append(lines, p.Text)
		case p.ToolResult != nil:
			r := p.ToolResult
			head := "[result"
			if r.Name != "" {
				head += " of " + r.Name
			}
			if r.IsError {
				head += ", an error"
			}
			lines = append(lines, head+"]\n"+r.Content)
		default:
			lines = append(lines, partNote(p))
		}
	}
	return strings.Join(lines, "\n")
}

func partNote(p gym.Part) string {
	switch {
	case p.Image != nil:
		if p.Image.Width > 0 {
			return fmt.Sprintf("[image %dx%d]", p.Image.Width, p.Image.Height)
		}
		return "[image]"
	case p.File != nil:
		return fmt.Sprintf("[file %s]", p.File.Path)
	}
	return "[" + string(p.Type) + "]"
}

// ObservationImage returns the last image of an observation (a GUI env's
// screenshot), or nil.
func ObservationImage(o gym.Observation) *gym.Blob {
	for i := len(o.Parts) - 1; i >= 0; i-- {
		if img := o.Parts[i].Image; img != nil {
			return img
		}
	}
	return nil
}

// ExitCode reads a command's exit status from a step's info: its
// "exit_code", else that of the last entry of "calls" that has one (as
// terminal-v1 records them); nil when there is none.
func ExitCode(info gym.Info) *int {
	if c := intOf(info["exit_code"]); c != nil {
		return c
	}
	var calls []map[string]any
	switch v := info["calls"].(type) {
	case []gym.Info:
		for _, c := range v {
			calls = append(calls, c)
		}
	case []map[string]any:
		calls = v
	case []any: // after a JSON round trip
		for _, c := range v {
			if m, ok := c.(map[string]any); ok {
				calls = append(calls, m)
			}
		}
	}
	for i := len(calls) - 1; i >= 0; i-- {
		if c := intOf(calls[i]["exit_code"]); c != nil {
			return c
		}
	}
	return nil
}

func intOf(v any) *int {
	var n int
	switch x := v.(type) {
	case int:
		n = x
	case int64:
		n = int(x)
	case float64:
		if x != math.Trunc(x) {
			return nil
		}
		n = int(x)
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			return nil
		}
		n = int(i)
	default:
		return nil
	}
	return &n
}

// StepRefOf names the step of a recorded step event, for Judger.Submit.
func StepRefOf(ev *gym.Event) StepRef {
	return StepRef{Session: ev.Session, Episode: ev.Episode, Step: ev.Step, StepID: ev.StepID,
		Run: ev.Run, Env: ev.Env, Task: ev.Task}
}

// OutcomeOf reads how an episode ended from its last step event:
// terminated, truncated, failure, and the reward: the step's (the
// verifier's) when the episode terminated, 0 when it did not, so a
// truncated episode's outcome is 0 whatever its last step's reward (an
// infrastructure failure masks it anyway).
func OutcomeOf(ev *gym.Event) Outcome {
	o := Outcome{Terminated: ev.Terminated, Truncated: ev.Truncated, Failure: ev.Failure}
	if ev.Reward != nil && ev.Terminated {
		o.Reward = *ev.Reward
	}
	return o
}
