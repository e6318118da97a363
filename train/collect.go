package train

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/wire"
)

// batchSamples are the samples of one batch as read from the gym's
// samples stream, with the subscription to acknowledge them on.
type batchSamples struct {
	samples []rl.Sample
	offsets []int64
	subs    []*client.SampleSubscription
	// missing are the trajectories whose samples never came, after the
	// replays; short those that came with fewer samples than steps.
	missing, short int
}

// ack acknowledges every sample read, once the step that used them is in
// a saved state, and ends the subscriptions.
func (bs *batchSamples) ack(ctx context.Context) error {
	var last int64
	for _, o := range bs.offsets {
		last = max(last, o)
	}
	var err error
	for _, s := range bs.subs {
		if last > 0 {
			if e := s.Ack(ctx, last); e != nil && err == nil {
				err = e
			}
		}
		s.Close()
	}
	bs.subs = nil
	return err
}

// sort puts the samples in the order of their trials (task, then sample
// index) and steps, whatever order the stream gave them in, so that a
// batch resumed after a crash trains exactly as it would have.
func (bs *batchSamples) sort(rows []rundir.Result) {
	trial := map[string]*rundir.Result{}
	for i := range rows {
		trial[rows[i].Session] = &rows[i]
	}
	slices.SortStableFunc(bs.samples, func(a, b rl.Sample) int {
		ra, rb := trial[a.Metadata.Origin.Session], trial[b.Metadata.Origin.Session]
		if c := cmp.Compare(ra.Task, rb.Task); c != 0 {
			return c
		}
		if c := cmp.Compare(ra.Sample, rb.Sample); c != 0 {
			return c
		}
		// A refused action's turn has the number of the step after it;
		// the turn's position in the trajectory tells them apart.
		if c := cmp.Compare(a.Metadata.Origin.Step, b.Metadata.Origin.Step); c != 0 {
			return c
		}
		return cmp.Compare(turnIndex(&a), turnIndex(&b))
	})
}

// turnIndex is a sample's position in its trajectory.
func turnIndex(s *rl.Sample) int {
	if ix := s.Metadata.StepWise.StepIndices; len(ix) > 0 {
		return ix[0]
	}
	return 0
}

func (bs *batchSamples) close() {
	for _, s := range bs.subs {
		s.Close()
	}
	bs.subs = nil
}

// samplesOf is how many samples a trial's trajectory gives: one per step
// and one per refused action the gym recorded.
func samplesOf(r *rundir.Result) int { return r.Steps + r.Refused }

// expected are the sessions a batch's rows promise samples from: every
// trial that reached the gym (infrastructure errors are never trained on,
// and give none worth waiting for).
func expected(rows []rundir.Result) map[string]*rundir.Result {
	want := map[string]*rundir.Result{}
	for i := range rows {
		r := &rows[i]
		if r.Status != rundir.StatusInfraError && samplesOf(r) > 0 && r.Session != "" {
			want[r.Session] = r
		}
	}
	return want
}

// collect reads batch r's samples from the samples stream (those of its
// run label; sessions the rows do not name, such as a crashed process's,
// are left out) until each trajectory's are in. When none has come for
// SampleTimeout, the trajectories still missing are played again, at most
// twice; then the step goes on without them.
func (l *Loop) collect(ctx context.Context, r rollout) (*batchSamples, rollout, error) {
	bs := &batchSamples{}
	sub, err := l.cfg.Gym.SubscribeSamples(ctx, wire.SubscribeParams{Stream: wire.StreamSamples, Run: l.batchRun(r.batch),
		AfterSeq: 0, Window: wire.MaxSampleWindow})
	if err != nil {
		return nil, r, fmt.Errorf("batch %d: subscribing to its samples: %w", r.batch, err)
	}
	bs.subs = append(bs.subs, sub)
	got := map[string]int{}
	unacked := 0
	// read takes samples until every trajectory's are in (true), or none
	// came for SampleTimeout (false).
	read := func(want map[string]*rundir.Result) (bool, error) {
		done := func() bool {
			for s, row := range want {
				if got[s] < samplesOf(row) {
					return false
				}
			}
			return true
		}
		timer := time.NewTimer(l.cfg.SampleTimeout)
		defer timer.Stop()
		for !done() {
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-timer.C:
				return false, nil
			case ss, ok := <-sub.C():
				if !ok {
					return false, fmt.Errorf("batch %d: the samples stream ended: %v", r.batch, sub.Err())
				}
				var s rl.Sample
				if err := json.Unmarshal(ss.Sample, &s); err != nil {
					return false, fmt.Errorf("batch %d: sample %d: %w", r.batch, ss.Offset, err)
				}
				if _, ok := want[s.Metadata.Origin.Session]; !ok {
					continue
				}
				l.nameByStep(&s)
				got[s.Metadata.Origin.Session]++
				bs.samples = append(bs.samples, s)
				bs.offsets = append(bs.offsets, ss.Offset)
				// The window's flow control: a batch of more samples than
				// it holds is acknowledged as it comes. A resumed run reads
				// its batches again from their start, by run label, so
				// nothing is lost.
				if unacked++; unacked >= wire.MaxSampleWindow/2 {
					if err := sub.Ack(ctx, ss.Offset); err != nil {
						l.log.Warn("train: acknowledging samples", "batch", r.batch, "err", err)
					}
					unacked = 0
				}
				if !timer.Stop() {
					<-timer.C
				}
				timer.Reset(l.cfg.SampleTimeout)
			}
		}
		return true, nil
	}
	for replays := 0; ; replays++ {
		want := expected(r.rows)
		complete, err := read(want)
		if err != nil {
			bs.close()
			return nil, r, err
		}
		if complete {
			bs.sort(r.rows)
			return bs, r, nil
		}
		var lost []rundir.Result
		for s, row := range want {
			switch n := got[s]; {
			case n == 0:
				lost = append(lost, *row)
			case n < samplesOf(row):
				bs.short++
				l.log.Warn("train: a trajectory has fewer samples than steps", "batch", r.batch, "session", s,
					"samples", n, "steps", row.Steps, "refused", row.Refused)
				got[s] = samplesOf(row)
			}
		}
		if len(lost) == 0 {
			bs.sort(r.rows)
			return bs, r, nil
		}
		if replays == 2 {
			bs.missing = len(lost)
			l.log.Warn("train: trajectories without samples after two replays; the step goes on without them",
				"batch", r.batch, "trajectories", len(lost))
			bs.sort(r.rows)
			return bs, r, nil
		}
		l.log.Warn("train: trajectories whose samples did not come; playing them again", "batch", r.batch,
			"trajectories", len(lost), "waited", l.cfg.SampleTimeout)
		nr, err := l.play(ctx, r.batch, lost)
		if err != nil {
			bs.close()
			return nil, r, err
		}
		nr.elapsed += r.elapsed
		r = nr
	}
}
