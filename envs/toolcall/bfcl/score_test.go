package bfcl

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"strings"
	"testing"
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
// unknown id and a case without an answer.
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
		"simple_javascript": {0, 1, ReasonNoAnswer},        // no line for bfcl-smoke-6
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
	}
	o := rep.Overall
	if o.Cases != 6 || o.Answered != 5 || o.Correct != 2 || o.Accuracy != 2.0/6 {
		t.Errorf("overall %+v; want 2 of 6 correct, 5 answered", o)
	}
	if len(rep.UnknownIDs) != 1 || rep.UnknownIDs[0] != "simple_python_999" {
		t.Errorf("unknown ids %v; want simple_python_999", rep.UnknownIDs)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf, true); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{"overall", "33.33%", "1 × wrong_func_name", "unknown ids", "simple_python_999", "bfcl-smoke-4", "irrelevance_call"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Error(err)
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
