package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nextstate-rl/nextstate/envs/internal/tools"
	"github.com/nextstate-rl/nextstate/gym"
)

// DefaultMaxToolErrors is how many rejected calls (unknown tool, arguments
// that are not JSON or do not match the schema) an episode allows before it
// is truncated, as tau2's max_errors. The reset option "max_tool_errors"
// changes it; 0 there means no limit.
const DefaultMaxToolErrors = 10

// Config describes a kind built on a Domain.
type Config struct {
	Name        string // with a version: "tau2-retail-v1"
	Description string
	Limits      gym.Limits
	Tasks       []gym.Task // built-in tasks (smoke tasks for the demo)
	// MaxToolErrors replaces DefaultMaxToolErrors for the kind.
	MaxToolErrors int
	// Unchecked sends the episode the calls of unknown tools and the
	// arguments that do not match their tool's schema, for a domain that
	// answers them itself as its benchmark does (BFCL's multi-turn
	// classes, whose Python raises its own errors); arguments that are not
	// a JSON object are still refused here.
	Unchecked bool
	// StepRule is the kind's programmatic judge of a step
	// (gym.Spec.StepRule); nil for none.
	StepRule func(gym.RuleInput) (score int, hint string)
}

// Kind is a gym kind made from a Domain by NewKind. It implements
// gym.Configurer, forwarding it to the domain when the domain implements
// Configurer, and gym.OracleKind, forwarding it when the domain
// implements that.
type Kind struct {
	cfg    Config
	domain Domain

	// toolsets caches compiled tool lists by their JSON, so a reset does
	// not compile the same schemas again (about 2 ms for tau2's tools).
	// Every Manager of the process shares it: a compiled list depends on
	// its JSON only, not on any Manager's settings.
	mu       sync.Mutex
	toolsets map[string]*Toolset
}

var (
	_ gym.Configurer = (*Kind)(nil)
	_ gym.OracleKind = (*Kind)(nil)
)

// maxToolsets caps the cache of compiled tool lists (BFCL has a list per case).
const maxToolsets = 4096

// toolset compiles a tool list once per distinct list.
func (k *Kind) toolset(tools []Tool) (*Toolset, error) {
	key, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	ts, ok := k.toolsets[string(key)]
	k.mu.Unlock()
	if ok {
		return ts, nil
	}
	if ts, err = NewToolset(tools); err != nil {
		return nil, err
	}
	k.mu.Lock()
	if k.toolsets == nil {
		k.toolsets = map[string]*Toolset{}
	}
	if len(k.toolsets) < maxToolsets {
		k.toolsets[string(key)] = ts
	}
	k.mu.Unlock()
	return ts, nil
}

// NewKind returns the gym kind of a domain; register it with gym.Register.
func NewKind(cfg Config, d Domain) *Kind {
	if cfg.MaxToolErrors == 0 {
		cfg.MaxToolErrors = DefaultMaxToolErrors
	}
	return &Kind{cfg: cfg, domain: d}
}

// Domain returns the kind's domain.
func (k *Kind) Domain() Domain { return k.domain }

// Spec implements gym.Kind. Actions are tool calls (parallel calls in one
// step) and text (a message to the user); observations are text, tool
// results in call order, and at reset the tool list as a tools.json file.
func (k *Kind) Spec() gym.Spec {
	return gym.Spec{
		Name:              k.cfg.Name,
		Description:       k.cfg.Description,
		ActionSchema:      gym.PartsSchema(1, MaxCallsPerStep, gym.PartToolCall, gym.PartText),
		ObservationSchema: gym.PartsSchema(0, MaxCallsPerStep+2, gym.PartText, gym.PartToolResult, gym.PartFile),
		Limits:            k.cfg.Limits,
		Tasks:             k.cfg.Tasks,
		JudgePrompt:       "toolcall",
		StepRule:          k.cfg.StepRule,
	}
}

// New implements gym.Kind: an Env of the registered domain (a Manager
// asks the Instance its Configure made instead).
func (k *Kind) New(context.Context) (gym.Env, error) { return &Env{kind: k, domain: k.domain}, nil }

// Configure implements gym.Configurer: a domain that implements
// Configurer is configured with the Manager's settings, and the
// Manager's envs start their episodes in the Instance it returns; any
// other domain serves every Manager as it is.
func (k *Kind) Configure(ctx context.Context, s gym.Settings) (gym.Instance, error) {
	c, ok := k.domain.(Configurer)
	if !ok {
		return &instance{kind: k, domain: k.domain}, nil
	}
	d, err := c.Configure(ctx, s)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("%s: the domain's Configure returned no instance", k.cfg.Name)
	}
	return &instance{kind: k, domain: d, configured: d}, nil
}

// instance is a Kind configured by one Manager (gym.Instance): its envs
// start their episodes in domain.
type instance struct {
	kind       *Kind
	domain     Domain
	configured Instance // the domain's Configure made domain; nil: it is the registered one
}

// New implements gym.Instance.
func (i *instance) New(context.Context) (gym.Env, error) {
	return &Env{kind: i.kind, domain: i.domain}, nil
}

// Shutdown implements gym.Instance: it shuts down the domain's Instance,
// if its Configure made one.
func (i *instance) Shutdown(ctx context.Context) error {
	if i.configured == nil {
		return nil
	}
	return i.configured.Shutdown(ctx)
}

// Oracle implements gym.OracleKind for domains whose tasks carry solutions.
func (k *Kind) Oracle(task *gym.Task) (gym.Oracle, error) {
	if o, ok := k.domain.(gym.OracleKind); ok {
		return o.Oracle(task)
	}
	return nil, fmt.Errorf("%s: %w", k.cfg.Name, gym.ErrNoOracle)
}

// Env is one tool-call environment: the shared action handling around a
// domain's Episode.
type Env struct {
	kind      *Kind
	domain    Domain // where episodes start: the Manager's Instance, or the registered domain
	ep        Episode
	tools     *Toolset
	maxErrors int
	errors    int // rejected calls this episode
	steps     int
}

// Reset implements gym.Env. The observation is the episode's opening text
// and a tools.json file with the tools in the OpenAI "tools" shape, which
// the info also holds under "tools".
//
// Options: "max_tool_errors" (a number; 0 is no limit).
func (e *Env) Reset(ctx context.Context, task *gym.Task, seed int64, opts gym.Options) (gym.Observation, gym.Info, error) {
	maxErrors := e.kind.cfg.MaxToolErrors
	if v, ok := opts["max_tool_errors"]; ok {
		f, isNum := v.(float64)
		if !isNum || f < 0 || f != float64(int(f)) {
			return gym.Observation{}, nil, gym.AgentFault("bad_option", fmt.Errorf(
				`%s: reset option "max_tool_errors" is %v; want a whole number >= 0 (0 is no limit)`, e.kind.cfg.Name, v))
		}
		maxErrors = int(f)
	}
	var ep Episode
	var err error
	if r, ok := e.ep.(Restarter); ok {
		e.ep = nil // Restart ends it, whether or not it succeeds
		ep, err = r.Restart(ctx, task, seed, opts)
	} else {
		if e.ep != nil {
			if err := e.ep.Close(ctx); err != nil {
				e.ep = nil
				return gym.Observation{}, nil, gym.InfraFault("close", err)
			}
			e.ep = nil
		}
		ep, err = e.domain.Start(ctx, task, seed, opts)
	}
	if err != nil {
		return gym.Observation{}, nil, err
	}
	ts, err := e.kind.toolset(ep.Tools())
	if err != nil {
		_ = ep.Close(ctx)
		return gym.Observation{}, nil, gym.InfraFault("bad_task", err)
	}
	e.ep, e.tools, e.maxErrors, e.errors, e.steps = ep, ts, maxErrors, 0, 0
	openai := OpenAITools(ts.Tools())
	toolsJSON, _ := json.Marshal(openai)
	obs := gym.Observation{Parts: []gym.Part{
		gym.TextPart(ep.Opening()),
		{Type: gym.PartFile, File: &gym.File{Path: "tools.json", Blob: gym.Blob{MIME: "application/json", Data: toolsJSON}}},
	}}
	return obs, gym.Info{gym.InfoTools: openai, "max_tool_errors": maxErrors}, nil
}

// Step implements gym.Env: each tool call is checked and run in order and
// answered by a tool_result part; a text part is a message to the user,
// answered by the user's reply as a text part. A rejected call is answered
// by an is_error result that says what the tool expects, and counts
// towards max_tool_errors.
func (e *Env) Step(ctx context.Context, action gym.Action) (gym.Transition, error) {
	if e.ep == nil {
		return gym.Transition{}, gym.InfraFault("no_episode", errors.New("toolcall: step before reset"))
	}
	e.steps++
	var calls []gym.ToolCall
	var texts []string
	for _, p := range action.Parts {
		switch p.Type {
		case gym.PartToolCall:
			c := *p.ToolCall
			if c.ID == "" {
				c.ID = "call_" + strconv.Itoa(e.steps) + "_" + strconv.Itoa(len(calls))
			}
			calls = append(calls, c)
		case gym.PartText:
			texts = append(texts, p.Text)
		}
	}
	message := strings.Join(texts, "\n")
	if a, ok := e.ep.(Answerer); ok {
		a.Answer(calls, message)
		return gym.Transition{Terminated: true, Info: gym.Info{"calls": len(calls)}}, nil
	}

	var tr gym.Transition
	var rejected []map[string]string
	end := false
	for _, c := range calls {
		res := &gym.ToolResult{CallID: c.ID, Name: c.Function.Name}
		args, cerr := e.tools.Check(c.Function)
		if cerr != nil && e.kind.cfg.Unchecked && cerr.Reason != tools.ReasonBadJSON {
			args, cerr = rawArguments(c.Function.Arguments), nil
		}
		if cerr != nil {
			e.errors++
			res.Content, res.IsError = cerr.Message, true
			rejected = append(rejected, map[string]string{"call_id": c.ID, "tool": c.Function.Name, "reason": cerr.Reason})
		} else {
			r, err := e.ep.Call(ctx, c.Function.Name, args)
			if msg, isTool := IsToolError(err); isTool {
				res.Content, res.IsError = msg, true
			} else if err != nil {
				return gym.Transition{}, labelled(err, "tool_failed")
			} else {
				res.Content = r.Content
				end = end || r.End
			}
		}
		tr.Observation.Parts = append(tr.Observation.Parts, gym.Part{Type: gym.PartToolResult, ToolResult: res})
	}
	if message != "" && !end {
		reply, done, err := e.ep.Say(ctx, message)
		if err != nil {
			if msg, isTool := IsToolError(err); isTool {
				reply = msg
			} else {
				return gym.Transition{}, labelled(err, "user_failed")
			}
		}
		if reply != "" {
			tr.Observation.Parts = append(tr.Observation.Parts, gym.TextPart(reply))
		}
		end = end || done
	}
	cut := ""
	if se, ok := e.ep.(StepEnder); ok && !end {
		reply, done, c, err := se.EndStep(ctx, len(calls))
		if err != nil {
			return gym.Transition{}, labelled(err, "step_failed")
		}
		if reply != "" {
			tr.Observation.Parts = append(tr.Observation.Parts, gym.TextPart(reply))
		}
		end, cut = done, c
	}
	tr.Terminated = end
	tr.Info = gym.Info{"tool_errors_total": e.errors}
	if cut != "" && !end {
		tr.Truncated = true
		tr.Info["truncated_reason"] = cut
	}
	if len(rejected) > 0 {
		tr.Info["tool_errors"] = rejected
	}
	if !end && !tr.Truncated && e.maxErrors > 0 && e.errors >= e.maxErrors {
		tr.Truncated = true
		tr.Info["truncated_reason"] = "tool_errors"
	}
	return tr, nil
}

// rawArguments are a call's arguments as an unchecked domain gets them:
// "{}" for empty or null ones.
func rawArguments(a string) json.RawMessage {
	if t := strings.TrimSpace(a); t != "" && t != "null" {
		return json.RawMessage(t)
	}
	return json.RawMessage("{}")
}

// labelled keeps a fault label and marks anything else as the
// infrastructure's.
func labelled(err error, reason string) error {
	var fe *gym.FaultError
	if errors.As(err, &fe) {
		return err
	}
	return gym.InfraFault(reason, err)
}

// Verify implements gym.Verifier through the episode.
func (e *Env) Verify(ctx context.Context) (float64, gym.Info, error) {
	if e.ep == nil {
		return 0, nil, errors.New("toolcall: verify before reset")
	}
	return e.ep.Verify(ctx)
}

// Close implements gym.Env.
func (e *Env) Close(ctx context.Context) error {
	if e.ep == nil {
		return nil
	}
	err := e.ep.Close(ctx)
	e.ep = nil
	return err
}
