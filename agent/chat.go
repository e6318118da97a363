package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// chatRequest is an OpenAI chat completion request with the fields vLLM
// and SGLang add for token ids and log-probs. Messages and Tools are
// encoded once and reused for the turn record.
type chatRequest struct {
	Model       string          `json:"model"`
	Messages    json.RawMessage `json:"messages"`
	Tools       json.RawMessage `json:"tools,omitempty"`
	ToolChoice  string          `json:"tool_choice,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	TopP        *float64        `json:"top_p,omitempty"`
	MaxTokens   int             `json:"max_tokens,omitempty"`
	Seed        *int64          `json:"seed,omitempty"`
	// OpenAI's own: one log-prob per response token.
	Logprobs bool `json:"logprobs,omitempty"`
	// vLLM: tokens in logprobs as "token_id:N"; prompt_token_ids and
	// token_ids in the response (vLLM >= 0.10.2).
	ReturnTokensAsTokenIDs bool `json:"return_tokens_as_token_ids,omitempty"`
	ReturnTokenIDs         bool `json:"return_token_ids,omitempty"`
	// SGLang: meta_info with output_token_logprobs.
	ReturnLogprob bool `json:"return_logprob,omitempty"`
}

// tokenFields are the request fields an endpoint may not know, dropped
// when it refuses them.
var tokenFields = []string{"return_tokens_as_token_ids", "return_token_ids", "return_logprob", "logprobs"}

// chatResponse is what is read of a chat completion, including the
// vLLM and SGLang extras.
type chatResponse struct {
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	PromptTokenIDs []int     `json:"prompt_token_ids"` // vLLM
	MetaInfo       *metaInfo `json:"meta_info"`        // SGLang
}

type chatChoice struct {
	Message struct {
		Content          *string        `json:"content"`
		ReasoningContent *string        `json:"reasoning_content"`
		ToolCalls        []wireToolCall `json:"tool_calls"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
	Logprobs     *struct {
		Content []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
		} `json:"content"`
	} `json:"logprobs"`
	TokenIDs         []int     `json:"token_ids"`          // vLLM return_token_ids
	ResponseTokenIDs []int     `json:"response_token_ids"` // patched vLLM servers
	PromptTokenIDs   []int     `json:"prompt_token_ids"`
	MetaInfo         *metaInfo `json:"meta_info"` // SGLang
}

// metaInfo is SGLang's: output_token_logprobs is [[logprob, token_id,
// text], ...], input_token_logprobs likewise for the prompt.
type metaInfo struct {
	OutputTokenLogprobs [][]json.RawMessage `json:"output_token_logprobs"`
	InputTokenLogprobs  [][]json.RawMessage `json:"input_token_logprobs"`
	InputTokenIDs       []int               `json:"input_token_ids"`
	OutputTokenIDs      []int               `json:"output_token_ids"`
}

// wireToolCall is a tool call in a response; some servers send the
// arguments as an object rather than a JSON string.
type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// arguments returns the call's arguments as the JSON text the model wrote.
func (c wireToolCall) arguments() string {
	a := bytes.TrimSpace(c.Function.Arguments)
	if len(a) > 0 && a[0] == '"' {
		var s string
		if json.Unmarshal(a, &s) == nil {
			return s
		}
	}
	if len(a) == 0 || string(a) == "null" {
		return ""
	}
	return string(a)
}

// reply is one model response, reduced to what the agent uses.
type reply struct {
	Content      string
	Reasoning    string
	ToolCalls    []wireToolCall
	FinishReason string
	PromptIDs    []int
	ResponseIDs  []int
	LogProbs     []float64
	PromptTokens int
	OutTokens    int
	Model        string
	// Version is the weight version the endpoint's X-Weight-Version
	// header named; nil without one.
	Version *int
}

// decodeReply reads the first choice of a response body and the token
// data in whichever of the accepted shapes it came.
func decodeReply(body []byte) (reply, error) {
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return reply{}, fmt.Errorf("the model's response is not a chat completion: %w (body starts %q)", err, clip(string(body), 200))
	}
	if len(r.Choices) == 0 {
		return reply{}, fmt.Errorf("the model's response has no choices (body starts %q)", clip(string(body), 200))
	}
	c := r.Choices[0]
	out := reply{FinishReason: c.FinishReason, ToolCalls: c.Message.ToolCalls, Model: r.Model}
	if c.Message.Content != nil {
		out.Content = *c.Message.Content
	}
	if c.Message.ReasoningContent != nil {
		out.Reasoning = *c.Message.ReasoningContent
	}
	if r.Usage != nil {
		out.PromptTokens, out.OutTokens = r.Usage.PromptTokens, r.Usage.CompletionTokens
	}
	meta := c.MetaInfo
	if meta == nil {
		meta = r.MetaInfo
	}

	// Response token ids: vLLM's token_ids, else "token_id:N" tokens in
	// logprobs, else SGLang's output_token_logprobs.
	out.ResponseIDs = firstNonEmpty(c.TokenIDs, c.ResponseTokenIDs)
	var lps []float64
	var lpIDs []int
	idsInTokens := c.Logprobs != nil && len(c.Logprobs.Content) > 0
	if c.Logprobs != nil {
		for _, t := range c.Logprobs.Content {
			lps = append(lps, t.Logprob)
			if id, ok := strings.CutPrefix(t.Token, "token_id:"); ok {
				if n, err := strconv.Atoi(id); err == nil {
					lpIDs = append(lpIDs, n)
					continue
				}
			}
			idsInTokens = false
		}
	}
	if meta != nil && len(meta.OutputTokenLogprobs) > 0 && len(lps) == 0 {
		lps, lpIDs, idsInTokens = nil, nil, true
		for _, e := range meta.OutputTokenLogprobs {
			lp, id, ok := sglangEntry(e)
			if !ok {
				idsInTokens = false
				lps = nil
				break
			}
			lps = append(lps, lp)
			lpIDs = append(lpIDs, id)
		}
	}
	if len(out.ResponseIDs) == 0 && idsInTokens {
		out.ResponseIDs = lpIDs
	}
	if len(out.ResponseIDs) == 0 && meta != nil {
		out.ResponseIDs = meta.OutputTokenIDs
	}
	// Log-probs are kept only when they line up with the response ids,
	// or stand alone when there are no ids.
	if len(out.ResponseIDs) == 0 || len(lps) == len(out.ResponseIDs) {
		out.LogProbs = lps
	}

	out.PromptIDs = firstNonEmpty(r.PromptTokenIDs, c.PromptTokenIDs)
	if len(out.PromptIDs) == 0 && meta != nil {
		out.PromptIDs = meta.InputTokenIDs
		if len(out.PromptIDs) == 0 {
			for _, e := range meta.InputTokenLogprobs {
				_, id, ok := sglangEntry(e)
				if !ok {
					out.PromptIDs = nil
					break
				}
				out.PromptIDs = append(out.PromptIDs, id)
			}
		}
	}
	if out.PromptTokens == 0 {
		out.PromptTokens = len(out.PromptIDs)
	}
	if out.OutTokens == 0 {
		out.OutTokens = len(out.ResponseIDs)
	}
	return out, nil
}

// sglangEntry reads [logprob, token_id, text]; the first prompt token's
// logprob is null, read as 0.
func sglangEntry(e []json.RawMessage) (float64, int, bool) {
	if len(e) < 2 {
		return 0, 0, false
	}
	var lp *float64
	var id int
	if json.Unmarshal(e[0], &lp) != nil || json.Unmarshal(e[1], &id) != nil {
		return 0, 0, false
	}
	if lp == nil {
		return 0, id, true
	}
	return *lp, id, true
}

func firstNonEmpty(xs ...[]int) []int {
	for _, x := range xs {
		if len(x) > 0 {
			return x
		}
	}
	return nil
}

// endpoint calls an OpenAI-compatible chat completions endpoint through
// the official client, which brings the base URL, auth, retries with
// backoff (408, 409, 429, 5xx, broken connections) and per-attempt
// timeouts; the body and the reply are nextstate's own so that the vLLM
// and SGLang fields go through.
type endpoint struct {
	client openai.Client
	base   string
}

func newEndpoint(cfg *Config) *endpoint {
	opts := []option.RequestOption{
		option.WithBaseURL(strings.TrimSuffix(cfg.BaseURL, "/") + "/"),
		option.WithAPIKey(cfg.APIKey), // also clears $OPENAI_API_KEY's
		option.WithMaxRetries(cfg.Retries),
		option.WithRequestTimeout(cfg.CallTimeout),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &endpoint{client: openai.NewClient(opts...), base: cfg.BaseURL}
}

// complete sends one request body and returns the raw response body and
// the weight version its X-Weight-Version header named (nil without one).
// A failure is a *modelError.
func (e *endpoint) complete(ctx context.Context, body []byte) ([]byte, *int, error) {
	var out []byte
	var resp *http.Response
	if err := e.client.Post(ctx, "chat/completions", body, &out, option.WithResponseInto(&resp)); err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, classifyModelError(err)
	}
	var version *int
	if resp != nil {
		if v, err := strconv.Atoi(resp.Header.Get(WeightVersionHeader)); err == nil && v >= 0 {
			version = &v
		}
	}
	return out, version, nil
}

// WeightVersionHeader is the response header in which nextstate's trainer
// servers name the weight version that produced an answer.
const WeightVersionHeader = "X-Weight-Version"

// modelError is a failed model call, classified: whose fault it is and
// whether the whole run should stop.
type modelError struct {
	Status  int
	Reason  string // "context_length", "model_rejected", "model_unavailable", "model_auth", "model_not_found"
	Message string // the endpoint's own message, when it gave one
	Err     error
}

func (e *modelError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("model call (%s): %v: %s", e.Reason, e.Err, e.Message)
	}
	return fmt.Sprintf("model call (%s): %v", e.Reason, e.Err)
}

func (e *modelError) Unwrap() error { return e.Err }

// fatal reports that no later call can succeed either: a wrong key, model
// or URL.
func (e *modelError) fatal() bool { return e.Reason == "model_auth" || e.Reason == "model_not_found" }

// agentFault reports that the policy is to blame (its prompt outgrew the
// model's context), not the infrastructure.
func (e *modelError) agentFault() bool { return e.Reason == "context_length" }

func classifyModelError(err error) *modelError {
	var api *openai.Error
	if !errors.As(err, &api) {
		return &modelError{Reason: "model_unavailable", Err: err}
	}
	me := &modelError{Status: api.StatusCode, Err: err, Message: apiMessage(api)}
	msg := strings.ToLower(me.Message)
	switch s := api.StatusCode; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		me.Reason = "model_auth"
	case s == http.StatusNotFound:
		me.Reason = "model_not_found"
	case s == http.StatusRequestEntityTooLarge || s == http.StatusBadRequest &&
		(strings.Contains(msg, "context length") || strings.Contains(msg, "context_length") ||
			strings.Contains(msg, "too long") || strings.Contains(msg, "maximum") && strings.Contains(msg, "token")):
		me.Reason = "context_length"
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusConflict && s != http.StatusTooManyRequests:
		me.Reason = "model_rejected"
	default:
		me.Reason = "model_unavailable"
	}
	return me
}

// apiMessage is the endpoint's error message: OpenAI's {"error":
// {"message"}}, vLLM's older top-level {"message"}, or the body's start.
func apiMessage(api *openai.Error) string {
	if api.Message != "" {
		return api.Message
	}
	if api.Response == nil || api.Response.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(api.Response.Body, 8<<10))
	var top struct {
		Message string `json:"message"`
		Detail  any    `json:"detail"`
	}
	if json.Unmarshal(b, &top) == nil {
		if top.Message != "" {
			return top.Message
		}
		if top.Detail != nil {
			d, _ := json.Marshal(top.Detail)
			return string(d)
		}
	}
	return clip(strings.TrimSpace(string(b)), 500)
}

// refusesTokenFields reports a 400 that names one of the token fields:
// the endpoint (OpenAI's own, say) does not take them.
func refusesTokenFields(err error) bool {
	var me *modelError
	if !errors.As(err, &me) || me.Status != http.StatusBadRequest {
		return false
	}
	for _, f := range tokenFields {
		if strings.Contains(me.Message, f) {
			return true
		}
	}
	return strings.Contains(me.Message, "Unrecognized request argument")
}

// refusesToolChoice reports vLLM's 400 for tools sent to a server started
// without a tool-call parser ("auto" tool choice requires
// --enable-auto-tool-choice and --tool-call-parser to be set).
func refusesToolChoice(err error) bool {
	var me *modelError
	if !errors.As(err, &me) || me.Status != http.StatusBadRequest {
		return false
	}
	return strings.Contains(me.Message, "tool-call-parser") || strings.Contains(me.Message, "enable-auto-tool-choice")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
