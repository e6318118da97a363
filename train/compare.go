package train

import (
	"fmt"
	"html"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// RunSummary sums up one run directory for a comparison.
type RunSummary struct {
	Dir   string
	Steps int
	// First and Last are the first and last evaluations (nil without).
	First, Last *EvalMetrics
	// RewardStart and RewardEnd are the mean mixed reward, and
	// OutcomeStart and OutcomeEnd the verifier's, over the first and the
	// last fifth of the steps (at least one step each).
	RewardStart, RewardEnd, OutcomeStart, OutcomeEnd float64
	// Seconds is the wall time of the steps.
	Seconds float64
	evals   []EvalMetrics
}

// Summarize reads a run directory's records.
func Summarize(dir string) (RunSummary, error) {
	steps, evals, err := ReadMetrics(dir)
	if err != nil {
		return RunSummary{}, err
	}
	s := RunSummary{Dir: dir, Steps: len(steps), evals: evals}
	if len(evals) > 0 {
		s.First, s.Last = &evals[0], &evals[len(evals)-1]
	}
	if len(steps) == 0 {
		return s, nil
	}
	n := max(len(steps)/5, 1)
	for i, m := range steps {
		s.Seconds += m.StepSeconds
		if i < n {
			s.RewardStart += m.Reward / float64(n)
			s.OutcomeStart += m.Outcome / float64(n)
		}
		if i >= len(steps)-n {
			s.RewardEnd += m.Reward / float64(n)
			s.OutcomeEnd += m.Outcome / float64(n)
		}
	}
	return s, nil
}

// WriteComparison writes a Markdown table of the runs (held-out pass@1
// before and after with its intervals, per suite too; training rewards at
// the start and the end; wall time) to w.
func WriteComparison(w io.Writer, runs []RunSummary) {
	fmt.Fprintln(w, "| run | steps | held-out pass@1 before | after | per suite, before → after | outcome reward start → end | mixed reward start → end | minutes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		before, after, suites := "–", "–", ""
		if r.First != nil {
			before = interval(r.First.Pass1)
		}
		if r.Last != nil {
			after = interval(r.Last.Pass1)
			for _, name := range sortedKeys(r.Last.Suites) {
				if suites != "" {
					suites += "; "
				}
				suites += name + " "
				if e, ok := r.First.Suites[name]; ok && r.First != r.Last {
					suites += interval(e) + " → "
				}
				suites += interval(r.Last.Suites[name])
			}
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %.3f → %.3f | %.3f → %.3f | %.1f |\n", filepath.Base(r.Dir), r.Steps, before, after,
			suites, r.OutcomeStart, r.OutcomeEnd, r.RewardStart, r.RewardEnd, r.Seconds/60)
	}
}

func interval(e Estimate) string {
	return fmt.Sprintf("%.3f [%.3f, %.3f]", e.Mean, e.Low, e.High)
}

// ComparisonChart draws the runs' held-out pass@1 against the step, with
// their intervals, as a standalone SVG document: all suites together and,
// when the runs evaluated more than one, each suite beside it.
func ComparisonChart(runs []RunSummary) string {
	panels := []string{comparisonPanel("Held-out pass@1 by step (95% bootstrap intervals)", runs,
		func(e EvalMetrics) (Estimate, bool) { return e.Pass1, true })}
	var suites []string
	for _, r := range runs {
		for _, e := range r.evals {
			for name := range e.Suites {
				if !slices.Contains(suites, name) {
					suites = append(suites, name)
				}
			}
		}
	}
	slices.Sort(suites)
	if len(suites) > 1 {
		for _, name := range suites {
			panels = append(panels, comparisonPanel(name+": held-out pass@1", runs, func(e EvalMetrics) (Estimate, bool) {
				est, ok := e.Suites[name]
				return est, ok
			}))
		}
	}
	head := `<?xml version="1.0" encoding="UTF-8"?>` + "\n"
	if len(panels) == 1 {
		return head + styled(panels[0])
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`,
		chartWidth*len(panels), chartHeight, chartWidth*len(panels), chartHeight)
	for i, p := range panels {
		b.WriteString(strings.Replace(p, "<svg ", fmt.Sprintf(`<svg x="%d" `, i*chartWidth), 1))
	}
	b.WriteString("</svg>")
	return head + styled(b.String())
}

// comparisonPanel is one chart of ComparisonChart: the estimate of each
// run's evaluations that pick reads, by step.
func comparisonPanel(title string, runs []RunSummary, pick func(EvalMetrics) (Estimate, bool)) string {
	var x []float64
	var lines []line
	for _, r := range runs {
		for _, e := range r.evals {
			if !slices.Contains(x, float64(e.Step)) {
				x = append(x, float64(e.Step))
			}
		}
	}
	slices.Sort(x)
	for _, r := range runs {
		l := line{name: filepath.Base(r.Dir)}
		for _, step := range x {
			v, lo, hi := math.NaN(), math.NaN(), math.NaN()
			for _, e := range r.evals {
				if est, ok := pick(e); ok && float64(e.Step) == step {
					v, lo, hi = est.Mean, est.Low, est.High
				}
			}
			l.y, l.lo, l.hi = append(l.y, v), append(l.lo, lo), append(l.hi, hi)
		}
		lines = append(lines, l)
	}
	return string(lineChart(title, x, lines))
}

// styled gives a standalone chart a white ground and the styles the
// report's page has.
func styled(svg string) string {
	const style = `<rect width="100%" height="100%" fill="#fff"/>` +
		`<style>.title{font:600 12px sans-serif}.tick,.legend,.note{font:11px sans-serif}.axis{stroke:#999}</style>`
	if i := strings.IndexByte(svg, '>'); i > 0 {
		return svg[:i+1] + style + svg[i+1:]
	}
	return svg
}

// Series is one line of a Chart: Y by x, NaN where it has no point, and
// an interval (Lo, Hi) when set.
type Series struct {
	Name      string
	Y, Lo, Hi []float64
}

// Chart draws series against x as an SVG element in the style of the
// reports' charts, the legend below the plot (three a row): a page's
// inline chart, or a file of its own.
func Chart(title string, x []float64, series []Series) string {
	lines := make([]line, len(series))
	for i, s := range series {
		lines[i] = line{y: s.Y, lo: s.Lo, hi: s.Hi}
	}
	rows := (len(series) + 2) / 3
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`,
		chartWidth, chartHeight+14*rows, chartWidth, chartHeight+14*rows)
	b.WriteString(string(lineChart(title, x, lines)))
	for i, s := range series {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="legend" fill="%s">%s</text>`, 56+(i%3)*140, chartHeight+14*(i/3)+4,
			palette[i%len(palette)], html.EscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return styled(b.String())
}
