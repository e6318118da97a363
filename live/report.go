package live

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/nextstate-rl/nextstate/simuser"
	"github.com/nextstate-rl/nextstate/train"
)

// ReportFile is a live run's report.
const ReportFile = "report.html"

// SessionsFile is where `nextstate users simulate --out` writes its
// sessions in a run directory, for the report's compliance chart.
const SessionsFile = "sessions.jsonl"

// WriteReport writes dir's ReportFile: the votes and hints of each update
// and the weight versions, every trained sample with its vote, hint and
// answering version, and, when dir holds SessionsFile, each simulated
// user's compliance per session.
func WriteReport(dir string) error {
	ups, err := ReadUpdates(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	d := reportData{Dir: dir, Updates: ups}
	x := make([]float64, len(ups))
	pos, neg, hinted, stale := make([]float64, len(ups)), make([]float64, len(ups)), make([]float64, len(ups)), make([]float64, len(ups))
	for i, u := range ups {
		x[i] = float64(u.N)
		n := float64(len(u.Samples))
		pos[i], neg[i], hinted[i] = float64(u.Votes["+1"])/n, float64(u.Votes["-1"])/n, float64(u.Hinted)/n
		stale[i] = math.NaN()
		k, sum := 0, 0
		for _, s := range u.Samples {
			d.Samples++
			if s.Staleness != nil {
				k, sum = k+1, sum+*s.Staleness
			}
		}
		if k > 0 {
			stale[i] = float64(sum) / float64(k)
		}
	}
	d.Charts = append(d.Charts,
		template.HTML(train.Chart("Votes and hints per update (share of its samples)", x, []train.Series{
			{Name: "+1 (thanks)", Y: pos}, {Name: "-1 (corrected, asked again)", Y: neg}, {Name: "hinted", Y: hinted}})),
		template.HTML(train.Chart("Staleness (versions, mean per update)", x, []train.Series{{Name: "staleness", Y: stale}})))
	sessions, err := simuser.ReadSessions(filepath.Join(dir, SessionsFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(sessions) > 0 {
		var series []train.Series
		for _, u := range simuser.Users(sessions) {
			name := u.User + " (" + u.Wants + ")"
			if u.Adversary {
				name += ", adversary"
			}
			series = append(series, train.Series{Name: name, Y: simuser.Compliance(sessions, func(r simuser.SessionResult) bool { return r.User == u.User })})
		}
		sx := make([]float64, len(series[0].Y))
		for i := range sx {
			sx[i] = float64(i + 1)
		}
		d.Charts = append([]template.HTML{template.HTML(train.Chart("Compliance per session, by user", sx, series))}, d.Charts...)
	}
	f, err := os.CreateTemp(dir, ".report-*.html")
	if err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := reportTemplate.Execute(f, d); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("live report: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, ReportFile))
}

type reportData struct {
	Dir     string
	Updates []Update
	Samples int
	Charts  []template.HTML
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"deref": func(p *int) string {
		if p == nil {
			return "?"
		}
		return fmt.Sprint(*p)
	},
	"clip": func(s string) string {
		if r := []rune(s); len(r) > 160 {
			return string(r[:160]) + "…"
		}
		return s
	},
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>nextstate live: {{.Dir}}</title>
<style>
body{font:14px sans-serif;margin:24px;max-width:1200px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.title{font:600 12px sans-serif}.tick,.legend,.note{font:11px sans-serif}.axis{stroke:#999}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ddd;padding:3px 6px;vertical-align:top;text-align:left}
td.r{white-space:pre-wrap;font-family:monospace;font-size:12px;max-width:520px}
.pos{color:#2a7}.neg{color:#c33}
</style></head><body>
<h1>A personal agent learning from its users</h1>
<p>{{.Dir}}: {{len .Updates}} updates on {{.Samples}} samples (updates.jsonl). Each update trained on the samples below
and published the version shown; each sample names the version that answered it, the user's vote (the judge's reading of the
user's next message) and the hint the OPD teacher read.</p>
<div class="charts">{{range .Charts}}{{.}}{{end}}</div>
{{range .Updates}}
<h3>Update {{.N}} → version {{.Version}}</h3>
<p>votes {{range $k, $v := .Votes}}{{$k}}: {{$v}} {{end}}· hinted {{.Hinted}} · train {{printf "%.3f" .TrainSeconds}} s · publish {{printf "%.4f" .PublishSeconds}} s</p>
<table><tr><th>user</th><th>session</th><th>turn</th><th>answered by</th><th>vote</th><th>hint</th><th>response</th></tr>
{{range .Samples}}<tr><td>{{.User}}</td><td>{{.Session}}</td><td>{{.Step}}</td><td>v{{deref .Version}}</td>
<td class="{{if gt .Vote 0.0}}pos{{else if lt .Vote 0.0}}neg{{end}}">{{.Vote}}</td><td>{{.Hint}}</td><td class="r">{{clip .Response}}</td></tr>
{{end}}</table>
{{end}}
</body></html>
`))
