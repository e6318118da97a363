package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
)

// judgeTimeout bounds the judging of one turn, all votes together.
const judgeTimeout = 5 * time.Minute

func jsonUnmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return errBadBody(err)
	}
	return nil
}

// work judges queued turns: a flagged one goes to the quarantine, the
// others become samples.
func (p *Proxy) work() {
	for j := range p.jobs {
		p.judgeTurn(j)
		p.busy.Add(-1)
	}
}

func (p *Proxy) judgeTurn(j job) {
	ctx, cancel := context.WithTimeout(context.Background(), judgeTimeout)
	defer cancel()
	v, err := p.cfg.Judge.Score(ctx, JudgeInput(j.t, j.next))
	if err != nil {
		p.judgeErrors.Add(1)
		p.log.Warn("proxy: judging a turn", "session", j.t.Session, "step", j.t.Step, "err", err)
		return
	}
	jd := Combine(v)
	if jd.Flagged {
		id, err := p.cfg.Quarantine.Add(Entry{Turn: *j.t, NextState: j.next, Judgement: jd, Reason: jd.FlagReason})
		if err != nil {
			p.log.Error("proxy: quarantining a turn", "session", j.t.Session, "step", j.t.Step, "err", err)
			return
		}
		p.quarantined.Add(1)
		p.log.Info("proxy: turn quarantined", "id", id, "session", j.t.Session, "step", j.t.Step, "reason", jd.FlagReason)
		return
	}
	off, err := AppendSample(ctx, p.cfg.Store, *j.t, jd)
	if err != nil {
		p.log.Error("proxy: storing a sample", "session", j.t.Session, "step", j.t.Step, "err", err)
		return
	}
	p.samples.Add(1)
	if p.cfg.OnSample != nil {
		p.cfg.OnSample(off)
	}
}

// AppendSample stores one judged turn as a sample: run "proxy", the
// session as its task (so its group_index is the session's), reward the
// vote, the hint for OPD. It returns the sample's offset.
func AppendSample(ctx context.Context, st *store.Store, t Turn, jd Judgement) (int64, error) {
	tr := store.Trajectory{Run: Run, Env: "proxy", Task: t.Session, Session: t.Session, Episode: t.Step}
	_, last, err := st.AppendSamples(ctx, tr, func(group, index int) ([][]byte, error) {
		samples, err := rl.BuildSamples(rl.Rollout{GroupIndex: group, Index: index, Session: t.Session, Episode: t.Step,
			Env: "proxy", Task: t.Session, User: t.User, Outcome: rl.Outcome{Terminated: true},
			Turns: []rl.PolicyTurn{{Step: t.Step, Messages: t.Messages, PromptIDs: t.PromptIDs, ResponseIDs: t.ResponseIDs,
				LogProbs: t.LogProbs, Response: t.Response, Process: float64(jd.Vote), Judged: jd.Valid > 0, Hint: jd.Hint,
				WeightVersion: t.WeightVersion}}},
			rl.DefaultMix())
		if err != nil {
			return nil, err
		}
		out := make([][]byte, len(samples))
		for i := range samples {
			if out[i], err = json.Marshal(&samples[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
	if err != nil {
		return 0, fmt.Errorf("proxy sample of session %s step %d: %w", t.Session, t.Step, err)
	}
	return last, nil
}

// bucket is a token bucket of trained turns: rate per minute, a burst of
// the same size (at least 1).
type bucket struct {
	perSec, tokens, burst float64
	at                    time.Time
}

func newBucket(perMin float64, now time.Time) *bucket {
	b := max(perMin, 1)
	return &bucket{perSec: perMin / 60, tokens: b, burst: b, at: now}
}

func (b *bucket) refill(now time.Time) {
	b.tokens = min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.perSec)
	b.at = now
}

func (b *bucket) peek(now time.Time) bool {
	b.refill(now)
	return b.tokens >= 1
}

func (b *bucket) take(now time.Time) {
	b.refill(now)
	b.tokens--
}
