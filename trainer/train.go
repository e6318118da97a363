package trainer

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// TrainOptions configure a Training; zero values mean the stated defaults.
type TrainOptions struct {
	// Trainable says which parameters (by Hugging Face name) are trained;
	// nil trains every one (full fine-tuning). The others are frozen: no
	// gradient, no optimizer state.
	Trainable func(name string) bool
	// Recompute keeps only each layer's input through the forward and
	// recomputes the layer's activations in the backward: memory for one
	// layer's activations instead of all of them, for one more forward.
	Recompute bool
	// LogitsChunk is how many scored rows' logits [rows, V] exist at once
	// (default: as many as fit in 32 MiB, at least 16).
	LogitsChunk int
	// Seed seeds the training's random source (Rand).
	Seed uint64
}

// Training is a model being trained: its gradients and optimizer state,
// allocated on the model's backend at the first backward and the first
// step, and the pass's workspace. Its methods are serialised with the
// model's (an Engine serving the model waits while a step runs).
type Training struct {
	m   *Model
	be  backend.Trainer
	opt TrainOptions

	base      *paramGroup // the model's parameters
	adapters  *paramGroup // its LoRA adapters (nil without)
	step      int
	pending   int  // ForwardBackward calls whose gradients no Step has used
	scoreOnly bool // NewScoring: Score only
	ws        arena
	pcg       *rand.PCG
	rand      *rand.Rand
}

// ErrNotTrainer is returned when the model's backend cannot train.
var ErrNotTrainer = errors.New("trainer: the backend has no backward operations (backend.Trainer)")

// NewTraining prepares m for training on its backend. When the model has
// LoRA adapters (AddLoRA, LoadAdapter), they are trained and the base is
// frozen unless TrainOptions.Trainable names base parameters too; the
// adapters must be in place before NewTraining.
func NewTraining(m *Model, opt TrainOptions) (*Training, error) {
	be, ok := m.Backend.(backend.Trainer)
	if !ok {
		return nil, ErrNotTrainer
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	trainable := opt.Trainable
	if trainable == nil {
		all := m.lora == nil
		trainable = func(string) bool { return all }
	}
	t := &Training{m: m, be: be, opt: opt, base: newGroup(&m.layout, m.Params, trainable), pcg: rand.NewPCG(opt.Seed, 0x747261696e)}
	t.rand = rand.New(t.pcg)
	if m.lora != nil {
		t.adapters = newGroup(&m.lora.lay, m.lora.arena, func(string) bool { return true })
	}
	if !t.base.anyTrainable() && t.adapters == nil {
		return nil, errors.New("trainer: no parameter is trainable")
	}
	if m.sharedBase && t.base.anyTrainable() {
		return nil, ErrSharedBase
	}
	return t, nil
}

// Model is the model being trained.
func (t *Training) Model() *Model { return t.m }

// NumTrainable is the number of trained parameters (frozen ones excluded).
func (t *Training) NumTrainable() int {
	n := 0
	for _, g := range t.groups() {
		for i, tn := range g.lay.tensors {
			if g.trainable[i] {
				n += tn.size()
			}
		}
	}
	return n
}

// Pending is the number of ForwardBackward calls whose gradients wait for
// a Step.
func (t *Training) Pending() int {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return t.pending
}

// Steps is the number of optimizer steps taken.
func (t *Training) Steps() int { return t.step }

// groups are the parameter groups being trained.
func (t *Training) groups() []*paramGroup {
	if t.adapters != nil {
		return []*paramGroup{t.base, t.adapters}
	}
	return []*paramGroup{t.base}
}

// Grad copies the accumulated gradient of the parameter called name (a
// Hugging Face name, or a PEFT name of an adapter) to the host: nil when it
// is frozen or no backward has run.
func (t *Training) Grad(name string) ([]float32, error) {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	for _, g := range t.groups() {
		if i := g.lay.find(name); i >= 0 {
			b := g.grad(i)
			if b.Nil() {
				return nil, nil
			}
			v := make([]float32, b.Len())
			t.be.Read(v, b)
			return v, nil
		}
	}
	return nil, fmt.Errorf("trainer: no parameter %q", name)
}

// Loss is an objective over the scored rows' log-probabilities (and their
// entropies when it asks for them). ForwardBackward calls Grad once per
// chunk of scored rows, in order; the gradient flows from what it fills in.
type Loss interface {
	// Entropy says whether Grad needs the rows' entropies.
	Entropy() bool
	// Grad fills c.DLogProbs (and c.DEntropy) and returns the chunk's part
	// of the loss.
	Grad(c *Chunk) float64
}

// Chunk is one chunk of scored rows handed to a Loss: rows [Lo, Lo+Rows)
// of the batch's Total scored rows, K targets each.
type Chunk struct {
	Lo, Rows, Total, K int
	LogProbs           []float32 // [Rows·K]: log p(target | row)
	Entropy            []float32 // [Rows] when the loss asked for it, else nil
	DLogProbs          []float32 // [Rows·K]: ∂L/∂LogProbs, zeroed, to fill
	DEntropy           []float32 // [Rows]: ∂L/∂Entropy, zeroed, to fill (nil unless Entropy)
}

// Output is what a ForwardBackward or a Score measured, on the host.
type Output struct {
	Loss        float64
	LogProbs    []float32 // [S·K]: each scored row's targets
	Entropy     []float32 // [S] when asked for
	TopIDs      []int32   // [S·TopK] (Score with TopK)
	TopLogProbs []float32
}

// ForwardBackward runs the batch forward, the loss over its scored rows
// (chunk by chunk, no [N, V] logits kept) and the backward, adding the
// gradients into the trainable parameters' (they accumulate over calls until
// Step). The host crossings are the token, row and target ids in, and each
// chunk's log-probabilities out and their loss gradients in.
func (t *Training) ForwardBackward(b *Batch, loss Loss) (Output, error) {
	if loss == nil {
		return Output{}, errors.New("trainer: ForwardBackward needs a loss")
	}
	if t.scoreOnly {
		return Output{}, errors.New("trainer: ForwardBackward on a scoring-only Training (NewScoring)")
	}
	return t.pass(b, loss, 0, loss.Entropy())
}

// Score runs the batch forward only and returns each scored row's target
// log-probabilities, the entropies when entropy is set, and the topK
// likeliest ids with their log-probabilities when topK > 0: a frozen
// reference's or a teacher's view of the batch.
func (t *Training) Score(b *Batch, entropy bool, topK int) (Output, error) {
	if topK < 0 || topK > t.m.Config.VocabSize {
		return Output{}, fmt.Errorf("trainer: top-K %d outside [0, %d]", topK, t.m.Config.VocabSize)
	}
	return t.pass(b, nil, topK, entropy)
}

func (t *Training) chunkRows(S int) int {
	n := t.opt.LogitsChunk
	if n <= 0 {
		n = max(16, (32<<20)/(4*t.m.Config.VocabSize))
	}
	return max(1, min(n, S))
}

func (t *Training) pass(b *Batch, loss Loss, topK int, entropy bool) (Output, error) {
	d := t.m.dims()
	pk, err := b.pack(d.V)
	if err != nil {
		return Output{}, err
	}
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if (t.adapters == nil) != (t.m.lora == nil) || (t.adapters != nil && t.adapters.params != t.m.lora.arena) {
		return Output{}, errors.New("trainer: the model's LoRA adapters changed after NewTraining; start a new Training")
	}
	grad := loss != nil
	N, S, K := len(pk.tokens), len(pk.rows), pk.K
	chunk := t.chunkRows(max(S, 1))
	kept := grad && !t.opt.Recompute
	p := t.carvePass(N, S, K, chunk, kept, grad)
	be := t.be
	be.WriteIDs(p.ids, pk.tokens)
	be.WriteIDs(p.rowIDs, pk.rows)
	be.WriteIDs(p.targets, pk.targets)
	rope := t.m.ropeFor(pk.maxLen)
	kvd := d.KV * d.D

	be.Embed(p.xIn[0], t.m.W.Embed, p.ids, d.C)
	for l := range t.m.W.Layers {
		a, k, v := p.layer(l)
		out := p.x
		if l+1 < len(p.xIn) {
			out = p.xIn[l+1]
		}
		t.m.layerForward(l, a, out, segsOver(pk.starts, N, k, v, kvd), N, rope)
	}
	res := Output{LogProbs: make([]float32, S*K)}
	if entropy {
		res.Entropy = make([]float32, S)
	}
	if topK > 0 {
		res.TopIDs, res.TopLogProbs = make([]int32, S*topK), make([]float32, S*topK)
	}
	if grad {
		for _, g := range t.groups() {
			g.allocGrads(be)
		}
	}
	if S > 0 {
		be.Embed(p.hs, p.x, p.rowIDs, d.C)
		be.RMSNorm(p.hn, p.rstdF, p.hs, t.m.W.Norm, S, d.C, d.eps)
		if grad {
			be.Zero(p.dhn)
		}
		t.head(p, pk, S, K, chunk, loss, topK, &res)
	}
	if grad {
		t.backward(p, pk, N, S, rope)
		t.pending++
	}
	return res, nil
}

// CrossEntropy is the mean negative log-likelihood of the targets (K = 1):
// L = −Σ w_i·lp_i / Norm, with Weights w over the batch's scored rows (nil:
// all one) and Norm (0: the number of scored rows). Set Norm to the total
// over the micro-batches of an accumulated step so that the step sees one
// mean.
type CrossEntropy struct {
	Weights []float32
	Norm    float64
}

func (CrossEntropy) Entropy() bool { return false }

func (ce CrossEntropy) Grad(c *Chunk) float64 {
	norm := ce.Norm
	if norm == 0 {
		norm = float64(c.Total)
	}
	var l float64
	for i, v := range c.LogProbs {
		w := float32(1)
		if ce.Weights != nil {
			w = ce.Weights[c.Lo+i/c.K]
		}
		c.DLogProbs[i] = -w / float32(norm)
		l -= float64(w) * float64(v)
	}
	return l / norm
}
