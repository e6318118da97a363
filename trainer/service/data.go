package service

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

// Datum is one training sequence: a prompt and the policy's response,
// with what the objective needs per response token.
type Datum struct {
	// Tokens are the prompt's ids then the response's.
	Tokens []int32 `json:"tokens"`
	// ResponseLength is the number of response tokens at the end of Tokens.
	ResponseLength int `json:"response_length"`
	// LossMask has one entry per response token: 1 trained, 0 not (tool
	// output, observations); nil trains every response token.
	LossMask []int `json:"loss_mask,omitempty"`
	// Advantage is every response token's advantage, unless Advantages
	// gives one per response token.
	Advantage  float32   `json:"advantage,omitempty"`
	Advantages []float32 `json:"advantages,omitempty"`
	// RolloutLogProbs are the behaviour policy's log-probs of the response
	// tokens (the engine that served the turn); nil when unknown.
	RolloutLogProbs []float32 `json:"rollout_log_probs,omitempty"`
	// OldLogProbs are the proximal policy's (decoupled PPO: the trainer's
	// recomputed log-probs of the version that served, from Forward); nil
	// takes the policy's own at this call (on-policy: the ratio is 1).
	OldLogProbs []float32 `json:"old_log_probs,omitempty"`
	// TeacherTokens are the teacher context (the hint-augmented prompt)
	// then the same response tokens, for OPD; nil when the turn has no
	// usable hint.
	TeacherTokens []int32 `json:"teacher_tokens,omitempty"`
}

// check validates the datum against a vocabulary of V ids.
func (d *Datum) check(V int) error {
	n := d.ResponseLength
	switch {
	case n <= 0 || n >= len(d.Tokens):
		return fmt.Errorf("response_length %d with %d tokens: want 0 < response_length < len(tokens) (a prompt of one token at least)", n, len(d.Tokens))
	case d.LossMask != nil && len(d.LossMask) != n:
		return fmt.Errorf("loss_mask has %d entries for %d response tokens", len(d.LossMask), n)
	case d.Advantages != nil && len(d.Advantages) != n:
		return fmt.Errorf("advantages has %d entries for %d response tokens", len(d.Advantages), n)
	case d.RolloutLogProbs != nil && len(d.RolloutLogProbs) != n:
		return fmt.Errorf("rollout_log_probs has %d entries for %d response tokens", len(d.RolloutLogProbs), n)
	case d.OldLogProbs != nil && len(d.OldLogProbs) != n:
		return fmt.Errorf("old_log_probs has %d entries for %d response tokens", len(d.OldLogProbs), n)
	case d.TeacherTokens != nil && len(d.TeacherTokens) <= n:
		return fmt.Errorf("teacher_tokens has %d ids: want the teacher prompt then the %d response tokens", len(d.TeacherTokens), n)
	}
	if d.TeacherTokens != nil {
		resp, tresp := d.Tokens[len(d.Tokens)-n:], d.TeacherTokens[len(d.TeacherTokens)-n:]
		for i := range resp {
			if resp[i] != tresp[i] {
				return fmt.Errorf("teacher_tokens' last %d ids differ from the response at %d: the teacher scores the same response", n, i)
			}
		}
	}
	for _, ids := range [][]int32{d.Tokens, d.TeacherTokens} {
		for _, t := range ids {
			if t < 0 || int(t) >= V {
				return fmt.Errorf("token %d outside the vocabulary [0, %d)", t, V)
			}
		}
	}
	return nil
}

// trained reports whether response token k is trained.
func (d *Datum) trained(k int) bool { return d.LossMask == nil || d.LossMask[k] != 0 }

func (d *Datum) advantage(k int) float32 {
	if d.Advantages != nil {
		return d.Advantages[k]
	}
	return d.Advantage
}

// Conversion counts what FromSamples did with a list of samples.
type Conversion struct {
	Samples int `json:"samples"`
	// Removed are infrastructure failures (remove_sample, status
	// "aborted"): never trained on.
	Removed int `json:"removed"`
	// Dropped had nothing to learn: every loss-mask entry 0, or a group
	// whose rewards are all equal (the advantage estimator drops it).
	Dropped int `json:"dropped"`
	// Tokenized carried text only and were tokenized with the chat template.
	Tokenized int `json:"tokenized"`
	// Hinted carry a teacher context for OPD; NoHint are the rest, which
	// the OPD term leaves out.
	Hinted int `json:"hinted"`
	NoHint int `json:"no_hint"`
}

// SampleOptions say how samples become data.
type SampleOptions struct {
	// Estimator is rl's advantage estimator: "grpo" (the default),
	// "step_wise" or "plain". The samples converted together are one
	// batch for it: give whole groups.
	Estimator string
	// Tokenizer renders text-only samples (and every teacher context)
	// with the model's chat template; without one, such samples are an
	// error.
	Tokenizer *tokenizer.Tokenizer
	// KeepDropped keeps the samples the estimator drops (advantage 0):
	// they still count in KL, entropy and SFT terms. KeepHinted keeps
	// those of them that carry a hint: OPD still learns from them.
	KeepDropped, KeepHinted bool
	// TrajectoryMean spreads each trajectory's RL advantage over its
	// trained tokens, so that under token_mean aggregation every
	// trajectory of the call weighs the same, however many turns and
	// tokens it has: each sample's advantage is scaled by the mean trained
	// tokens per trajectory over its own trajectory's. Without it, a
	// multi-turn group's failures (which run to the step limit) carry more
	// tokens than its successes, the advantages no longer sum to zero over
	// the tokens, and the surplus of negative weight pushes probability to
	// tokens never sampled (README: a tiny policy collapses to empty
	// replies within a few steps).
	TrajectoryMean bool
	// CapNegative caps each group's negative weight at its positive:
	// where a group's samples with a negative advantage hold more of it
	// over their trained tokens (advantage times tokens, summed) than those
	// with a positive one, the negative advantages are scaled down until
	// the two balance. Every token of a side keeps the same weight, so the
	// few tokens that decide a success are not diluted by its length (as
	// under TrajectoryMean), while long failures (replies that degenerate
	// into garbage, episodes that run to the step limit) can no longer
	// push probability to tokens never sampled. A group whose positive
	// side outweighs its negative is left as it is: net positive weight
	// sharpens the policy on what it sampled. Applied after TrajectoryMean.
	CapNegative bool
}

// FromSamples turns the gym's and the proxy's samples (slime's Sample, as
// `export --format samples`, the samples stream and the proxy write them)
// into data: the token ids when the turn carried them, else the prompt
// rendered with the chat template (generation prompt added) and the
// response encoded and closed by <|im_end|>, as the serving engine would
// have sampled it, the loss mask covering only the response. Advantages
// come from rl.SampleAdvantages over the whole list; the teacher context
// of a hinted sample is metadata.opd.teacher_prompt rendered the same way,
// followed by the same response ids. Removed and dropped samples are left
// out and counted.
func FromSamples(samples []rl.Sample, opt SampleOptions) ([]Datum, Conversion, error) {
	est := opt.Estimator
	if est == "" {
		est = rl.EstimatorGRPO
	}
	adv, err := rl.SampleAdvantages(samples, est)
	if err != nil {
		return nil, Conversion{}, err
	}
	cv := Conversion{Samples: len(samples)}
	var out []Datum
	var refs []datumRef // each datum's trajectory and trained tokens, for TrajectoryMean and CapNegative
	for i := range samples {
		s := &samples[i]
		if s.RemoveSample || s.Status == rl.StatusAborted {
			cv.Removed++
			continue
		}
		hinted := s.Metadata.OPD != nil && s.Metadata.OPD.Hint != ""
		if !adv[i].Keep && !opt.KeepDropped && !(opt.KeepHinted && hinted) {
			cv.Dropped++
			continue
		}
		d, tokenized, err := sampleDatum(s, opt.Tokenizer)
		if err != nil {
			return nil, cv, fmt.Errorf("sample %d (group %d, index %d): %w", i, s.GroupIndex, s.Index, err)
		}
		trained := d.trainedTokens()
		if d.LossMask != nil && trained == 0 {
			cv.Dropped++
			continue
		}
		if tokenized {
			cv.Tokenized++
		}
		d.Advantage = float32(adv[i].Value)
		if s.Metadata.OPD != nil && s.Metadata.OPD.Hint != "" {
			if opt.Tokenizer == nil {
				return nil, cv, fmt.Errorf("sample %d has a hint: its teacher context needs the tokenizer", i)
			}
			tp, err := renderPrompt(opt.Tokenizer, s.Metadata.OPD.TeacherPrompt)
			if err != nil {
				return nil, cv, fmt.Errorf("sample %d: teacher prompt: %w", i, err)
			}
			d.TeacherTokens = append(tp, d.Tokens[len(d.Tokens)-d.ResponseLength:]...)
			cv.Hinted++
		} else {
			cv.NoHint++
		}
		out = append(out, d)
		refs = append(refs, datumRef{rlTrajectory{s.GroupIndex, s.Index}, trained})
	}
	if opt.TrajectoryMean {
		spreadOverTrajectories(out, refs)
	}
	if opt.CapNegative {
		capNegative(out, refs)
	}
	return out, cv, nil
}

// capNegative scales each group's negative advantages down to its
// positive weight over the trained tokens (SampleOptions.CapNegative).
func capNegative(data []Datum, refs []datumRef) {
	type mass struct{ pos, neg float64 }
	groups := map[int]mass{}
	for i := range data {
		w := float64(data[i].Advantage) * float64(refs[i].trained)
		m := groups[refs[i].traj.group]
		if w > 0 {
			m.pos += w
		} else {
			m.neg -= w
		}
		groups[refs[i].traj.group] = m
	}
	for i := range data {
		if m := groups[refs[i].traj.group]; data[i].Advantage < 0 && m.neg > m.pos {
			data[i].Advantage *= float32(m.pos / m.neg)
		}
	}
}

// rlTrajectory names a sample's trajectory as rl's estimators do.
type rlTrajectory struct{ group, index int }

// datumRef is what the advantage weightings read of a datum: its
// trajectory and its trained tokens.
type datumRef struct {
	traj    rlTrajectory
	trained int
}

// spreadOverTrajectories scales each datum's advantage by the mean
// trained tokens per trajectory over its trajectory's (SampleOptions.
// TrajectoryMean).
func spreadOverTrajectories(data []Datum, refs []datumRef) {
	tokens := map[rlTrajectory]int{}
	for _, r := range refs {
		tokens[r.traj] += r.trained
	}
	total := 0
	for _, n := range tokens {
		total += n
	}
	mean := float64(total) / float64(len(tokens))
	for i := range data {
		if n := tokens[refs[i].traj]; n > 0 {
			data[i].Advantage *= float32(mean / float64(n))
		}
	}
}

// trainedTokens counts the response tokens the loss mask trains.
func (d *Datum) trainedTokens() int {
	n := 0
	for k := range d.ResponseLength {
		if d.trained(k) {
			n++
		}
	}
	return n
}

// sampleDatum is one sample's sequence: its ids, or its text tokenized.
func sampleDatum(s *rl.Sample, tok *tokenizer.Tokenizer) (Datum, bool, error) {
	n := s.ResponseLength
	if n < 0 || n > len(s.Tokens) {
		return Datum{}, false, fmt.Errorf("response_length %d with %d tokens", n, len(s.Tokens))
	}
	var d Datum
	tokenized := false
	switch {
	case n > 0 && len(s.Tokens) > n: // ids for all of it
		d.Tokens = toInt32(s.Tokens)
	case n > 0: // the response's ids only: render the prompt
		if tok == nil {
			return d, false, errors.New("the sample has no prompt token ids: tokenizing its prompt needs the tokenizer")
		}
		p, err := renderPrompt(tok, s.Prompt)
		if err != nil {
			return d, false, err
		}
		d.Tokens, tokenized = append(p, toInt32(s.Tokens)...), true
	default: // text only
		if tok == nil {
			return d, false, errors.New("the sample has no token ids: tokenizing its text needs the tokenizer")
		}
		p, err := renderPrompt(tok, s.Prompt)
		if err != nil {
			return d, false, err
		}
		r, err := encodeResponse(tok, s.Response)
		if err != nil {
			return d, false, err
		}
		d.Tokens, n, tokenized = append(p, r...), len(r), true
	}
	d.ResponseLength = n
	if len(s.LossMask) == n {
		d.LossMask = append([]int(nil), s.LossMask...)
	} else if len(s.LossMask) != 0 {
		return d, false, fmt.Errorf("loss_mask has %d entries for %d response tokens", len(s.LossMask), n)
	}
	if s.RolloutLogProbs != nil && !tokenized {
		if len(s.RolloutLogProbs) != n {
			return d, false, fmt.Errorf("rollout_log_probs has %d entries for %d response tokens", len(s.RolloutLogProbs), n)
		}
		d.RolloutLogProbs = make([]float32, n)
		for k, v := range s.RolloutLogProbs {
			d.RolloutLogProbs[k] = float32(v)
		}
	}
	if len(d.Tokens) == n {
		return d, false, errors.New("the sample has an empty prompt")
	}
	return d, tokenized, nil
}

func toInt32(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// renderPrompt is the prompt as the serving engine saw it: the chat
// template with the generation prompt.
func renderPrompt(tok *tokenizer.Tokenizer, msgs []rl.Message) ([]int32, error) {
	tm := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		tm[i] = tokenizer.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			args := json.RawMessage(c.Function.Arguments)
			if !json.Valid(args) { // the agent's malformed arguments, kept as a string
				b, _ := json.Marshal(c.Function.Arguments)
				args = b
			}
			tm[i].ToolCalls = append(tm[i].ToolCalls, tokenizer.ToolCall{ID: c.ID, Type: c.Type,
				Function: tokenizer.FunctionCall{Name: c.Function.Name, Arguments: args}})
		}
	}
	text, err := tokenizer.ApplyChatTemplate(tm, nil, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		return nil, err
	}
	return tok.Encode(text), nil
}

// encodeResponse is the reply's ids as sampled: its text, then <|im_end|>.
func encodeResponse(tok *tokenizer.Tokenizer, text string) ([]int32, error) {
	end, ok := tok.TokenID("<|im_end|>")
	if !ok {
		return nil, errors.New("the tokenizer has no <|im_end|> token (not a Qwen chat tokenizer)")
	}
	return append(tok.Encode(text), end), nil
}
