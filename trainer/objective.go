package trainer

import (
	"fmt"
	"math"
)

// Objective is a Loss made of weighted terms over the scored rows (the
// loss-masked response tokens): L = Σ_c w_c · agg_c(ℓ_c,t). Each term
// gives a per-token loss and its derivatives; the Objective weights it,
// normalises it by the term's aggregation and sums, so a new objective is
// a new term, not a special case.
type Objective struct {
	Terms []Term
	// Seqs is the sequence of each scored row of the step, [S]; it is
	// needed by SeqMeanTokenMean and SeqSum (nil: one sequence).
	Seqs []int
	// Steps is the number of scored rows of the whole optimizer step when
	// it spans several ForwardBackward calls (0: this batch's). Row
	// indices of the terms' per-row inputs then start at Offset.
	Steps, Offset int
	// Sequences is the number of sequences of the whole step, for
	// SeqMeanTokenMean and SeqSum over several calls (0: this batch's).
	Sequences int
	// SeqSumConstant is SeqSum's constant (Dr.GRPO's maximum response
	// length; 0: 1024).
	SeqSumConstant float64
	// Metrics are filled in by the pass: each term's aggregated value.
	Metrics map[string]float64

	seqLen map[int]int
}

// Term is one weighted component of an Objective.
type Term struct {
	Name   string
	Weight float64
	Agg    Aggregation
	Token  TokenLoss
}

// TokenLoss is a term's loss at one scored row.
type TokenLoss interface {
	// NeedsEntropy says whether Loss reads h.
	NeedsEntropy() bool
	// Loss returns the loss at scored row i of the step, whose target
	// log-probabilities are lp (K of them; lp[0] is the sampled token's)
	// and entropy h, and writes ∂ℓ/∂lp into dlp (zeroed) and returns ∂ℓ/∂h.
	Loss(i int, lp []float32, h float32, dlp []float64) (loss, dh float64)
}

// Aggregation turns a term's per-token losses into one number.
type Aggregation int

const (
	// TokenMean: Σ_t ℓ_t / T over every scored token of the step.
	TokenMean Aggregation = iota
	// SeqMeanTokenMean: the mean over sequences of each one's token mean.
	SeqMeanTokenMean
	// SeqSum is Dr.GRPO's: Σ_t ℓ_t / (sequences · SeqSumConstant).
	SeqSum
)

// Entropy implements Loss: whether any term reads the entropy.
func (o *Objective) Entropy() bool {
	for _, t := range o.Terms {
		if t.Token.NeedsEntropy() {
			return true
		}
	}
	return false
}

// weight is scored row i's aggregation weight under agg, of total rows.
func (o *Objective) weight(agg Aggregation, i, total int) float64 {
	if agg == TokenMean {
		return 1 / float64(total)
	}
	if o.seqLen == nil {
		o.seqLen = map[int]int{}
		for _, s := range o.Seqs {
			o.seqLen[s]++
		}
	}
	nseq, n := 1, total
	if o.Seqs != nil {
		nseq, n = len(o.seqLen), o.seqLen[o.Seqs[i]]
	}
	if o.Sequences > 0 {
		nseq = o.Sequences
	}
	if agg == SeqSum {
		c := o.SeqSumConstant
		if c == 0 {
			c = 1024
		}
		return 1 / (float64(nseq) * c)
	}
	return 1 / (float64(nseq) * float64(n))
}

// Grad implements Loss.
func (o *Objective) Grad(c *Chunk) float64 {
	total := o.Steps
	if total == 0 {
		total = c.Total
	}
	if o.Metrics == nil {
		o.Metrics = map[string]float64{}
	}
	dlp := make([]float64, c.K)
	var sum float64
	for _, t := range o.Terms {
		var part float64
		for r := range c.Rows {
			i := o.Offset + c.Lo + r
			var h float32
			if c.Entropy != nil {
				h = c.Entropy[r]
			}
			clear(dlp)
			l, dh := t.Token.Loss(i, c.LogProbs[r*c.K:(r+1)*c.K], h, dlp)
			w := o.weight(t.Agg, i, total)
			s := t.Weight * w
			part += l * w
			for k, v := range dlp {
				c.DLogProbs[r*c.K+k] += float32(s * v)
			}
			if dh != 0 && c.DEntropy != nil {
				c.DEntropy[r] += float32(s * dh)
			}
		}
		o.Metrics[t.Name] += part
		sum += t.Weight * part
	}
	return sum
}

// PolicyGradient is PPO's clipped surrogate with off-policy correction:
// ratio r = exp(lp − Old), ℓ = −min(r·A, clip(r, 1−ClipLow, 1+ClipHigh)·A),
// with dual clip (for A < 0, ℓ ≤ −DualClip·A) when DualClip > 1; each
// token's loss is weighted by the truncated importance ratio
// min(exp(Old − Rollout), TISCap) when TISCap > 0 (decoupled PPO: Old is
// the proximal policy, the trainer's recomputed log-probs of the version
// that served; Rollout the behaviour log-probs the engine reported).
// Tokens whose rollout ratio exp(Old − Rollout) falls outside
// [MaskLow, MaskHigh] (when set) contribute nothing. A NaN in Old or
// Rollout is unknown there, as nil is for every row: a batch may mix turns
// with and without behaviour log-probs.
type PolicyGradient struct {
	Advantages []float32 // [S] per scored row
	Old        []float32 // [S]; nil: on-policy (Old = the current lp, detached)
	Rollout    []float32 // [S]; nil: none known (no correction)
	ClipLow    float64   // default 0.2
	ClipHigh   float64   // default 0.28
	DualClip   float64
	TISCap     float64
	MaskLow    float64
	MaskHigh   float64

	// Stats add up over every pass that uses this value.
	Stats PGStats
}

// PGStats are what a policy-gradient pass measured over its tokens.
type PGStats struct {
	Tokens, Clipped, Masked int
	RatioSum, RatioMin      float64
	RatioMax                float64
	// KLSum is Σ (Old − lp): PPO's k1 estimate of KL(old ‖ new).
	KLSum float64
	// GapSum is Σ |lp − Rollout|: the train−rollout log-prob gap.
	GapSum float64
	Gaps   int
}

func (s PGStats) ClipFraction() float64 { return float64(s.Clipped) / float64(max(1, s.Tokens)) }
func (s PGStats) MeanRatio() float64    { return s.RatioSum / float64(max(1, s.Tokens)) }
func (s PGStats) KL() float64           { return s.KLSum / float64(max(1, s.Tokens)) }
func (s PGStats) Gap() float64          { return s.GapSum / float64(max(1, s.Gaps)) }

func (p *PolicyGradient) NeedsEntropy() bool { return false }

func (p *PolicyGradient) Loss(i int, lp []float32, _ float32, dlp []float64) (float64, float64) {
	cur := float64(lp[0])
	old := cur
	if p.Old != nil && !math.IsNaN(float64(p.Old[i])) {
		old = float64(p.Old[i])
	}
	a := float64(p.Advantages[i])
	lo, hi := p.ClipLow, p.ClipHigh
	if lo == 0 {
		lo = 0.2
	}
	if hi == 0 {
		hi = 0.28
	}
	w := 1.0
	if p.Rollout != nil && !math.IsNaN(float64(p.Rollout[i])) {
		roll := float64(p.Rollout[i])
		p.Stats.GapSum += math.Abs(cur - roll)
		p.Stats.Gaps++
		rr := math.Exp(old - roll)
		if (p.MaskLow > 0 && rr < p.MaskLow) || (p.MaskHigh > 0 && rr > p.MaskHigh) {
			p.Stats.Masked++
			return 0, 0
		}
		if p.TISCap > 0 {
			w = min(rr, p.TISCap)
		}
	}
	r := math.Exp(cur - old)
	if p.Stats.Tokens == 0 {
		p.Stats.RatioMin, p.Stats.RatioMax = r, r
	}
	p.Stats.Tokens++
	p.Stats.RatioSum += r
	p.Stats.RatioMin, p.Stats.RatioMax = min(p.Stats.RatioMin, r), max(p.Stats.RatioMax, r)
	p.Stats.KLSum += old - cur
	s1, s2 := r*a, min(max(r, 1-lo), 1+hi)*a
	obj, grad := s1, r*a // d(r·A)/dlp = r·A
	if s2 < s1 {
		obj, grad = s2, 0
		p.Stats.Clipped++
	}
	if p.DualClip > 1 && a < 0 && obj < p.DualClip*a {
		obj, grad = p.DualClip*a, 0
	}
	dlp[0] = -w * grad
	return -w * obj, 0
}

// KLEstimator names an estimator of KL(π ‖ π_ref) from one sample, with
// x = lp_ref − lp: K1 = −x, K2 = x²/2, K3 = eˣ − x − 1 (Schulman's
// low-variance estimator).
type KLEstimator int

const (
	K1 KLEstimator = iota + 1
	K2
	K3
)

// KL is a penalty towards a reference policy's log-probs of the same tokens.
type KL struct {
	Ref       []float32 // [S]
	Estimator KLEstimator
}

func (k *KL) NeedsEntropy() bool { return false }

func (k *KL) Loss(i int, lp []float32, _ float32, dlp []float64) (float64, float64) {
	x := float64(k.Ref[i]) - float64(lp[0])
	switch k.Estimator {
	case K2:
		dlp[0] = -x
		return x * x / 2, 0
	case K3:
		ex := math.Exp(x)
		dlp[0] = 1 - ex
		return ex - x - 1, 0
	default:
		dlp[0] = 1
		return -x, 0
	}
}

// EntropyBonus is −H per token: with a positive weight it raises the
// policy's entropy.
type EntropyBonus struct{}

func (EntropyBonus) NeedsEntropy() bool { return true }
func (EntropyBonus) Loss(_ int, _ []float32, h float32, _ []float64) (float64, float64) {
	return -float64(h), -1
}

// SFT is the cross-entropy of the sampled (demonstrated) tokens: −lp.
type SFT struct{}

func (SFT) NeedsEntropy() bool { return false }
func (SFT) Loss(_ int, lp []float32, _ float32, dlp []float64) (float64, float64) {
	dlp[0] = -1
	return -float64(lp[0]), 0
}

// TopKReverseKL is on-policy distillation's top-K variant: the reverse KL
// KL(π ‖ π_teacher) over the teacher's K likeliest tokens plus one "rest"
// bin holding the remaining mass. The row's targets 1..K are the teacher's
// top-K ids (target 0 is the sampled token), Teacher their teacher
// log-probs [S·K]. Rows with Keep false (nil: all kept) contribute
// nothing: those of samples without a usable hint.
type TopKReverseKL struct {
	Teacher []float32
	K       int
	Keep    []bool
}

func (d *TopKReverseKL) NeedsEntropy() bool { return false }

func (d *TopKReverseKL) Loss(i int, lp []float32, _ float32, dlp []float64) (float64, float64) {
	if len(lp) != d.K+1 {
		panic(fmt.Sprintf("trainer: TopKReverseKL: a row has %d targets, want the sampled token and K = %d", len(lp), d.K))
	}
	if d.Keep != nil && !d.Keep[i] {
		return 0, 0
	}
	t := d.Teacher[i*d.K : (i+1)*d.K]
	var ps, pt, l float64
	for k := range d.K {
		s, q := float64(lp[1+k]), float64(t[k])
		p := math.Exp(s)
		ps += p
		pt += math.Exp(q)
		l += p * (s - q)
	}
	rs, rt := math.Log(max(1-ps, 1e-12)), math.Log(max(1-pt, 1e-12))
	l += math.Exp(rs) * (rs - rt)
	for k := range d.K {
		s, q := float64(lp[1+k]), float64(t[k])
		dlp[1+k] = math.Exp(s) * ((s - q) - (rs - rt))
	}
	return l, 0
}

// OPDAdvantages are hindsight-guided on-policy distillation's token
// advantages, teacher − old (log π_teacher(y | hinted context) − log
// π_old(y | context)), combined with the RL advantages as
// wOPD·A_opd + wRL·A_rl. A row whose sample has no usable hint (hinted
// false) keeps its RL advantage only; the number of such rows is returned.
func OPDAdvantages(rl, teacher, old []float32, hinted []bool, wOPD, wRL float64) ([]float32, int) {
	out := make([]float32, len(rl))
	dropped := 0
	for i := range rl {
		a := wRL * float64(rl[i])
		if hinted == nil || hinted[i] {
			a += wOPD * (float64(teacher[i]) - float64(old[i]))
		} else {
			dropped++
		}
		out[i] = float32(a)
	}
	return out, dropped
}
