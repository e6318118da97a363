package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

// The charts are inline SVG built here as text. Every piece of data that
// reaches one (task ids, reasons) goes through esc; numbers are formatted
// by the code. The result is marked template.HTML for html/template.

const (
	colorPass  = "#2e7d32"
	colorAgent = "#e0a100"
	colorInfra = "#c62828"
	colorBar   = "#1565c0"
	colorGrid  = "#ddd"
)

func esc(s string) string { return html.EscapeString(s) }

type svgBuf struct{ strings.Builder }

func (b *svgBuf) f(format string, args ...any) { fmt.Fprintf(&b.Builder, format, args...) }

func (b *svgBuf) open(w, h int, title string) {
	b.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" class="chart">`, w, h, w, h)
	b.f(`<title>%s</title>`, esc(title))
}

func (b *svgBuf) text(x, y float64, anchor, class, s string) {
	b.f(`<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`, x, y, anchor, class, esc(s))
}

func (b *svgBuf) done() template.HTML {
	b.f(`</svg>`)
	return template.HTML(b.String())
}

// passAtKChart draws pass@k against k, the k evenly spaced (they double).
func passAtKChart(s *Summary) template.HTML {
	const w, h, left, right, top, bottom = 480, 260, 48, 20, 16, 40
	var b svgBuf
	b.open(w, h, "pass@k")
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	yOf := func(v float64) float64 { return top + ph*(1-v) }
	for _, v := range []float64{0, 0.25, 0.5, 0.75, 1} {
		y := yOf(v)
		b.f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`, left, y, w-right, y, colorGrid)
		b.text(left-6, y+4, "end", "tick", fmt.Sprintf("%.2f", v))
	}
	n := len(s.Ks)
	xOf := func(i int) float64 {
		if n == 1 {
			return left + pw/2
		}
		return left + pw*float64(i)/float64(n-1)
	}
	var pts []string
	for i, k := range s.Ks {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i), yOf(s.PassAtK[k])))
	}
	if n > 1 {
		b.f(`<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, colorBar, strings.Join(pts, " "))
	}
	for i, k := range s.Ks {
		x, y := xOf(i), yOf(s.PassAtK[k])
		b.f(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>pass@%d = %.3f</title></circle>`, x, y, colorBar, k, s.PassAtK[k])
		b.text(x, y-8, "middle", "val", fmt.Sprintf("%.3f", s.PassAtK[k]))
		b.text(x, float64(h-bottom)+16, "middle", "tick", fmt.Sprint(k))
	}
	b.text(left+pw/2, float64(h)-6, "middle", "axis", "k")
	return b.done()
}

// rewardHistogram draws the scored trials' outcome rewards in ten bins over
// [min(0, lowest), max(1, highest)].
func rewardHistogram(trials []rundir.Result) template.HTML {
	const w, h, left, right, top, bottom, bins = 480, 260, 40, 16, 16, 40, 10
	lo, hi := 0.0, 1.0
	var rs []float64
	for i := range trials {
		if t := &trials[i]; !t.Infra() {
			rs = append(rs, t.Reward)
			lo, hi = math.Min(lo, t.Reward), math.Max(hi, t.Reward)
		}
	}
	counts := make([]int, bins)
	for _, r := range rs {
		i := int(float64(bins) * (r - lo) / (hi - lo))
		counts[min(max(i, 0), bins-1)]++
	}
	most := 1
	for _, c := range counts {
		most = max(most, c)
	}
	var b svgBuf
	b.open(w, h, "Outcome reward of the scored trials")
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	bw := pw / bins
	for i, c := range counts {
		bh := ph * float64(c) / float64(most)
		x := float64(left) + bw*float64(i)
		from, to := lo+(hi-lo)*float64(i)/bins, lo+(hi-lo)*float64(i+1)/bins
		closing := ")"
		if i == bins-1 {
			closing = "]"
		}
		b.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>[%.2f, %.2f%s: %d trials</title></rect>`,
			x+1, top+ph-bh, bw-2, bh, colorBar, from, to, closing, c)
		if c > 0 {
			b.text(x+bw/2, top+ph-bh-4, "middle", "val", fmt.Sprint(c))
		}
	}
	for i := 0; i <= bins; i += 2 {
		b.text(float64(left)+bw*float64(i), top+ph+16, "middle", "tick", fmt.Sprintf("%.2g", lo+(hi-lo)*float64(i)/bins))
	}
	b.f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#888"/>`, left, top+ph, w-right, top+ph)
	b.text(float64(left)+pw/2, float64(h)-6, "middle", "axis", fmt.Sprintf("reward (%d scored trials)", len(rs)))
	return b.done()
}

// hbars is a horizontal bar chart: one labelled bar per row.
type hbar struct {
	label, value, tip string
	frac              float64 // 0..1 of the full width
	color             string
}

func hbars(title string, rows []hbar, note string) template.HTML {
	const w, labelW, valueW, rowH, top = 720, 260, 70, 18, 8
	h := top + rowH*len(rows) + 8
	if note != "" {
		h += rowH
	}
	var b svgBuf
	b.open(w, h, title)
	barW := float64(w - labelW - valueW)
	for i, r := range rows {
		y := float64(top + rowH*i)
		b.f(`<g><title>%s</title>`, esc(r.tip))
		b.text(labelW-6, y+13, "end", "lbl", clip(r.label, 40))
		b.f(`<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="#f1f1f1"/>`, labelW, y+2, barW, rowH-4)
		b.f(`<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="%s"/>`, labelW, y+2, barW*math.Max(0, math.Min(1, r.frac)), rowH-4, r.color)
		b.text(float64(labelW)+barW+6, y+13, "start", "val", r.value)
		b.f(`</g>`)
	}
	if note != "" {
		b.text(labelW, float64(top+rowH*len(rows)+14), "start", "tick", note)
	}
	return b.done()
}

// taskChart draws each scored task's pass rate, up to limit tasks.
func taskChart(tasks []TaskStats, limit int) template.HTML {
	var rows []hbar
	scored := 0
	for _, ts := range tasks {
		if ts.Scored == 0 {
			continue
		}
		scored++
		if len(rows) == limit {
			continue
		}
		rows = append(rows, hbar{
			label: ts.Task, value: fmt.Sprintf("%d/%d", ts.Passed, ts.Scored), frac: ts.PassRate, color: colorPass,
			tip: fmt.Sprintf("%s (%s): %d of %d scored trials passed", ts.Task, ts.Env, ts.Passed, ts.Scored),
		})
	}
	note := ""
	if scored > len(rows) {
		note = fmt.Sprintf("the first %d of %d scored tasks; the table below has them all", len(rows), scored)
	}
	return hbars("Pass rate per task", rows, note)
}

// failureChart draws the failure taxonomy's counts.
func failureChart(fs []FailureClass) template.HTML {
	most := 1
	for _, c := range fs {
		most = max(most, c.Count)
	}
	rows := make([]hbar, 0, len(fs))
	for _, c := range fs {
		color := colorAgent
		if c.Fault == gym.FaultInfra {
			color = colorInfra
		}
		rows = append(rows, hbar{
			label: string(c.Fault) + ": " + c.Reason, value: fmt.Sprint(c.Count),
			frac: float64(c.Count) / float64(most), color: color,
			tip: fmt.Sprintf("%s fault, %s: %d trials", c.Fault, c.Reason, c.Count),
		})
	}
	return hbars("Failures by fault and reason", rows, "")
}
