package train

import "testing"

// The held-out interval resamples tasks, as `nextstate run`'s report does:
// a task played four times at temperature 0 is one observation, so four
// copies of each of ten tasks give the interval of the ten tasks, not a
// narrower one of forty trials.
func TestEstimateResamplesTasks(t *testing.T) {
	once, four := map[string][]float64{}, map[string][]float64{}
	for i := range 10 {
		v := float64(i % 2)
		task := string(rune('a' + i))
		once[task] = []float64{v}
		four[task] = []float64{v, v, v, v}
	}
	a, b := estimate(once), estimate(four)
	if a.Mean != 0.5 || b.Mean != 0.5 || a.N != 10 || b.N != 40 {
		t.Fatalf("means %v and %v over %d and %d trials; want 0.5 over 10 and 40", a.Mean, b.Mean, a.N, b.N)
	}
	if a.Low != b.Low || a.High != b.High || a.High-a.Low < 0.3 {
		t.Errorf("interval [%v, %v] with one trial per task, [%v, %v] with four copies; want the same, as wide as ten tasks allow",
			a.Low, a.High, b.Low, b.High)
	}
	// Trials that differ within a task count in its mean.
	c := estimate(map[string][]float64{"a": {1, 0}, "b": {1, 1}})
	if c.Mean != 0.75 || c.N != 4 {
		t.Errorf("mean %v over %d; want 0.75 over 4", c.Mean, c.N)
	}
}
