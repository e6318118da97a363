package rl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nextstate-rl/nextstate/gym"
)

// Status is a sample's status, with slime's Sample.Status values.
type Status string

const (
	StatusCompleted Status = "completed" // the episode terminated: the task reached an end state
	StatusTruncated Status = "truncated" // the episode was cut off (step limit, deadline, the agent's failure)
	StatusAborted   Status = "aborted"   // the infrastructure failed: masked out of training
)

// Message is one chat message of a policy's context, in the OpenAI shape.
type Message struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []gym.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// HintHeader introduces the hint in a teacher context.
const HintHeader = "[Hint from hindsight]"

// TeacherMessages returns the teacher context for OPD: a copy of messages
// with the hint appended to the last user turn (after a blank line and
// HintHeader), or, with no user turn, as a new user message at the end.
// An empty hint gives an unchanged copy.
func TeacherMessages(messages []Message, hint string) []Message {
	out := make([]Message, len(messages))
	for i, m := range messages {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		out[i] = m
	}
	if hint == "" {
		return out
	}
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == "user" {
			sep := "\n\n"
			if out[i].Content == "" {
				sep = ""
			}
			out[i].Content += sep + HintHeader + "\n" + hint
			return out
		}
	}
	return append(out, Message{Role: "user", Content: HintHeader + "\n" + hint})
}

// Sample is one training sample: one trained turn of a trajectory, with
// the field names of upstream slime's Sample (slime/utils/types.py), so
// Sample.from_dict takes the JSON as it is. Which fields are upstream
// slime's, which OpenClaw-RL's fork of slime reads, and which are
// nextstate's own is in docs/formats.md ("Training samples"). The JSON
// writes Reward and the step-wise scores as floats (1.0, not 1), since
// slime declares them floats.
//
// A sample has no rollout_id: upstream slime groups the training samples
// of one rollout by Sample.rollout_id, and clients/python's slime adapter
// sets it from Index.
type Sample struct {
	GroupIndex int `json:"group_index"`
	// Index identifies the trajectory: the samples of one trajectory share
	// it (what OpenClaw-RL's fork calls dynamic_history; the slime adapter
	// makes it upstream slime's rollout_id); Metadata.StepWise.StepIndices
	// tells the turn.
	Index int `json:"index"`
	// Prompt is the context the policy saw (the original context).
	Prompt []Message `json:"prompt"`
	// Response is the policy's reply as text.
	Response string `json:"response"`
	// Tokens are the prompt's ids then the response's; empty when the turn
	// carried text only (the consumer tokenizes Prompt and Response).
	Tokens []int `json:"tokens"`
	// ResponseLength is the number of response tokens at the end of Tokens.
	ResponseLength int `json:"response_length"`
	// LossMask has one entry per response token: 1 trained, 0 not.
	LossMask []int `json:"loss_mask"`
	// RolloutLogProbs are the policy's log-probabilities of the response
	// tokens when it sampled them; null when unknown.
	RolloutLogProbs []float64 `json:"rollout_log_probs"`
	// Reward is the trajectory's sequence score, o + c·mean_t(r_t).
	Reward float64 `json:"reward"`
	Status Status  `json:"status"`
	// RemoveSample is set for masked samples (an infrastructure failure):
	// slime then zeroes the loss mask.
	RemoveSample bool     `json:"remove_sample"`
	Metadata     Metadata `json:"metadata"`
}

// Metadata is a sample's metadata.
type Metadata struct {
	StepWise StepWiseScores `json:"step_wise"`
	// OPD is set when the judge gave the turn a hint.
	OPD *OPD `json:"opd,omitempty"`
	// Origin says where the sample came from in nextstate's record.
	Origin Origin `json:"nextstate"`
}

// StepWiseScores is the step-wise reward metadata that OpenClaw-RL's fork of
// slime reads for its step_wise advantage estimator (upstream slime does not
// read it). A per-turn sample holds one step.
type StepWiseScores struct {
	StepScores            []float64 `json:"step_scores"`              // r_t, the process reward
	StepScoresWithOutcome []float64 `json:"step_scores_with_outcome"` // R_t = o·γ^(T−1−t) + c·r_t
	StepIndices           []int     `json:"step_indices"`             // t, from 0
	StepTokenSpans        [][2]int  `json:"step_token_spans"`         // [start, end) in response tokens
	OutcomeReward         float64   `json:"outcome_reward"`           // o, after the outcome map
}

// OPD is the directive signal of a turn: the hint and the teacher context
// (Prompt with the hint appended to its last user turn), under which a
// trainer computes the teacher's log-probs of the same response.
type OPD struct {
	Hint          string    `json:"hint"`
	TeacherPrompt []Message `json:"teacher_prompt"`
}

// MarshalJSON writes the sample with Reward as a float (see Sample).
func (s Sample) MarshalJSON() ([]byte, error) {
	type fields Sample // without this method
	return json.Marshal(struct {
		fields
		Reward floatJSON `json:"reward"`
	}{fields(s), floatJSON(s.Reward)})
}

// MarshalJSON writes the scores as floats (see Sample).
func (w StepWiseScores) MarshalJSON() ([]byte, error) {
	type fields StepWiseScores // without this method
	return json.Marshal(struct {
		fields
		StepScores            []floatJSON `json:"step_scores"`
		StepScoresWithOutcome []floatJSON `json:"step_scores_with_outcome"`
		OutcomeReward         floatJSON   `json:"outcome_reward"`
	}{fields(w), floatsJSON(w.StepScores), floatsJSON(w.StepScoresWithOutcome), floatJSON(w.OutcomeReward)})
}

// floatJSON is a float64 whose JSON always has a fraction or an exponent
// (1.0, not 1), so that a Python reader gets a float, not an int.
type floatJSON float64

func (f floatJSON) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(float64(f))
	if err != nil {
		return nil, err
	}
	if !bytes.ContainsAny(b, ".eE") {
		b = append(b, ".0"...)
	}
	return b, nil
}

func floatsJSON(xs []float64) []floatJSON {
	if xs == nil {
		return nil
	}
	out := make([]floatJSON, len(xs))
	for i, x := range xs {
		out[i] = floatJSON(x)
	}
	return out
}

// Origin locates a sample's step in the trajectory record.
type Origin struct {
	Session string `json:"session"`
	Episode int    `json:"episode"`
	Step    int    `json:"step"`
	StepID  string `json:"step_id,omitempty"`
	Env     string `json:"env,omitempty"`
	Task    string `json:"task,omitempty"`
	// User is the proxy's user whose conversation the turn was (none for
	// the gym's episodes).
	User string `json:"user,omitempty"`
	// Judged is false when the step has no process reward (no judge, or a
	// judge that did not answer); its r_t is 0.
	Judged bool `json:"judged"`
	// Refused marks the turn of an action the gym refused before the env
	// saw it (a step.refused event): Step is the number the step would
	// have had (the next step's, which follows it), its next state the
	// refusal, and its r_t RefusedProcess, judged.
	Refused bool `json:"refused,omitempty"`
	// WeightVersion is the version of the policy's weights that produced
	// the response (gym.Turn.WeightVersion), when the model server said.
	WeightVersion *int `json:"weight_version,omitempty"`
}

// Rollout is one trajectory to turn into samples.
type Rollout struct {
	// GroupIndex groups the trajectories of one task (for GRPO); Index
	// numbers the trajectory.
	GroupIndex, Index int
	Session           string
	Episode           int
	Env, Task         string
	// User is whose conversation it was (the proxy's), if anyone's.
	User    string
	Outcome Outcome
	// Turns are the policy's turns, in order: one per step.
	Turns []PolicyTurn
}

// PolicyTurn is one turn of the policy: the context it saw, what it
// answered, and the judge's signal for the step.
type PolicyTurn struct {
	// Step is the step's number in the episode, from 1; 0 means the turn's
	// position + 1.
	Step   int
	StepID string
	// Messages is the context as chat messages; PromptIDs the same context
	// tokenized (with the chat template), when the policy server gave ids.
	Messages  []Message
	PromptIDs []int
	// ResponseIDs and LogProbs are the sampled reply's token ids and their
	// log-probabilities, when known; Response is its text.
	ResponseIDs []int
	LogProbs    []float64
	Response    string
	// LossMask, if set, has one entry per response token; all 1 otherwise.
	LossMask []int
	// Process is r_t, the step's process reward (0 if not judged); Judged
	// says whether it was; Hint is the judge's selected hint.
	Process float64
	Judged  bool
	Hint    string
	// Failure is the step's failure, if it had one.
	Failure *gym.Failure
	// Refused marks an action the gym refused (Origin.Refused); Process
	// is then RefusedProcess and Judged true, and judge results, which
	// are by step number, do not apply to it.
	Refused bool
	// WeightVersion is the weight version that produced the response, when known.
	WeightVersion *int
}

// ApplyJudgements copies a complete trajectory's judge results into the
// turns of the same steps: Process, Judged and Hint.
func ApplyJudgements(turns []PolicyTurn, st *TrajectoryState) {
	for i := range turns {
		if turns[i].Refused {
			continue
		}
		step := turns[i].Step
		if step == 0 {
			step = i + 1
		}
		if res, ok := st.Result(step); ok {
			turns[i].Process, turns[i].Judged, turns[i].Hint = res.Reward(), res.Judged(), res.Hint()
		}
	}
}

// BuildSamples makes one sample per turn. Each gets the trajectory's
// sequence score as its Reward and its own step's r_t and R_t in
// Metadata.StepWise (mix decides both). A trajectory with an
// infrastructure failure, in its Outcome or on any turn, is masked: status
// "aborted", remove_sample set, loss mask all 0.
func BuildSamples(r Rollout, mix Mix) ([]Sample, error) {
	if err := mix.Validate(); err != nil {
		return nil, err
	}
	o, err := mix.MapOutcome(r.Outcome.Reward)
	if err != nil {
		return nil, err
	}
	trainable := Trainable(r.Outcome.Failure)
	process := make([]float64, len(r.Turns))
	for i, t := range r.Turns {
		process[i] = t.Process
		trainable = trainable && Trainable(t.Failure)
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("turn %d (step %d): %w", i, t.Step, err)
		}
	}
	stepRewards := mix.StepRewards(o, process)
	seq := mix.SequenceScore(o, process)
	status := StatusTruncated
	switch {
	case !trainable:
		status = StatusAborted
	case r.Outcome.Terminated && r.Outcome.Failure == nil:
		status = StatusCompleted
	}
	out := make([]Sample, len(r.Turns))
	for i, t := range r.Turns {
		step := t.Step
		if step == 0 {
			step = i + 1
		}
		n := len(t.ResponseIDs)
		s := Sample{
			GroupIndex: r.GroupIndex, Index: r.Index,
			Prompt: t.Messages, Response: t.Response,
			Tokens: append(append(make([]int, 0, len(t.PromptIDs)+n), t.PromptIDs...), t.ResponseIDs...), ResponseLength: n,
			Reward: seq, Status: status, RemoveSample: !trainable,
			Metadata: Metadata{
				StepWise: StepWiseScores{
					StepScores: []float64{t.Process}, StepScoresWithOutcome: []float64{stepRewards[i]},
					StepIndices: []int{i}, StepTokenSpans: [][2]int{}, OutcomeReward: o,
				},
				Origin: Origin{Session: r.Session, Episode: r.Episode, Step: step, StepID: t.StepID,
					Env: r.Env, Task: r.Task, User: r.User, Judged: t.Judged, Refused: t.Refused, WeightVersion: t.WeightVersion},
			},
		}
		if s.Prompt == nil {
			s.Prompt = []Message{}
		}
		s.LossMask = make([]int, n)
		for k := range s.LossMask {
			if trainable && (t.LossMask == nil || t.LossMask[k] != 0) {
				s.LossMask[k] = 1
			}
		}
		if n > 0 {
			s.Metadata.StepWise.StepTokenSpans = [][2]int{{0, n}}
		}
		if t.LogProbs != nil {
			s.RolloutLogProbs = slices.Clone(t.LogProbs)
		}
		if t.Hint != "" {
			s.Metadata.OPD = &OPD{Hint: t.Hint, TeacherPrompt: TeacherMessages(t.Messages, t.Hint)}
		}
		out[i] = s
	}
	return out, nil
}

// check verifies a turn has a context and a response, and that its per-token
// slices match its response.
func (t PolicyTurn) check() error {
	n := len(t.ResponseIDs)
	switch {
	case n == 0 && t.Response == "":
		return errors.New("no response: give ResponseIDs or Response")
	case len(t.Messages) == 0 && len(t.PromptIDs) == 0:
		return errors.New("no context: give Messages or PromptIDs")
	case n > 0 && len(t.PromptIDs) == 0:
		return errors.New("response ids without prompt ids: tokens are the prompt's ids then the response's")
	case n == 0 && len(t.PromptIDs) > 0:
		return errors.New("prompt ids without response ids: give both, or text only")
	case t.LogProbs != nil && len(t.LogProbs) != n:
		return fmt.Errorf("%d log-probs for %d response tokens: want one per token", len(t.LogProbs), n)
	case t.LossMask != nil && len(t.LossMask) != n:
		return fmt.Errorf("loss mask of %d for %d response tokens: want one per token", len(t.LossMask), n)
	}
	return nil
}
