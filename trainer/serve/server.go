// Package serve is an OpenAI-compatible HTTP API over a trainer.Engine:
// POST /v1/chat/completions (messages rendered with Qwen3's chat template;
// tools, tool_calls parsed from <tool_call> blocks, reasoning_content from
// <think> blocks, logprobs and top_logprobs, SSE streaming), POST
// /v1/completions (a text or token-id prompt) and GET /v1/models, so the
// agent runner and the judges can use a local model like any server.
//
// Extensions, as vLLM spells them: top_k; chat_template_kwargs.enable_thinking;
// return_token_ids, which adds prompt_token_ids and each choice's token_ids
// (what a trainer needs to score the exact tokens sampled). Logprobs are
// those of the model's distribution at temperature 1 (see trainer.Sampled).
// n must be 1. A full engine queue answers 503 with Retry-After.
package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

// Server answers the OpenAI API for one model. Its zero-valued limits mean
// the stated defaults. It is an http.Handler.
type Server struct {
	Engine    *trainer.Engine
	Tokenizer *tokenizer.Tokenizer
	// ModelName is the model's id in requests and answers; requests naming
	// another model are refused.
	ModelName string
	// MaxBodyBytes bounds a request body (default 16 MiB).
	MaxBodyBytes int64
	// Logger gets one line per failed request (default slog.Default()).
	Logger *slog.Logger
	// Versions, when set, gives each request its engine instead of
	// Engine: the newest weight version of a model being trained
	// (trainer/service's Acquire), held until the request ends (release)
	// so that a request keeps the version it started with. The version's
	// number goes back in the VersionHeader of the answer.
	Versions func() (e *trainer.Engine, version int, release func(), err error)

	mux     *http.ServeMux
	stopIDs []int32
	created int64
}

// New makes a Server; the model's eos_token_id and the tokenizer's
// <|im_end|> and <|endoftext|> end every generation.
func New(e *trainer.Engine, tok *tokenizer.Tokenizer, name string) *Server {
	s := &Server{Engine: e, Tokenizer: tok, ModelName: name, created: time.Now().Unix()}
	for _, id := range e.Model().Config.EOSTokenIDs() {
		s.stopIDs = append(s.stopIDs, int32(id))
	}
	for _, t := range []string{"<|im_end|>", "<|endoftext|>"} {
		if id, ok := tok.TokenID(t); ok {
			s.stopIDs = append(s.stopIDs, id)
		}
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.logger().Error("serve-model: handler panic", "path", r.URL.Path, "panic", p)
			writeError(w, http.StatusInternalServerError, "server_error", fmt.Sprint(p))
		}
	}()
	s.mux.ServeHTTP(w, r)
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
		{"id": s.ModelName, "object": "model", "created": s.created, "owned_by": "nextstate", "max_model_len": s.Engine.MaxContext()},
	}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	var e apiError
	e.Error.Message, e.Error.Type = msg, typ
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, code, e)
}

// decode reads a JSON request body under the size limit.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	limit := s.MaxBodyBytes
	if limit <= 0 {
		limit = 16 << 20
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", err.Error())
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad JSON: "+err.Error())
		return false
	}
	return true
}

// params are the sampling fields common to both endpoints.
type params struct {
	model             string
	temperature, topP *float64
	topK, maxTokens   *int
	seed              *int64
	n                 *int
	stop              []string
}

func (s *Server) request(p params, prompt []int32, topLogprobs int) (trainer.Request, error) {
	if p.model != "" && p.model != s.ModelName {
		return trainer.Request{}, fmt.Errorf("model %q is not served here (%q is)", p.model, s.ModelName)
	}
	if p.n != nil && *p.n != 1 {
		return trainer.Request{}, errors.New("n must be 1")
	}
	req := trainer.Request{Prompt: prompt, Stop: s.stopIDs, Sample: trainer.SampleParams{Temperature: 1, TopLogprobs: topLogprobs}}
	if p.temperature != nil {
		if *p.temperature < 0 || *p.temperature > 2 {
			return req, errors.New("temperature must be in [0, 2]")
		}
		req.Sample.Temperature = *p.temperature
	}
	if p.topP != nil {
		if *p.topP <= 0 || *p.topP > 1 {
			return req, errors.New("top_p must be in (0, 1]")
		}
		req.Sample.TopP = *p.topP
	}
	if p.topK != nil {
		if *p.topK < -1 {
			return req, errors.New("top_k must be -1, 0 or positive")
		}
		req.Sample.TopK = max(*p.topK, 0)
	}
	if topLogprobs < 0 || topLogprobs > 20 {
		return req, errors.New("top_logprobs must be in [0, 20]")
	}
	if p.maxTokens != nil {
		if *p.maxTokens <= 0 {
			return req, errors.New("max_tokens must be positive")
		}
		req.MaxTokens = *p.maxTokens
	}
	if p.seed != nil {
		seed := uint64(*p.seed)
		req.Seed = &seed
	}
	if len(p.stop) > 4 {
		return req, errors.New("at most 4 stop strings")
	}
	return req, nil
}

// generation runs one request, decoding text as tokens come and cutting it
// at the first stop string.
type generation struct {
	s       *Server
	stops   []string
	tokens  []trainer.Sampled
	raw     []byte // decoded bytes, special tokens left out
	text    string // the valid UTF-8 prefix of raw, cut at a stop string
	hitStop bool
	result  trainer.Result

	toks   <-chan trainer.Sampled
	res    <-chan trainer.Result
	cancel context.CancelFunc
}

// VersionHeader carries the weight version that answered, when the
// server serves versions (Server.Versions).
const VersionHeader = "X-Weight-Version"

// start submits the request; the caller must call cancel when done.
func (g *generation) start(w http.ResponseWriter, r *http.Request, req trainer.Request) error {
	e, release := g.s.Engine, func() {}
	if g.s.Versions != nil {
		var v int
		var err error
		if e, v, release, err = g.s.Versions(); err != nil {
			return err
		}
		w.Header().Set(VersionHeader, strconv.Itoa(v))
	}
	ctx, cancel := context.WithCancel(r.Context())
	toks, res, err := e.Stream(ctx, req)
	if err != nil {
		cancel()
		release()
		return err
	}
	var once sync.Once
	g.toks, g.res, g.cancel = toks, res, func() { cancel(); once.Do(release) }
	return nil
}

// consume reads the generation to its end, calling step after every token
// (step may be nil); a step error cancels the generation and is returned.
func (g *generation) consume(step func(t trainer.Sampled) error) error {
	cancel := g.cancel
	var stepErr error
	for t := range g.toks {
		if g.hitStop || stepErr != nil {
			continue // drain after a stop string or a failed write
		}
		g.tokens = append(g.tokens, t)
		if !containsID(g.s.stopIDs, t.ID) {
			g.raw = append(g.raw, g.s.Tokenizer.DecodeBytes([]int32{t.ID}, true)...)
		}
		g.text = string(g.raw[:tokenizer.CompleteUTF8(g.raw)])
		for _, st := range g.stops {
			if i := strings.Index(g.text, st); i >= 0 && st != "" {
				g.text, g.hitStop = g.text[:i], true
			}
		}
		if g.hitStop {
			cancel()
		}
		if step != nil {
			stepErr = step(t)
			if stepErr != nil {
				cancel()
			}
		}
	}
	g.result = <-g.res
	if len(g.raw) > 0 && !g.hitStop { // a cut multi-byte character at the end
		g.text = strings.ToValidUTF8(string(g.raw), "\uFFFD")
		for _, st := range g.stops {
			if i := strings.Index(g.text, st); i >= 0 && st != "" {
				g.text, g.hitStop = g.text[:i], true
			}
		}
	}
	return stepErr
}

// finish maps the engine's reason to OpenAI's.
func (g *generation) finish() string {
	if g.hitStop || g.result.Finish == trainer.FinishStop {
		return "stop"
	}
	return "length"
}

func (g *generation) ids() []int32 {
	out := make([]int32, len(g.tokens))
	for i, t := range g.tokens {
		out[i] = t.ID
	}
	return out
}

func (g *generation) usage() usage {
	return usage{PromptTokens: g.result.PromptTokens, CompletionTokens: len(g.tokens), TotalTokens: g.result.PromptTokens + len(g.tokens)}
}

func (s *Server) engineError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, trainer.ErrOverloaded), errors.Is(err, trainer.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "server_overloaded", err.Error())
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
	}
}

// tokenText is a token's text for logprobs and its bytes.
func (s *Server) tokenText(id int32) (string, []int) {
	b := s.Tokenizer.DecodeBytes([]int32{id}, false)
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), ints
}

func (s *Server) chatLogprob(t trainer.Sampled) tokenLogprob {
	tok, b := s.tokenText(t.ID)
	lp := tokenLogprob{Token: tok, Logprob: t.Logprob, Bytes: b, TopLogprobs: []topLogprob{}}
	for _, a := range t.Top {
		at, ab := s.tokenText(a.ID)
		lp.TopLogprobs = append(lp.TopLogprobs, topLogprob{Token: at, Logprob: a.Logprob, Bytes: ab})
	}
	return lp
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// sse writes server-sent events, flushing each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		return err
	}
	if e.f != nil {
		e.f.Flush()
	}
	return nil
}

func (e *sse) done() {
	io.WriteString(e.w, "data: [DONE]\n\n")
	if e.f != nil {
		e.f.Flush()
	}
}
