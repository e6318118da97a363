package store

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// Export formats.
const (
	// FormatTrajectories writes one JSON line per episode (Episode), steps
	// in order with their late rewards attached. It is the default.
	FormatTrajectories = "jsonl"
	// FormatEvents writes each event as one JSON line, as stored.
	FormatEvents = "events"
	// FormatSamples writes each training sample as one JSON line, with
	// its "offset" first.
	FormatSamples = "samples"
)

// Formats lists the accepted export formats, the default first.
var Formats = []string{FormatTrajectories, FormatEvents, FormatSamples}

// Episode is one line of a trajectory export: an episode of a session from
// its reset to its last step, with the rewards that arrived later.
type Episode struct {
	Session string `json:"session"`
	Run     string `json:"run,omitempty"`
	Env     string `json:"env"`
	Task    string `json:"task,omitempty"`
	Episode int    `json:"episode"`
	Seed    *int64 `json:"seed,omitempty"`
	// Instruction is the task's instruction, and ResetObservation the
	// observation the episode began with: both from its reset event.
	Instruction      string           `json:"instruction,omitempty"`
	ResetObservation *gym.Observation `json:"reset_observation,omitempty"`
	Steps            []*EpisodeStep   `json:"steps"`
	// Refused are the actions the gym refused before the env saw them
	// (step.refused events), in order: Step is the number the step would
	// have had, Failure the refusal; no observation, reward 0.
	Refused []*EpisodeStep `json:"refused,omitempty"`
	// Return is the sum of the steps' rewards (late rewards not included).
	Return float64 `json:"return"`
	// Terminated and Truncated are the last step's.
	Terminated bool `json:"terminated"`
	Truncated  bool `json:"truncated"`
	// ClosedReason is the session's close reason when this was its last
	// episode; ClosedFailure says whose fault the close was, if anyone's.
	ClosedReason  string       `json:"closed_reason,omitempty"`
	ClosedFailure *gym.Failure `json:"closed_failure,omitempty"`
	// Rewards are late rewards for the episode that name no step of it.
	Rewards  []LateReward `json:"rewards,omitempty"`
	FirstSeq int64        `json:"first_seq"`
	LastSeq  int64        `json:"last_seq"`
}

// EpisodeStep is one step of an exported Episode.
type EpisodeStep struct {
	Seq         int64            `json:"seq"`
	Step        int              `json:"step"`
	StepID      string           `json:"step_id,omitempty"`
	Action      *gym.Action      `json:"action,omitempty"`
	Observation *gym.Observation `json:"observation,omitempty"`
	Reward      float64          `json:"reward"`
	Terminated  bool             `json:"terminated"`
	Truncated   bool             `json:"truncated"`
	Info        gym.Info         `json:"info,omitempty"`
	Failure     *gym.Failure     `json:"failure,omitempty"`
	DurationUS  int64            `json:"duration_us"`
	// Rewards are the reward events recorded later for this step's id.
	Rewards []LateReward `json:"rewards"`
}

// LateReward is a reward event (a judge's vote, the verifier's verdict)
// attached to the step or episode it is for.
type LateReward struct {
	Source string   `json:"source"`
	Reward float64  `json:"reward"`
	Info   gym.Info `json:"info,omitempty"`
	Seq    int64    `json:"seq"`
}

// Export writes the events matching f to w in format: FormatTrajectories
// ("jsonl", also the empty string) or FormatEvents ("events"). Output is
// streamed; at most one session's events are held at a time.
//
// For trajectories, f selects episodes rather than events: Session, Run, Env
// and Task select the episodes' session and fields; AfterSeq keeps the
// episodes that began after it (an episode whose reset is at or before it is
// left out, not cut); Limit is the most episodes written; Types is ignored;
// ReadBlobs inlines blob data one episode at a time.
//
// Both event formats honour f.Public: with it the export holds what an
// agent may see (gym.Event.Public: no verifier details in steps' info or in
// the verifier's late rewards); without it, everything as stored, for
// trainers.
//
// For samples, Run, Env, Task and Session select; AfterSeq is a sample
// offset (those after it are written); Limit is the most samples; Types,
// ReadBlobs and Public are ignored.
func (s *Store) Export(ctx context.Context, w io.Writer, f Filter, format string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var err error
	switch format {
	case FormatTrajectories, "":
		err = s.exportEpisodes(ctx, enc, f)
	case FormatEvents:
		err = s.Scan(ctx, f, func(ev *gym.Event) error { return enc.Encode(ev) })
	case FormatSamples:
		err = s.exportSamples(ctx, bw, f)
	default:
		return fmt.Errorf("store: unknown export format %q (accepted: %s)", format, strings.Join(Formats, ", "))
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("store: export: %w", ferr)
	}
	return err
}

func (s *Store) exportEpisodes(ctx context.Context, enc *json.Encoder, f Filter) error {
	if s.isClosing() {
		return ErrClosed
	}
	upto, err := s.upperBound(ctx)
	if err != nil {
		return err
	}
	sessions, err := s.sessions(ctx, f, upto)
	if err != nil {
		return err
	}
	written := 0
	for _, sess := range sessions {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := newEpisodeBuilder()
		// Blobs are read per episode as it is written, not per session.
		sf := Filter{Session: sess, AfterSeq: f.AfterSeq, Public: f.Public}
		err := s.scanUpTo(ctx, sf, upto, func(ev *gym.Event) error {
			b.add(ev)
			return nil
		})
		if err != nil {
			return err
		}
		for _, ep := range b.episodes() {
			if (f.Run != "" && ep.Run != f.Run) || (f.Env != "" && ep.Env != f.Env) || (f.Task != "" && ep.Task != f.Task) {
				continue
			}
			if f.ReadBlobs {
				if err := s.inlineEpisode(ep); err != nil {
					return err
				}
			}
			err := enc.Encode(ep)
			ep.ResetObservation, ep.Steps = nil, nil // let the blobs go
			if err != nil {
				return fmt.Errorf("store: export: %w", err)
			}
			written++
			if f.Limit > 0 && written >= f.Limit {
				return nil
			}
		}
	}
	return nil
}

// inlineEpisode puts the blob data of ep's observations and actions inline.
func (s *Store) inlineEpisode(ep *Episode) error {
	if err := s.inlineObservation(&ep.ResetObservation); err != nil {
		return fmt.Errorf("store: export session %s episode %d: %w", ep.Session, ep.Episode, err)
	}
	for _, st := range ep.Steps {
		if err := s.inlineObservation(&st.Observation); err != nil {
			return fmt.Errorf("store: export event %d: %w", st.Seq, err)
		}
		if err := s.inlineAction(&st.Action); err != nil {
			return fmt.Errorf("store: export event %d: %w", st.Seq, err)
		}
	}
	return nil
}

// sessions lists the sessions with events matching f (Types ignored), in the
// order of their first such event.
func (s *Store) sessions(ctx context.Context, f Filter, upto int64) ([]string, error) {
	where, args := f.where(upto, false)
	rows, err := s.rdb.QueryContext(ctx,
		"SELECT session FROM events WHERE "+where+" GROUP BY session ORDER BY min(seq)", args...)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var sess string
		if err := rows.Scan(&sess); err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

// episodeBuilder groups one session's events, in seq order, into episodes.
type episodeBuilder struct {
	byNum  map[int]*Episode
	order  []*Episode
	steps  map[string]*EpisodeStep // by step id
	stepEp map[*EpisodeStep]*Episode
	// started marks episodes whose reset was seen; the others began before
	// the export's AfterSeq and are left out.
	started map[*Episode]bool
}

func newEpisodeBuilder() *episodeBuilder {
	return &episodeBuilder{
		byNum:   map[int]*Episode{},
		steps:   map[string]*EpisodeStep{},
		stepEp:  map[*EpisodeStep]*Episode{},
		started: map[*Episode]bool{},
	}
}

func (b *episodeBuilder) episode(ev *gym.Event) *Episode {
	ep := b.byNum[ev.Episode]
	if ep == nil {
		ep = &Episode{Session: ev.Session, Run: ev.Run, Env: ev.Env, Task: ev.Task, Episode: ev.Episode,
			Steps: []*EpisodeStep{}, FirstSeq: ev.Seq}
		b.byNum[ev.Episode] = ep
		b.order = append(b.order, ep)
	}
	ep.LastSeq = max(ep.LastSeq, ev.Seq)
	return ep
}

func (b *episodeBuilder) add(ev *gym.Event) {
	switch ev.Type {
	case gym.EventReset:
		ep := b.episode(ev)
		b.started[ep] = true
		ep.Seed, ep.Instruction, ep.ResetObservation = ev.Seed, ev.Instruction, ev.Observation
		ep.Run, ep.Env, ep.Task = ev.Run, ev.Env, ev.Task
	case gym.EventStep:
		ep := b.episode(ev)
		st := &EpisodeStep{
			Seq: ev.Seq, Step: ev.Step, StepID: ev.StepID, Action: ev.Action, Observation: ev.Observation,
			Terminated: ev.Terminated, Truncated: ev.Truncated, Info: ev.Info, Failure: ev.Failure,
			DurationUS: ev.DurationUS, Rewards: []LateReward{},
		}
		if ev.Reward != nil {
			st.Reward = *ev.Reward
		}
		ep.Steps = append(ep.Steps, st)
		ep.Return += st.Reward
		ep.Terminated, ep.Truncated = st.Terminated, st.Truncated
		if ev.StepID != "" {
			b.steps[ev.StepID] = st
			b.stepEp[st] = ep
		}
	case gym.EventRefused:
		ep := b.episode(ev)
		ep.Refused = append(ep.Refused, &EpisodeStep{Seq: ev.Seq, Step: ev.Step, StepID: ev.StepID, Action: ev.Action,
			Failure: ev.Failure, Rewards: []LateReward{}})
	case gym.EventReward:
		lr := LateReward{Source: ev.Source, Info: ev.Info, Seq: ev.Seq}
		if ev.Reward != nil {
			lr.Reward = *ev.Reward
		}
		if st := b.steps[ev.StepID]; ev.StepID != "" && st != nil {
			st.Rewards = append(st.Rewards, lr)
			ep := b.stepEp[st]
			ep.LastSeq = max(ep.LastSeq, ev.Seq)
			return
		}
		if ep := b.byNum[ev.Episode]; ep != nil {
			ep.Rewards = append(ep.Rewards, lr)
			ep.LastSeq = max(ep.LastSeq, ev.Seq)
		}
	case gym.EventSessionClosed:
		if ep := b.byNum[ev.Episode]; ep != nil {
			ep.ClosedReason, ep.ClosedFailure = ev.Reason, ev.Failure
			ep.LastSeq = max(ep.LastSeq, ev.Seq)
		}
	}
}

// episodes returns the complete episodes in episode order.
func (b *episodeBuilder) episodes() []*Episode {
	out := b.order[:0:0]
	for _, ep := range b.order {
		if b.started[ep] {
			out = append(out, ep)
		}
	}
	return out
}
