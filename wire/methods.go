package wire

import (
	"encoding/json"

	"github.com/nextstate-rl/nextstate/gym"
)

// ServerInfo is the result of server.info.
type ServerInfo struct {
	Name          string   `json:"name"`
	Version       string   `json:"version"`
	Protocol      string   `json:"protocol"`
	Envs          []string `json:"envs"`
	MaxFrameBytes int      `json:"max_frame_bytes"`
	Sessions      int      `json:"sessions"`
	MaxSessions   int      `json:"max_sessions"`
	LastSeq       int64    `json:"last_seq"`
}

// EnvSummary is one entry of env.list.
type EnvSummary struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Tasks       int    `json:"tasks"`
}

// EnvListResult is the result of env.list.
type EnvListResult struct {
	Envs []EnvSummary `json:"envs"`
}

// EnvDescribeParams are env.describe's params.
type EnvDescribeParams struct {
	Env string `json:"env"`
}

// EnvDescribeResult is the result of env.describe: the kind's spec (its
// tasks without verifier inputs) and the schema of every part type.
type EnvDescribeResult struct {
	gym.Spec
	PartSchemas map[gym.PartType]json.RawMessage `json:"part_schemas"`
}

// TaskListParams are task.list's params.
type TaskListParams struct {
	Env   string `json:"env,omitempty"`
	Split string `json:"split,omitempty"`
}

// TaskListResult is the result of task.list; verifier inputs are removed.
type TaskListResult struct {
	Tasks []gym.Task `json:"tasks"`
}

// CreateParams are session.create's params.
type CreateParams = gym.CreateRequest

// CreateResult is session.create's result: the new session and the first
// observation of its first episode.
type CreateResult = gym.ResetResult

// StepParams are session.step's params. StepID makes the step idempotent:
// send the same id again after a lost answer and the recorded answer comes
// back, with replayed set.
type StepParams struct {
	Session string     `json:"session"`
	StepID  string     `json:"step_id,omitempty"`
	Action  gym.Action `json:"action"`
	// Turn is the policy's side of the step (prompt, response, token ids,
	// log-probs), recorded with the step for training samples.
	Turn *gym.Turn `json:"turn,omitempty"`
}

// StepResult is session.step's result.
type StepResult = gym.StepResult

// ResetParams are session.reset's params. With neither TaskID nor Task the
// session's current task is kept.
type ResetParams struct {
	Session string      `json:"session"`
	TaskID  string      `json:"task_id,omitempty"`
	Task    *gym.Task   `json:"task,omitempty"`
	Seed    int64       `json:"seed,omitempty"`
	Options gym.Options `json:"options,omitempty"`
}

// ResetResult is session.reset's result.
type ResetResult = gym.ResetResult

// CloseParams are session.close's params.
type CloseParams struct {
	Session string `json:"session"`
}

// CloseResult is session.close's result.
type CloseResult struct {
	Session string `json:"session"`
	Closed  bool   `json:"closed"`
}

// ResumeParams are session.resume's params: the events of the session with
// a seq above AfterSeq are replayed, at most Limit (default and maximum
// MaxResumeEvents); More says whether to ask again.
type ResumeParams struct {
	Session  string `json:"session"`
	AfterSeq int64  `json:"after_seq"`
	Limit    int    `json:"limit,omitempty"`
}

// MaxResumeEvents caps the events of one session.resume answer.
const MaxResumeEvents = 10000

// ResumeResult is session.resume's result. Live says the session can still
// be stepped; a closed session still has its events.
type ResumeResult struct {
	Session string      `json:"session"`
	Live    bool        `json:"live"`
	Events  []gym.Event `json:"events"`
	LastSeq int64       `json:"last_seq"`
	More    bool        `json:"more"`
}

// RewardParams are reward.add's params: a reward for a recorded step that
// arrived after it (a judge's vote, a late verifier).
type RewardParams struct {
	Session string   `json:"session"`
	StepID  string   `json:"step_id"`
	Reward  *float64 `json:"reward"` // required
	Source  string   `json:"source"`
	Info    gym.Info `json:"info,omitempty"`
}

// RewardResult is reward.add's result.
type RewardResult struct {
	Seq int64 `json:"seq"`
}

// SubscribeParams are events.subscribe's params. Empty filters match all.
// Events with seq above AfterSeq are sent first from the store, then live
// ones; AfterSeq -1 means "live only, from now".
//
// Stream "samples" subscribes to training samples instead of events:
// AfterSeq is then a sample offset, Window bounds the samples sent and
// not yet acknowledged (samples.ack), Run, Env and Session filter, and
// Types must be empty.
type SubscribeParams struct {
	// Stream is StreamEvents (the default, also "") or StreamSamples.
	Stream   string          `json:"stream,omitempty"`
	Run      string          `json:"run,omitempty"`
	Env      string          `json:"env,omitempty"`
	Session  string          `json:"session,omitempty"`
	Types    []gym.EventType `json:"types,omitempty"`
	AfterSeq int64           `json:"after_seq"`
	// Window is the most samples in flight, sent and not acknowledged, on
	// a samples stream: DefaultSampleWindow when 0, 1 to MaxSampleWindow.
	Window int `json:"window,omitempty"`
}

// Streams events.subscribe offers.
const (
	StreamEvents  = "events"
	StreamSamples = "samples"
)

// Bounds of a samples stream's window.
const (
	DefaultSampleWindow = 64
	MaxSampleWindow     = 4096
)

// SubscribeResult is events.subscribe's result.
type SubscribeResult struct {
	Subscription string `json:"subscription"`
	LastSeq      int64  `json:"last_seq"`
}

// UnsubscribeParams are events.unsubscribe's params.
type UnsubscribeParams struct {
	Subscription string `json:"subscription"`
}

// EventNotification is the params of an events.event notification.
type EventNotification struct {
	Subscription string     `json:"subscription"`
	Event        *gym.Event `json:"event"`
}

// EndedNotification is the params of an events.ended notification.
type EndedNotification struct {
	Subscription string `json:"subscription"`
	Reason       string `json:"reason"` // "slow_consumer", "shutdown", "unsubscribed"
	LastSeq      int64  `json:"last_seq"`
}

// SampleNotification is the params of a samples.sample notification: one
// stored training sample (package rl's Sample as JSON) and its offset.
type SampleNotification struct {
	Subscription string          `json:"subscription"`
	Offset       int64           `json:"offset"`
	Sample       json.RawMessage `json:"sample"`
}

// SamplesAckParams are samples.ack's params: every sample of the
// subscription up to and including Offset is acknowledged.
type SamplesAckParams struct {
	Subscription string `json:"subscription"`
	Offset       int64  `json:"offset"`
}

// SamplesAckResult is samples.ack's result: the subscription's
// acknowledged offset now.
type SamplesAckResult struct {
	Acked int64 `json:"acked"`
}

// StoredSample is a training sample with its offset in the store.
type StoredSample struct {
	Offset int64           `json:"offset"`
	Sample json.RawMessage `json:"sample"`
}

// SamplesPage is the answer to GET /v1/samples. LastSeq is the offset of
// the last sample in it (the request's after_seq when it is empty): ask
// again with after_seq=LastSeq. More says that limit cut the page short.
type SamplesPage struct {
	Samples []StoredSample `json:"samples"`
	LastSeq int64          `json:"last_seq"`
	More    bool           `json:"more"`
}

// Bounds of GET /v1/samples's limit.
const (
	DefaultSamplesPage = 100
	MaxSamplesPage     = 1000
)
