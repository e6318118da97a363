package train

import (
	"bytes"
	"strings"
	"testing"
)

// A comparison of runs that evaluated two suites charts each suite beside
// the whole, and its table gives each suite before and after.
func TestComparisonPerSuite(t *testing.T) {
	est := func(m float64) Estimate { return Estimate{Mean: m, Low: m - 0.1, High: m + 0.1, N: 10} }
	evals := []EvalMetrics{
		{Step: 0, Pass1: est(0.5), Suites: map[string]Estimate{"guess": est(0.6), "vehicle": est(0.4)}},
		{Step: 10, Pass1: est(0.8), Suites: map[string]Estimate{"guess": est(0.7), "vehicle": est(0.9)}},
	}
	run := RunSummary{Dir: "runs/outcome", Steps: 10, First: &evals[0], Last: &evals[1], evals: evals}
	svg := ComparisonChart([]RunSummary{run})
	if n := strings.Count(svg, "<svg "); n != 4 {
		t.Errorf("%d svg elements; want the document and three panels (all, guess, vehicle)", n)
	}
	for _, title := range []string{"<title>guess: held-out pass@1</title>", "<title>vehicle: held-out pass@1</title>", "Held-out pass@1 by step"} {
		if !strings.Contains(svg, title) {
			t.Errorf("the chart has no panel %q", title)
		}
	}
	var b bytes.Buffer
	WriteComparison(&b, []RunSummary{run})
	if want := "guess 0.600 [0.500, 0.700] → 0.700 [0.600, 0.800]; vehicle 0.400 [0.300, 0.500] → 0.900 [0.800, 1.000]"; !strings.Contains(b.String(), want) {
		t.Errorf("table:\n%s\nwant the per-suite cell %q", b.String(), want)
	}
	// One suite: one chart, as before.
	for i := range evals {
		evals[i].Suites = map[string]Estimate{"guess": evals[i].Pass1}
	}
	if n := strings.Count(ComparisonChart([]RunSummary{run}), "<svg "); n != 1 {
		t.Errorf("one suite: %d svg elements; want 1", n)
	}
}
