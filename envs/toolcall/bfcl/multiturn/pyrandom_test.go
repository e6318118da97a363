package multiturn

import "testing"

// The numbers are Python 3.11's: random.Random(seed).randint(...) and
// .uniform(...) and .random() in this order.
func TestRandomLikePython(t *testing.T) {
	r := NewRandom(141053)
	got := []int64{r.Intn(100000, 999999), r.Intn(100000, 999999), r.Intn(100000, 999999), r.Intn(100000000000, 999999999999)}
	want := []int64{251675, 966117, 376965, 307751534385}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("seed 141053: randint draws %v, want %v", got, want)
		}
	}
	if u := r.Uniform(-10, 40); u != 7.181514442819694 {
		t.Errorf("uniform(-10.0, 40.0) = %v, want 7.181514442819694", u)
	}
	r = NewRandom(1053520)
	if a, f := r.Intn(1, 10000000000), r.Float(); a != 2261486939 || f != 0.49429354619675814 {
		t.Errorf("seed 1053520: randint(1, 10**10) %d, random() %v; want 2261486939, 0.49429354619675814", a, f)
	}
	if n := NewRandom(200191).Intn(10000, 99999); n != 67410 {
		t.Errorf("seed 200191: randint(10000, 99999) = %d, want 67410", n)
	}
}
