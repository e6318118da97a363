package gobuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// reportTimings adds the stages' mean milliseconds to a benchmark.
func reportTimings(b *testing.B, ts []Timings) {
	var sum Timings
	for _, t := range ts {
		sum.Fetch += t.Fetch
		sum.Repo += t.Repo
		sum.Before += t.Before
		sum.After += t.After
		sum.Confirm += t.Confirm
	}
	n := float64(len(ts))
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / n }
	b.ReportMetric(ms(sum.Fetch), "fetch-ms")
	b.ReportMetric(ms(sum.Repo), "repo-ms")
	b.ReportMetric(ms(sum.Before), "test-before-ms")
	b.ReportMetric(ms(sum.After), "test-after-ms")
	b.ReportMetric(ms(sum.Confirm), "confirm-ms")
}

// BenchmarkBuildSynthetic builds the synthetic pair (local directories, a
// warm build cache): the builder's own overhead plus three small go test
// runs.
func BenchmarkBuildSynthetic(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	out := b.TempDir()
	opts := Options{ModCache: filepath.Join(out, "gomod"), Out: out, Instances: "-", Proxy: "off"}
	spec := Spec{OldDir: filepath.Join("testdata", "synth", "old"), NewDir: filepath.Join("testdata", "synth", "new")}
	var ts []Timings
	for b.Loop() {
		res, err := Build(context.Background(), spec, opts)
		if err != nil {
			b.Fatal(err)
		}
		ts = append(ts, res.Timings)
	}
	reportTimings(b, ts)
}

// BenchmarkBuildReal builds github.com/Masterminds/semver/v3 v3.3.0..v3.3.1
// from the module proxy (opt-in: NEXTSTATE_SWE_GOBUILD=1). cold: an empty
// module cache and an empty build cache each time; warm: both kept.
func BenchmarkBuildReal(b *testing.B) {
	if os.Getenv("NEXTSTATE_SWE_GOBUILD") == "" {
		b.Skip("builds from the Go module proxy: set NEXTSTATE_SWE_GOBUILD=1 to run")
	}
	spec := Spec{Module: "github.com/Masterminds/semver/v3", Old: "v3.3.0", New: "v3.3.1"}
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			keep := b.TempDir()
			// The module cache's files are read-only: make them removable.
			b.Cleanup(func() { _ = exec.Command("chmod", "-R", "u+w", keep).Run() })
			if mode == "warm" { // fill both caches before the clock starts
				if _, err := Build(context.Background(), spec, Options{ModCache: filepath.Join(keep, "gomod"),
					BuildCache: filepath.Join(keep, "gocache"), Out: filepath.Join(keep, "out"), Instances: "-"}); err != nil {
					b.Fatal(err)
				}
			}
			var ts []Timings
			for b.Loop() {
				dir := keep
				if mode == "cold" {
					dir = filepath.Join(keep, time.Now().Format("150405.000000000"))
				}
				opts := Options{ModCache: filepath.Join(dir, "gomod"), BuildCache: filepath.Join(dir, "gocache"),
					Out: filepath.Join(dir, "out"), Instances: "-"}
				res, err := Build(context.Background(), spec, opts)
				if err != nil {
					b.Fatal(err)
				}
				ts = append(ts, res.Timings)
			}
			reportTimings(b, ts)
		})
	}
}
