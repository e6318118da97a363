package retail

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/nextstate-rl/nextstate/gym"
)

// The tokens with which tau2's simulated user ends a conversation.
const (
	StopToken       = "###STOP###"
	TransferToken   = "###TRANSFER###"
	OutOfScopeToken = "###OUT-OF-SCOPE###"
)

func stopTokenIn(s string) string {
	for _, t := range []string{StopToken, TransferToken, OutOfScopeToken} {
		if strings.Contains(s, t) {
			return t
		}
	}
	return ""
}

// Defaults of the user simulator's settings.
const (
	DefaultUserBaseURL   = "https://api.openai.com/v1"
	DefaultUserAPIKeyEnv = "OPENAI_API_KEY"
	DefaultUserTimeout   = 2 * time.Minute
)

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

// userConfigOf reads the tau2.* settings; nil when no model is set.
func userConfigOf(s map[string]string) (*UserConfig, error) {
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
// guidelines, in other words).
const userGuidelines = `# How to play the user
You are a customer contacting a customer service agent. Act out the customer of the scenario below as a real person would.

## Principles
- Write one message at a time, as in a natural conversation.
- Follow the scenario's instructions strictly.
- Never invent information the scenario does not give you: treat anything it does not provide as unknown to you.
- Do not repeat the instructions word for word; say things in your own words.
- Give information step by step: wait until the agent asks for something before you provide it.

## Ending the conversation
- Keep the conversation going until the task is done.
- When the scenario's goal is met, write ` + StopToken + ` to end the conversation.
- If you are transferred to another agent, write ` + TransferToken + `.
- If the scenario does not give you enough to go on, write ` + OutOfScopeToken + ` to end the conversation.
Aim for a realistic, natural conversation that keeps to the instructions and stays in character.`

// userSim is one episode's simulated user: the conversation so far, with
// roles flipped (the agent's messages are "user" messages to the model).
type userSim struct {
	client   openai.Client
	cfg      UserConfig
	seed     int64
	messages []openai.ChatCompletionMessageParamUnion
}

func newUserSim(cfg UserConfig, scenario UserScenario, seed int64) *userSim {
	opts := []option.RequestOption{option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(2)}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	system := userGuidelines + "\n\n<scenario>\n" + scenario.String() + "\n</scenario>"
	return &userSim{client: openai.NewClient(opts...), cfg: cfg, seed: seed,
		messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system)}}
}

// start has the user answer the agent's greeting.
func (u *userSim) start(ctx context.Context) (string, error) {
	return u.say(ctx, FirstAgentMessage)
}

// say gives the user the agent's message and returns the reply. A failed
// or empty reply is the infrastructure's fault.
func (u *userSim) say(ctx context.Context, message string) (string, error) {
	u.messages = append(u.messages, openai.UserMessage(message))
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	resp, err := u.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       u.cfg.Model,
		Messages:    u.messages,
		Temperature: openai.Float(u.cfg.Temperature),
		Seed:        openai.Int(u.seed),
	})
	if err != nil {
		u.messages = u.messages[:len(u.messages)-1]
		return "", gym.InfraFault("user_simulator", fmt.Errorf("%s: user simulator (%s at %s): %w", KindName, u.cfg.Model, u.cfg.BaseURL, err))
	}
	if len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Message.Content) == "" {
		u.messages = u.messages[:len(u.messages)-1]
		return "", gym.InfraFault("user_simulator", errors.New(KindName+": the user simulator sent an empty reply"))
	}
	reply := resp.Choices[0].Message.Content
	u.messages = append(u.messages, openai.AssistantMessage(reply))
	return reply, nil
}
