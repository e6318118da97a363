package bfcl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// Case is one single-turn BFCL test case: the question, the functions it
// offers, and (for every category but irrelevance) the ground truth.
type Case struct {
	ID       string
	Category string // from the file name: simple_python, multiple, irrelevance, ...
	// Question is BFCL's list of turns, each a list of {"role","content"}
	// messages; single-turn cases have one turn.
	Question []any
	// Functions are the function docs as BFCL gives them (Python-style type
	// names: dict, float, tuple, any; Java and JavaScript type names in
	// those categories).
	Functions []*Dict
	// GroundTruth is a list of {"function name": {"param": [acceptable
	// values]}}; nil for irrelevance.
	GroundTruth []any

	names  map[string]string // offered (OpenAI-safe) name -> BFCL name
	offers []string          // offered name of each function, in order
}

// Language is the case's language: "java", "javascript" or "python", from
// its category as BFCL decides it.
func (c *Case) Language() string { return languageOf(c.Category) }

func languageOf(category string) string {
	switch {
	case strings.Contains(category, "javascript"):
		return "javascript"
	case strings.Contains(category, "java"):
		return "java"
	}
	return "python"
}

// HasGroundTruth reports whether the category is scored against a ground
// truth (every category but irrelevance and relevance).
func HasGroundTruth(category string) bool { return !strings.Contains(category, "relevance") }

// supported are the single-turn categories this package scores; BFCL's
// live_ categories are the same checks on other data.
var supported = map[string]bool{
	"simple": true, "simple_python": true, "simple_java": true, "simple_javascript": true,
	"multiple": true, "parallel": true, "parallel_multiple": true, "irrelevance": true,
	"live_simple": true, "live_multiple": true, "live_parallel": true, "live_parallel_multiple": true,
	"live_irrelevance": true, "live_relevance": true,
}

// outOfScope says why a category this package knows of is not loaded.
func outOfScope(category string) string {
	if strings.HasPrefix(category, "multi_turn") {
		return "of the multi-turn categories only multi_turn_base is played (long_context's scenarios and " +
			"miss_func's and miss_param's held-out functions are not ported)"
	}
	for _, p := range []string{"memory", "web_search", "format_sensitivity"} {
		if strings.HasPrefix(category, p) {
			return "agentic categories (memory, web search) and format sensitivity are out of scope"
		}
	}
	return "unknown category; supported: " + strings.Join(SupportedCategories(), ", ")
}

// SupportedCategories lists the categories this package scores, sorted.
func SupportedCategories() []string {
	out := make([]string, 0, len(supported)+len(multiSupported))
	for c := range supported {
		out = append(out, c)
	}
	for c := range multiSupported {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Dataset is a BFCL data folder's cases: single-turn (bfcl-v1) and
// multi-turn (bfcl-multiturn-v1).
type Dataset struct {
	Cases []*Case
	Multi []*MultiCase
	// Skipped lists the files not loaded and why ("memory_kv: ... out of
	// scope").
	Skipped []string
}

// Categories returns the categories present, sorted.
func (d *Dataset) Categories() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range d.Cases {
		if !seen[c.Category] {
			seen[c.Category] = true
			out = append(out, c.Category)
		}
	}
	sort.Strings(out)
	return out
}

var reDataFile = regexp.MustCompile(`^BFCL_v\d+_(.+)\.jsonl?$`)

// categoryOf returns the category of a BFCL data file name, or "".
func categoryOf(name string) string {
	if m := reDataFile.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}

// Load reads a BFCL data folder (BFCL_v4_<category>.json files and
// possible_answer/); see LoadFS.
func Load(dir string) (*Dataset, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("bfcl: %s is not a folder; want BFCL's data folder (BFCL_v4_<category>.json files and possible_answer/)", dir)
	}
	ds, err := LoadFS(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("bfcl: %s: %w", dir, err)
	}
	return ds, nil
}

// LoadFS reads a BFCL data folder: every BFCL_v<N>_<category>.json file
// (JSON Lines, whatever the extension) of a supported category, with the
// ground truth of the same name in possible_answer/ (paired by id, or by
// line as BFCL does when the ids differ), and for multi_turn_base the
// classes' function docs in multi_turn_func_doc/. Other categories are
// listed in Skipped.
func LoadFS(fsys fs.FS) (*Dataset, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	ds := &Dataset{}
	for _, e := range entries {
		cat := categoryOf(e.Name())
		if e.IsDir() || cat == "" {
			continue
		}
		if multiSupported[cat] {
			cases, err := loadMultiCategory(fsys, e.Name(), cat)
			if err != nil {
				return nil, err
			}
			ds.Multi = append(ds.Multi, cases...)
			continue
		}
		if !supported[cat] {
			ds.Skipped = append(ds.Skipped, cat+": "+outOfScope(cat))
			continue
		}
		cases, err := loadCategory(fsys, e.Name(), cat)
		if err != nil {
			return nil, err
		}
		ds.Cases = append(ds.Cases, cases...)
	}
	if len(ds.Cases) == 0 && len(ds.Multi) == 0 {
		return nil, errors.New("no BFCL data: want BFCL_v4_<category>.json files of " +
			strings.Join(SupportedCategories(), ", "))
	}
	return ds, nil
}

func loadCategory(fsys fs.FS, name, cat string) ([]*Case, error) {
	rows, err := readLines(fsys, name)
	if err != nil {
		return nil, err
	}
	var cases []*Case
	for _, r := range rows {
		c, err := caseFromRow(r.v, cat)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, r.line, err)
		}
		cases = append(cases, c)
	}
	if !HasGroundTruth(cat) {
		return cases, nil
	}
	gtName := path.Join("possible_answer", name)
	gts, err := readLines(fsys, gtName)
	if err != nil {
		return nil, fmt.Errorf("the ground truth of %s: %w", cat, err)
	}
	byID := map[string]int{}
	for i, g := range gts {
		if id, ok := g.v.(*Dict).Value("id").(string); ok {
			byID[id] = i
		}
	}
	for i, c := range cases {
		j, ok := byID[c.ID]
		if !ok {
			// BFCL pairs prompts and answers by position where ids differ.
			if len(gts) != len(cases) {
				return nil, fmt.Errorf("%s has no answer for %q and %d answers for %d cases", gtName, c.ID, len(gts), len(cases))
			}
			j = i
		}
		gt, ok := gts[j].v.(*Dict).Value("ground_truth").([]any)
		if !ok {
			return nil, fmt.Errorf("%s:%d: want \"ground_truth\": a list of {\"function\": {\"param\": [values]}}", gtName, gts[j].line)
		}
		if err := checkGroundTruth(gt); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", gtName, gts[j].line, err)
		}
		c.GroundTruth = gt
	}
	return cases, nil
}

type row struct {
	line int
	v    any
}

// readLines reads a JSON Lines file of objects (a JSON array of objects is
// accepted too).
func readLines(fsys fs.FS, name string) ([]row, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		v, err := pyval.Decode(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var out []row
		for i, e := range v.([]any) {
			if _, ok := e.(*Dict); !ok {
				return nil, fmt.Errorf("%s: element %d is not an object", name, i+1)
			}
			out = append(out, row{i + 1, e})
		}
		return out, nil
	}
	var out []row
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		v, err := pyval.Decode(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: not JSON: %w", name, n, err)
		}
		if _, ok := v.(*Dict); !ok {
			return nil, fmt.Errorf("%s:%d: want a JSON object per line", name, n)
		}
		out = append(out, row{n, v})
	}
	return out, sc.Err()
}

// caseFromRow reads {"id", "question", "function"}.
func caseFromRow(v any, cat string) (*Case, error) {
	d := v.(*Dict)
	id, _ := d.Value("id").(string)
	if id == "" {
		return nil, errors.New(`the case has no "id" string`)
	}
	c := &Case{ID: id, Category: cat}
	if err := c.setQuestion(d.Value("question")); err != nil {
		return nil, fmt.Errorf("case %s: %w", id, err)
	}
	if err := c.setFunctions(d.Value("function")); err != nil {
		return nil, fmt.Errorf("case %s: %w", id, err)
	}
	return c, nil
}

// setQuestion takes BFCL's list of turns; a bare list of messages is one
// turn, and a string is one user message.
func (c *Case) setQuestion(q any) error {
	switch t := q.(type) {
	case string:
		c.Question = []any{[]any{dictOf("role", "user", "content", t)}}
		return nil
	case []any:
		if len(t) > 0 {
			if _, isMsg := t[0].(*Dict); isMsg {
				t = []any{t}
			}
		}
		for _, turn := range t {
			msgs, ok := turn.([]any)
			if !ok {
				return errors.New(`"question" must be a list of turns, each a list of {"role","content"} messages`)
			}
			for _, m := range msgs {
				md, ok := m.(*Dict)
				if !ok {
					return errors.New(`a message of "question" is not an object`)
				}
				if _, ok := md.Value("role").(string); !ok {
					return errors.New(`a message of "question" has no "role"`)
				}
			}
		}
		c.Question = t
		return nil
	}
	return errors.New(`"question" is missing: want a list of turns of {"role","content"} messages`)
}

// setFunctions takes the function docs: a list, or one object.
func (c *Case) setFunctions(f any) error {
	var list []any
	switch t := f.(type) {
	case []any:
		list = t
	case *Dict:
		list = []any{t}
	default:
		return errors.New(`"function" is missing: want a list of function docs`)
	}
	c.Functions = c.Functions[:0]
	for i, e := range list {
		fd, ok := e.(*Dict)
		if !ok {
			return fmt.Errorf("function %d is not an object", i+1)
		}
		if name, _ := fd.Value("name").(string); name == "" {
			return fmt.Errorf("function %d has no \"name\"", i+1)
		}
		c.Functions = append(c.Functions, fd)
	}
	c.offers, c.names = offeredNames(c.Functions)
	return nil
}

// checkGroundTruth checks the shape the checker relies on: each entry a
// one-key object naming a function, with an object of parameters.
func checkGroundTruth(gt []any) error {
	for i, e := range gt {
		d, ok := e.(*Dict)
		if !ok || d.Len() != 1 {
			return fmt.Errorf("ground truth entry %d: want {\"function name\": {\"param\": [values]}}", i+1)
		}
		if _, ok := d.Value(d.Keys[0]).(*Dict); !ok {
			return fmt.Errorf("ground truth entry %d (%s): the parameters are not an object", i+1, d.Keys[0])
		}
	}
	return nil
}

func dictOf(kv ...any) *Dict {
	d := NewDict()
	for i := 0; i+1 < len(kv); i += 2 {
		d.Set(kv[i].(string), kv[i+1])
	}
	return d
}

// function returns the doc of a function by its BFCL name.
func (c *Case) function(name string) *Dict {
	for _, f := range c.Functions {
		if f.Value("name") == name {
			return f
		}
	}
	return nil
}

// resolve maps a called name to the BFCL name: an offered (OpenAI-safe)
// name maps back, a BFCL name is itself, anything else stays as called.
func (c *Case) resolve(name string) string {
	if n, ok := c.names[name]; ok {
		return n
	}
	return name
}

// Opening renders the question as text: a lone user message is its
// content; otherwise each message is "role: content", system prompts
// included, in order.
func (c *Case) Opening() string {
	var msgs []*Dict
	for _, turn := range c.Question {
		for _, m := range turn.([]any) {
			msgs = append(msgs, m.(*Dict))
		}
	}
	if len(msgs) == 1 && msgs[0].Value("role") == "user" {
		return contentText(msgs[0].Value("content"))
	}
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(m.Value("role").(string) + ": " + contentText(m.Value("content")))
	}
	return b.String()
}

func contentText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyval.Dumps(v)
}
