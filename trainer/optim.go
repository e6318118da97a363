package trainer

import (
	"errors"
	"fmt"
	"math"

	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// AdamWOptions are one optimizer step's hyper-parameters, torch.optim.AdamW's:
// zero Beta1, Beta2, Eps mean 0.9, 0.999, 1e-8. Weight decay is decoupled
// (p ← p·(1 − lr·WeightDecay)) and applies to matrices (projections,
// embeddings, the head, LoRA adapters), never to norm weights.
type AdamWOptions struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	// MaxGradNorm clips the global gradient norm (torch's
	// clip_grad_norm_: gradients times MaxGradNorm/(norm + 1e-6) when the
	// norm is above it); 0 does not clip.
	MaxGradNorm float64
	// Schedule scales LR by the step's position (nil: constant).
	Schedule Schedule
}

func (o AdamWOptions) withDefaults() AdamWOptions {
	if o.Beta1 == 0 {
		o.Beta1 = 0.9
	}
	if o.Beta2 == 0 {
		o.Beta2 = 0.999
	}
	if o.Eps == 0 {
		o.Eps = 1e-8
	}
	return o
}

// Schedule is a learning-rate multiplier by step (0 at the first step), as
// torch's LambdaLR applies one.
type Schedule interface {
	Factor(step int) float64
}

// Constant is the schedule that keeps LR.
type Constant struct{}

func (Constant) Factor(int) float64 { return 1 }

// Warmup rises linearly from 0 to LR over Steps steps (step s at s/Steps),
// then hands over to Then (nil: constant), whose step 0 is the first after
// the warmup: HF's get_linear_schedule_with_warmup(w, total) is
// Warmup{w, Linear{total − w, 0}} and get_cosine_schedule_with_warmup
// Warmup{w, Cosine{total − w, 0}}.
type Warmup struct {
	Steps int
	Then  Schedule
}

func (w Warmup) Factor(step int) float64 {
	if step < w.Steps {
		return float64(step) / float64(w.Steps)
	}
	if w.Then == nil {
		return 1
	}
	return w.Then.Factor(step - w.Steps)
}

// Linear decays from LR to Final·LR over Steps steps, then stays there.
type Linear struct {
	Steps int
	Final float64
}

func (l Linear) Factor(step int) float64 {
	if l.Steps <= 0 || step >= l.Steps {
		return l.Final
	}
	return 1 - (1-l.Final)*float64(step)/float64(l.Steps)
}

// Cosine decays from LR to Final·LR along half a cosine over Steps steps.
type Cosine struct {
	Steps int
	Final float64
}

func (c Cosine) Factor(step int) float64 {
	if c.Steps <= 0 || step >= c.Steps {
		return c.Final
	}
	return c.Final + (1-c.Final)*0.5*(1+math.Cos(math.Pi*float64(step)/float64(c.Steps)))
}

// StepStats is what an optimizer step measured.
type StepStats struct {
	Step     int     // steps taken, this one included
	LR       float64 // the learning rate used
	GradNorm float64 // the global gradient norm before clipping
	Clipped  bool
}

// ErrNoGradients is returned by Step when no ForwardBackward has added
// gradients since the last step.
var ErrNoGradients = errors.New("trainer: Step without gradients: call ForwardBackward first")

// Step takes one AdamW step on every trainable parameter with the
// gradients accumulated since the last step, then zeroes them. The AdamW
// moments are allocated at the first step. The host crossing is one scalar
// per trainable tensor (the squared gradient norms).
func (t *Training) Step(o AdamWOptions) (StepStats, error) {
	o = o.withDefaults()
	if o.LR < 0 || o.MaxGradNorm < 0 || o.WeightDecay < 0 {
		return StepStats{}, fmt.Errorf("trainer: AdamW: lr %g, weight decay %g and max grad norm %g must not be negative", o.LR, o.WeightDecay, o.MaxGradNorm)
	}
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.pending == 0 {
		return StepStats{}, ErrNoGradients
	}
	var ss float64
	for _, g := range t.groups() {
		ss += g.sumSquares(t.be)
	}
	st := StepStats{Step: t.step + 1, GradNorm: math.Sqrt(ss)}
	scale := 1.0
	if o.MaxGradNorm > 0 {
		if c := o.MaxGradNorm / (st.GradNorm + 1e-6); c < 1 {
			scale, st.Clipped = c, true
		}
	}
	sched := o.Schedule
	if sched == nil {
		sched = Constant{}
	}
	st.LR = o.LR * sched.Factor(t.step)
	t.step++
	for _, g := range t.groups() {
		g.step(t.be, backend.AdamW{LR: st.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: o.WeightDecay, GradScale: scale, Step: t.step})
	}
	t.pending = 0
	return st, nil
}

// ZeroGrad drops the gradients accumulated since the last step.
func (t *Training) ZeroGrad() {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	for _, g := range t.groups() {
		g.zeroGrads(t.be)
	}
	t.pending = 0
}

// Close releases the training's buffers (the model stays usable).
func (t *Training) Close() {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	for _, g := range t.groups() {
		g.free(t.be)
	}
	t.ws.free(t.be)
}
