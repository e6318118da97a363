package bfcl

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

func smokeData(t *testing.T) *Dataset {
	t.Helper()
	sub, err := fs.Sub(smokeFS, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := LoadFS(sub)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestScoreAnswersFile scores testdata/answers.jsonl against the smoke
// suite: every result shape, per-category accuracy, failure reasons, an
// unknown id, and a category none of whose cases is answered (not scored,
// left out of the overall and the category mean).
func TestScoreAnswersFile(t *testing.T) {
	f, err := os.Open("testdata/answers.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	answers, err := ReadAnswers(f)
	if err != nil {
		t.Fatal(err)
	}
	rep := Score(smokeData(t), answers, "testdata/answers.jsonl")
	want := map[string]struct {
		correct, unanswered int
		reason              string
	}{
		"simple_python":     {1, 0, ""},                    // BFCL's shape, arguments an object, normalised string
		"multiple":          {0, 0, ReasonWrongFuncName},   // OpenAI tool calls
		"parallel":          {1, 0, ""},                    // a JSON string of BFCL's shape, any order, int for float
		"irrelevance":       {0, 0, ReasonIrrelevanceCall}, // a call, by BFCL's dotted name
		"simple_java":       {0, 0, ReasonJavaTypeError},   // an OpenAI message; delta not a string
		"simple_javascript": {0, 1, ""},                    // no line for bfcl-smoke-6: not scored
	}
	if len(rep.Categories) != len(want) {
		t.Fatalf("%d categories; want %d", len(rep.Categories), len(want))
	}
	for _, cs := range rep.Categories {
		w := want[cs.Category]
		if cs.Cases != 1 || cs.Correct != w.correct || cs.Unanswered != w.unanswered {
			t.Errorf("%s: %+v; want %d correct, %d unanswered", cs.Category, cs, w.correct, w.unanswered)
		}
		if w.reason != "" && (cs.Reasons[w.reason] != 1 || len(cs.Failures) != 1) {
			t.Errorf("%s: reasons %v; want %s", cs.Category, cs.Reasons, w.reason)
		}
		if scored := cs.Category != "simple_javascript"; scored != (cs.NotScored == "") {
			t.Errorf("%s: not scored %q; want scored %v", cs.Category, cs.NotScored, scored)
		}
	}
	o := rep.Overall
	if o.Cases != 5 || o.Answered != 5 || o.Correct != 2 || o.Accuracy != 2.0/5 {
		t.Errorf("overall %+v; want 2 of 5 correct, 5 answered (simple_javascript not scored)", o)
	}
	if rep.ScoredCategories != 5 || rep.NotScoredCases != 1 || rep.CategoryMean != 2.0/5 {
		t.Errorf("category mean %v over %d categories, %d cases not scored; want 0.4 over 5, 1", rep.CategoryMean, rep.ScoredCategories, rep.NotScoredCases)
	}
	if len(rep.UnknownIDs) != 1 || rep.UnknownIDs[0] != "simple_python_999" {
		t.Errorf("unknown ids %v; want simple_python_999", rep.UnknownIDs)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf, true); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{"overall (scored)", "40.00%", "1 × wrong_func_name", "unknown ids", "simple_python_999", "bfcl-smoke-4", "irrelevance_call",
		"not scored", "no answer for any of its cases", "over 5 scored categories", "left out of both: simple_javascript (1 case)"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Error(err)
	}
}

// relevanceData is the smoke suite plus a live_relevance file of two
// cases, which BFCL publishes without ground truth.
func relevanceData(t *testing.T) *Dataset {
	t.Helper()
	sub, err := fs.Sub(smokeFS, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	m := fstest.MapFS{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		m[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	fn := `[{"name": "ticket.book", "description": "Book a ticket.", "parameters": {"type": "dict", "properties": {"to": {"type": "string", "description": "Destination."}}, "required": ["to"]}}]`
	m["BFCL_v4_live_relevance.json"] = &fstest.MapFile{Data: []byte(
		`{"id": "live_relevance_0-0-0", "question": [[{"role": "user", "content": "Book me a ticket to Oslo."}]], "function": ` + fn + "}\n" +
			`{"id": "live_relevance_1-1-0", "question": [[{"role": "user", "content": "A ticket to Rome, please."}]], "function": ` + fn + "}\n")}
	ds, err := LoadFS(m)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestSelfCheckRelevanceNotScored: the self-check has no reference answer
// for live_relevance (BFCL gives no ground truth), so the category is
// reported as not scored, saying why, and is left out of the overall and
// the category mean instead of showing 0% and dragging both down; with a
// model's answers the same category is scored, a case it leaves
// unanswered counting as wrong.
func TestSelfCheckRelevanceNotScored(t *testing.T) {
	ds := relevanceData(t)
	rep := SelfCheck(ds)
	var rel *CategoryScore
	for i, cs := range rep.Categories {
		if cs.Category == "live_relevance" {
			rel = &rep.Categories[i]
		} else if cs.NotScored != "" || cs.Accuracy != 1 {
			t.Errorf("%s: %+v; want scored, every reference answer right", cs.Category, cs)
		}
	}
	if rel == nil {
		t.Fatalf("no live_relevance category in %+v", rep.Categories)
	}
	if rel.Cases != 2 || rel.Answered != 0 || !strings.Contains(rel.NotScored, "no ground truth") || len(rel.Failures) != 0 || len(rel.Reasons) != 0 {
		t.Errorf("live_relevance %+v; want 2 cases not scored for want of ground truth, no failures", *rel)
	}
	if rep.Overall.Cases != 6 || rep.Overall.Correct != 6 || rep.CategoryMean != 1 || rep.ScoredCategories != 6 || rep.NotScoredCases != 2 {
		t.Errorf("overall %+v, mean %v over %d, %d not scored; want 6/6, 1 over 6, 2 not scored", rep.Overall, rep.CategoryMean, rep.ScoredCategories, rep.NotScoredCases)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf, true); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{"not scored", "BFCL publishes no ground truth", "100.00% over 6 scored categories", "live_relevance (2 cases)"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "live_relevance_0-0-0") {
		t.Errorf("report lists a case of a category not scored as failed:\n%s", out)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"not_scored":"BFCL publishes no ground truth`)) {
		t.Errorf("JSON lacks not_scored: %s", b)
	}

	answers, err := ReadAnswers(strings.NewReader(`{"id": "live_relevance_0-0-0", "result": [{"ticket.book": {"to": "Oslo"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rep = Score(ds, answers, "answers")
	for _, cs := range rep.Categories {
		if cs.Category != "live_relevance" {
			continue
		}
		if cs.NotScored != "" || cs.Correct != 1 || cs.Unanswered != 1 || cs.Reasons[ReasonNoAnswer] != 1 || cs.Accuracy != 0.5 {
			t.Errorf("live_relevance with one answer: %+v; want scored, 1 correct, 1 unanswered (wrong)", cs)
		}
	}
	if rep.ScoredCategories != 1 || rep.Overall.Cases != 2 || rep.CategoryMean != 0.5 {
		t.Errorf("with answers for live_relevance alone: %d scored categories, overall %+v, mean %v; want 1, 2 cases, 0.5", rep.ScoredCategories, rep.Overall, rep.CategoryMean)
	}
}

func TestReadAnswersShapes(t *testing.T) {
	in := strings.Join([]string{
		`{"id": "a", "result": [{"f": {"x": 1}}, {"g": "{\"y\": 2}"}]}`,
		`{"id": "b", "result": [{"function": {"name": "f", "arguments": "{}"}}, {"name": "g", "arguments": {"y": 2}}]}`,
		`{"id": "c", "result": "[{\"f\": {\"x\": 1}}]"}`,
		`{"id": "d", "result": "Sorry, none of these fit."}`,
		`{"id": "e", "result": []}`,
		`{"id": "f", "result": [{"f": {}, "g": {}}, 5]}`,
		`{"id": "g", "result": {"content": "text only"}}`,
		`{"id": "h", "result": {"tool_calls": null, "content": "hi"}}`,
	}, "\n")
	answers, err := ReadAnswers(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Answer{}
	for _, a := range answers {
		got[a.ID] = a.Answer
	}
	if a := got["a"]; len(a.Calls) != 2 || a.Calls[0] != (Call{Name: "f", Arguments: `{"x": 1}`}) || a.Calls[1] != (Call{Name: "g", Arguments: `{"y": 2}`}) {
		t.Errorf("BFCL shape: %+v", a)
	}
	if a := got["b"]; len(a.Calls) != 2 || a.Calls[0].Name != "f" || a.Calls[1].Arguments != `{"y": 2}` {
		t.Errorf("OpenAI shape: %+v", a)
	}
	if a := got["c"]; len(a.Calls) != 1 || a.Calls[0].Name != "f" {
		t.Errorf("JSON string: %+v", a)
	}
	for _, id := range []string{"d", "g", "h"} {
		if a := got[id]; !a.Text {
			t.Errorf("%s: %+v; want a message", id, a)
		}
	}
	if a := got["e"]; a.Text || len(a.Calls) != 0 {
		t.Errorf("empty list: %+v; want no calls, not a message", a)
	}
	if a := got["f"]; len(a.Calls) != 2 || a.Calls[0].Malformed == "" || a.Calls[1].Malformed == "" {
		t.Errorf("malformed entries: %+v", a)
	}
}

func TestReadAnswersErrors(t *testing.T) {
	for in, want := range map[string]string{
		"{\"id\": \"a\", \"result\": []}\n{not json}": "answers line 2: not JSON",
		"\n\n[1, 2]":               "answers line 3: want an object",
		`{"result": []}`:           `answers line 1: no "id"`,
		`{"id": "a"}`:              `answers line 1 (a): no "result"`,
		`{"id": "a", "result": 5}`: `answers line 1 (a): "result" must be`,
		"{\"id\": \"a\", \"result\": []}\n{\"id\": \"a\", \"result\": []}": `answers line 2: id "a" was already answered on line 1`,
	} {
		_, err := ReadAnswers(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error containing %q", in, err, want)
		}
	}
}
