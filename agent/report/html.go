package report

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

//go:embed report.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("report.html").Funcs(template.FuncMap{
	"f3":       f3,
	"g3":       g3,
	"orDash":   orDash,
	"steps":    steps,
	"dur":      duration,
	"reasons":  reasonList,
	"span":     span,
	"join":     strings.Join,
	"url":      relURL,
	"split":    splitName,
	"ms":       func(ms int64) string { return duration(time.Duration(ms) * time.Millisecond) },
	"perTrial": func(d time.Duration, n int) time.Duration { return d / time.Duration(n) },
	"groupArgs": func(col string, rows []GroupStats) any {
		return struct {
			Col  string
			Rows []GroupStats
		}{col, rows}
	},
}).Parse(pageSource))

// HTML writes report.html: one self-contained page (inline CSS, JS and SVG
// charts; no network) with the summary, the tables (the per-task and trial
// tables sort on a click of a column head), the charts and a trajectory
// viewer that shows each step's response, action, next state (screenshots
// inline, within Limits.ImageBytes), reward and judge votes. Trajectory
// files are read here; one that is missing or unreadable is shown as an
// error in its trial's place, not a failure of the whole report.
func (r *Report) HTML(w io.Writer) error {
	v := &viewer{dir: r.Dir, lim: r.Limits.withDefaults()}
	pg := page{
		R: r, S: &r.Summary, HasSplits: r.hasSplits(),
		PassAtKChart: passAtKChart(&r.Summary),
		RewardChart:  rewardHistogram(r.Trials),
		TaskChart:    taskChart(r.Tasks, v.lim.ChartTasks),
		FailureChart: failureChart(r.Failures),
	}
	for i := range r.Trials {
		pg.Trials = append(pg.Trials, v.trial(i, &r.Trials[i]))
	}
	pg.LinkedImages, pg.NotEmbedded = v.linked, v.skipped
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := pageTemplate.Execute(bw, &pg); err != nil {
		return fmt.Errorf("report: rendering HTML: %w", err)
	}
	return bw.Flush()
}

type page struct {
	R         *Report
	S         *Summary
	HasSplits bool

	PassAtKChart, RewardChart, TaskChart, FailureChart template.HTML

	Trials       []viewTrial
	LinkedImages int // screenshots linked rather than embedded
	NotEmbedded  int // trials past the viewer's budget
}

// viewTrial and viewStep keep what the page shows of a trajectory, capped,
// and not the trajectory itself, so a large run is not held in memory.
type viewTrial struct {
	T           *rundir.Result
	ID          string // element id: t-<index>
	Failure     string
	Embedded    bool   // the trajectory is shown
	Error       string // why it is not
	Instruction string
	Outcome     float64
	Steps       []viewStep
}

type viewStep struct {
	Step        int
	Reward      float64
	Terminated  bool
	Truncated   bool
	Response    string
	Action      []viewPart
	Observation []viewPart
	Failure     string
	Info        string
	Messages    string
	Judge       *rundir.Judge
}

type viewPart struct {
	Type    gym.PartType
	Title   string
	Body    string
	IsError bool
	Img     template.URL // data URL of an embedded image
	Link    string       // relative link of an image not embedded
	Note    string
}

// viewer turns trajectories into view data within the Limits.
type viewer struct {
	dir       string
	lim       Limits
	textUsed  int64
	imageUsed int64
	linked    int
	skipped   int
}

func (v *viewer) trial(i int, t *rundir.Result) viewTrial {
	vt := viewTrial{T: t, ID: fmt.Sprintf("t-%d", i)}
	if fault, reason, ok := t.FailureClass(); ok {
		vt.Failure = string(fault) + ": " + reason
		if t.Failure != nil && t.Failure.Message != "" {
			vt.Failure += " — " + v.text(t.Failure.Message)
		}
	}
	if v.textUsed >= v.lim.ViewerBytes {
		v.skipped++
		vt.Error = "not embedded: the viewer's size budget is spent; open the trajectory file"
		return vt
	}
	tr, err := ReadTrajectory(v.dir, t)
	if err != nil {
		vt.Error = err.Error()
		return vt
	}
	vt.Embedded, vt.Instruction, vt.Outcome = true, v.text(tr.Instruction), tr.Outcome
	for si := range tr.Steps {
		s := &tr.Steps[si]
		vs := viewStep{Step: s.Step, Reward: s.Reward, Terminated: s.Terminated, Truncated: s.Truncated,
			Response: v.text(s.Response)}
		vs.Action = v.parts(s.Action.Parts)
		vs.Observation = v.parts(s.Observation.Parts)
		if s.Failure != nil {
			vs.Failure = fmt.Sprintf("%s fault (%s): %s", s.Failure.Fault, s.Failure.Reason, v.text(s.Failure.Message))
		}
		if len(s.Info) > 0 {
			vs.Info = v.text(pretty(s.Info))
		}
		if len(s.MessagesTail) > 0 && string(s.MessagesTail) != "null" {
			vs.Messages = v.text(prettyRaw(s.MessagesTail))
		}
		if s.Judge != nil {
			j := *s.Judge
			j.Hint = v.text(j.Hint)
			j.Votes = append([]rundir.Vote(nil), j.Votes...)
			for k := range j.Votes {
				j.Votes[k].Hint = v.text(j.Votes[k].Hint)
				j.Votes[k].Error = v.text(j.Votes[k].Error)
			}
			vs.Judge = &j
		}
		vt.Steps = append(vt.Steps, vs)
	}
	return vt
}

// text caps s at Limits.TextBytes (on a rune boundary, with a marker) and
// counts it against the viewer's budget.
func (v *viewer) text(s string) string {
	if len(s) > v.lim.TextBytes {
		cut := v.lim.TextBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = fmt.Sprintf("%s\n[… truncated: %d more bytes]", s[:cut], len(s)-cut)
	}
	v.textUsed += int64(len(s))
	return s
}

func (v *viewer) parts(ps []gym.Part) []viewPart {
	out := make([]viewPart, 0, len(ps))
	for _, p := range ps {
		vp := viewPart{Type: p.Type}
		switch {
		case p.Type == gym.PartText:
			vp.Body = v.text(p.Text)
		case p.Type == gym.PartToolCall && p.ToolCall != nil:
			vp.Title = p.ToolCall.Function.Name
			if p.ToolCall.ID != "" {
				vp.Title += " (" + p.ToolCall.ID + ")"
			}
			vp.Body = v.text(prettyArgs(p.ToolCall.Function.Arguments))
		case p.Type == gym.PartToolResult && p.ToolResult != nil:
			vp.Title = strings.TrimSpace(p.ToolResult.Name + " " + p.ToolResult.CallID)
			vp.IsError = p.ToolResult.IsError
			vp.Body = v.text(p.ToolResult.Content)
		case p.Type == gym.PartGUIAction && p.GUIAction != nil:
			vp.Title = p.GUIAction.Action
			vp.Body = v.text(pretty(p.GUIAction))
		case p.Type == gym.PartImage && p.Image != nil:
			v.image(&vp, p.Image)
		case p.Type == gym.PartFile && p.File != nil:
			vp.Title = p.File.Path
			switch {
			case len(p.File.Data) > 0 && utf8.Valid(p.File.Data):
				vp.Body = v.text(string(p.File.Data))
			case p.File.Ref != "":
				vp.Note = fmt.Sprintf("%s, %d bytes, stored as %s", p.File.MIME, p.File.Size, p.File.Ref)
			default:
				vp.Note = fmt.Sprintf("%s, %d bytes of binary content", p.File.MIME, max(p.File.Size, int64(len(p.File.Data))))
			}
		default:
			vp.Body = v.text(pretty(p))
		}
		out = append(out, vp)
	}
	return out
}

// embeddable lists the image types shown as data URLs.
var embeddable = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// image embeds a screenshot as a data URL while the image budget lasts;
// past it, or when the blob is not an image, it links the blob file.
func (v *viewer) image(vp *viewPart, b *gym.Blob) {
	if b.Width > 0 && b.Height > 0 {
		vp.Title = fmt.Sprintf("%d×%d", b.Width, b.Height)
	}
	data := b.Data
	path, local := "", false
	if len(data) == 0 {
		path, local = rundir.BlobFile(b.Ref)
		if !local {
			vp.Note = fmt.Sprintf("image reference %q does not name a file of the run directory", b.Ref)
			return
		}
		vp.Link = relURL(filepath.ToSlash(path))
		full := filepath.Join(v.dir, path)
		fi, err := os.Stat(full)
		if err != nil {
			vp.Note = "screenshot file missing: " + filepath.ToSlash(path)
			vp.Link = ""
			return
		}
		if v.imageUsed+fi.Size() > v.lim.ImageBytes {
			v.linked++
			vp.Note = "not embedded (the report's image budget is spent)"
			return
		}
		if data, err = os.ReadFile(full); err != nil {
			vp.Note = "screenshot unreadable: " + err.Error()
			return
		}
	}
	mime := http.DetectContentType(data)
	if !embeddable[mime] {
		vp.Note = fmt.Sprintf("not embedded: the content is %s, not an image", mime)
		return
	}
	if v.imageUsed+int64(len(data)) > v.lim.ImageBytes {
		v.linked++
		vp.Note = "not embedded (the report's image budget is spent)"
		return
	}
	v.imageUsed += int64(len(data))
	// Safe: the scheme is data:, the type one of embeddable, the payload base64.
	vp.Img = template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data))
}

// prettyArgs indents a tool call's JSON arguments; text that is not JSON
// (a model's malformed call) is shown as it is.
func prettyArgs(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") == nil {
		return buf.String()
	}
	return s
}

func prettyRaw(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") == nil {
		return buf.String()
	}
	return string(raw)
}

func pretty(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
