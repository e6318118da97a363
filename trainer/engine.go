package trainer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
)

// Request is one generation: a prompt and how to continue it.
type Request struct {
	Prompt    []int32
	MaxTokens int // new tokens at most; 0 means up to the context length
	Sample    SampleParams
	// Seed makes sampling reproducible; nil draws one.
	Seed *uint64
	// Stop ends generation after any of these tokens (included in the output).
	Stop []int32
}

// FinishReason says why a generation ended: "stop" (a stop token), "length"
// (MaxTokens or the context length) or "cancelled" (the caller went away).
type FinishReason string

// Finish reasons.
const (
	FinishStop      FinishReason = "stop"
	FinishLength    FinishReason = "length"
	FinishCancelled FinishReason = "cancelled"
)

// Result is a finished generation.
type Result struct {
	Tokens       []Sampled
	Finish       FinishReason
	PromptTokens int
}

// EngineOptions bound an Engine; zero values mean the stated defaults.
type EngineOptions struct {
	MaxBatch     int // sequences decoded together (default 16)
	MaxQueue     int // requests waiting for a slot (default 256); more get ErrOverloaded
	PrefillChunk int // prompt tokens fed per step per sequence (default 512)
	MaxContext   int // prompt plus output (default max_position_embeddings)
}

// ErrOverloaded is returned when the engine's queue is full; retry later.
var ErrOverloaded = errors.New("trainer: engine queue full")

// ErrClosed is returned for requests to a closed engine.
var ErrClosed = errors.New("trainer: engine closed")

// Engine runs generations of one model with continuous batching: each step
// is one Forward call over a chunk of every new prompt and the last token
// of every running sequence, so concurrent requests share each matrix
// product. Its one goroutine is started by NewEngine and stopped by Close.
type Engine struct {
	m    *Model
	opt  EngineOptions
	in   chan *job
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

type job struct {
	ctx     context.Context
	req     Request
	rng     *rand.Rand
	cache   *Cache
	pending []int32 // prompt tokens not yet fed
	last    int32
	out     []Sampled
	tokens  chan Sampled // buffered to MaxTokens: the engine never blocks on it
	result  chan Result  // buffered 1
	max     int
}

// NewEngine starts an engine for m.
func NewEngine(m *Model, opt EngineOptions) *Engine {
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = 16
	}
	if opt.MaxQueue <= 0 {
		opt.MaxQueue = 256
	}
	if opt.PrefillChunk <= 0 {
		opt.PrefillChunk = 512
	}
	if opt.MaxContext <= 0 {
		opt.MaxContext = m.Config.MaxPositionEmbeddings
	}
	e := &Engine{m: m, opt: opt, in: make(chan *job, opt.MaxQueue), quit: make(chan struct{}), done: make(chan struct{})}
	go e.loop()
	return e
}

// Model is the engine's model.
func (e *Engine) Model() *Model { return e.m }

// MaxContext is the longest prompt plus output the engine accepts.
func (e *Engine) MaxContext() int { return e.opt.MaxContext }

// Close stops the engine; running generations end as cancelled. It waits
// for the engine's goroutine and is idempotent.
func (e *Engine) Close() {
	e.once.Do(func() { close(e.quit) })
	<-e.done
}

// Stream starts a generation and returns a channel of its tokens as they
// are chosen (closed at the end) and a channel that then yields its Result.
// Cancelling ctx ends it at the next step.
func (e *Engine) Stream(ctx context.Context, req Request) (<-chan Sampled, <-chan Result, error) {
	if len(req.Prompt) == 0 {
		return nil, nil, errors.New("trainer: empty prompt")
	}
	V := int32(e.m.Config.VocabSize)
	for _, t := range req.Prompt {
		if t < 0 || t >= V {
			return nil, nil, fmt.Errorf("trainer: prompt token %d outside the vocabulary [0,%d)", t, V)
		}
	}
	room := e.opt.MaxContext - len(req.Prompt)
	if room <= 0 {
		return nil, nil, fmt.Errorf("trainer: prompt of %d tokens leaves no room in the context of %d", len(req.Prompt), e.opt.MaxContext)
	}
	n := req.MaxTokens
	if n <= 0 || n > room {
		n = room
	}
	seed := rand.Uint64()
	if req.Seed != nil {
		seed = *req.Seed
	}
	j := &job{ctx: ctx, req: req, rng: rand.New(rand.NewPCG(seed, 0x6e657874)), cache: e.m.NewCache(),
		pending: req.Prompt, max: n, tokens: make(chan Sampled, n), result: make(chan Result, 1)}
	select {
	case <-e.quit:
		return nil, nil, ErrClosed
	default:
	}
	select {
	case e.in <- j:
		return j.tokens, j.result, nil
	default:
		return nil, nil, ErrOverloaded
	}
}

// Generate runs a generation to its end.
func (e *Engine) Generate(ctx context.Context, req Request) (Result, error) {
	toks, res, err := e.Stream(ctx, req)
	if err != nil {
		return Result{}, err
	}
	for range toks {
	}
	return <-res, nil
}

func (e *Engine) loop() {
	defer close(e.done)
	var active []*job
	finish := func(j *job, why FinishReason) {
		j.cache.Free()
		close(j.tokens)
		j.result <- Result{Tokens: j.out, Finish: why, PromptTokens: len(j.req.Prompt)}
	}
	defer func() {
		for _, j := range active {
			finish(j, FinishCancelled)
		}
		for {
			select {
			case j := <-e.in:
				finish(j, FinishCancelled)
			default:
				return
			}
		}
	}()
	for {
		if len(active) == 0 {
			select {
			case j := <-e.in:
				active = append(active, j)
			case <-e.quit:
				return
			}
		}
		for len(active) < e.opt.MaxBatch {
			select {
			case j := <-e.in:
				active = append(active, j)
				continue
			default:
			}
			break
		}
		select {
		case <-e.quit:
			return
		default:
		}
		// Drop cancelled jobs, then build this step's segments.
		live := active[:0]
		for _, j := range active {
			if j.ctx.Err() != nil {
				finish(j, FinishCancelled)
				continue
			}
			live = append(live, j)
		}
		active = live
		if len(active) == 0 {
			continue
		}
		segs := make([]Segment, len(active))
		for i, j := range active {
			if len(j.pending) > 0 {
				n := min(len(j.pending), e.opt.PrefillChunk)
				segs[i] = Segment{Tokens: j.pending[:n], Cache: j.cache}
				j.pending = j.pending[n:]
			} else {
				segs[i] = Segment{Tokens: []int32{j.last}, Cache: j.cache}
			}
		}
		logits, err := e.m.Forward(segs, false)
		if err != nil { // a bug, not a request's fault: end everything loudly
			panic(err)
		}
		V := e.m.Config.VocabSize
		live = active[:0]
		for i, j := range active {
			if len(j.pending) > 0 { // still prefilling
				live = append(live, j)
				continue
			}
			s := Sample(logits[i*V:(i+1)*V], j.req.Sample, j.rng)
			j.out = append(j.out, s)
			j.tokens <- s
			j.last = s.ID
			switch {
			case containsID(j.req.Stop, s.ID):
				finish(j, FinishStop)
			case len(j.out) >= j.max:
				finish(j, FinishLength)
			default:
				live = append(live, j)
			}
		}
		active = live
	}
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
