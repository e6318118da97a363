package docker

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/pool"
)

// Benchmarks of the docker backend on the local engine, reporting p50 and
// p99 per operation besides the mean:
//
//	go test -run '^$' -bench . -benchtime 20x ./sandbox/docker

// latencies collects one duration per iteration.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(s[len(s)/2]), "p50-ms")
	b.ReportMetric(ms(s[min(len(s)-1, len(s)*99/100)]), "p99-ms")
}

func benchBackend(b *testing.B) (*Backend, context.Context) {
	bk := openBackend(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	b.Cleanup(cancel)
	return bk, ctx
}

// BenchmarkColdStart: Create to the first output of a command.
func BenchmarkColdStart(b *testing.B) {
	bk, ctx := benchBackend(b)
	var l latencies
	for b.Loop() {
		start := time.Now()
		sb, err := bk.Create(ctx, sandbox.Spec{})
		if err != nil {
			b.Fatal(err)
		}
		r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"echo", "hi"}})
		if err != nil || string(r.Stdout) != "hi\n" {
			b.Fatalf("%q %v", r.Stdout, err)
		}
		l = append(l, time.Since(start))
		b.StopTimer()
		sb.Close(ctx)
		b.StartTimer()
	}
	l.report(b)
}

// BenchmarkRemove: Close of a started sandbox.
func BenchmarkRemove(b *testing.B) {
	bk, ctx := benchBackend(b)
	var l latencies
	for b.Loop() {
		b.StopTimer()
		sb, err := bk.Create(ctx, sandbox.Spec{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := sb.Close(ctx); err != nil {
			b.Fatal(err)
		}
		l = append(l, time.Since(start))
	}
	l.report(b)
}

// BenchmarkExec: one Exec round trip (create, attach, run, exit code).
func BenchmarkExec(b *testing.B) {
	bk, ctx := benchBackend(b)
	sb := create(b, bk, sandbox.Spec{})
	var l latencies
	for b.Loop() {
		start := time.Now()
		r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}})
		if err != nil || r.ExitCode != 0 {
			b.Fatal(r, err)
		}
		l = append(l, time.Since(start))
	}
	l.report(b)
}

// BenchmarkAttachedShell: a command through a bash started with Start
// (one hijacked connection), to its output.
func BenchmarkAttachedShell(b *testing.B) {
	bk, ctx := benchBackend(b)
	sb := create(b, bk, sandbox.Spec{})
	p, err := sb.Start(ctx, sandbox.StartRequest{Cmd: []string{"bash", "--noprofile", "--norc"}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Kill()
	br := bufio.NewReader(p.Stdout())
	var l latencies
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		fmt.Fprintf(p.Stdin(), "echo r%d\n", i)
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("r%d\n", i) {
			b.Fatalf("%q %v", line, err)
		}
		l = append(l, time.Since(start))
	}
	l.report(b)
}

// BenchmarkShellRun: sandbox.NewShell's Run (output up to its end marker,
// with the exit code).
func BenchmarkShellRun(b *testing.B) {
	bk, ctx := benchBackend(b)
	sb := create(b, bk, sandbox.Spec{})
	sh, err := sandbox.NewShell(ctx, sb)
	if err != nil {
		b.Fatal(err)
	}
	defer sh.Close()
	var l latencies
	for b.Loop() {
		start := time.Now()
		r, err := sh.Run(ctx, "echo x", time.Minute)
		if err != nil || string(r.Stdout) != "x\n" {
			b.Fatalf("%q %v", r.Stdout, err)
		}
		l = append(l, time.Since(start))
	}
	l.report(b)
}

// BenchmarkSnapshot: commit of a sandbox with a small change.
func BenchmarkSnapshot(b *testing.B) {
	bk, ctx := benchBackend(b)
	sb := create(b, bk, sandbox.Spec{})
	var l latencies
	for b.Loop() {
		b.StopTimer()
		execOK(b, sb, "head -c 100000 /dev/urandom > f.bin")
		b.StartTimer()
		start := time.Now()
		snap, err := sb.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		l = append(l, time.Since(start))
		b.StopTimer()
		snap.Release(ctx)
		b.StartTimer()
	}
	l.report(b)
}

// BenchmarkRestore: Restore (a new container from the snapshot) to the
// first output of a command in it; the old container is removed in the
// background.
func BenchmarkRestore(b *testing.B) {
	bk, ctx := benchBackend(b)
	sb := create(b, bk, sandbox.Spec{})
	execOK(b, sb, "echo task > setup.txt")
	snap, err := sb.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer snap.Release(ctx)
	var l, only latencies
	for b.Loop() {
		b.StopTimer()
		execOK(b, sb, "echo agent > setup.txt; (sleep 1000 &)")
		b.StartTimer()
		start := time.Now()
		if err := sb.Restore(ctx, snap); err != nil {
			b.Fatal(err)
		}
		only = append(only, time.Since(start))
		r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"cat", "setup.txt"}})
		if err != nil || string(r.Stdout) != "task\n" {
			b.Fatalf("%q %v", r.Stdout, err)
		}
		l = append(l, time.Since(start))
	}
	l.report(b)
	slices.Sort(only)
	b.ReportMetric(float64(only[len(only)/2])/float64(time.Millisecond), "restore-only-p50-ms")
}

// BenchmarkWarmAcquire: a sandbox from a warm pool (package sandbox/pool)
// over this backend, to the first output of a command; the pool refills
// between acquires (not timed), so every acquire finds one ready.
func BenchmarkWarmAcquire(b *testing.B) {
	bk, ctx := benchBackend(b)
	spec := sandbox.Spec{}
	p := pool.New(bk, pool.Options{Size: 2, Specs: []sandbox.Spec{spec}})
	defer p.Close(ctx)
	var acq, first latencies
	for b.Loop() {
		b.StopTimer()
		waitFor(b, "a warm sandbox", func() (bool, string) {
			st := p.Stats()
			return st.Idle >= 1, fmt.Sprintf("%+v", st)
		})
		b.StartTimer()
		start := time.Now()
		sb, err := p.Acquire(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		acq = append(acq, time.Since(start))
		r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"echo", "hi"}})
		if err != nil || string(r.Stdout) != "hi\n" {
			b.Fatalf("%q %v", r.Stdout, err)
		}
		first = append(first, time.Since(start))
		b.StopTimer()
		sb.Close(ctx)
		b.StartTimer()
	}
	acq.report(b)
	slices.Sort(first)
	b.ReportMetric(float64(first[len(first)/2])/float64(time.Millisecond), "first-output-p50-ms")
	if st := p.Stats(); st.Misses > 0 {
		b.Logf("pool: %+v", st)
	}
}
