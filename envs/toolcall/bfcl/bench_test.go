package bfcl

import (
	"testing"
)

// BenchmarkScoreAll checks the reference answer of every case of the BFCL
// data (decoding the calls' arguments and running the checker), and
// reports cases/s.
func BenchmarkScoreAll(b *testing.B) {
	ds := loadData(b)
	refs := ds.References()
	byID := map[string]Answer{}
	for _, r := range refs {
		byID[r.ID] = r.Answer
	}
	answers := make([]Answer, len(ds.Cases))
	for i, c := range ds.Cases {
		answers[i] = byID[c.ID]
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for i, c := range ds.Cases {
			c.Check(answers[i])
		}
		n += len(ds.Cases)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "cases/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkLoad reads the whole BFCL data folder.
func BenchmarkLoad(b *testing.B) {
	dir := dataDir(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
