package rl

import (
	"context"
	"strings"
	"testing"
)

// instantScorer answers at once, so BenchmarkSubmit measures Submit and
// the queue, not a judge.
type instantScorer struct{}

func (instantScorer) Score(context.Context, JudgeInput) (Verdict, error) {
	return Verdict{Tally: Tally{Reward: 1, Valid: 1}}, nil
}

// BenchmarkSubmit measures what Submit costs the step path: "queued" hands
// steps to workers that keep up (a queue full now and then is delivered
// inline), "full" answers every step queue_full, "parallel" submits from
// many goroutines.
func BenchmarkSubmit(b *testing.B) {
	in := JudgeInput{Kind: KindTerminal, Instruction: "x", Action: "ls", NextState: "a.txt"}
	r := StepRef{Session: "s", Episode: 1, Step: 1, StepID: "st-1"}
	b.Run("queued", func(b *testing.B) {
		g := NewJudger(instantScorer{}, JudgerConfig{Workers: 4, Queue: 4096}, func(JudgeResult) {})
		b.ReportAllocs()
		for b.Loop() {
			g.Submit(r, in)
		}
		b.StopTimer()
		_ = g.Close(context.Background())
	})
	b.Run("full", func(b *testing.B) {
		block := make(chan struct{})
		g := NewJudger(scorerFunc(func(ctx context.Context, _ JudgeInput) (Verdict, error) {
			<-block
			return Verdict{}, nil
		}), JudgerConfig{Workers: 1, Queue: 1}, func(JudgeResult) {})
		g.Submit(r, in)
		g.Submit(r, in)
		b.ReportAllocs()
		for b.Loop() {
			g.Submit(r, in)
		}
		b.StopTimer()
		close(block)
		_ = g.Close(context.Background())
	})
	b.Run("parallel", func(b *testing.B) {
		g := NewJudger(instantScorer{}, JudgerConfig{Workers: 4, Queue: 4096}, func(JudgeResult) {})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				g.Submit(r, in)
			}
		})
		b.StopTimer()
		_ = g.Close(context.Background())
	})
}

type scorerFunc func(context.Context, JudgeInput) (Verdict, error)

func (f scorerFunc) Score(ctx context.Context, in JudgeInput) (Verdict, error) { return f(ctx, in) }

func BenchmarkParseVote(b *testing.B) {
	text := strings.Repeat("The agent listed the directory and found the file. ", 40) +
		"[HINT_START]Use grep -rn to find the definition first.[HINT_END]\n\\boxed{-1}"
	b.ReportAllocs()
	for b.Loop() {
		ParseVote(text)
	}
}

func BenchmarkRender(b *testing.B) {
	tm := DefaultTemplates()
	in := JudgeInput{Kind: KindTerminal, Instruction: strings.Repeat("task ", 200), History: turns(20),
		Action: "pytest -q", NextState: strings.Repeat("output line\n", 200), ExitCode: ptr(1)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tm.Render(in, DefaultWindow(KindTerminal), TextLimits{}); err != nil {
			b.Fatal(err)
		}
	}
}
