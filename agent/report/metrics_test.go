package report

import (
	"math"
	"math/big"
	"slices"
	"testing"
)

func TestPassAtKHandComputed(t *testing.T) {
	cases := []struct {
		n, c, k int
		want    float64
	}{
		// n=5, c=2: 1 - C(3,k)/C(5,k).
		{5, 2, 1, 0.4},
		{5, 2, 2, 0.7}, // 1 - 3/10
		{5, 2, 3, 0.9}, // 1 - 1/10
		{5, 2, 4, 1},   // n-c = 3 < 4: every draw of 4 holds a pass
		{5, 2, 5, 1},
		{4, 1, 2, 0.5},        // 1 - 3/6
		{4, 2, 2, 5.0 / 6},    // 1 - 1/6
		{10, 3, 5, 11.0 / 12}, // 1 - 21/252
		{200, 1, 100, 0.5},    // 1 - C(199,100)/C(200,100) = 1 - 100/200
		// c = 0: never; c = n: always.
		{5, 0, 1, 0}, {5, 0, 3, 0}, {5, 0, 5, 0},
		{5, 5, 1, 1}, {5, 5, 5, 1},
		{1, 1, 1, 1}, {1, 0, 1, 0},
	}
	for _, tc := range cases {
		if got := PassAtK(tc.n, tc.c, tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("PassAtK(n=%d, c=%d, k=%d) = %.15f, want %.15f", tc.n, tc.c, tc.k, got, tc.want)
		}
	}
}

// TestPassAtKMatchesBinomials checks the product form against the
// definition, 1 - C(n-c,k)/C(n,k), computed exactly with big integers.
func TestPassAtKMatchesBinomials(t *testing.T) {
	for n := 1; n <= 40; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				num := new(big.Int).Binomial(int64(n-c), int64(k)) // 0 when n-c < k
				den := new(big.Int).Binomial(int64(n), int64(k))
				ratio, _ := new(big.Rat).SetFrac(num, den).Float64()
				want := 1 - ratio
				if got := PassAtK(n, c, k); math.Abs(got-want) > 1e-12 {
					t.Fatalf("PassAtK(%d, %d, %d) = %.15f, want %.15f", n, c, k, got, want)
				}
			}
		}
	}
}

func TestPassAtKInvalid(t *testing.T) {
	for _, a := range [][3]int{{5, 2, 0}, {5, 2, 6}, {5, 6, 1}, {5, -1, 1}, {0, 0, 1}} {
		if got := PassAtK(a[0], a[1], a[2]); !math.IsNaN(got) {
			t.Errorf("PassAtK(%d, %d, %d) = %v, want NaN", a[0], a[1], a[2], got)
		}
	}
}

func TestKValues(t *testing.T) {
	cases := map[int][]int{0: nil, 1: {1}, 2: {1, 2}, 3: {1, 2, 3}, 4: {1, 2, 4}, 10: {1, 2, 4, 8, 10}, 16: {1, 2, 4, 8, 16}}
	for n, want := range cases {
		if got := KValues(n); !slices.Equal(got, want) {
			t.Errorf("KValues(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestBootstrap(t *testing.T) {
	values := []float64{0, 0.25, 1, 1, 0.5, 0, 1, 0.75, 0.2, 1, 0, 0.9}
	m := mean(values)
	a := Bootstrap(values, BootstrapResamples, BootstrapLevel, BootstrapSeed)
	if !(a.Low <= m && m <= a.High) {
		t.Errorf("interval %v does not contain the mean %v", a, m)
	}
	if !(a.Low > 0 && a.High < 1 && a.Low < a.High) {
		t.Errorf("interval %v is not a proper sub-interval of the values' range", a)
	}
	if a.Units != len(values) || a.Resamples != BootstrapResamples || a.Level != BootstrapLevel {
		t.Errorf("interval metadata %+v", a)
	}
	// Reproducible: the same values and seed give the same interval.
	if b := Bootstrap(values, BootstrapResamples, BootstrapLevel, BootstrapSeed); b != a {
		t.Errorf("not reproducible: %v then %v", a, b)
	}
	// Another seed gives another (close) interval: the seed is used.
	if c := Bootstrap(values, BootstrapResamples, BootstrapLevel, BootstrapSeed+1); c == a {
		t.Errorf("seed ignored: %v", c)
	} else if math.Abs(c.Low-a.Low) > 0.1 || math.Abs(c.High-a.High) > 0.1 {
		t.Errorf("intervals of two seeds differ too much: %v and %v", a, c)
	}
	// The normal approximation of the mean's 95%% interval: the
	// bootstrap's should be close to mean ± 1.96 s/sqrt(n).
	var ss float64
	for _, v := range values {
		ss += (v - m) * (v - m)
	}
	se := math.Sqrt(ss/float64(len(values))) / math.Sqrt(float64(len(values)))
	if math.Abs(a.Low-(m-1.96*se)) > 0.06 || math.Abs(a.High-(m+1.96*se)) > 0.06 {
		t.Errorf("interval %v far from the normal approximation %.3f±%.3f", a, m, 1.96*se)
	}
}

func TestBootstrapDegenerate(t *testing.T) {
	if iv := Bootstrap(nil, 100, 0.95, 1); iv.Units != 0 || iv.String() != "n/a" {
		t.Errorf("empty: %+v %q", iv, iv)
	}
	if iv := Bootstrap([]float64{0.3}, 100, 0.95, 1); iv.Low != 0.3 || iv.High != 0.3 {
		t.Errorf("one value: %+v", iv)
	}
	if iv := Bootstrap([]float64{1, 1, 1}, 100, 0.95, 1); iv.Low != 1 || iv.High != 1 {
		t.Errorf("constant values: %+v", iv)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	for q, want := range map[float64]float64{0: 1, 1: 5, 0.5: 3, 0.25: 2, 0.1: 1.4} {
		if got := quantile(xs, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
}
