package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

// API is the training API; Service implements it in process and Client
// over HTTP.
type API interface {
	// ForwardBackward runs the loss over the data and adds its gradients
	// (they accumulate until OptimStep).
	ForwardBackward(ctx context.Context, req ForwardBackwardRequest) (ForwardBackwardResult, error)
	// Forward returns the log-probs of every response token under the
	// policy (or the frozen reference): the proximal old log-probs of
	// decoupled PPO, or a check.
	Forward(ctx context.Context, req ForwardRequest) (ForwardResult, error)
	// OptimStep takes one AdamW step with the accumulated gradients.
	OptimStep(ctx context.Context, p AdamParams) (OptimResult, error)
	// SaveWeightsForSampler publishes the current weights as a new
	// immutable version that Sample (and the serving engine) can use.
	SaveWeightsForSampler(ctx context.Context) (Version, error)
	// Sample generates from a published version (the newest by default).
	Sample(ctx context.Context, req SampleRequest) (SampleResult, error)
	// SaveState writes the training state (weights or adapters, AdamW's
	// moments, the step, the RNG); LoadState resumes from one.
	SaveState(ctx context.Context) (StateResult, error)
	LoadState(ctx context.Context, path string) (StateResult, error)
	// Info describes the model, the training and the versions.
	Info(ctx context.Context) (Info, error)
}

// Options configure a Service; zero values mean the stated defaults.
type Options struct {
	Training trainer.TrainOptions
	Engine   trainer.EngineOptions
	// Tokenizer renders text-only samples, teacher contexts and chat
	// prompts; without one, only token ids are accepted.
	Tokenizer *tokenizer.Tokenizer
	// StateDir is where SaveState writes (step-NNNNNNNN folders), keeping
	// the newest KeepStates (0: all).
	StateDir   string
	KeepStates int
	// KeepVersions is how many published versions stay served (default
	// 2) besides version 0, the reference, which always does; an older
	// one lives on while a Sample or a Lease holds it.
	KeepVersions int
	// Teacher is the OPD teacher: "reference" (the frozen copy of the
	// initial weights, OpenClaw-RL's choice, the default) or "policy"
	// (the current policy).
	Teacher string
}

// Service is the trainer behind the API, in process: one policy being
// trained, its frozen reference (version 0, the weights it started
// from), and its published versions, each served by an Engine. Training
// calls are serialised; Sample runs beside them on the versions' own
// weights.
type Service struct {
	opt   Options
	model *trainer.Model
	train *trainer.Training
	stops []int32

	mu       sync.Mutex // training calls
	vs       *versions
	next     int
	refLease *Lease
	ref      *trainer.Training // scores with version 0's weights
	// baseDigest is the frozen base's hash state (LoRA runs): each
	// version's checksum then hashes only its adapters.
	baseDigest []byte
	closed     bool
}

// New makes a Service training m (with its LoRA adapters, if it has any:
// then only they are trained and the versions share m's base). Version 0,
// the weights as they are now, is published and kept as the reference.
func New(m *trainer.Model, opt Options) (*Service, error) {
	switch opt.Teacher {
	case "":
		opt.Teacher = "reference"
	case "reference", "policy":
	default:
		return nil, fmt.Errorf("service: teacher %q: want reference or policy", opt.Teacher)
	}
	if opt.KeepVersions <= 0 {
		opt.KeepVersions = 2
	}
	tr, err := trainer.NewTraining(m, opt.Training)
	if err != nil {
		return nil, err
	}
	s := &Service{opt: opt, model: m, train: tr, vs: &versions{keep: opt.KeepVersions}}
	for _, id := range m.Config.EOSTokenIDs() {
		s.stops = append(s.stops, int32(id))
	}
	if opt.Tokenizer != nil {
		for _, t := range []string{"<|im_end|>", "<|endoftext|>"} {
			if id, ok := opt.Tokenizer.TokenID(t); ok {
				s.stops = append(s.stops, id)
			}
		}
	}
	if m.LoRA() != nil && !s.trainsBase() {
		if s.baseDigest, err = m.BaseDigest(); err != nil {
			tr.Close()
			return nil, err
		}
	}
	if _, err := s.publish(); err != nil {
		tr.Close()
		return nil, err
	}
	if s.refLease, err = s.vs.acquire(0); err == nil {
		s.ref, err = trainer.NewScoring(s.refLease.Engine.Model(), trainer.TrainOptions{LogitsChunk: opt.Training.LogitsChunk})
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close stops every engine and frees the versions and the training's
// buffers; the policy model stays the caller's.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.ref != nil {
		s.ref.Close()
	}
	s.vs.closeAll()
	s.train.Close()
}

var errClosed = errors.New("service: closed")

// Training is the policy's training (for what the API does not cover).
func (s *Service) Training() *trainer.Training { return s.train }

// Acquire leases version v (the newest when v < 0) for serving: its
// engine keeps serving those weights until the lease is released, however
// many versions are published meanwhile.
func (s *Service) Acquire(v int) (*Lease, error) { return s.vs.acquire(v) }

// publish snapshots the policy's weights as the next version (s.mu held):
// under LoRA the adapters only (the frozen base shared, its digest kept),
// else the whole base, copied into the arena of a version that is gone
// when there is one (versions.makeRoom) and hashed as it is copied.
func (s *Service) publish() (Version, error) {
	var snap *trainer.Model
	var err error
	sum := ""
	if s.baseDigest != nil {
		if snap, err = s.model.Snapshot(true, true); err != nil {
			return Version{}, err
		}
		if sum, err = snap.ChecksumFrom(s.baseDigest); err != nil {
			snap.Close()
			return Version{}, err
		}
	} else {
		spare := s.vs.makeRoom()
		if snap, sum, err = s.model.SnapshotInto(spare, true); err != nil {
			if !spare.Nil() {
				s.model.Backend.Free(spare)
			}
			return Version{}, err
		}
	}
	v := Version{Version: s.next, Step: s.train.Steps(), Checksum: sum, Created: time.Now().UTC()}
	s.next++
	s.vs.publish(&published{Version: v, model: snap, engine: trainer.NewEngine(snap, s.opt.Engine)})
	return v, nil
}

// trainsBase says whether any base parameter is trained.
func (s *Service) trainsBase() bool {
	tr := s.opt.Training.Trainable
	if tr == nil {
		return s.model.LoRA() == nil
	}
	for _, t := range s.model.Tensors() {
		if tr(t.Name) {
			return true
		}
	}
	return false
}

// ForwardBackwardRequest is one forward_backward call: data, or the gym's
// samples (converted by FromSamples with the request's estimator), and
// the loss.
type ForwardBackwardRequest struct {
	Data      []Datum     `json:"data,omitempty"`
	Samples   []rl.Sample `json:"samples,omitempty"`
	Estimator string      `json:"estimator,omitempty"`
	// TrajectoryMean (with samples) weighs every trajectory the same
	// under token_mean, however many turns and tokens it has
	// (SampleOptions.TrajectoryMean).
	TrajectoryMean bool `json:"trajectory_mean,omitempty"`
	// CapNegative (with samples) caps each group's negative weight at its
	// positive (SampleOptions.CapNegative).
	CapNegative bool       `json:"cap_negative,omitempty"`
	Loss        LossConfig `json:"loss"`
}

// ForwardBackwardResult is what the call measured. Metrics hold each
// term's value ("loss/NAME"), "entropy", the policy gradient's
// "pg/clip_fraction", "pg/ratio_mean", "pg/ratio_min", "pg/ratio_max",
// "pg/ppo_kl", "pg/masked", and "train_rollout_gap" (mean |lp − rollout
// lp| over the tokens that have rollout log-probs).
type ForwardBackwardResult struct {
	Loss       float64            `json:"loss"`
	Metrics    map[string]float64 `json:"metrics"`
	Tokens     int                `json:"tokens"`
	Sequences  int                `json:"sequences"`
	Conversion *Conversion        `json:"conversion,omitempty"`
	// NoHint counts the data without a teacher context: the OPD terms
	// (an opd or combined advantage, opd_top_k) leave them out.
	NoHint int `json:"no_hint"`
}

// data resolves a request's data (s.mu held).
func (s *Service) data(data []Datum, samples []rl.Sample, opt SampleOptions) ([]Datum, *Conversion, error) {
	if (data == nil) == (samples == nil) {
		return nil, nil, errors.New("give data or samples (one of them)")
	}
	var cv *Conversion
	if samples != nil {
		opt.Tokenizer = s.opt.Tokenizer
		d, c, err := FromSamples(samples, opt)
		if err != nil {
			return nil, nil, err
		}
		data, cv = d, &c
	}
	V := s.model.Config.VocabSize
	for i := range data {
		if err := data[i].check(V); err != nil {
			return nil, nil, fmt.Errorf("data[%d]: %w", i, err)
		}
	}
	return data, cv, nil
}

// ForwardBackward implements API.
func (s *Service) ForwardBackward(ctx context.Context, req ForwardBackwardRequest) (ForwardBackwardResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ForwardBackwardResult{}, errClosed
	}
	need, err := req.Loss.check()
	if err != nil {
		return ForwardBackwardResult{}, err
	}
	// A group whose rewards are all equal has no RL advantage, but the
	// other terms (OPD's teacher, KL, entropy, SFT) still learn from it.
	all, hinted := req.Loss.keeps()
	data, cv, err := s.data(req.Data, req.Samples, SampleOptions{Estimator: req.Estimator, KeepDropped: all, KeepHinted: hinted,
		TrajectoryMean: req.TrajectoryMean, CapNegative: req.CapNegative})
	if err != nil {
		return ForwardBackwardResult{}, err
	}
	res := ForwardBackwardResult{Metrics: map[string]float64{}, Conversion: cv, Sequences: len(data)}
	r := layout(data)
	res.Tokens = len(r.batch.Rows)
	if res.Tokens == 0 {
		return res, nil // nothing to learn from: no gradient is added
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	obj, post, err := s.objective(r, &req.Loss, need, &res)
	if err != nil {
		return res, err
	}
	out, err := s.train.ForwardBackward(r.batch, obj)
	if err != nil {
		return res, err
	}
	res.Loss = out.Loss
	for name, v := range obj.Metrics {
		if name == entropyMetricName {
			res.Metrics["entropy"] = v
		} else {
			res.Metrics["loss/"+name] = v
		}
	}
	post()
	return res, nil
}

// objective builds the call's Objective, running the reference, teacher
// and old-policy passes it needs first; post adds the passes' statistics
// to the result's metrics once the policy's pass has run.
func (s *Service) objective(r *rows, lc *LossConfig, need needs, res *ForwardBackwardResult) (*trainer.Objective, func(), error) {
	S := len(r.batch.Rows)
	obj := &trainer.Objective{Seqs: r.seq, Steps: lc.StepTokens, Sequences: lc.StepSequences, SeqSumConstant: lc.SeqSumConstant}
	var refLP, teacherLP []float32
	var topIDs []int32
	var topLP []float32
	if need.ref {
		out, err := s.ref.Score(r.batch, false, 0)
		if err != nil {
			return nil, nil, err
		}
		refLP = out.LogProbs
	}
	if (need.teacher || need.topK > 0) && r.teacherBatch != nil {
		scorer := s.ref
		if s.opt.Teacher == "policy" {
			scorer = s.train
		}
		out, err := scorer.Score(r.teacherBatch, false, need.topK)
		if err != nil {
			return nil, nil, err
		}
		teacherLP, topIDs, topLP = out.LogProbs, out.TopIDs, out.TopLogProbs
	}
	res.NoHint = r.sequences - r.hintedSeqs
	// PPO's old policy: the data's proximal log-probs where given, else
	// the policy's own (on-policy; NaN marks them). OPD's advantages are
	// fixed before the pass, so their old log-prob is the proximal one,
	// else the rollout's, else the policy's own scored now.
	var pgOld, rollout []float32
	if r.haveOld {
		pgOld = r.old
	}
	if r.haveRollout {
		rollout = r.rollout
	}
	opdOld := make([]float32, S)
	var cur []float32
	for i := range opdOld {
		switch {
		case !math.IsNaN(float64(r.old[i])):
			opdOld[i] = r.old[i]
		case !math.IsNaN(float64(r.rollout[i])):
			opdOld[i] = r.rollout[i]
		case need.old && r.hinted[i]:
			if cur == nil {
				out, err := s.train.Score(r.batch, false, 0)
				if err != nil {
					return nil, nil, err
				}
				cur = out.LogProbs
			}
			opdOld[i] = cur[i]
		}
	}
	var pgs []*trainer.PolicyGradient
	for i := range lc.Terms {
		tc := &lc.Terms[i]
		name := tc.Name
		if name == "" {
			name = tc.Kind
		}
		agg := aggregations[tc.Aggregation]
		if tc.Aggregation == "" {
			agg = aggregations[lc.Aggregation]
		}
		term := trainer.Term{Name: name, Weight: tc.Weight, Agg: agg}
		switch tc.Kind {
		case "policy_gradient":
			adv := r.adv
			if tc.Advantage == "opd" || tc.Advantage == "combined" {
				wOPD, wRL := 1.0, 1.0
				if tc.OPDWeight != nil {
					wOPD = *tc.OPDWeight
				}
				if tc.RLWeight != nil {
					wRL = *tc.RLWeight
				}
				if tc.Advantage == "opd" {
					wRL = 0
				}
				teach := make([]float32, S)
				for k, tr := range r.teacherRow {
					if tr >= 0 {
						teach[k] = teacherLP[tr]
					}
				}
				adv, _ = trainer.OPDAdvantages(r.adv, teach, opdOld, r.hinted, wOPD, wRL)
			}
			pg := &trainer.PolicyGradient{Advantages: adv, Old: pgOld, Rollout: rollout, ClipLow: tc.ClipLow, ClipHigh: tc.ClipHigh,
				DualClip: tc.DualClip, TISCap: tc.TISCap, MaskLow: tc.MaskLow, MaskHigh: tc.MaskHigh}
			pgs = append(pgs, pg)
			term.Token = pg
		case "kl":
			term.Token = &trainer.KL{Ref: refLP, Estimator: klEstimators[tc.Estimator]}
		case "entropy":
			term.Token = trainer.EntropyBonus{}
		case "sft":
			term.Token = trainer.SFT{}
		case "opd_top_k":
			K := need.topK
			teach := make([]float32, S*K)
			for k, tr := range r.teacherRow {
				if tr >= 0 {
					copy(teach[k*K:(k+1)*K], topLP[tr*K:(tr+1)*K])
				}
			}
			term.Token = &trainer.TopKReverseKL{Teacher: teach, K: K, Keep: r.hinted}
		}
		obj.Terms = append(obj.Terms, term)
	}
	obj.Terms = append(obj.Terms, trainer.Term{Name: entropyMetricName, Weight: 0, Agg: trainer.TokenMean, Token: entropyMetric{}})
	if need.topK > 0 {
		K := need.topK
		b := *r.batch
		b.K = 1 + K
		b.Targets = make([]int32, S*(1+K))
		for k, row := range r.batch.Rows {
			seq := r.batch.Seqs[row.Seq]
			next := seq[row.Pos+1]
			b.Targets[k*(1+K)] = next
			for j := range K {
				id := next
				if tr := r.teacherRow[k]; tr >= 0 {
					id = topIDs[tr*K+j]
				}
				b.Targets[k*(1+K)+1+j] = id
			}
		}
		r.batch = &b
	}
	post := func() {
		var st trainer.PGStats
		for _, pg := range pgs {
			p := pg.Stats
			if st.Tokens == 0 {
				st.RatioMin, st.RatioMax = p.RatioMin, p.RatioMax
			} else if p.Tokens > 0 {
				st.RatioMin, st.RatioMax = min(st.RatioMin, p.RatioMin), max(st.RatioMax, p.RatioMax)
			}
			st.Tokens += p.Tokens
			st.Clipped += p.Clipped
			st.Masked += p.Masked
			st.RatioSum += p.RatioSum
			st.KLSum += p.KLSum
			st.GapSum += p.GapSum
			st.Gaps += p.Gaps
		}
		if len(pgs) > 0 {
			m := res.Metrics
			m["pg/clip_fraction"], m["pg/ratio_mean"], m["pg/ratio_min"], m["pg/ratio_max"] = st.ClipFraction(), st.MeanRatio(), st.RatioMin, st.RatioMax
			m["pg/ppo_kl"], m["pg/masked"] = st.KL(), float64(st.Masked)
			if st.Gaps > 0 {
				m["train_rollout_gap"] = st.Gap()
			}
		}
	}
	return obj, post, nil
}
