package service

import (
	"fmt"
	"math"

	"github.com/nextstate-rl/nextstate/trainer"
)

// LossConfig is a loss as named, weighted terms over the trained response
// tokens (trainer.Objective).
type LossConfig struct {
	Terms []TermConfig `json:"terms"`
	// Aggregation is the terms' default: "token_mean" (the default),
	// "seq_mean_token_mean" or "seq_sum" (Dr.GRPO's, over SeqSumConstant,
	// default 1024).
	Aggregation    string  `json:"aggregation,omitempty"`
	SeqSumConstant float64 `json:"seq_sum_constant,omitempty"`
	// StepTokens and StepSequences are the trained tokens and sequences of
	// the whole optimizer step when it spans several forward_backward
	// calls, so that the accumulated gradient is one mean (0: this call's).
	StepTokens    int `json:"step_tokens,omitempty"`
	StepSequences int `json:"step_sequences,omitempty"`
}

// TermConfig is one term. Kind is one of:
//
//   - "policy_gradient": PPO's clipped surrogate with ClipLow / ClipHigh
//     (0.2 / 0.28), DualClip (off when ≤ 1), truncated importance sampling
//     against the rollout log-probs (TISCap, off at 0) and tokens masked
//     when exp(old − rollout) is outside [MaskLow, MaskHigh] (each off at
//     0). Advantage says which: "rl" (the data's, the default), "opd"
//     (teacher − old, hinted data only) or "combined" (OPDWeight·A_opd +
//     RLWeight·A_rl, both 1 by default).
//   - "kl": KL to the frozen reference, Estimator "k1", "k2" or "k3" (the default).
//   - "entropy": −H, raising the policy's entropy with a positive weight.
//   - "sft": cross-entropy of the response tokens.
//   - "opd_top_k": reverse KL to the teacher over its top K (50) tokens
//     and a rest bin, on hinted data.
type TermConfig struct {
	Kind        string  `json:"kind"`
	Name        string  `json:"name,omitempty"` // default: Kind
	Weight      float64 `json:"weight"`         // 0 is a metric only
	Aggregation string  `json:"aggregation,omitempty"`

	ClipLow   float64  `json:"clip_low,omitempty"`
	ClipHigh  float64  `json:"clip_high,omitempty"`
	DualClip  float64  `json:"dual_clip,omitempty"`
	TISCap    float64  `json:"tis_cap,omitempty"`
	MaskLow   float64  `json:"mask_low,omitempty"`
	MaskHigh  float64  `json:"mask_high,omitempty"`
	Advantage string   `json:"advantage,omitempty"`
	OPDWeight *float64 `json:"opd_weight,omitempty"`
	RLWeight  *float64 `json:"rl_weight,omitempty"`

	Estimator string `json:"estimator,omitempty"`
	K         int    `json:"k,omitempty"`
}

var aggregations = map[string]trainer.Aggregation{
	"": trainer.TokenMean, "token_mean": trainer.TokenMean,
	"seq_mean_token_mean": trainer.SeqMeanTokenMean, "seq_sum": trainer.SeqSum,
}

// needs is what a loss asks of the passes before the policy's.
type needs struct {
	ref     bool // the reference's log-probs of the sampled tokens (kl)
	teacher bool // the teacher's log-probs of the sampled tokens (OPD advantages)
	topK    int  // the teacher's top-K (opd_top_k)
	old     bool // the old log-probs (OPD advantages need them before the pass)
}

// keeps says which samples with no RL advantage (a group whose rewards
// are all equal) the loss still learns from: every one under a KL,
// entropy or SFT term, the hinted ones under an OPD term.
func (lc *LossConfig) keeps() (all, hinted bool) {
	for _, t := range lc.Terms {
		if t.Weight == 0 {
			continue
		}
		switch {
		case t.Kind == "kl" || t.Kind == "entropy" || t.Kind == "sft":
			all = true
		case t.Kind == "opd_top_k" || t.Advantage == "opd" || t.Advantage == "combined":
			hinted = true
		}
	}
	return all, hinted
}

// check validates the config and says what it needs.
func (lc *LossConfig) check() (needs, error) {
	var n needs
	if len(lc.Terms) == 0 {
		return n, fmt.Errorf("loss: no terms: give at least one of policy_gradient, kl, entropy, sft, opd_top_k")
	}
	if _, ok := aggregations[lc.Aggregation]; !ok {
		return n, fmt.Errorf("loss: aggregation %q: want token_mean, seq_mean_token_mean or seq_sum", lc.Aggregation)
	}
	if lc.SeqSumConstant < 0 || lc.StepTokens < 0 || lc.StepSequences < 0 {
		return n, fmt.Errorf("loss: seq_sum_constant, step_tokens and step_sequences must not be negative")
	}
	names := map[string]bool{}
	for i := range lc.Terms {
		tc := &lc.Terms[i]
		name := tc.Name
		if name == "" {
			name = tc.Kind
		}
		if names[name] {
			return n, fmt.Errorf("loss: two terms named %q: name them apart", name)
		}
		names[name] = true
		if _, ok := aggregations[tc.Aggregation]; !ok {
			return n, fmt.Errorf("loss: term %q: aggregation %q: want token_mean, seq_mean_token_mean or seq_sum", name, tc.Aggregation)
		}
		if math.IsNaN(tc.Weight) || math.IsInf(tc.Weight, 0) {
			return n, fmt.Errorf("loss: term %q: weight %g", name, tc.Weight)
		}
		switch tc.Kind {
		case "policy_gradient":
			if tc.ClipLow < 0 || tc.ClipHigh < 0 || tc.TISCap < 0 || tc.MaskLow < 0 || tc.MaskHigh < 0 || (tc.DualClip != 0 && tc.DualClip <= 1) {
				return n, fmt.Errorf("loss: term %q: clip_low, clip_high, tis_cap, mask_low and mask_high must not be negative, dual_clip must be above 1", name)
			}
			switch tc.Advantage {
			case "", "rl":
			case "opd", "combined":
				n.teacher, n.old = true, true
			default:
				return n, fmt.Errorf("loss: term %q: advantage %q: want rl, opd or combined", name, tc.Advantage)
			}
		case "kl":
			if _, ok := klEstimators[tc.Estimator]; !ok {
				return n, fmt.Errorf("loss: term %q: estimator %q: want k1, k2 or k3", name, tc.Estimator)
			}
			n.ref = true
		case "entropy", "sft":
		case "opd_top_k":
			if tc.K == 0 {
				tc.K = 50
			}
			if tc.K < 0 || tc.K > 1000 {
				return n, fmt.Errorf("loss: term %q: k %d outside [1, 1000]", name, tc.K)
			}
			if n.topK != 0 && n.topK != tc.K {
				return n, fmt.Errorf("loss: two opd_top_k terms with different k")
			}
			n.topK = tc.K
		default:
			return n, fmt.Errorf("loss: term %q: kind %q: want policy_gradient, kl, entropy, sft or opd_top_k", name, tc.Kind)
		}
	}
	return n, nil
}

var klEstimators = map[string]trainer.KLEstimator{"": trainer.K3, "k1": trainer.K1, "k2": trainer.K2, "k3": trainer.K3}

// rows is a call's data laid out as a batch: the scored rows (the trained
// response tokens) and what each carries.
type rows struct {
	batch                 *trainer.Batch
	seq                   []int     // datum of each row
	resp                  []int     // response index of each row
	adv, rollout, old     []float32 // NaN where unknown
	haveRollout, haveOld  bool      // any row has one
	hinted                []bool
	teacherBatch          *trainer.Batch // hinted data's teacher contexts, rows in the same order
	teacherRow            []int          // row of the teacher batch for each row, −1 without hint
	sequences, hintedSeqs int
}

// layout builds the call's batch from data (already checked).
func layout(data []Datum) *rows {
	r := &rows{batch: &trainer.Batch{}}
	var tb trainer.Batch
	for di := range data {
		d := &data[di]
		L, n := len(d.Tokens), d.ResponseLength
		r.batch.Seqs = append(r.batch.Seqs, d.Tokens)
		ts := -1
		if d.TeacherTokens != nil {
			ts = len(tb.Seqs)
			tb.Seqs = append(tb.Seqs, d.TeacherTokens)
			r.hintedSeqs++
		}
		for k := range n {
			if !d.trained(k) {
				continue
			}
			r.batch.Rows = append(r.batch.Rows, trainer.Row{Seq: di, Pos: L - n + k - 1})
			r.seq, r.resp = append(r.seq, di), append(r.resp, k)
			r.adv = append(r.adv, d.advantage(k))
			ro, ol := nan, nan
			if d.RolloutLogProbs != nil {
				ro, r.haveRollout = d.RolloutLogProbs[k], true
			}
			if d.OldLogProbs != nil {
				ol, r.haveOld = d.OldLogProbs[k], true
			}
			r.rollout, r.old = append(r.rollout, ro), append(r.old, ol)
			r.hinted = append(r.hinted, ts >= 0)
			if ts >= 0 {
				TL := len(d.TeacherTokens)
				r.teacherRow = append(r.teacherRow, len(tb.Rows))
				tb.Rows = append(tb.Rows, trainer.Row{Seq: ts, Pos: TL - n + k - 1})
			} else {
				r.teacherRow = append(r.teacherRow, -1)
			}
		}
	}
	r.sequences = len(data)
	if r.batch.Rows == nil {
		r.batch.Rows = []trainer.Row{}
	}
	if len(tb.Seqs) > 0 {
		r.teacherBatch = &tb
	}
	return r
}

var nan = float32(math.NaN())

// entropyMetricName names the metric term apart from any term of a config.
const entropyMetricName = "\x00entropy"

// entropyMetric reports the mean entropy without a gradient (weight 0).
type entropyMetric struct{}

func (entropyMetric) NeedsEntropy() bool { return true }
func (entropyMetric) Loss(_ int, _ []float32, h float32, _ []float64) (float64, float64) {
	return float64(h), 0
}
