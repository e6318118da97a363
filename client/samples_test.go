package client_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/client"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/wire"
)

// playWithTurns binary-searches a guess-v1 episode, sending each step's
// Turn, and returns the number of steps.
func playWithTurns(t *testing.T, ctx context.Context, s *client.Session) int {
	t.Helper()
	lo, hi := 1, 100
	for step := 1; ; step++ {
		mid := (lo + hi) / 2
		guess := strconv.Itoa(mid)
		turn := &gym.Turn{Messages: json.RawMessage(`[{"role":"user","content":"guess"}]`), Response: guess,
			PromptIDs: []int{1, 2}, ResponseIDs: []int{100 + mid}, LogProbs: []float64{-0.5}}
		res, err := s.StepTurn(ctx, gym.TextAction(guess), turn)
		if err != nil {
			t.Fatalf("StepTurn: %v", err)
		}
		switch res.Observation.Text() {
		case "higher":
			lo = mid + 1
		case "lower":
			hi = mid - 1
		case "correct":
			return step
		}
		if res.Terminated || res.Truncated {
			t.Fatalf("episode ended early: %+v", res)
		}
	}
}

// receive takes n samples from sub, acking each, and returns them.
func receive(t *testing.T, ctx context.Context, sub *client.SampleSubscription, n int, each func(i int)) []wire.StoredSample {
	t.Helper()
	var out []wire.StoredSample
	for len(out) < n {
		select {
		case x, ok := <-sub.C():
			if !ok {
				t.Fatalf("the subscription ended after %d samples: %v", len(out), sub.Err())
			}
			out = append(out, x)
			if each != nil {
				each(len(out))
			}
			if err := sub.Ack(ctx, x.Offset); err != nil {
				t.Fatalf("Ack %d: %v", x.Offset, err)
			}
		case <-ctx.Done():
			t.Fatalf("%d samples of %d came before %v", len(out), n, ctx.Err())
		}
	}
	return out
}

// TestSubscribeSamples streams the samples of finished episodes through a
// dropped connection: each comes once, in offset order, and a new
// subscription resumes after the acknowledged offset.
func TestSubscribeSamples(t *testing.T) {
	url := startServer(t)
	ctx := testCtx(t)
	c := dial(t, url, client.WithToken(token))
	s, _, err := c.Create(ctx, gym.CreateRequest{TaskID: "guess-1-100", Seed: 7, Run: "stream"})
	if err != nil {
		t.Fatal(err)
	}
	n1 := len(solve(t, ctx, s, 1, 100, nil)) // text-only samples
	if _, err := s.Reset(ctx, wire.ResetParams{Seed: 8}); err != nil {
		t.Fatal(err)
	}
	n2 := playWithTurns(t, ctx, s) // samples with token ids

	sub, err := c.SubscribeSamples(ctx, wire.SubscribeParams{AfterSeq: 0, Window: 3, Run: "stream"})
	if err != nil {
		t.Fatal(err)
	}
	got := receive(t, ctx, sub, n1+n2, func(i int) {
		if i == 2 {
			client.DropConn(c) // the stream resubscribes after the acknowledged offset
		}
	})
	for i, x := range got {
		if x.Offset != int64(i+1) {
			t.Fatalf("sample %d has offset %d: want each once, in order", i, x.Offset)
		}
		var smp rl.Sample
		if err := json.Unmarshal(x.Sample, &smp); err != nil {
			t.Fatal(err)
		}
		o := smp.Metadata.Origin
		if o.Env != "guess-v1" || o.Task != "guess-1-100" || smp.Status != rl.StatusCompleted || smp.Reward != 1 || o.Judged {
			t.Errorf("sample %d: %+v", x.Offset, smp)
		}
		turnSample := i >= n1
		if turnSample != (len(smp.Tokens) == 3) || (turnSample && !slices.Equal(smp.LossMask, []int{1})) {
			t.Errorf("sample %d (from a Turn: %v): tokens %v loss mask %v", x.Offset, turnSample, smp.Tokens, smp.LossMask)
		}
		if i > 0 && smp.Index == 0 && i >= n1 {
			t.Errorf("sample %d of the second episode has the first's index", x.Offset)
		}
	}
	if client.Generation(c) < 2 {
		t.Error("the connection was not dropped")
	}
	if sub.Acked() != int64(n1+n2) {
		t.Errorf("Acked %d, want %d", sub.Acked(), n1+n2)
	}
	sub.Close()
	if _, ok := <-sub.C(); ok {
		t.Error("C is open after Close")
	}

	// A new subscription resumes after the acknowledged offset: only the
	// next episode's samples come.
	sub2, err := c.SubscribeSamples(ctx, wire.SubscribeParams{AfterSeq: int64(n1 + n2)})
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()
	if _, err := s.Reset(ctx, wire.ResetParams{Seed: 9}); err != nil {
		t.Fatal(err)
	}
	n3 := len(solve(t, ctx, s, 1, 100, nil))
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	more := receive(t, rctx, sub2, n3, nil)
	if more[0].Offset != int64(n1+n2+1) {
		t.Errorf("resumed at offset %d, want %d", more[0].Offset, n1+n2+1)
	}

	// Bad params are the server's error, at once.
	if _, err := c.SubscribeSamples(ctx, wire.SubscribeParams{Window: 99999}); err == nil {
		t.Error("a window of 99999 was accepted")
	}
}
