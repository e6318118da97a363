package tau2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/gym"
)

// The tokens with which tau2's simulated user ends a conversation.
const (
	StopToken       = "###STOP###"
	TransferToken   = "###TRANSFER###"
	OutOfScopeToken = "###OUT-OF-SCOPE###"
)

// StopTokenIn returns the first of the user's stop tokens in s, or "".
func StopTokenIn(s string) string {
	for _, t := range []string{StopToken, TransferToken, OutOfScopeToken} {
		if strings.Contains(s, t) {
			return t
		}
	}
	return ""
}

// FirstAgentMessage is the agent's greeting that opens every tau2
// conversation; the simulated user's first message answers it.
const FirstAgentMessage = "Hi! How can I help you today?"

// User modes (the reset option "user").
const (
	ModeSolo      = "solo"
	ModeSimulated = "simulated"
)

// Settings keys of the user simulator (`nextstate serve --set key=value`),
// shared by the tau2 kinds.
const (
	SettingUserBaseURL     = "tau2.user_base_url"    // OpenAI-compatible endpoint; default OpenAI's
	SettingUserModel       = "tau2.user_model"       // the simulator's model; unset: no simulated user
	SettingUserAPIKeyEnv   = "tau2.user_api_key_env" // the env var holding the API key; default OPENAI_API_KEY
	SettingUserTemperature = "tau2.user_temperature" // default 0, as tau2's
	SettingUserTimeout     = "tau2.user_timeout"     // per request; default 2m
)

// Defaults of the user simulator's settings.
const (
	DefaultUserBaseURL   = "https://api.openai.com/v1"
	DefaultUserAPIKeyEnv = "OPENAI_API_KEY"
	DefaultUserTimeout   = 2 * time.Minute
)

// MaxUserToolCalls bounds the tool calls a simulated user makes before it
// answers the agent; more is the simulator's failure.
const MaxUserToolCalls = 20

// UserConfig is the user simulator: an OpenAI-compatible chat completions
// endpoint and the model that plays the user.
type UserConfig struct {
	BaseURL     string
	Model       string
	APIKey      string
	Temperature float64
	Timeout     time.Duration // per request
	// HTTPClient replaces http.DefaultClient (tests).
	HTTPClient *http.Client
}

// Settings returns the tau2.* entries of s.
func Settings(s gym.Settings) map[string]string {
	mine := map[string]string{}
	for k, v := range s {
		if strings.HasPrefix(k, "tau2.") {
			mine[k] = v
		}
	}
	return mine
}

// UserConfigOf reads the tau2.* settings; nil when no model is set.
func UserConfigOf(s map[string]string) (*UserConfig, error) {
	model := s[SettingUserModel]
	if model == "" {
		for _, k := range []string{SettingUserBaseURL, SettingUserAPIKeyEnv, SettingUserTemperature, SettingUserTimeout} {
			if s[k] != "" {
				return nil, fmt.Errorf("setting %s needs %s, the model that plays the user", k, SettingUserModel)
			}
		}
		return nil, nil
	}
	cfg := &UserConfig{BaseURL: s[SettingUserBaseURL], Model: model, Timeout: DefaultUserTimeout}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultUserBaseURL
	}
	keyEnv := s[SettingUserAPIKeyEnv]
	if keyEnv == "" {
		keyEnv = DefaultUserAPIKeyEnv
	}
	cfg.APIKey = os.Getenv(keyEnv)
	if cfg.APIKey == "" && cfg.BaseURL == DefaultUserBaseURL {
		return nil, fmt.Errorf("the user simulator uses OpenAI's API, and $%s (named by %s) holds no API key", keyEnv, SettingUserAPIKeyEnv)
	}
	if v := s[SettingUserTemperature]; v != "" {
		t, err := strconv.ParseFloat(v, 64)
		if err != nil || t < 0 || t > 2 {
			return nil, fmt.Errorf("setting %s=%q: want a number from 0 to 2", SettingUserTemperature, v)
		}
		cfg.Temperature = t
	}
	if v := s[SettingUserTimeout]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("setting %s=%q: want a positive Go duration such as 2m", SettingUserTimeout, v)
		}
		cfg.Timeout = d
	}
	return cfg, nil
}

// userGuidelines tell the simulator how to play the user (tau2's
// guidelines, in other words); toolGuidelines are added for a user with
// tools of their own.
const (
	userGuidelines = `# How to play the user
You are a customer contacting a customer service agent. Act out the customer of the scenario below as a real person would.

## Principles
- Write one message at a time, as in a natural conversation.
- Follow the scenario's instructions strictly.
- Never invent information the scenario does not give you: treat anything it does not provide as unknown to you.
- Do not repeat the instructions word for word; say things in your own words.
- Give information step by step: wait until the agent asks for something before you provide it.
`
	toolGuidelines = `
## Your tools
You have tools that act on your own device, for the things the agent asks you to do or check.
- In each turn either call one tool or write a message to the agent, never both. The agent sees your messages, not your tool calls.
- Call a tool only when the agent asks for it or when you need it to answer the agent; if you do not know what to do, ask.
- Base what you tell the agent on your tools' results; never invent a result.
- If a call fails, fix it and try again. If the agent asks for several actions at once, say you can do one at a time and ask which first.
`
	endGuidelines = `
## Ending the conversation
- Keep the conversation going until the task is done.
- When the scenario's goal is met, write ` + StopToken + ` to end the conversation.
- If you are transferred to another agent, write ` + TransferToken + `.
- If the scenario does not give you enough to go on, write ` + OutOfScopeToken + ` to end the conversation.
Aim for a realistic, natural conversation that keeps to the instructions and stays in character.`
)

// UserTools are the tools of a user who acts on a device of their own
// (tau2's dual control): offered to the simulator, run by Run, which
// returns the result the simulator reads (a failed call's error text
// included). An error from Run ends the session.
type UserTools struct {
	Tools []toolcall.Tool
	Run   func(ctx context.Context, name, args string) (string, error)
}

// Simulator is one episode's simulated user: the conversation so far, with
// roles flipped (the agent's messages are "user" messages to the model).
// Its methods are called from one goroutine at a time.
type Simulator struct {
	client   openai.Client
	cfg      UserConfig
	kind     string // the kind's name, for errors
	seed     int64
	tools    *UserTools
	params   []openai.ChatCompletionToolUnionParam
	messages []openai.ChatCompletionMessageParamUnion
}

// NewSimulator starts a user for scenario; tools may be nil (a user with
// no tools). kind names the env kind in errors.
func NewSimulator(cfg UserConfig, kind string, scenario UserScenario, seed int64, tools *UserTools) *Simulator {
	opts := []option.RequestOption{option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(2)}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	guide := userGuidelines
	u := &Simulator{client: openai.NewClient(opts...), cfg: cfg, kind: kind, seed: seed}
	if tools != nil && len(tools.Tools) > 0 {
		guide += toolGuidelines
		u.tools = tools
		for _, t := range tools.Tools {
			var p shared.FunctionParameters
			json.Unmarshal(t.Parameters, &p)
			u.params = append(u.params, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name: t.Name, Description: openai.String(t.Description), Parameters: p}))
		}
	}
	system := guide + endGuidelines + "\n\n<scenario>\n" + scenario.String() + "\n</scenario>"
	u.messages = []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system)}
	return u
}

// Start has the user answer the agent's greeting.
func (u *Simulator) Start(ctx context.Context) (string, error) {
	return u.Say(ctx, FirstAgentMessage)
}

// Say gives the user the agent's message and returns the user's reply,
// after the tool calls the user makes first. A failed or empty reply, or
// more than MaxUserToolCalls calls, is the infrastructure's fault.
func (u *Simulator) Say(ctx context.Context, message string) (string, error) {
	n := len(u.messages)
	u.messages = append(u.messages, openai.UserMessage(message))
	calls := 0
	for {
		reply, err := u.complete(ctx)
		if err != nil {
			u.messages = u.messages[:n]
			return "", err
		}
		if len(reply.ToolCalls) == 0 || u.tools == nil {
			if strings.TrimSpace(reply.Content) == "" {
				u.messages = u.messages[:n]
				return "", gym.InfraFault("user_simulator", errors.New(u.kind+": the user simulator sent an empty reply"))
			}
			u.messages = append(u.messages, openai.AssistantMessage(reply.Content))
			return reply.Content, nil
		}
		if calls += len(reply.ToolCalls); calls > MaxUserToolCalls {
			return "", gym.InfraFault("user_simulator", fmt.Errorf("%s: the user simulator made more than %d tool calls without answering the agent", u.kind, MaxUserToolCalls))
		}
		u.messages = append(u.messages, reply.ToParam())
		for _, tc := range reply.ToolCalls {
			out, err := u.tools.Run(ctx, tc.Function.Name, tc.Function.Arguments)
			if err != nil {
				return "", err
			}
			u.messages = append(u.messages, openai.ToolMessage(out, tc.ID))
		}
	}
}

func (u *Simulator) complete(ctx context.Context) (*openai.ChatCompletionMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	resp, err := u.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       u.cfg.Model,
		Messages:    u.messages,
		Tools:       u.params,
		Temperature: openai.Float(u.cfg.Temperature),
		Seed:        openai.Int(u.seed),
	})
	if err != nil {
		return nil, gym.InfraFault("user_simulator", fmt.Errorf("%s: user simulator (%s at %s): %w", u.kind, u.cfg.Model, u.cfg.BaseURL, err))
	}
	if len(resp.Choices) == 0 {
		return nil, gym.InfraFault("user_simulator", errors.New(u.kind+": the user simulator sent an empty reply"))
	}
	return &resp.Choices[0].Message, nil
}

// UserStarter is a tau2 domain that starts its episodes with a user
// simulator's configuration (nil: none, solo mode only).
type UserStarter interface {
	StartWithUser(ctx context.Context, task *gym.Task, seed int64, opts gym.Options, user *UserConfig) (toolcall.Episode, error)
}

// WithUser is a tau2 domain configured by one Manager: its episodes start
// with the user simulator of that Manager's tau2.* settings. It is the
// toolcall.Instance of the domain's toolcall.Configurer (ConfigureUser),
// and holds nothing to release; each Manager has its own.
type WithUser struct {
	Domain UserStarter
	User   *UserConfig // nil: no simulator
}

// ConfigureUser reads the tau2.* settings of s (UserConfigOf) for a
// domain's toolcall.Configurer: the domain with their user simulator.
func ConfigureUser(d UserStarter, s gym.Settings) (toolcall.Instance, error) {
	cfg, err := UserConfigOf(Settings(s))
	if err != nil {
		return nil, err
	}
	return &WithUser{Domain: d, User: cfg}, nil
}

// Start implements toolcall.Domain.
func (w *WithUser) Start(ctx context.Context, task *gym.Task, seed int64, opts gym.Options) (toolcall.Episode, error) {
	return w.Domain.StartWithUser(ctx, task, seed, opts, w.User)
}

// Shutdown implements toolcall.Instance; there is nothing to release.
func (w *WithUser) Shutdown(context.Context) error { return nil }
