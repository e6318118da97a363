package report

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/agent/rundir"
)

const shot = "blobs/96ccb35ecb6141d8089511c0e5fb3d54a43f85ae504baa996816c60c4e6236f0.png"

func renderHTML(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.HTML(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

var scriptOrStyle = regexp.MustCompile(`(?s)(<(script|style)>).*?(</(script|style)>)`)

// wellFormed parses page as XML after emptying its script and style
// elements (their text is not markup): the page must be a balanced tree
// with quoted attributes, self-closed void elements and known entities.
func wellFormed(t *testing.T, page string) {
	t.Helper()
	body := scriptOrStyle.ReplaceAllString(page, "$1$3")
	d := xml.NewDecoder(strings.NewReader(body))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	var stack []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line, _ := d.InputPos()
			lines := strings.Split(body, "\n")
			t.Fatalf("report.html is not well-formed: %v\nline %d: %s", err, line, lines[min(line, len(lines))-1])
		}
		switch el := tok.(type) {
		case xml.StartElement:
			stack = append(stack, el.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements %v", stack)
	}
}

func TestHTMLFixture(t *testing.T) {
	page := renderHTML(t, load(t, fixture))
	wellFormed(t, page)

	// The model's <script> is text, not markup.
	if strings.Contains(page, `<script>alert`) {
		t.Error("a model response's <script> reached the page unescaped")
	}
	if !strings.Contains(page, `I will write the file. &lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;`) {
		t.Error("the escaped response is missing")
	}
	if n := strings.Count(page, "<script>"); n != 1 {
		t.Errorf("%d script elements, want the report's own one", n)
	}
	// Self-contained: nothing fetched.
	for _, bad := range []string{`src="http`, `href="http`, "@import", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("page refers to the network: %q", bad)
		}
	}

	// The screenshot is inline, byte for byte.
	png, err := os.ReadFile(filepath.Join(fixture, shot))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, `src="data:image/png;base64,`+base64.StdEncoding.EncodeToString(png)+`"`) {
		t.Error("the screenshot is not embedded as a data URL")
	}

	// Charts, tables, viewer.
	for _, want := range []string{
		`<title>pass@k</title>`, `<title>Pass rate per task</title>`, `<title>Failures by fault and reason</title>`,
		`<title>Outcome reward of the scored trials</title>`,
		`<table class="sortable" id="task-table">`, `<select id="trial-select">`,
		`<option value="t-5">hello#0 — passed, reward 1</option>`,
		`<section class="trial" id="t-0">`, `<section class="trial" id="t-5" hidden="hidden">`,
		// Tool calls pretty-printed, tool results with their error flag.
		"shell_exec (call_1)", "{\n  &#34;command&#34;: &#34;echo hi &gt; hello.txt&#34;\n}",
		`<div class="part-title">tool_result: get_user b <span class="error">(error)</span></div>`,
		// A malformed arguments text is shown as it is.
		"{not json",
		// Judge votes and hints.
		"Judge: process reward 1", "Check the file afterwards with cat.", "The file must contain hi, not hello.",
		// GUI actions.
		"gui_action: click", "&#34;text&#34;: &#34;Bob&#34;",
		// The agent's failure on a step.
		"agent fault (bad_action): action does not match",
		// A trial without its file says so.
		"trial hello#2: open testdata/run/trajectories/hello-2.json: no such file or directory",
		"trial broken#0 has no trajectory file",
		// The trial's header.
		"<tr><th>Process reward</th><td colspan=\"3\">0.500</td></tr>", "<td>4s</td><th>Tokens</th><td>1000 prompt, 100 completion</td>",
		// The per-task table's sort keys.
		`data-v="0.5625"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestHTMLEscapesEverywhere puts markup in every field that reaches the
// page: task ids (also in the SVG charts), failure reasons and messages,
// run.json values, instructions, tool names, hints.
func TestHTMLEscapesEverywhere(t *testing.T) {
	const evil = `<img src=x onerror=alert(1)>`
	traj := `{"trial_id":"e#0","task":"` + `\u003cimg src=x onerror=alert(1)\u003e` + `","instruction":"` + `\u003c/pre\u003e\u003cscript\u003ex()\u003c/script\u003e` +
		`","steps":[{"step":1,"response":"ok","action":{"parts":[{"type":"tool_call","tool_call":{"id":"\u003cx-b\u003e","function":{"name":"\u003cx-i\u003e","arguments":"{}"}}}]},` +
		`"observation":{"parts":[{"type":"text","text":"\u003c!-- --\u003e"}]},"reward":0,"judge":{"reward":0,"votes":[{"score":0,"hint":"\u003cx-u\u003e","valid":true}],"hint":"\u003cx-s\u003e"}}],"outcome":0}`
	dir := runDir(t, []string{
		row(t, "e#0", evil, "failed", 0, map[string]any{
			"env": evil, "split": evil, "trajectory": "trajectories/e.json",
			"failure": map[string]any{"fault": "agent", "reason": evil, "message": evil},
		}),
	}, map[string]string{"trajectories/e.json": traj, rundir.RunFile: `{"suite":"` + `\u003cscript\u003e` + `","` + `\u003cx-b\u003e` + `":1}`})
	page := renderHTML(t, load(t, dir))
	wellFormed(t, page)
	for _, bad := range []string{"<img src=x", "</pre><script>", "<x-i>", "<x-b>", "<x-u>", "<x-s>", "<!-- -->", "<script>x()"} {
		if strings.Contains(page, bad) {
			t.Errorf("unescaped %q in the page", bad)
		}
	}
	if n := strings.Count(page, "<script>"); n != 1 {
		t.Errorf("%d script elements, want 1", n)
	}
	for _, want := range []string{
		// The task id, in the tables and in the chart's label.
		"<td>&lt;img src=x onerror=alert(1)&gt;</td>", `class="lbl">&lt;img src=x onerror=alert(1)&gt;</text>`,
		"&lt;/pre&gt;&lt;script&gt;x()&lt;/script&gt;", "&lt;x-i&gt;", "&lt;x-b&gt;", "&lt;x-u&gt;", "&lt;x-s&gt;",
		"&lt;!-- --&gt;", "<td>&lt;script&gt;</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped %q", want)
		}
	}
}

func TestHTMLImageBudget(t *testing.T) {
	png, err := os.ReadFile(filepath.Join(fixture, shot))
	if err != nil {
		t.Fatal(err)
	}
	step := `{"step":%d,"action":{"parts":[]},"observation":{"parts":[{"type":"image","image":{"mime":"image/png","ref":"` + shot + `"}}]},"reward":0}`
	var steps []string
	for i := range 3 {
		steps = append(steps, strings.Replace(step, "%d", string(rune('1'+i)), 1))
	}
	traj := `{"trial_id":"g#0","task":"g","steps":[` + strings.Join(steps, ",") + `]}`
	dir := runDir(t, []string{row(t, "g#0", "g", "passed", 1, map[string]any{"trajectory": "trajectories/g.json"})},
		map[string]string{"trajectories/g.json": traj, shot: string(png),
			// A blob that is not an image is never embedded.
			"blobs/fake.png": "<svg onload=alert(1)>"})
	r := load(t, dir)
	r.Limits.ImageBytes = int64(2*len(png) + 10) // room for two of the three
	page := renderHTML(t, r)
	wellFormed(t, page)
	if n := strings.Count(page, "data:image/png;base64,"); n != 2 {
		t.Errorf("%d images embedded, want 2", n)
	}
	if !strings.Contains(page, "1 screenshots are linked rather than embedded") ||
		!strings.Contains(page, `<a href="`+shot+`">open the screenshot</a>`) {
		t.Error("the third screenshot is not linked")
	}

	traj = `{"trial_id":"g#0","task":"g","steps":[{"step":1,"action":{"parts":[]},"observation":{"parts":[` +
		`{"type":"image","image":{"mime":"image/png","ref":"blobs/fake.png"}},` +
		`{"type":"image","image":{"mime":"image/png","ref":"../../secret.png"}},` +
		`{"type":"image","image":{"mime":"image/png","ref":"sha256:0000"}}]},"reward":0}]}`
	write(t, filepath.Join(dir, "trajectories/g.json"), traj)
	page = renderHTML(t, load(t, dir))
	for _, want := range []string{"not embedded: the content is text/plain", `image reference &#34;../../secret.png&#34; does not name a file`,
		"screenshot file missing: blobs/0000.png"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "data:") {
		t.Error("a non-image blob was embedded")
	}
}

func TestHTMLTextAndViewerLimits(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes
	traj := func(id string) string {
		return `{"trial_id":"` + id + `","task":"l","steps":[{"step":1,"response":"` + long + `","action":{"parts":[]},"observation":{"parts":[]},"reward":0}]}`
	}
	dir := runDir(t, []string{
		row(t, "l#0", "l", "passed", 1, map[string]any{"trajectory": "trajectories/0.json"}),
		row(t, "l#1", "l", "passed", 1, map[string]any{"sample": 1, "trajectory": "trajectories/1.json"}),
	}, map[string]string{"trajectories/0.json": traj("l#0"), "trajectories/1.json": traj("l#1")})
	r := load(t, dir)
	r.Limits.TextBytes = 1001 // cut inside a two-byte rune: backs off to 1000
	r.Limits.ViewerBytes = 500
	page := renderHTML(t, r)
	wellFormed(t, page)
	if !strings.Contains(page, strings.Repeat("é", 500)+"\n[… truncated: 5000 more bytes]") {
		t.Error("the long response is not cut at a rune boundary with a marker")
	}
	if !strings.Contains(page, "1 trials are not embedded") || !strings.Contains(page, "the viewer&#39;s size budget is spent") {
		t.Error("the second trial is not reported as left out")
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, fixture, dir)
	// Stale reports are replaced.
	write(t, filepath.Join(dir, MarkdownFile), "old")
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/run.report.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(md, want) {
		t.Error("report.md written by Write differs from Markdown's output")
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, string(page))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, HTMLFile)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("report.html mode %v, %v", fi.Mode(), err)
	}

	// A bad results file: an error, and the old reports stay.
	write(t, filepath.Join(dir, rundir.ResultsFile), "{\n")
	if err := Write(dir); err == nil || !strings.Contains(err.Error(), "results.jsonl line 1") {
		t.Errorf("error %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, MarkdownFile)); !bytes.Equal(b, want) {
		t.Error("a failed Write touched report.md")
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		write(t, filepath.Join(to, rel), string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
