package main

import (
	"context"
	"math/rand/v2"
	"slices"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/service"
)

// rlHintTokens is the length of the hint the RL step's teacher contexts
// carry.
const rlHintTokens = 16

// rlBenchInput is the RL step's batch, the same on both sides (the JSON
// PyTorch reads): each sequence's second half is the response, with an
// advantage of ±1 and the rollout log-probs of the weights it starts
// from; the teacher context is the prompt, a hint of random tokens, and
// the response.
type rlBenchInput struct {
	Prompt  int         `json:"prompt"`
	Adv     []float32   `json:"adv"`
	Old     [][]float32 `json:"old"`
	Teacher [][]int32   `json:"teacher"`
	KL      float64     `json:"kl"`

	data []service.Datum
}

// newRLBench starts the trainer service on m and makes the RL step's batch.
func newRLBench(m *trainer.Model, opt trainer.TrainOptions, seqs [][]int32, r *rand.Rand) (*service.Service, *rlBenchInput, error) {
	svc, err := service.New(m, service.Options{Training: opt})
	if err != nil {
		return nil, nil, err
	}
	T := len(seqs[0])
	in := &rlBenchInput{Prompt: T / 2, KL: 0.01}
	for i, s := range seqs {
		hint := make([]int32, rlHintTokens)
		for j := range hint {
			hint[j] = int32(r.IntN(m.Config.VocabSize))
		}
		teacher := slices.Concat(s[:in.Prompt], hint, s[in.Prompt:])
		in.Teacher = append(in.Teacher, teacher)
		in.Adv = append(in.Adv, float32(1-2*(i%2)))
		in.data = append(in.data, service.Datum{Tokens: s, ResponseLength: T - in.Prompt, Advantage: in.Adv[i], TeacherTokens: teacher})
	}
	lp, err := svc.Forward(context.Background(), service.ForwardRequest{Data: in.data})
	if err != nil {
		svc.Close()
		return nil, nil, err
	}
	for i := range in.data {
		in.data[i].RolloutLogProbs = lp.LogProbs[i]
	}
	in.Old = lp.LogProbs
	return svc, in, nil
}

// step is one RL step through the service: the reference's and the
// teacher's passes, policy gradient with the combined RL and OPD
// advantage plus k3 KL, and AdamW.
func (in *rlBenchInput) step(svc *service.Service) func() error {
	loss := service.LossConfig{Terms: []service.TermConfig{
		{Kind: "policy_gradient", Weight: 1, Advantage: "combined"},
		{Kind: "kl", Weight: in.KL, Estimator: "k3"},
	}}
	return func() error {
		ctx := context.Background()
		if _, err := svc.ForwardBackward(ctx, service.ForwardBackwardRequest{Data: in.data, Loss: loss}); err != nil {
			return err
		}
		_, err := svc.OptimStep(ctx, service.AdamParams{LR: 1e-5})
		return err
	}
}
