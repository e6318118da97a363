package bfcl

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/envs/toolcall"
)

// unpassable are the cases no answer passes under BFCL's own checker, and
// why their reference answers fail.
var unpassable = map[string]string{
	// ArrayList of "any": elements parse to strings; the ground truth holds 42 and true.
	"simple_java_36": ReasonListMismatch,
	"simple_java_65": ReasonListMismatch,
	// A ground-truth dict value that is a string, not a list of values.
	"simple_java_64": ReasonDictValue,
}

// TestReferenceScoresAll: in every category with a ground truth, its own
// first acceptable values pass every case but the three BFCL's checker
// cannot pass; irrelevance passes with a message.
func TestReferenceScoresAll(t *testing.T) {
	ds := loadData(t)
	want := map[string]int{"simple_python": 400, "simple_java": 100, "simple_javascript": 50, "multiple": 200,
		"parallel": 200, "parallel_multiple": 200, "irrelevance": 240}
	got := map[string]int{}
	for _, c := range ds.Cases {
		got[c.Category]++
		a, err := c.Reference()
		if err != nil {
			t.Errorf("%s: %v", c.ID, err)
			continue
		}
		r := c.Check(a)
		if reason, bad := unpassable[c.ID]; bad {
			if r.Valid || r.Reason != reason {
				t.Errorf("%s: %+v; want %s, which BFCL's checker gives every answer", c.ID, r, reason)
			}
			continue
		}
		if !r.Valid {
			t.Errorf("%s: the ground truth's answer fails: %s: %s (%s)", c.ID, r.Reason, r.Detail, a.Calls)
		}
	}
	for cat, n := range want {
		if got[cat] != n {
			t.Errorf("%s: %d cases; want %d", cat, got[cat], n)
		}
	}
	if len(ds.Skipped) != 0 || len(ds.Multi) != 200 {
		t.Errorf("skipped %q, %d multi-turn cases; want none skipped and multi_turn_base's 200", ds.Skipped, len(ds.Multi))
	}
	// The self-check plays every multi-turn case's ground truth through
	// BFCL's checker too: all 200 pass.
	rep := SelfCheck(ds)
	if rep.Overall.Cases != 1590 || rep.Overall.Correct != 1590-len(unpassable) {
		t.Errorf("self-check %d/%d correct; want %d/1590", rep.Overall.Correct, rep.Overall.Cases, 1590-len(unpassable))
	}
	for _, cs := range rep.Categories {
		if cs.Category == "multi_turn_base" && (cs.Cases != 200 || cs.Correct != 200) {
			t.Errorf("multi_turn_base: %d/%d; want 200/200 (%v)", cs.Correct, cs.Cases, cs.Failures)
		}
	}
}

// TestChangedAnswersFail: for every case with a ground truth, changing a
// value, dropping a required parameter, adding an undeclared one, adding
// or dropping a call, and calling another function each fail.
func TestChangedAnswersFail(t *testing.T) {
	ds := loadData(t)
	for _, c := range ds.Cases {
		if !HasGroundTruth(c.Category) || unpassable[c.ID] != "" {
			continue
		}
		ref, _ := c.Reference()
		first, _ := pyval.Decode([]byte(ref.Calls[0].Arguments))
		args := first.(*Dict)
		with := func(d *Dict) Answer {
			a := Answer{Calls: append([]Call(nil), ref.Calls...)}
			a.Calls[0].Arguments = pyval.Dumps(d)
			return a
		}
		check := func(what string, a Answer, reasons ...string) {
			t.Helper()
			r := c.Check(a)
			if r.Valid {
				t.Errorf("%s: %s passed", c.ID, what)
				return
			}
			for _, want := range reasons {
				if r.Reason == want {
					return
				}
			}
			t.Errorf("%s: %s failed with %s (%s); want %v", c.ID, what, r.Reason, r.Detail, reasons)
		}
		multi := len(ref.Calls) > 1
		orMatch := func(reasons ...string) []string {
			if multi {
				return []string{ReasonNoMatch}
			}
			return reasons
		}
		check("an extra call", Answer{Calls: append(append([]Call(nil), ref.Calls...), ref.Calls[0])}, ReasonWrongCount)
		if multi {
			check("a missing call", Answer{Calls: ref.Calls[1:]}, ReasonWrongCount)
		}
		extra := pyval.Copy(args).(*Dict)
		extra.Set("zz_undeclared", int64(1))
		check("an undeclared parameter", with(extra), orMatch(ReasonUnexpectedParam)...)
		fd := c.function(c.resolve(ref.Calls[0].Name))
		required, _ := fd.Value("parameters").(*Dict).Value("required").([]any)
		for _, r := range required {
			if args.Has(r.(string)) {
				d := pyval.Copy(args).(*Dict)
				d.Delete(r.(string))
				check("a missing required parameter", with(d), orMatch(ReasonMissingRequired)...)
				break
			}
		}
		for i, k := range args.Keys {
			changed, ok := changeValue(args.Vals[i])
			if !ok || pyContains(c.GroundTruth[0].(*Dict).Vals[0].(*Dict).Value(k), changed) {
				continue // a boolean whose both values are acceptable
			}
			d := pyval.Copy(args).(*Dict)
			d.Set(k, changed)
			check("a changed value of "+k, with(d), orMatch(ReasonStringMismatch, ReasonValueMismatch, ReasonListMismatch,
				ReasonDictValue, ReasonDictKey, ReasonTypeError, ReasonNestedTypeError, ReasonListDictCount)...)
			break
		}
		if len(c.Functions) > 1 && !multi {
			for _, f := range c.Functions {
				if f != fd {
					a := Answer{Calls: []Call{{Name: c.offered(f.Value("name").(string)), Arguments: ref.Calls[0].Arguments}}}
					check("another function", a, ReasonWrongFuncName)
					break
				}
			}
		}
	}
}

// changeValue returns a value no acceptable list would hold: a number
// plus a large odd amount, a string with a marker, a flipped boolean.
func changeValue(v any) (any, bool) {
	switch t := v.(type) {
	case int64:
		return t + 7919, true
	case float64:
		return t + 7919.5, true
	case bool:
		return !t, true
	case string:
		// Java and JavaScript collections are source text whose trailing
		// text BFCL ignores: mark the first element instead.
		if open := strings.IndexAny(t, "[{("); open >= 0 && (strings.HasPrefix(t, "new ") || open == 0) {
			if end := strings.IndexAny(t[open+1:], `",)}]`); end >= 0 {
				at := open + 1 + end
				return t[:at] + "zq" + t[at:], true
			}
		}
		return t + "zq", true
	}
	return nil, false
}

var reOpenAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestToolsCompile: every case's tools are valid OpenAI tools with
// JSON Schema parameters and safe names that map back.
func TestToolsCompile(t *testing.T) {
	ds := loadData(t)
	for _, c := range ds.Cases {
		tools := c.Tools()
		if _, err := toolcall.NewToolset(tools); err != nil {
			t.Errorf("%s: %v", c.ID, err)
			continue
		}
		for i, tool := range tools {
			if !reOpenAIName.MatchString(tool.Name) {
				t.Errorf("%s: tool name %q is not OpenAI-safe", c.ID, tool.Name)
			}
			if c.resolve(tool.Name) != c.Functions[i].Value("name") {
				t.Errorf("%s: %s maps back to %s", c.ID, tool.Name, c.resolve(tool.Name))
			}
			var sch struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(tool.Parameters, &sch); err != nil || sch.Type != "object" {
				t.Errorf("%s: parameters %s: want an object schema", c.ID, tool.Parameters)
			}
			if c.Language() != "python" {
				for name, p := range sch.Properties {
					var ps struct {
						Type string `json:"type"`
					}
					json.Unmarshal(p, &ps)
					if ps.Type != "string" {
						t.Errorf("%s: %s parameter %s is %s; want string (source text)", c.ID, c.Language(), name, ps.Type)
					}
				}
			}
		}
	}
}

func TestToolShape(t *testing.T) {
	c := mkCase(t, "simple_python", `[{"name": "geo.area", "description": "Area.", "parameters": {"type": "dict", "properties": {
		"side": {"type": "float", "description": "Side."}, "pt": {"type": "tuple", "items": {"type": "float"}, "description": "Point."},
		"opts": {"type": "dict", "properties": {"deep": {"type": "any"}}, "description": "Options."}}, "required": ["side"]}},
		{"name": "geo_area", "description": "Clash.", "parameters": {"type": "dict", "properties": {}, "required": []}}]`, "")
	tools := c.Tools()
	if tools[0].Name != "geo_area" || tools[1].Name != "geo_area_2" {
		t.Errorf("names %s, %s; want geo_area, geo_area_2", tools[0].Name, tools[1].Name)
	}
	want := `{"type": "object", "properties": {"side": {"type": "number", "description": "Side. This is a float type value.", "format": "float"}, ` +
		`"pt": {"type": "array", "items": {"type": "number"}, "description": "Point."}, ` +
		`"opts": {"type": "object", "properties": {"deep": {"type": "string"}}, "description": "Options."}}, "required": ["side"]}`
	if string(tools[0].Parameters) != want {
		t.Errorf("parameters\n%s\nwant\n%s", tools[0].Parameters, want)
	}
	if !strings.HasSuffix(tools[0].Description, "Python 3 syntax.") {
		t.Errorf("description %q: want the language note", tools[0].Description)
	}
	j := mkCase(t, "simple_java", `[{"name": "A.b", "description": "D.", "parameters": {"type": "dict", "properties": {
		"xs": {"type": "ArrayList", "items": {"type": "long"}, "description": "Xs."}}, "required": []}}]`, "")
	if got := string(j.Tools()[0].Parameters); got != `{"type": "object", "properties": {"xs": {"type": "string", "description": "Xs. This is Java ArrayList type parameter in string representation. The list elements are of type long; they are not in string representation."}}, "required": []}` {
		t.Errorf("java parameters %s", got)
	}
}

func TestLoadQuirks(t *testing.T) {
	doc := `{"name": "f", "description": "F.", "parameters": {"type": "dict", "properties": {"x": {"type": "integer", "description": "X."}}, "required": ["x"]}}`
	fsys := fstest.MapFS{
		// A JSON array file; the question a bare list of messages; the
		// function a lone object; answers paired by line where ids differ.
		"BFCL_v4_simple_python.json":                           {Data: []byte(`[{"id": "p0", "question": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "x is 1"}], "function": ` + doc + `}]`)},
		"BFCL_v4_parallel.json":                                {Data: []byte("\n{\"id\": \"q0\", \"question\": [[{\"role\": \"user\", \"content\": \"x 1 and 2\"}]], \"function\": [" + doc + "]}\n\n")},
		"BFCL_v4_multi_turn_long_context.json":                 {Data: []byte("{}")},
		"BFCL_v4_exec_simple.json":                             {Data: []byte("{}")},
		"README.md":                                            {Data: []byte("not data")},
		"possible_answer/BFCL_v4_simple_python.json":           {Data: []byte(`{"id": "other_id", "ground_truth": [{"f": {"x": [1]}}]}`)},
		"possible_answer/BFCL_v4_parallel.json":                {Data: []byte(`{"id": "q0", "ground_truth": [{"f": {"x": [1]}}, {"f": {"x": [2]}}]}`)},
		"possible_answer/BFCL_v4_multi_turn_long_context.json": {Data: []byte("{}")},
	}
	ds, err := LoadFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Cases) != 2 || len(ds.Skipped) != 2 {
		t.Fatalf("%d cases, skipped %q; want 2 cases, 2 skipped", len(ds.Cases), ds.Skipped)
	}
	p := ds.Cases[1]
	if p.ID != "p0" || p.Opening() != "system: Be brief.\n\nuser: x is 1" {
		t.Errorf("case %s opening %q", p.ID, p.Opening())
	}
	expect(t, p, calls("f", `{"x": 1}`), "")
	expect(t, ds.Cases[0], calls("f", `{"x": 2}`, "f", `{"x": 1}`), "")

	for name, tc := range map[string]struct {
		files fstest.MapFS
		want  string
	}{
		"no ground truth": {fstest.MapFS{"BFCL_v4_multiple.json": fsys["BFCL_v4_parallel.json"]}, "the ground truth of multiple"},
		"bad line": {fstest.MapFS{"BFCL_v4_irrelevance.json": {Data: []byte("{\"id\": \"i\", \"question\": \"q\", \"function\": []}\n{oops\n")}},
			"BFCL_v4_irrelevance.json:2: not JSON"},
		"no id":     {fstest.MapFS{"BFCL_v4_irrelevance.json": {Data: []byte(`{"question": "q", "function": []}`)}}, `:1: the case has no "id"`},
		"no data":   {fstest.MapFS{"notes.txt": {Data: []byte("x")}}, "no BFCL data"},
		"bad truth": {fstest.MapFS{"BFCL_v4_parallel.json": fsys["BFCL_v4_parallel.json"], "possible_answer/BFCL_v4_parallel.json": {Data: []byte(`{"id": "q0", "ground_truth": [{"f": [1]}]}`)}}, "the parameters are not an object"},
	} {
		_, err := LoadFS(tc.files)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want one containing %q", name, err, tc.want)
		}
	}
}
