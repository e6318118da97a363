package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// DefaultSystemPrompt is the system message an Agent sends unless told
// otherwise.
const DefaultSystemPrompt = "You are an agent acting in an environment to complete a task. " +
	"Each user message shows the environment's state after your last action. " +
	"When tools are offered, act by calling them; otherwise reply with your action as plain text."

// Config configures an Agent. Zero fields take the stated defaults.
type Config struct {
	// BaseURL is the OpenAI-compatible endpoint, as in
	// "http://localhost:8000/v1"; "chat/completions" is appended. Required.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none.
	APIKey string
	// Model is the model name sent with each request. Required.
	Model string
	// Temperature and TopP are sampling settings; nil leaves them to the
	// server.
	Temperature *float64
	TopP        *float64
	// MaxTokens caps each response; 0 leaves it to the server.
	MaxTokens int
	// ContextBudget is the prompt's budget in tokens (tools and messages;
	// leave the model's context length less MaxTokens). Over it, turns in
	// the middle are cut: see KeepHead. 0 means no budget.
	ContextBudget int
	// KeepHead is the share of ContextBudget kept from the start of the
	// episode when turns are cut; the rest is kept from the end. Default 0.3.
	KeepHead float64
	// MaxTurns ends an episode (truncated) after this many model calls.
	// Default 50.
	MaxTurns int
	// MaxRejected ends an episode (an agent error, "bad_action") after this
	// many actions in a row the env's action schema rejected. Default 3.
	MaxRejected int
	// MaxImages is how many of the latest images a prompt keeps; older
	// ones become a line of text. Default 3; -1 keeps all.
	MaxImages int
	// SystemPrompt is the system message; empty means DefaultSystemPrompt.
	// NoSystemPrompt sends none.
	SystemPrompt   string
	NoSystemPrompt bool
	// TokenInfo says whether to ask for token ids and log-probs: "auto"
	// (default) asks with vLLM's and SGLang's fields and stops asking,
	// once, if the endpoint refuses them; "on" always asks; "off" never.
	TokenInfo string
	// Extra are more request fields, sent as given (top_k,
	// chat_template_kwargs, ...). They may not name a field the Agent sets.
	Extra map[string]any
	// Retries is how many times a failed call (429, 5xx, broken
	// connection) is retried, with backoff. Default 3; -1 none.
	Retries int
	// CallTimeout bounds one attempt of a model call. Default 10 minutes.
	CallTimeout time.Duration
	// HTTPClient, when set, makes the calls.
	HTTPClient *http.Client
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Agent plays episodes with a model behind an OpenAI-compatible chat
// endpoint. It is safe for concurrent use: each Play is one episode.
type Agent struct {
	cfg   Config
	ep    *endpoint
	extra []byte // the Extra fields as JSON members, without braces
	log   *slog.Logger
	est   estimator

	noTurn       atomic.Bool // the gym server refused a step's "turn"
	noTokenInfo  atomic.Bool // the endpoint refused the token fields
	noToolChoice atomic.Bool // the endpoint has no tool-call parser
}

// New checks cfg and returns an Agent.
func New(cfg Config) (*Agent, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("agent: Config.BaseURL is required: an OpenAI-compatible endpoint such as http://localhost:8000/v1")
	}
	if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
		return nil, fmt.Errorf("agent: base URL %q: want http:// or https://host[:port]/v1", cfg.BaseURL)
	}
	if cfg.Model == "" {
		return nil, errors.New("agent: Config.Model is required")
	}
	if cfg.KeepHead == 0 {
		cfg.KeepHead = 0.3
	}
	if cfg.KeepHead < 0 || cfg.KeepHead >= 1 {
		return nil, fmt.Errorf("agent: KeepHead %v: want a share in (0, 1), such as 0.3", cfg.KeepHead)
	}
	if cfg.ContextBudget < 0 || cfg.MaxTokens < 0 {
		return nil, errors.New("agent: ContextBudget and MaxTokens must not be negative")
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 50
	}
	if cfg.MaxRejected <= 0 {
		cfg.MaxRejected = 3
	}
	if cfg.MaxImages == 0 {
		cfg.MaxImages = 3
	}
	switch cfg.TokenInfo {
	case "":
		cfg.TokenInfo = "auto"
	case "auto", "on", "off":
	default:
		return nil, fmt.Errorf("agent: TokenInfo %q: want auto, on or off", cfg.TokenInfo)
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = 3
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 10 * time.Minute
	}
	if cfg.SystemPrompt == "" {
		cfg.SystemPrompt = DefaultSystemPrompt
	}
	a := &Agent{cfg: cfg, log: cfg.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	if len(cfg.Extra) > 0 {
		set := map[string]bool{}
		for _, k := range []string{"model", "messages", "tools", "tool_choice", "temperature", "top_p", "max_tokens", "seed"} {
			set[k] = true
		}
		for _, k := range tokenFields {
			set[k] = true
		}
		for k := range cfg.Extra {
			if set[k] {
				return nil, fmt.Errorf("agent: extra request field %q is one the agent sets itself (use the Config field)", k)
			}
		}
		j, err := json.Marshal(cfg.Extra)
		if err != nil {
			return nil, fmt.Errorf("agent: extra request fields: %w", err)
		}
		a.extra = bytes.TrimSuffix(bytes.TrimPrefix(j, []byte("{")), []byte("}"))
	}
	a.ep = newEndpoint(&a.cfg)
	return a, nil
}

// Model returns the model's name.
func (a *Agent) Model() string { return a.cfg.Model }

// Temperature returns the sampling temperature sent, nil for the server's.
func (a *Agent) Temperature() *float64 { return a.cfg.Temperature }

// Session is what an episode is played through: a *client.Session. Step
// is used when the gym server does not take a step's turn.
type Session interface {
	Step(ctx context.Context, action gym.Action) (gym.StepResult, error)
	StepTurn(ctx context.Context, action gym.Action, turn *gym.Turn) (gym.StepResult, error)
}

// Start is how an episode begins: its reset, the tools to offer (see
// ToolsFor; nil for plain-text actions) and a seed for sampling.
type Start struct {
	Reset gym.ResetResult
	Tools json.RawMessage
	Seed  int64
}

// Episode is a played episode.
type Episode struct {
	Reset gym.ResetResult
	Steps []rundir.Step
	// Terminated and Truncated are the last step's (Truncated also when
	// the agent stopped: MaxTurns, too many rejected actions).
	Terminated, Truncated bool
	// Reward is the outcome reward: the verifier's reward on the last step
	// when it gave one, else the sum of the step rewards.
	Reward float64
	// Failure says why the episode ended badly and whose fault it was:
	// the env's or the gym's failure, a model call that failed, MaxTurns
	// ("max_turns", not a failure of anyone: Failure stays nil and
	// EndReason says it), too many rejected actions.
	Failure   *gym.Failure
	EndReason string
	// Tokens the model server counted.
	PromptTokens, CompletionTokens int
	// Turns is the number of model calls.
	Turns int
}

// ErrFatal is wrapped by Play's error when no episode can succeed with
// this Agent: the endpoint refused the key, or knows no such model.
var ErrFatal = errors.New("the model endpoint refuses every call")

// Play runs one episode to its end through sess, which start.Reset began.
// Failures of the env, the gym and the model are recorded in the
// Episode's Failure, labelled with whose fault they were. Play returns an
// error only when ctx ended (the episode is unfinished; err wraps
// ctx.Err()) or with ErrFatal.
func (a *Agent) Play(ctx context.Context, sess Session, start Start) (*Episode, error) {
	ep := &Episode{Reset: start.Reset}
	var hist []message
	if !a.cfg.NoSystemPrompt {
		hist = append(hist, newMessage("system", a.cfg.SystemPrompt))
	}
	hist = append(hist, firstMessage(start.Reset))
	prevLen := 0 // the history's length at the previous call
	rejected := 0
	for turn := 1; ; turn++ {
		if turn > a.cfg.MaxTurns {
			ep.Truncated, ep.EndReason = true, "max_turns"
			break
		}
		w := fit(hist, len(start.Tools), a.cfg.ContextBudget, a.cfg.KeepHead, a.cfg.MaxImages, a.est.factor())
		msgs := encodeMessages(w.msgs, false)
		r, err := a.call(ctx, msgs, start.Tools, start.Seed+int64(turn))
		if err != nil {
			if ctx.Err() != nil {
				return ep, fmt.Errorf("episode interrupted: %w", ctx.Err())
			}
			var me *modelError
			if errors.As(err, &me) && me.fatal() {
				return ep, fmt.Errorf("%w: %w", ErrFatal, err)
			}
			f := &gym.Failure{Fault: gym.FaultInfra, Reason: "model_unavailable", Message: err.Error()}
			if me != nil {
				f.Reason = me.Reason
				if me.agentFault() {
					f.Fault = gym.FaultAgent
				}
			}
			ep.Failure, ep.Truncated = f, true
			break
		}
		ep.Turns++
		ep.PromptTokens += r.PromptTokens
		ep.CompletionTokens += r.OutTokens
		a.est.calibrate(w.rawTotal, r.PromptTokens)

		d := decide(r, turn)
		model := r.Model
		if model == "" {
			model = a.cfg.Model
		}
		t := &gym.Turn{Messages: msgs, Tools: start.Tools, Response: d.response, PromptIDs: r.PromptIDs,
			ResponseIDs: r.ResponseIDs, LogProbs: r.LogProbs, Model: model, Truncated: w.cut, WeightVersion: r.Version}
		tailFrom := prevLen + 1
		if prevLen == 0 {
			tailFrom = 0
		}
		rec := rundir.Step{MessagesTail: encodeMessages(hist[min(tailFrom, len(hist)):], true), Response: d.response,
			Action: d.action, Turn: t}
		prevLen = len(hist)

		res, err := a.step(ctx, sess, d.action, t)
		if err != nil {
			if ctx.Err() != nil {
				return ep, fmt.Errorf("episode interrupted: %w", ctx.Err())
			}
			if errors.Is(err, gym.ErrBadAction) {
				// The gym refused the action before the env saw it: tell
				// the model, as an env would, and let it try again.
				rejected++
				rec.Failure = &gym.Failure{Fault: gym.FaultAgent, Reason: gym.RefusedReason, Message: err.Error()}
				ep.Steps = append(ep.Steps, rec)
				if rejected >= a.cfg.MaxRejected {
					ep.Failure = &gym.Failure{Fault: gym.FaultAgent, Reason: "bad_action",
						Message: fmt.Sprintf("%d actions in a row did not match the env's action schema; the last: %s", rejected, err)}
					ep.Truncated = true
					break
				}
				hist = append(hist, newMessage("assistant", stripThink(d.response)),
					newMessage("user", "Your action was rejected: "+actionErrorText(err)+"\nTry again."))
				continue
			}
			ep.Failure, ep.Truncated = failureOf(err), true
			break
		}
		rejected = 0
		rec.Step, rec.Observation, rec.Reward = res.Step, res.Observation, res.Reward
		rec.Terminated, rec.Truncated, rec.Info, rec.Failure = res.Terminated, res.Truncated, res.Info, res.Failure
		ep.Steps = append(ep.Steps, rec)
		if res.Failure != nil || res.Terminated || res.Truncated {
			ep.Terminated, ep.Truncated, ep.Failure = res.Terminated, res.Truncated, res.Failure
			break
		}
		hist = append(hist, d.assistant)
		hist = append(hist, observe(res.Observation, d.calls, d.plain)...)
	}
	ep.Reward = outcome(ep.Steps)
	return ep, nil
}

// outcome is the verifier's reward on the last step when it gave one,
// else the sum of the rewards.
func outcome(steps []rundir.Step) float64 {
	var sum float64
	for _, s := range steps {
		sum += s.Reward
	}
	if n := len(steps); n > 0 && steps[n-1].Info["reward_source"] == "verifier" {
		return steps[n-1].Reward
	}
	return sum
}

// actionErrorText is a schema rejection as the model reads it: the
// message and the places that failed.
func actionErrorText(err error) string {
	var we *wire.Error
	if errors.As(err, &we) {
		s := we.Message
		if we.Data != nil && len(we.Data.Problems) > 0 {
			s += " (" + strings.Join(we.Data.Problems, "; ") + ")"
		}
		return s
	}
	return err.Error()
}

// failureOf labels a step or create error: the failure the gym sent, else
// the infrastructure's.
func failureOf(err error) *gym.Failure {
	var we *wire.Error
	if errors.As(err, &we) && we.Data != nil && we.Data.Failure != nil {
		return we.Data.Failure
	}
	var fe *gym.FaultError
	if errors.As(err, &fe) {
		return gym.FailureOf(err)
	}
	reason := "gym_error"
	if errors.Is(err, gym.ErrSessionClosed) || errors.Is(err, gym.ErrUnknownSession) {
		reason = "session_lost"
	}
	return &gym.Failure{Fault: gym.FaultInfra, Reason: reason, Message: err.Error()}
}

// step sends the action with its turn; a gym server that does not take
// the turn yet (-32602 unknown field "turn") is sent steps without it
// from then on, which is logged once.
//
// A turn too large for one request (a long prompt with its token ids) is
// sent again without its messages, and if still too large not at all; the
// step's own data always goes.
func (a *Agent) step(ctx context.Context, sess Session, action gym.Action, t *gym.Turn) (gym.StepResult, error) {
	if !a.noTurn.Load() {
		res, err := sess.StepTurn(ctx, action, t)
		if err != nil && tooLarge(err) && len(t.Messages) > 0 {
			slim := *t
			slim.Messages = nil
			a.log.Warn("agent: a step's turn is over the request size limit; sending it without its prompt messages", "err", err)
			res, err = sess.StepTurn(ctx, action, &slim)
		}
		if err == nil || !turnRefused(err) && !tooLarge(err) {
			return res, err
		}
		if tooLarge(err) {
			a.log.Warn("agent: a step's turn is over the request size limit; sending the step without it", "err", err)
			return sess.Step(ctx, action)
		}
		if a.noTurn.CompareAndSwap(false, true) {
			a.log.Warn("agent: the gym server does not record a step's turn (prompt, response, token ids); sending steps without it", "err", err)
		}
	}
	return sess.Step(ctx, action)
}

func turnRefused(err error) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Code == wire.CodeInvalidParams && strings.Contains(we.Message, `"turn"`)
}

// tooLarge reports a request over the client's or the server's frame cap.
func tooLarge(err error) bool {
	var we *wire.Error
	if errors.As(err, &we) && we.Code == wire.CodeFrameTooLarge {
		return true
	}
	return errors.Is(err, gym.ErrBadRequest) && strings.Contains(err.Error(), "frame limit")
}

// call makes one model call, with the fallbacks for endpoints that refuse
// the token fields or tool choice (each taken once per Agent and logged).
func (a *Agent) call(ctx context.Context, msgs, tools json.RawMessage, seed int64) (reply, error) {
	for attempt := 0; ; attempt++ {
		req := chatRequest{Model: a.cfg.Model, Messages: msgs, Tools: tools, Temperature: a.cfg.Temperature,
			TopP: a.cfg.TopP, MaxTokens: a.cfg.MaxTokens, Seed: &seed}
		asked := a.cfg.TokenInfo == "on" || a.cfg.TokenInfo == "auto" && !a.noTokenInfo.Load()
		if asked {
			req.Logprobs, req.ReturnTokensAsTokenIDs, req.ReturnTokenIDs, req.ReturnLogprob = true, true, true, true
		}
		if len(tools) > 0 && a.noToolChoice.Load() {
			req.ToolChoice = "none" // the tools stay in the prompt; calls come as text
		}
		body, err := json.Marshal(req)
		if err != nil {
			return reply{}, fmt.Errorf("encoding the request: %w", err)
		}
		if len(a.extra) > 0 {
			body = append(append(append(body[:len(body)-1], ','), a.extra...), '}')
		}
		out, version, err := a.ep.complete(ctx, body)
		if err == nil {
			r, err := decodeReply(out)
			r.Version = version
			return r, err
		}
		if attempt < 2 && asked && a.cfg.TokenInfo == "auto" && refusesTokenFields(err) {
			if a.noTokenInfo.CompareAndSwap(false, true) {
				a.log.Warn("agent: the model endpoint refuses the token-id and log-prob fields; turns will carry text only", "err", err)
			}
			continue
		}
		if attempt < 2 && len(tools) > 0 && req.ToolChoice == "" && refusesToolChoice(err) {
			if a.noToolChoice.CompareAndSwap(false, true) {
				a.log.Warn("agent: the model endpoint has no tool-call parser; sending tool_choice none and reading <tool_call> blocks from the text", "err", err)
			}
			continue
		}
		return reply{}, err
	}
}
