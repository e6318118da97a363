package tau2

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// Conversation is an episode's conversation with its user, the part of a
// tau2 episode every domain shares: the mode, the simulated user, the
// agent's messages and why the conversation ended. Its methods are called
// from one goroutine at a time (its episode's).
type Conversation struct {
	Mode     string     // ModeSolo or ModeSimulated
	User     *Simulator // nil in solo mode
	First    string     // the user's answer to FirstAgentMessage (simulated)
	Messages []string   // the agent's messages to the user
	Ended    string     // why the conversation ended
}

// UserMode reads the reset option "user": "solo" or "simulated", by
// default simulated when a user simulator is configured (cfg not nil),
// else solo. A bad value, or simulated without a simulator, is the
// agent's fault; kind names the env kind in errors.
func UserMode(kind string, cfg *UserConfig, opts gym.Options) (string, error) {
	mode := ModeSolo
	if cfg != nil {
		mode = ModeSimulated
	}
	if v, ok := opts["user"]; ok {
		switch v {
		case ModeSolo, ModeSimulated:
			mode = v.(string)
		default:
			return "", gym.AgentFault("bad_option", fmt.Errorf(`%s: reset option "user" is %v; want "solo" or "simulated"`, kind, v))
		}
	}
	if mode == ModeSimulated && cfg == nil {
		return "", gym.AgentFault("bad_option", fmt.Errorf(`%s: reset option "user": "simulated" needs a user simulator, and none is configured: `+
			`start the server with --set %s=MODEL (and %s=URL for an endpoint other than OpenAI's), or use "user": "solo"`,
			kind, SettingUserModel, SettingUserBaseURL))
	}
	return mode, nil
}

// Start starts the simulated user (in simulated mode; in solo mode it does
// nothing): it answers the agent's greeting, in First.
func (c *Conversation) Start(ctx context.Context, cfg *UserConfig, kind string, scenario UserScenario, seed int64, tools *UserTools) error {
	if c.Mode != ModeSimulated {
		return nil
	}
	c.User = NewSimulator(*cfg, kind, scenario, seed, tools)
	first, err := c.User.Start(ctx)
	c.First = first
	return err
}

// Greeting is how an opening in simulated mode ends: the agent's greeting
// and the user's answer.
func (c *Conversation) Greeting() string {
	return "You greeted the user with \"" + FirstAgentMessage + "\" The user replied:\n\n" + c.First
}

// Say delivers the agent's message (toolcall.Episode). Solo: the message
// ends the conversation. Simulated: the user answers; the conversation is
// over when the reply holds ###STOP###, ###TRANSFER### or
// ###OUT-OF-SCOPE###, or the agent's message holds ###STOP###.
func (c *Conversation) Say(ctx context.Context, message string) (string, bool, error) {
	c.Messages = append(c.Messages, message)
	if c.Mode == ModeSolo {
		c.Ended = "agent_message"
		return "", true, nil
	}
	if strings.Contains(message, StopToken) {
		c.Ended = "agent_stop"
		return "", true, nil
	}
	reply, err := c.User.Say(ctx, message)
	if err != nil {
		return "", false, err
	}
	if tok := StopTokenIn(reply); tok != "" {
		c.Ended = "user " + tok
		return reply, true, nil
	}
	return reply, false, nil
}

// Info is what the verifier info says of the conversation.
func (c *Conversation) Info() gym.Info {
	return gym.Info{"user": c.Mode, "ended": c.Ended, "agent_messages": len(c.Messages)}
}

// Component is a reward component a domain computes itself (DB,
// ENV_ASSERTION): its reward and what the verifier info says of it.
type Component struct {
	Reward float64
	Info   any
}

// Reward is tau2's reward for a conversation that ended: the product of
// the components c's reward_basis names. db and env are the domain's DB
// and ENV_ASSERTION components (env nil: not evaluated, which the info
// says); COMMUNICATE (the agent's messages, Communicated) and ACTION (the
// calls, ActionsMatched) are computed here; NL_ASSERTION needs an LLM
// judge: it is not evaluated, and left out of the product. It fills info's
// "reward_basis", "db", "env_assertions", "communicate", "action",
// "nl_assertions" and "reward_breakdown".
func Reward(c *Criteria, info gym.Info, db Component, env *Component, messages []string, calls []Call) float64 {
	info["reward_basis"] = c.RewardBasis
	in := func(b string) bool { return slices.Contains(c.RewardBasis, b) }
	reward := 1.0
	breakdown := map[string]float64{}
	take := func(basis, key string, r float64, detail any) {
		if detail != nil {
			info[key] = detail
		}
		if in(basis) {
			reward *= r
			breakdown[basis] = r
		}
	}
	take(BasisDB, "db", db.Reward, db.Info)
	if env == nil {
		if in(BasisEnvAssertion) {
			info["env_assertions"] = "not_evaluated"
		}
	} else {
		take(BasisEnvAssertion, "env_assertions", env.Reward, env.Info)
	}
	if in(BasisCommunicate) {
		r, checks := Communicated(messages, c.CommunicateInfo)
		take(BasisCommunicate, "communicate", r, checks)
	}
	if in(BasisAction) {
		r, checks := ActionsMatched(calls, c.Actions)
		take(BasisAction, "action", r, checks)
	}
	if in(BasisNLAssertion) {
		info["nl_assertions"] = "not_evaluated"
		info["nl_assertions_note"] = "NL_ASSERTION needs an LLM judge; the reward leaves it out"
	}
	info["reward_breakdown"] = breakdown
	return reward
}
