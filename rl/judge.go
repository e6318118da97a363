package rl

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/nextstate-rl/nextstate/gym"
)

// Judge defaults.
const (
	DefaultVotes       = 3
	DefaultTemperature = 0.6
	DefaultMaxTokens   = 4096
	DefaultTimeout     = 2 * time.Minute
	DefaultRetries     = 2
	DefaultBackoff     = 500 * time.Millisecond
	maxBackoff         = 10 * time.Second
	maxVotes           = 64
)

// JudgeConfig configures a Judge. It reads from JSON; absent and zero
// fields take the defaults in brackets.
type JudgeConfig struct {
	// Endpoint is the base URL of an OpenAI-compatible API, the part
	// before /chat/completions: "http://localhost:8000/v1" (vLLM, SGLang,
	// nextstate's model server) or a hosted API's. Required.
	Endpoint string `json:"endpoint"`
	// Model is the judge model's name at the endpoint. Required.
	Model string `json:"model"`
	// APIKey is sent as a bearer token; none when empty. OPENAI_API_KEY
	// and OPENAI_BASE_URL in the environment are not used.
	APIKey string `json:"api_key,omitempty"`
	// Votes is m, the judgements sampled per step [3]; VotesByKind sets it
	// per prompt kind ("terminal": 5).
	Votes       int            `json:"votes,omitempty"`
	VotesByKind map[string]int `json:"votes_by_kind,omitempty"`
	// Temperature is the sampling temperature of the votes [0.6]; set it
	// to 0 for greedy votes (which then all agree).
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens bounds each reply (sent as max_tokens) [4096].
	MaxTokens int `json:"max_tokens,omitempty"`
	// Timeout bounds each HTTP call [2m].
	Timeout gym.Duration `json:"timeout,omitempty"`
	// Retries is how many times a failed call is tried again: after a
	// timeout, a connection error, or a 408, 409, 429 or 5xx answer [2];
	// negative for none. Other answers (400, 401, 404) are not retried.
	Retries int `json:"retries,omitempty"`
	// Backoff is the wait before the first retry, doubled for each next
	// one up to 10s, with up to 25% added at random [500ms].
	Backoff gym.Duration `json:"backoff,omitempty"`
	// SingleRequest asks for the m votes in one request (n = m) instead of
	// m concurrent requests; vLLM, SGLang and OpenAI support n. A failed
	// call then fails every vote.
	SingleRequest bool `json:"single_request,omitempty"`
	// Templates is a directory of prompt templates that replace the
	// built-in ones (see LoadTemplates); "" for the built-in ones.
	Templates string `json:"templates,omitempty"`
	// Windows sets the history window per prompt kind; kinds it does not
	// name take DefaultWindow's.
	Windows map[string]Window `json:"windows,omitempty"`
	// Limits caps the prompt's texts.
	Limits TextLimits `json:"limits,omitzero"`

	// HTTPClient makes the calls; nil for a client of its own.
	HTTPClient *http.Client `json:"-"`
	// BlobResolver reads the images given by reference ("sha256:...");
	// without one, such images are an error.
	BlobResolver func(ctx context.Context, ref string) ([]byte, error) `json:"-"`
}

// Judge scores steps with an LLM judge behind an OpenAI-compatible
// endpoint: m votes per step, each a reply ending in \boxed{1}, \boxed{0} or
// \boxed{-1}, with an optional hint. A Judge is safe for concurrent use.
type Judge struct {
	cfg       JudgeConfig
	temp      float64
	timeout   time.Duration
	backoff   time.Duration
	retries   int
	templates *Templates
	client    openai.Client
}

// NewJudge checks cfg, fills its defaults, and loads its templates.
func NewJudge(cfg JudgeConfig) (*Judge, error) {
	u, err := url.Parse(cfg.Endpoint)
	if cfg.Endpoint == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("judge endpoint %q: want the base URL of an OpenAI-compatible API, such as http://localhost:8000/v1", cfg.Endpoint)
	}
	if cfg.Model == "" {
		return nil, errors.New("judge model is empty: name the judge model as the endpoint knows it")
	}
	if cfg.Votes == 0 {
		cfg.Votes = DefaultVotes
	}
	for kind, m := range cfg.VotesByKind {
		if m < 1 || m > maxVotes {
			return nil, fmt.Errorf("judge votes_by_kind[%q] = %d: want 1 to %d", kind, m, maxVotes)
		}
	}
	if cfg.Votes < 1 || cfg.Votes > maxVotes {
		return nil, fmt.Errorf("judge votes = %d: want 1 to %d", cfg.Votes, maxVotes)
	}
	j := &Judge{cfg: cfg, temp: DefaultTemperature, timeout: DefaultTimeout, backoff: DefaultBackoff, retries: DefaultRetries}
	if cfg.Temperature != nil {
		if *cfg.Temperature < 0 || *cfg.Temperature > 2 {
			return nil, fmt.Errorf("judge temperature %g: want 0 to 2", *cfg.Temperature)
		}
		j.temp = *cfg.Temperature
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("judge max_tokens %d: want a positive number, or 0 for %d", cfg.MaxTokens, DefaultMaxTokens)
	}
	if cfg.MaxTokens == 0 {
		j.cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.Timeout < 0 || cfg.Backoff < 0 {
		return nil, errors.New("judge timeout and backoff must not be negative")
	}
	if cfg.Timeout > 0 {
		j.timeout = time.Duration(cfg.Timeout)
	}
	if cfg.Backoff > 0 {
		j.backoff = time.Duration(cfg.Backoff)
	}
	switch {
	case cfg.Retries < 0:
		j.retries = 0
	case cfg.Retries > 0:
		j.retries = cfg.Retries
	}
	for kind, w := range cfg.Windows {
		if w.Head < 0 {
			return nil, fmt.Errorf("judge windows[%q].head = %d: want 0 or more", kind, w.Head)
		}
	}
	j.templates = DefaultTemplates()
	if cfg.Templates != "" {
		if j.templates, err = LoadTemplates(cfg.Templates); err != nil {
			return nil, err
		}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	j.client = openai.NewClient(
		option.WithBaseURL(strings.TrimSuffix(cfg.Endpoint, "/")+"/"),
		option.WithAPIKey(cfg.APIKey), // also clears OPENAI_API_KEY's
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0), // retries are ours
	)
	return j, nil
}

// Model returns the judge model's name.
func (j *Judge) Model() string { return j.cfg.Model }

// Templates returns the judge's prompt templates.
func (j *Judge) Templates() *Templates { return j.templates }

// VotesFor returns m for a prompt kind.
func (j *Judge) VotesFor(kind string) int {
	if m, ok := j.cfg.VotesByKind[kindOrDefault(kind)]; ok {
		return m
	}
	return j.cfg.Votes
}

// WindowFor returns the history window of a prompt kind.
func (j *Judge) WindowFor(kind string) Window {
	if w, ok := j.cfg.Windows[kindOrDefault(kind)]; ok {
		return w
	}
	return DefaultWindow(kind)
}

func kindOrDefault(kind string) string {
	if kind == "" {
		return KindDefault
	}
	return kind
}

// Verdict is a judged step: its votes, their tally, and the hint.
type Verdict struct {
	Votes []Vote
	Tally
	// Hint is SelectHint(Votes): the teacher's hint for OPD, "" if none.
	Hint string
	// TimedOut is set when no vote is valid and at least one timed out.
	TimedOut bool
}

// Scorer judges one step. Judge implements it; the Judger runs any.
type Scorer interface {
	Score(ctx context.Context, in JudgeInput) (Verdict, error)
}

// Score judges a step. Vote failures (a malformed reply, a timeout, an HTTP
// error) are recorded in the verdict's votes, not returned; the error is for
// an input that cannot be judged (a template that fails on it, an image that
// cannot be read) or for ctx ending before the votes were in.
func (j *Judge) Score(ctx context.Context, in JudgeInput) (Verdict, error) {
	msgs, err := j.templates.Render(in, j.WindowFor(in.Kind), j.cfg.Limits)
	if err != nil {
		return Verdict{}, fmt.Errorf("judge prompt: %w", err)
	}
	params, err := j.chatMessages(ctx, msgs)
	if err != nil {
		return Verdict{}, err
	}
	m := j.VotesFor(in.Kind)
	votes := make([]Vote, m)
	if j.cfg.SingleRequest {
		texts, err := j.call(ctx, params, m)
		for i := range votes {
			switch {
			case err != nil:
				votes[i] = failedVote(err)
			case i < len(texts):
				votes[i] = parseVote(texts[i])
			default:
				votes[i] = Vote{Err: fmt.Errorf("the endpoint returned %d choices for n=%d", len(texts), m)}
			}
		}
	} else {
		var wg sync.WaitGroup
		for i := range votes {
			wg.Go(func() {
				texts, err := j.call(ctx, params, 1)
				switch {
				case err != nil:
					votes[i] = failedVote(err)
				case len(texts) == 0:
					votes[i] = Vote{Err: errors.New("the endpoint returned no choices")}
				default:
					votes[i] = parseVote(texts[0])
				}
			})
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return Verdict{Votes: votes, Tally: Aggregate(votes)}, err
	}
	v := Verdict{Votes: votes, Tally: Aggregate(votes), Hint: SelectHint(votes)}
	v.TimedOut = v.Valid == 0 && v.Timeouts > 0
	return v, nil
}

func failedVote(err error) Vote {
	return Vote{Err: err, TimedOut: errors.Is(err, ErrJudgeTimeout)}
}

// chatMessages converts rendered messages to the API's, images as data URLs.
func (j *Judge) chatMessages(ctx context.Context, msgs []JudgeMessage) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == "system" {
			out = append(out, openai.SystemMessage(m.Text()))
			continue
		}
		hasImage := false
		for _, p := range m.Parts {
			hasImage = hasImage || p.Image != nil
		}
		if !hasImage {
			out = append(out, openai.UserMessage(m.Text()))
			continue
		}
		parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(m.Parts))
		for _, p := range m.Parts {
			if p.Image == nil {
				parts = append(parts, openai.TextContentPart(p.Text))
				continue
			}
			u, err := j.dataURL(ctx, p.Image)
			if err != nil {
				return nil, err
			}
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: u}))
		}
		out = append(out, openai.UserMessage(parts))
	}
	return out, nil
}

// dataURL returns an image as a data URL, reading a blob reference with the
// BlobResolver.
func (j *Judge) dataURL(ctx context.Context, b *gym.Blob) (string, error) {
	data := b.Data
	if len(data) == 0 {
		if b.Ref == "" {
			return "", errors.New("judge image has neither data nor a blob ref")
		}
		if j.cfg.BlobResolver == nil {
			return "", fmt.Errorf("judge image %s is a blob reference, and the judge has no BlobResolver to read it", b.Ref)
		}
		var err error
		if data, err = j.cfg.BlobResolver(ctx, b.Ref); err != nil {
			return "", fmt.Errorf("judge image %s: %w", b.Ref, err)
		}
	}
	mime := b.MIME
	if mime == "" {
		mime = "image/png"
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}

// call asks for n replies, with the per-call timeout and the retries.
func (j *Judge) call(ctx context.Context, msgs []openai.ChatCompletionMessageParamUnion, n int) ([]string, error) {
	params := openai.ChatCompletionNewParams{
		Model:       j.cfg.Model,
		Messages:    msgs,
		Temperature: openai.Float(j.temp),
		MaxTokens:   openai.Int(int64(j.cfg.MaxTokens)),
	}
	if n > 1 {
		params.N = openai.Int(int64(n))
	}
	wait := j.backoff
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, j.timeout)
		resp, err := j.client.Chat.Completions.New(actx, params)
		timedOut := err != nil && actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			texts := make([]string, len(resp.Choices))
			for i, c := range resp.Choices {
				texts[i] = c.Message.Content
			}
			return texts, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if timedOut {
			err = fmt.Errorf("%w (%s per call, %d attempt(s))", ErrJudgeTimeout, j.timeout, attempt+1)
		} else {
			err = fmt.Errorf("judge call (attempt %d): %w", attempt+1, err)
		}
		if attempt >= j.retries || !retryable(err) {
			return nil, err
		}
		d := wait + rand.N(wait/4+1)
		wait = min(2*wait, maxBackoff)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// retryable says whether a failed call may succeed if tried again.
func retryable(err error) bool {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		s := apiErr.StatusCode
		return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
	}
	return true // timeouts, refused connections, broken replies
}
