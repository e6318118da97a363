package train

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/rl"
)

// ReportFile is the run directory's self-contained HTML report, rewritten
// after every step.
const ReportFile = "report.html"

//go:embed report.html.tmpl
var reportTemplate string

var reportTmpl = template.Must(template.New("report").Parse(reportTemplate))

// ReadAudit reads a run directory's AuditFile; a step audited twice
// (trained again after a resume) keeps its last turns. None is no error.
func ReadAudit(dir string) ([]Audit, error) {
	f, err := os.Open(filepath.Join(dir, AuditFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Audit
	last := 0 // the step of the previous line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var a Audit
		if json.Unmarshal(sc.Bytes(), &a) != nil {
			continue // a line cut short by a crash
		}
		if a.Step != last {
			// a new block: an earlier block of this step (or later ones) is superseded
			out = slices.DeleteFunc(out, func(x Audit) bool { return x.Step >= a.Step })
			last = a.Step
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// auditView is an Audit with its next state read from its trajectory.
type auditView struct {
	Audit
	NextState, Staleness, ProcessText string
}

type reportData struct {
	Dir, Settings string
	Running       bool
	Steps         int
	Last          *Metrics
	Evals         []EvalMetrics
	Charts        []template.HTML
	Audit         []auditView
}

// WriteReport writes dir's ReportFile from its records: the curves (reward
// outcome, process and mixed; held-out pass@1 with its intervals; KL,
// entropy, clip fraction, the train−rollout log-prob gap; staleness;
// throughput and the trainer's busy share) and the signal audit (each
// audited turn's prompt, reply and next state, the judge's score and
// hint, the advantage, the version that produced it). running adds a
// refresh every 30 s.
func WriteReport(dir string, running bool) error {
	steps, evals, err := ReadMetrics(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	audit, err := ReadAudit(dir)
	if err != nil {
		return err
	}
	st, _ := readState(dir)
	set, _ := json.MarshalIndent(st.Settings, "", "  ")
	d := reportData{Dir: dir, Settings: string(set), Running: running, Steps: len(steps), Evals: evals}
	if len(steps) > 0 {
		d.Last = &steps[len(steps)-1]
	}
	x := make([]float64, len(steps))
	for i, m := range steps {
		x[i] = float64(m.Step)
	}
	series := func(f func(m Metrics) float64) []float64 {
		out := make([]float64, len(steps))
		for i, m := range steps {
			out[i] = f(m)
		}
		return out
	}
	upd := func(key string) func(Metrics) float64 {
		return func(m Metrics) float64 {
			if v, ok := m.Update[key]; ok {
				return v
			}
			return math.NaN()
		}
	}
	proc := func(m Metrics) float64 {
		if m.Process == nil {
			return math.NaN()
		}
		return *m.Process
	}
	d.Charts = append(d.Charts,
		lineChart("Reward per step", x, []line{
			{"mixed", series(func(m Metrics) float64 { return m.Reward }), nil, nil},
			{"outcome", series(func(m Metrics) float64 { return m.Outcome }), nil, nil},
			{"process", series(proc), nil, nil}}),
		suiteChart(x, steps),
		evalChart(evals),
		lineChart("KL and entropy", x, []line{
			{"PPO KL", series(upd("pg/ppo_kl")), nil, nil},
			{"KL to the reference", series(upd("loss/kl")), nil, nil},
			{"entropy", series(upd("entropy")), nil, nil}}),
		lineChart("Clip fraction and train−rollout log-prob gap", x, []line{
			{"clip fraction", series(upd("pg/clip_fraction")), nil, nil},
			{"train−rollout gap", series(upd("train_rollout_gap")), nil, nil}}),
		lineChart("Staleness (versions)", x, []line{
			{"mean", series(func(m Metrics) float64 { return m.StalenessMean }), nil, nil},
			{"max", series(func(m Metrics) float64 { return float64(m.StalenessMax) }), nil, nil}}),
		lineChart("Throughput", x, []line{
			{"generated tokens/s", series(func(m Metrics) float64 { return m.TokensPerS }), nil, nil}}),
		lineChart("Episodes per second and the trainer's busy share", x, []line{
			{"episodes/s", series(func(m Metrics) float64 { return m.EpisodesPerS }), nil, nil},
			{"trainer busy", series(func(m Metrics) float64 { return m.Busy }), nil, nil}}),
	)
	trajs := map[string]*rundir.Trajectory{}
	for _, a := range audit {
		v := auditView{Audit: a, Staleness: "unknown", ProcessText: "not judged"}
		if a.Process != nil {
			v.ProcessText = fmt.Sprintf("%+g", *a.Process)
		}
		if a.Version != nil {
			v.Staleness = fmt.Sprint(a.TrainedAt - *a.Version)
		}
		if a.Trajectory != "" {
			tr, ok := trajs[a.Trajectory]
			if !ok {
				tr = readTrajectory(filepath.Join(dir, filepath.FromSlash(a.Trajectory)))
				trajs[a.Trajectory] = tr
			}
			if tr != nil {
				for _, s := range tr.Steps {
					switch {
					case a.Refused && s.Step == 0 && s.Failure != nil && s.Response == a.Response:
						v.NextState = rl.RefusalText(s.Failure)
					case !a.Refused && s.Step == a.Turn:
						v.NextState = s.Observation.Text()
					}
				}
			}
		}
		d.Audit = append(d.Audit, v)
	}
	slices.Reverse(d.Audit) // the newest first
	if len(d.Audit) > 200 {
		d.Audit = d.Audit[:200]
	}
	var b strings.Builder
	if err := reportTmpl.Execute(&b, d); err != nil {
		return err
	}
	return rundir.WriteFile(filepath.Join(dir, ReportFile), []byte(b.String()))
}

func readTrajectory(path string) *rundir.Trajectory {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var tr rundir.Trajectory
	if json.Unmarshal(b, &tr) != nil {
		return nil
	}
	return &tr
}

// line is one series of a chart; lo and hi, when set, draw its interval.
type line struct {
	name   string
	y      []float64
	lo, hi []float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// chartWidth and chartHeight are a line chart's size.
const chartWidth, chartHeight = 460, 220

// lineChart draws series against x as inline SVG; NaN points are gaps.
func lineChart(title string, x []float64, lines []line) template.HTML {
	const w, h, left, right, top, bottom = chartWidth, chartHeight, 48, 12, 28, 36
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" class="chart" role="img"><title>%s</title>`,
		w, h, w, h, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="16" class="title">%s</text>`, left, html.EscapeString(title))
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, l := range lines {
		for _, s := range [][]float64{l.y, l.lo, l.hi} {
			for _, v := range s {
				if !math.IsNaN(v) {
					ymin, ymax = min(ymin, v), max(ymax, v)
				}
			}
		}
	}
	if len(x) == 0 || math.IsInf(ymin, 0) {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="note">no data yet</text></svg>`, left, h/2)
		return template.HTML(b.String())
	}
	if ymax-ymin < 1e-9 {
		ymin, ymax = ymin-0.5, ymax+0.5
	}
	xmin, xmax := x[0], x[len(x)-1]
	if xmax == xmin {
		xmin, xmax = xmin-1, xmax+1
	}
	px := func(v float64) float64 { return left + (v-xmin)/(xmax-xmin)*(w-left-right) }
	py := func(v float64) float64 { return top + (ymax-v)/(ymax-ymin)*(h-top-bottom) }
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, left, top, left, h-bottom)
	for _, v := range []float64{ymin, (ymin + ymax) / 2, ymax} {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`, left-4, py(v)+4, num(v))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick">%g</text>`, left, h-bottom+14, xmin)
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick" text-anchor="end">%g</text>`, w-right, h-bottom+14, xmax)
	for i, l := range lines {
		color := palette[i%len(palette)]
		if l.lo != nil {
			for j := range x {
				if !math.IsNaN(l.lo[j]) {
					fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="6" opacity="0.25"/>`,
						px(x[j]), py(l.lo[j]), px(x[j]), py(l.hi[j]), color)
				}
			}
		}
		var path strings.Builder
		pen := false
		for j := range x {
			if math.IsNaN(l.y[j]) {
				pen = false
				continue
			}
			if pen {
				path.WriteString(" L")
			} else {
				path.WriteString(" M")
			}
			fmt.Fprintf(&path, "%.1f %.1f", px(x[j]), py(l.y[j]))
			pen = true
		}
		if path.Len() > 0 {
			fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.8"/>`, path.String(), color)
		}
		if len(x) <= 40 {
			for j := range x {
				if !math.IsNaN(l.y[j]) {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.2" fill="%s"/>`, px(x[j]), py(l.y[j]), color)
				}
			}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="legend" fill="%s">%s</text>`, left+8+i*130, h-6, color, html.EscapeString(l.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// suiteChart draws each suite's outcome reward per step (the batch's
// trajectories of that suite; gaps where a batch drew none).
func suiteChart(x []float64, steps []Metrics) template.HTML {
	names := map[string]bool{}
	for _, m := range steps {
		for name := range m.Suites {
			names[name] = true
		}
	}
	var lines []line
	for _, name := range sortedKeys(names) {
		l := line{name: name}
		for _, m := range steps {
			v := math.NaN()
			if sr, ok := m.Suites[name]; ok {
				v = sr.Outcome
			}
			l.y = append(l.y, v)
		}
		lines = append(lines, l)
	}
	return lineChart("Outcome reward per suite", x, lines)
}

// evalChart draws held-out pass@1 per evaluation, overall and per suite,
// with their bootstrap intervals.
func evalChart(evals []EvalMetrics) template.HTML {
	x := make([]float64, len(evals))
	all := line{name: "all held-out"}
	suites := map[string]*line{}
	for i, e := range evals {
		x[i] = float64(e.Step)
		all.y, all.lo, all.hi = append(all.y, e.Pass1.Mean), append(all.lo, e.Pass1.Low), append(all.hi, e.Pass1.High)
		for name := range e.Suites {
			if suites[name] == nil {
				suites[name] = &line{name: name}
			}
		}
	}
	lines := []line{all}
	if len(suites) > 1 {
		for _, name := range sortedKeys(suites) {
			l := suites[name]
			for _, e := range evals {
				est, ok := e.Suites[name]
				v := math.NaN()
				if ok {
					v = est.Mean
				}
				l.y = append(l.y, v)
			}
			lines = append(lines, *l)
		}
	}
	return lineChart("Held-out pass@1 (95% bootstrap intervals)", x, lines)
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
