package agent

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

// DemoTurn is one turn of a demonstration: the prompt an Agent would have
// sent before the action (chat messages, as sent) and the reply that
// makes the Agent take it (the action's text; tool calls as Qwen's
// <tool_call> blocks).
type DemoTurn struct {
	Messages json.RawMessage
	Tools    json.RawMessage
	Response string
}

// Demonstration turns a recorded episode (an oracle's, `run --oracle`'s
// trajectories) into the turns an Agent with cfg's prompt settings would
// have had, had its model replied with the recorded actions: the same
// system prompt, first message, history, tool messages and context
// budget as Play. A model trained on them (supervised fine-tuning) learns
// to act as the demonstrator in the prompts it will be given. Steps the
// env never took (Step 0: refused actions) are left out; tools are the
// episode's (ToolsFor of its reset).
func Demonstration(cfg Config, reset gym.ResetResult, steps []rundir.Step) ([]DemoTurn, error) {
	if cfg.SystemPrompt == "" {
		cfg.SystemPrompt = DefaultSystemPrompt
	}
	if cfg.KeepHead == 0 {
		cfg.KeepHead = 0.3
	}
	if cfg.MaxImages == 0 {
		cfg.MaxImages = 3
	}
	tools, err := ToolsFor(reset)
	if err != nil {
		return nil, err
	}
	var hist []message
	if !cfg.NoSystemPrompt {
		hist = append(hist, newMessage("system", cfg.SystemPrompt))
	}
	hist = append(hist, firstMessage(reset))
	var out []DemoTurn
	turn := 0
	for _, s := range steps {
		if s.Step == 0 {
			continue
		}
		turn++
		var r reply
		var calls []gym.ToolCall
		for _, p := range s.Action.Parts {
			switch {
			case p.Type == gym.PartToolCall && p.ToolCall != nil:
				calls = append(calls, *p.ToolCall)
			case p.Type == gym.PartText:
				r.Content += p.Text
			}
		}
		if len(calls) > 0 {
			r.Content = strings.TrimLeft(r.Content+hermes(calls), "\n")
		}
		if r.Content == "" && len(calls) == 0 {
			return nil, errors.New("agent: a demonstration step whose action has neither text nor tool calls")
		}
		d := decide(r, turn)
		w := fit(hist, len(tools), cfg.ContextBudget, cfg.KeepHead, cfg.MaxImages, 1)
		out = append(out, DemoTurn{Messages: encodeMessages(w.msgs, false), Tools: tools, Response: d.response})
		hist = append(hist, d.assistant)
		hist = append(hist, observe(renumber(s.Observation, calls, d.calls), d.calls, d.plain)...)
	}
	return out, nil
}

// renumber returns obs with its tool results' call ids changed from the
// recorded calls' ids to the ids the Agent gives the same calls (the
// demonstrator's ids are its own, an oracle's "oracle_1"), so that each
// result is shown as the answer to its call, as in play.
func renumber(obs gym.Observation, recorded, calls []gym.ToolCall) gym.Observation {
	ids := map[string]string{}
	for i, c := range recorded {
		if i < len(calls) && c.ID != "" {
			ids[c.ID] = calls[i].ID
		}
	}
	out := gym.Observation{Parts: make([]gym.Part, len(obs.Parts))}
	for i, p := range obs.Parts {
		if p.Type == gym.PartToolResult && p.ToolResult != nil {
			if id, ok := ids[p.ToolResult.CallID]; ok {
				r := *p.ToolResult
				r.CallID = id
				p.ToolResult = &r
			}
		}
		out.Parts[i] = p
	}
	return out
}
