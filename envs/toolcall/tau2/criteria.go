package tau2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/gym"
)

// Criteria is tau2's evaluation_criteria, a task's gym.Task.Verifier.
type Criteria struct {
	Actions         []Action       `json:"actions"`
	EnvAssertions   []EnvAssertion `json:"env_assertions"`
	CommunicateInfo []string       `json:"communicate_info"`
	NLAssertions    []string       `json:"nl_assertions"`
	RewardBasis     []string       `json:"reward_basis"`
	// NoActions: actions and env_assertions are both null (or absent):
	// tau2 then skips the environment check (its DB and ENV_ASSERTION
	// components are 1).
	NoActions bool `json:"-"`
}

// Action is a gold action: a tool call the task expects, of the agent
// (Requestor "assistant") or of the user ("user").
type Action struct {
	ActionID  string          `json:"action_id,omitempty"`
	Requestor string          `json:"requestor,omitempty"` // "assistant" (the default) or "user"
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Info      *string         `json:"info,omitempty"`
	// CompareArgs are the arguments the ACTION check compares; nil: all of
	// the agent's call's arguments, empty: the name alone.
	CompareArgs []string `json:"compare_args"`
}

// ByUser reports whether the action is the user's.
func (a *Action) ByUser() bool { return a.Requestor == RequestorUser }

// EnvCall is tau2's EnvFunctionCall: a function of the agent's toolkit
// (EnvType "assistant") or of the user's ("user"), by name, tools and
// helpers alike, as initialization_actions and env_assertions name them.
type EnvCall struct {
	EnvType   string          `json:"env_type"`
	FuncName  string          `json:"func_name"`
	Arguments json.RawMessage `json:"arguments"`
}

// EnvAssertion is an env_assertions entry: an EnvCall whose boolean
// result must equal AssertValue (default true).
type EnvAssertion struct {
	EnvCall
	AssertValue bool    `json:"assert_value"`
	Message     *string `json:"message"`
}

// UnmarshalJSON reads an assertion, assert_value defaulting to true.
func (a *EnvAssertion) UnmarshalJSON(b []byte) error {
	type plain EnvAssertion
	p := plain{AssertValue: true}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*a = EnvAssertion(p)
	return nil
}

// Requestors and env types.
const (
	RequestorAssistant = "assistant"
	RequestorUser      = "user"
)

// Reward components of reward_basis.
const (
	BasisDB           = "DB"
	BasisEnvAssertion = "ENV_ASSERTION"
	BasisNLAssertion  = "NL_ASSERTION"
	BasisAction       = "ACTION"
	BasisCommunicate  = "COMMUNICATE"
)

var bases = []string{BasisDB, BasisEnvAssertion, BasisNLAssertion, BasisAction, BasisCommunicate}

// ParseCriteria reads an evaluation_criteria and checks what every domain
// needs: each reward basis known, each gold action's arguments an object,
// each requestor and env type "assistant" or "user". A missing
// reward_basis is tau2's default, DB and COMMUNICATE. The domain checks the
// names against its tools.
func ParseCriteria(b []byte) (*Criteria, error) {
	var c Criteria
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("evaluation_criteria: %w", err)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal(b, &raw)
	isNull := func(k string) bool {
		v, ok := raw[k]
		return !ok || string(bytes.TrimSpace(v)) == "null"
	}
	c.NoActions = isNull("actions") && isNull("env_assertions")
	if _, ok := raw["reward_basis"]; !ok {
		c.RewardBasis = []string{BasisDB, BasisCommunicate}
	}
	for _, r := range c.RewardBasis {
		if !slices.Contains(bases, r) {
			return nil, fmt.Errorf("evaluation_criteria: reward_basis %q; want %s", r, strings.Join(bases, ", "))
		}
	}
	for i := range c.Actions {
		a := &c.Actions[i]
		if a.Requestor == "" {
			a.Requestor = RequestorAssistant
		}
		if a.Requestor != RequestorAssistant && a.Requestor != RequestorUser {
			return nil, fmt.Errorf("evaluation_criteria: action %d (%s): requestor %q; want %q or %q", i, a.ActionID, a.Requestor, RequestorAssistant, RequestorUser)
		}
		if !isObject(a.Arguments) {
			return nil, fmt.Errorf("evaluation_criteria: action %d (%s): arguments must be a JSON object", i, a.ActionID)
		}
	}
	for i, a := range c.EnvAssertions {
		if err := a.check(); err != nil {
			return nil, fmt.Errorf("evaluation_criteria: env_assertions[%d]: %w", i, err)
		}
	}
	return &c, nil
}

func (c *EnvCall) check() error {
	if c.EnvType != RequestorAssistant && c.EnvType != RequestorUser {
		return fmt.Errorf("env_type %q; want %q or %q", c.EnvType, RequestorAssistant, RequestorUser)
	}
	if c.FuncName == "" {
		return fmt.Errorf("no func_name")
	}
	if len(c.Arguments) == 0 {
		c.Arguments = json.RawMessage("{}")
	}
	if !isObject(c.Arguments) {
		return fmt.Errorf("%s: arguments must be a JSON object", c.FuncName)
	}
	return nil
}

func isObject(b json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(b, &obj) == nil && obj != nil
}

// Call is a tool call of the conversation, the agent's or the user's, as
// the ACTION check reads it.
type Call struct {
	Name string
	Args json.RawMessage
}

// Communicated is tau2's COMMUNICATE check: 1 if every communicate_info
// string, lower-cased, is in some message of the agent's, lower-cased with
// its commas removed.
func Communicated(messages, want []string) (float64, []gym.Info) {
	reward := 1.0
	var checks []gym.Info
	for _, s := range want {
		met := false
		for _, m := range messages {
			if strings.Contains(strings.ReplaceAll(pyval.Lower(m), ",", ""), pyval.Lower(s)) {
				met = true
				break
			}
		}
		if !met {
			reward = 0
		}
		checks = append(checks, gym.Info{"info": s, "met": met})
	}
	return reward, checks
}

// ActionsMatched is tau2's ACTION check: 1 if every gold action matches a
// call of the conversation (the agent's or the user's): the same tool, and
// equal values for the arguments compare_args names (all of the call's
// arguments when it names none).
func ActionsMatched(calls []Call, gold []Action) (float64, []gym.Info) {
	reward := 1.0
	var checks []gym.Info
	for _, a := range gold {
		met := false
		for _, call := range calls {
			if call.Name == a.Name && ArgsMatch(a, call.Args) {
				met = true
				break
			}
		}
		if !met {
			reward = 0
		}
		checks = append(checks, gym.Info{"action_id": a.ActionID, "name": a.Name, "met": met})
	}
	return reward, checks
}

// ArgsMatch compares a call's arguments with a gold action's on the keys
// compare_args names, or on the call's own keys when it names none; values
// compare as Python compares decoded JSON (1 equals 1.0).
func ArgsMatch(a Action, callArgs json.RawMessage) bool {
	var got, want map[string]any
	if json.Unmarshal(callArgs, &got) != nil || json.Unmarshal(a.Arguments, &want) != nil {
		return false
	}
	keys := a.CompareArgs
	if keys == nil {
		for k := range got {
			keys = append(keys, k)
		}
	}
	pick := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for _, k := range keys {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	return reflect.DeepEqual(pick(got), pick(want))
}

// ToolTransfer is the tool of every tau2 domain that hands the user to a
// human agent; it ends an episode.
const ToolTransfer = "transfer_to_human_agents"

// OracleActions are a task's gold actions as tool calls, one per step
// (the user's too: in solo mode the agent has the user's tools), then a
// closing message that states the communicate_info, unless the last gold
// action is a transfer to a human.
func OracleActions(c *Criteria) []gym.Action {
	var out []gym.Action
	for i, a := range c.Actions {
		out = append(out, gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			ID: fmt.Sprintf("oracle_%d", i+1), Type: "function",
			Function: gym.FunctionCall{Name: a.Name, Arguments: string(a.Arguments)},
		}}}})
	}
	if n := len(c.Actions); n > 0 && c.Actions[n-1].Name == ToolTransfer {
		return out
	}
	msg := "Everything you asked for is done."
	if len(c.CommunicateInfo) > 0 {
		msg += " For your information: " + strings.Join(c.CommunicateInfo, "; ") + "."
	}
	return append(out, gym.TextAction(msg))
}

// Oracle is a task's oracle (gym.OracleKind): OracleActions, played solo
// (its gym.OracleOptions). A task without criteria has none.
func Oracle(task *gym.Task, c *Criteria) (gym.Oracle, error) {
	if c == nil {
		return nil, fmt.Errorf("task %q: %w: it has no evaluation criteria", task.ID, gym.ErrNoOracle)
	}
	return &oracle{Oracle: gym.ScriptOracle(OracleActions(c))}, nil
}

type oracle struct{ gym.Oracle }

// ResetOptions implements gym.OracleOptions: the oracle plays solo.
func (*oracle) ResetOptions() gym.Options { return gym.Options{"user": ModeSolo} }
