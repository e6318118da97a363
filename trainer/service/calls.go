package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/trainer"
)

// ForwardRequest asks for the log-probs of the data's response tokens.
type ForwardRequest struct {
	Data      []Datum     `json:"data,omitempty"`
	Samples   []rl.Sample `json:"samples,omitempty"`
	Estimator string      `json:"estimator,omitempty"`
	// Model is "policy" (the default) or "reference" (version 0).
	Model string `json:"model,omitempty"`
}

// ForwardResult has, per datum (after conversion, in order), the log-prob
// of each response token, masked ones included.
type ForwardResult struct {
	LogProbs   [][]float32 `json:"log_probs"`
	Conversion *Conversion `json:"conversion,omitempty"`
}

// Forward implements API.
func (s *Service) Forward(ctx context.Context, req ForwardRequest) (ForwardResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ForwardResult{}, errClosed
	}
	scorer := s.train
	switch req.Model {
	case "", "policy":
	case "reference":
		scorer = s.ref
	default:
		return ForwardResult{}, fmt.Errorf("model %q: want policy or reference", req.Model)
	}
	data, cv, err := s.data(req.Data, req.Samples, SampleOptions{Estimator: req.Estimator})
	if err != nil {
		return ForwardResult{}, err
	}
	res := ForwardResult{LogProbs: make([][]float32, len(data)), Conversion: cv}
	if len(data) == 0 {
		return res, nil
	}
	b := &trainer.Batch{}
	for di, d := range data {
		b.Seqs = append(b.Seqs, d.Tokens)
		L, n := len(d.Tokens), d.ResponseLength
		for k := range n {
			b.Rows = append(b.Rows, trainer.Row{Seq: di, Pos: L - n + k - 1})
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	out, err := scorer.Score(b, false, 0)
	if err != nil {
		return res, err
	}
	at := 0
	for di, d := range data {
		res.LogProbs[di] = out.LogProbs[at : at+d.ResponseLength]
		at += d.ResponseLength
	}
	return res, nil
}

// AdamParams are optim_step's hyper-parameters (torch.optim.AdamW's; zero
// Beta1, Beta2, Eps mean 0.9, 0.999, 1e-8; MaxGradNorm 0 does not clip).
type AdamParams struct {
	LR          float64 `json:"learning_rate"`
	Beta1       float64 `json:"beta1,omitempty"`
	Beta2       float64 `json:"beta2,omitempty"`
	Eps         float64 `json:"eps,omitempty"`
	WeightDecay float64 `json:"weight_decay,omitempty"`
	MaxGradNorm float64 `json:"max_grad_norm,omitempty"`
}

// OptimResult is what a step measured.
type OptimResult struct {
	Step     int     `json:"step"`
	LR       float64 `json:"learning_rate"`
	GradNorm float64 `json:"grad_norm"`
	Clipped  bool    `json:"clipped"`
}

// OptimStep implements API.
func (s *Service) OptimStep(_ context.Context, p AdamParams) (OptimResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return OptimResult{}, errClosed
	}
	if p.LR <= 0 {
		return OptimResult{}, fmt.Errorf("learning_rate %g: want a positive rate", p.LR)
	}
	st, err := s.train.Step(trainer.AdamWOptions{LR: p.LR, Beta1: p.Beta1, Beta2: p.Beta2, Eps: p.Eps, WeightDecay: p.WeightDecay, MaxGradNorm: p.MaxGradNorm})
	if err != nil {
		return OptimResult{}, err
	}
	return OptimResult{Step: st.Step, LR: st.LR, GradNorm: st.GradNorm, Clipped: st.Clipped}, nil
}

// SaveWeightsForSampler implements API. It fails while gradients wait for
// an OptimStep: a version is the weights after a whole step.
func (s *Service) SaveWeightsForSampler(context.Context) (Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Version{}, errClosed
	}
	if s.train.Pending() > 0 {
		return Version{}, errors.New("save_weights_for_sampler with gradients waiting for optim_step: a version is the weights after a whole step")
	}
	return s.publish()
}

// SampleRequest is a generation on a published version: a prompt as ids,
// or as chat messages rendered with the chat template (generation prompt
// added).
type SampleRequest struct {
	// Version is the version to sample (nil: the newest).
	Version      *int         `json:"version,omitempty"`
	PromptTokens []int32      `json:"prompt_tokens,omitempty"`
	Messages     []rl.Message `json:"messages,omitempty"`
	NumSamples   int          `json:"num_samples,omitempty"` // default 1, at most 64
	MaxTokens    int          `json:"max_tokens,omitempty"`  // default: up to the context
	Temperature  *float64     `json:"temperature,omitempty"` // default 1
	TopP         float64      `json:"top_p,omitempty"`
	TopK         int          `json:"top_k,omitempty"`
	// Seed makes the samples reproducible (sample i uses Seed+i).
	Seed *uint64 `json:"seed,omitempty"`
	// Stop are extra stop ids besides the model's end-of-turn tokens.
	Stop []int32 `json:"stop,omitempty"`
}

// Sequence is one generated continuation.
type Sequence struct {
	Tokens   []int32   `json:"tokens"`
	LogProbs []float32 `json:"log_probs"`
	Finish   string    `json:"finish_reason"`
}

// SampleResult holds the samples and the version that produced them.
type SampleResult struct {
	Version      int        `json:"version"`
	PromptTokens []int32    `json:"prompt_tokens"`
	Sequences    []Sequence `json:"sequences"`
}

// Sample implements API. It holds its version for its whole length, so a
// version published meanwhile changes nothing in it.
func (s *Service) Sample(ctx context.Context, req SampleRequest) (SampleResult, error) {
	n := req.NumSamples
	if n == 0 {
		n = 1
	}
	if n < 0 || n > 64 {
		return SampleResult{}, fmt.Errorf("num_samples %d outside [1, 64]", req.NumSamples)
	}
	prompt := req.PromptTokens
	switch {
	case (prompt == nil) == (req.Messages == nil):
		return SampleResult{}, errors.New("give prompt_tokens or messages (one of them)")
	case req.Messages != nil:
		if s.opt.Tokenizer == nil {
			return SampleResult{}, errors.New("messages need the tokenizer: give prompt_tokens")
		}
		var err error
		if prompt, err = renderPrompt(s.opt.Tokenizer, req.Messages); err != nil {
			return SampleResult{}, err
		}
	}
	temp := 1.0
	if req.Temperature != nil {
		temp = *req.Temperature
	}
	if temp < 0 || req.TopP < 0 || req.TopP > 1 || req.TopK < 0 || req.MaxTokens < 0 {
		return SampleResult{}, fmt.Errorf("temperature %g, top_p %g, top_k %d, max_tokens %d: want temperature ≥ 0, top_p in [0, 1], top_k and max_tokens ≥ 0", temp, req.TopP, req.TopK, req.MaxTokens)
	}
	v := -1
	if req.Version != nil {
		v = *req.Version
	}
	lease, err := s.vs.acquire(v)
	if err != nil {
		return SampleResult{}, err
	}
	defer lease.Release()
	res := SampleResult{Version: lease.Version.Version, PromptTokens: prompt, Sequences: make([]Sequence, n)}
	type done struct {
		i   int
		r   trainer.Result
		err error
	}
	ch := make(chan done, n)
	for i := range n {
		tr := trainer.Request{Prompt: prompt, MaxTokens: req.MaxTokens, Stop: append(append([]int32(nil), s.stops...), req.Stop...),
			Sample: trainer.SampleParams{Temperature: temp, TopP: req.TopP, TopK: req.TopK}}
		if req.Seed != nil {
			seed := *req.Seed + uint64(i)
			tr.Seed = &seed
		}
		go func() {
			r, err := lease.Engine.Generate(ctx, tr)
			ch <- done{i, r, err}
		}()
	}
	var first error
	for range n {
		d := <-ch
		if d.err != nil {
			first = cmpErr(first, d.err)
			continue
		}
		sq := Sequence{Tokens: make([]int32, len(d.r.Tokens)), LogProbs: make([]float32, len(d.r.Tokens)), Finish: string(d.r.Finish)}
		for k, t := range d.r.Tokens {
			sq.Tokens[k], sq.LogProbs[k] = t.ID, t.Logprob
		}
		res.Sequences[d.i] = sq
	}
	if first != nil {
		return SampleResult{}, first
	}
	return res, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// StateResult names a saved or loaded training state.
type StateResult struct {
	Path string `json:"path"`
	Step int    `json:"step"`
}

// SaveState implements API: Options.StateDir/step-NNNNNNNN (trainer's
// SaveState). It fails while gradients wait for an OptimStep.
func (s *Service) SaveState(context.Context) (StateResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return StateResult{}, errClosed
	}
	if s.opt.StateDir == "" {
		return StateResult{}, errors.New("save_state: the service has no state folder (Options.StateDir, --state-dir)")
	}
	p, err := s.train.SaveState(s.opt.StateDir, s.opt.KeepStates)
	if err != nil {
		return StateResult{}, err
	}
	return StateResult{Path: p, Step: s.train.Steps()}, nil
}

// LoadState implements API: path is a state folder, or a folder whose
// "latest" names one (StateDir itself). Publish the loaded weights with
// SaveWeightsForSampler.
func (s *Service) LoadState(_ context.Context, path string) (StateResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return StateResult{}, errClosed
	}
	if path == "" {
		path = s.opt.StateDir
	}
	if path == "" {
		return StateResult{}, errors.New("load_state: no path given and no state folder")
	}
	if err := s.train.LoadState(path); err != nil {
		return StateResult{}, err
	}
	return StateResult{Path: path, Step: s.train.Steps()}, nil
}

// Info describes what the service trains.
type Info struct {
	Config    trainer.Config      `json:"config"`
	LoRA      *trainer.LoRAConfig `json:"lora,omitempty"`
	Trainable int                 `json:"trainable_parameters"`
	Step      int                 `json:"step"`
	Versions  []Version           `json:"versions"`
	Teacher   string              `json:"teacher"`
}

// Info implements API.
func (s *Service) Info(context.Context) (Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Info{}, errClosed
	}
	return Info{Config: s.model.Config, LoRA: s.model.LoRA(), Trainable: s.train.NumTrainable(), Step: s.train.Steps(),
		Versions: s.vs.list(), Teacher: s.opt.Teacher}, nil
}
