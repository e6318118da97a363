package rl

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
)

// BenchmarkFollower measures the follower alone: each op is one episode
// of echo-v1 (a reset and 8 text steps, the last terminating) published as
// committed events, followed, judged by a scorer that answers at once
// (judge=instant: 8 reward events recorded) or not judged (judge=none),
// and turned into 8 samples stored in a real store. The clock stops once
// Close has stored the last samples.
//
//	go test -run '^$' -bench BenchmarkFollower -benchtime 2000x ./rl/
func BenchmarkFollower(b *testing.B) {
	for _, judge := range []string{"none", "instant"} {
		b.Run("judge="+judge, func(b *testing.B) {
			var f *Follower
			st, err := store.Open(b.TempDir(), store.Options{OnCommit: func(evs []*gym.Event, bodies []string) { f.Publish(evs, bodies) }})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			cfg := FollowerConfig{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if judge == "instant" {
				cfg.Scorer = instantScorer{}
			}
			if f, err = NewFollower(cfg); err != nil {
				b.Fatal(err)
			}
			seq := int64(1 << 40) // past the store's own seqs (the reward events)
			f.Start(seq)
			const steps = 8
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				for f.Backlog() > defaultFollowBacklog/2 {
					time.Sleep(100 * time.Microsecond) // the benchmark's events are not in the store to read back
				}
				f.Publish(benchEpisode(fmt.Sprint("s", i), steps, &seq), nil)
			}
			if err := f.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			if n := st.LastSampleOffset(); n != int64(b.N*steps) {
				b.Fatalf("%d samples stored, want %d", n, b.N*steps)
			}
			b.ReportMetric(float64(b.N*(steps+1))/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(b.N*steps)/elapsed.Seconds(), "samples/s")
		})
	}
}

// benchEpisode returns the committed events of one episode of session: a
// reset, then steps text steps, the last terminating, numbered from *seq.
func benchEpisode(session string, steps int, seq *int64) []*gym.Event {
	next := func(ev *gym.Event) *gym.Event {
		*seq++
		ev.Seq, ev.Session, ev.Run, ev.Env, ev.Task, ev.Episode = *seq, session, "bench", "echo-v1", "echo-smoke", 1
		return ev
	}
	start := gym.TextObservation("Say anything; say /done to finish.")
	evs := []*gym.Event{next(&gym.Event{Type: gym.EventReset, Instruction: "Say anything; say /done to finish.", Observation: &start})}
	for k := 1; k <= steps; k++ {
		say := fmt.Sprintf("echo number %d of the episode", k)
		if k == steps {
			say = "/done"
		}
		a, o := gym.TextAction(say), gym.TextObservation(say)
		reward := 0.0
		evs = append(evs, next(&gym.Event{Type: gym.EventStep, Step: k, StepID: fmt.Sprint("st", k), Action: &a,
			Observation: &o, Reward: &reward, Terminated: k == steps}))
	}
	return evs
}
