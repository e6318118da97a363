package bfcl

import (
	"strings"
	"testing"
)

// mkCase builds a case from function docs and ground truth in BFCL's JSON.
func mkCase(t *testing.T, category, functions, groundTruth string) *Case {
	t.Helper()
	c := &Case{ID: "test_" + category, Category: category}
	if err := c.setQuestion("a question"); err != nil {
		t.Fatal(err)
	}
	if err := c.setFunctions(mustDecode(t, functions)); err != nil {
		t.Fatal(err)
	}
	if groundTruth != "" {
		gt := mustDecode(t, groundTruth).([]any)
		if err := checkGroundTruth(gt); err != nil {
			t.Fatal(err)
		}
		c.GroundTruth = gt
	}
	return c
}

// calls is an answer of name, arguments pairs.
func calls(nameArgs ...string) Answer {
	a := Answer{Calls: []Call{}}
	for i := 0; i+1 < len(nameArgs); i += 2 {
		a.Calls = append(a.Calls, Call{Name: nameArgs[i], Arguments: nameArgs[i+1]})
	}
	return a
}

// expect checks an answer's verdict: "" for a pass, else the reason.
func expect(t *testing.T, c *Case, a Answer, reason string) {
	t.Helper()
	r := c.Check(a)
	switch {
	case reason == "" && !r.Valid:
		t.Errorf("%s %v: failed (%s: %s); want a pass", c.Category, a, r.Reason, r.Detail)
	case reason != "" && r.Valid:
		t.Errorf("%s %v: passed; want %s", c.Category, a, reason)
	case reason != "" && r.Reason != reason:
		t.Errorf("%s %v: %s (%s); want %s", c.Category, a, r.Reason, r.Detail, reason)
	case !r.Valid && (r.ErrorType == "" || r.Detail == ""):
		t.Errorf("%s %v: a failure without error type or detail: %+v", c.Category, a, r)
	}
}

const forecastDoc = `[{"name": "weather.forecast", "description": "A forecast.", "parameters": {"type": "dict", "properties": {
	"city": {"type": "string", "description": "City."},
	"days": {"type": "integer", "description": "Days ahead."},
	"precision": {"type": "float", "description": "Rounding step."},
	"metric": {"type": "boolean", "description": "Metric units."},
	"fields": {"type": "array", "items": {"type": "string"}, "description": "Fields to return."},
	"limits": {"type": "dict", "description": "Bounds.", "properties": {"low": {"type": "integer"}, "high": {"type": "integer"}}},
	"stations": {"type": "array", "items": {"type": "dict"}, "description": "Stations."},
	"source": {"type": "string", "description": "Data source."}},
	"required": ["city", "days"]}}]`

const forecastGT = `[{"weather.forecast": {"city": ["San Francisco", "SF"], "days": [3], "precision": [2.0, ""],
	"metric": [true, ""], "fields": [["Rain", "wind speed"], ""], "limits": [{"low": [1], "high": ["", 9]}, ""],
	"stations": [[{"id": ["A1"]}, {"id": ["B2"]}], ""]}}]`

func TestSimpleRules(t *testing.T) {
	c := mkCase(t, "simple_python", forecastDoc, forecastGT)
	const f = "weather_forecast"
	for _, tc := range []struct {
		args, reason string
	}{
		{`{"city": "San Francisco", "days": 3}`, ""},
		// The ground truth's other acceptable values, and omittable ones.
		{`{"city": "SF", "days": 3, "precision": 2.0, "metric": true}`, ""},
		// String normalisation: case, spaces and ,./-_*^ do not count.
		{`{"city": "san-francisco", "days": 3}`, ""},
		{`{"city": "SAN_FRANCISCO.", "days": 3}`, ""},
		{`{"city": "s.f.", "days": 3}`, ""},
		{`{"city": "Los Angeles", "days": 3}`, ReasonStringMismatch},
		{`{"city": "San Fran", "days": 3}`, ReasonStringMismatch},
		// An int is accepted for a float, not a float for an int.
		{`{"city": "SF", "days": 3, "precision": 2}`, ""},
		{`{"city": "SF", "days": 3.0}`, ReasonTypeError},
		{`{"city": "SF", "days": 3, "precision": 2.5}`, ReasonValueMismatch},
		{`{"city": "SF", "days": 4}`, ReasonValueMismatch},
		{`{"city": "SF", "days": "3"}`, ReasonTypeError},
		{`{"city": "SF", "days": true}`, ReasonTypeError},
		{`{"city": "SF", "days": 3, "metric": false}`, ReasonValueMismatch},
		{`{"city": "SF", "days": 3, "metric": 1}`, ReasonTypeError},
		// Parameters: required, undeclared, declared but not in the answer.
		{`{"days": 3}`, ReasonMissingRequired},
		{`{"city": "SF"}`, ReasonMissingRequired},
		{`{"city": "SF", "days": 3, "zip": "94103"}`, ReasonUnexpectedParam},
		{`{"city": "SF", "days": 3, "source": "noaa"}`, ReasonUnexpectedParam},
		// Lists: elements normalised, order kept, element types checked.
		{`{"city": "SF", "days": 3, "fields": ["rain", "Wind-Speed"]}`, ""},
		{`{"city": "SF", "days": 3, "fields": ["wind speed", "rain"]}`, ReasonListMismatch},
		{`{"city": "SF", "days": 3, "fields": ["rain"]}`, ReasonListMismatch},
		// BFCL quirk: the "" alternative passes the element type check, so a
		// wrong element type surfaces as a list mismatch here.
		{`{"city": "SF", "days": 3, "fields": ["rain", 5]}`, ReasonListMismatch},
		{`{"city": "SF", "days": 3, "fields": "rain"}`, ReasonTypeError},
		// Dicts: key by key, "" marking an omittable key.
		{`{"city": "SF", "days": 3, "limits": {"low": 1}}`, ""},
		{`{"city": "SF", "days": 3, "limits": {"low": 1, "high": 9}}`, ""},
		{`{"city": "SF", "days": 3, "limits": {"low": 2}}`, ReasonDictValue},
		{`{"city": "SF", "days": 3, "limits": {"low": 1, "mid": 5}}`, ReasonDictKey},
		{`{"city": "SF", "days": 3, "limits": {"high": 9}}`, ReasonDictKey},
		// Lists of dicts: in order, each dict checked.
		{`{"city": "SF", "days": 3, "stations": [{"id": "a1"}, {"id": "B2"}]}`, ""},
		// BFCL quirk: the last alternative's failure is reported, here the
		// "" alternative's (no dicts).
		{`{"city": "SF", "days": 3, "stations": [{"id": "B2"}, {"id": "A1"}]}`, ReasonListDictCount},
		{`{"city": "SF", "days": 3, "stations": [{"id": "A1"}]}`, ReasonListDictCount},
		// Decoding.
		{`{"city": "SF", "days": 3`, ReasonDecoderFailed},
		{`["SF", 3]`, ReasonWrongFormat},
		{``, ReasonMissingRequired}, // empty arguments are {}
	} {
		expect(t, c, calls(f, tc.args), tc.reason)
	}
	expect(t, c, calls("weather.forecast", `{"city": "SF", "days": 3}`), "") // BFCL's own name
	expect(t, c, calls("weather_history", `{"city": "SF", "days": 3}`), ReasonWrongFuncName)
	expect(t, c, calls(f, `{"city": "SF", "days": 3}`, f, `{"city": "SF", "days": 3}`), ReasonWrongCount)
	expect(t, c, calls(), ReasonWrongCount)
	expect(t, c, Answer{Text: true}, ReasonDecoderFailed)
	expect(t, c, Answer{Calls: []Call{{Malformed: "a number"}}}, ReasonWrongFormat)

	// Parameters the answer needs, without "" among their values.
	strict := mkCase(t, "simple_python", forecastDoc, `[{"weather.forecast": {"city": ["SF"], "days": [3], "metric": [true],
		"fields": [["rain"]], "stations": [[{"id": ["A1"]}, {"id": ["B2"]}]]}}]`)
	const st = `"stations": [{"id": "A1"}, {"id": "B2"}]`
	expect(t, strict, calls(f, `{"city": "SF", "days": 3, "fields": ["rain"], `+st+`}`), ReasonMissingOptional)
	expect(t, strict, calls(f, `{"city": "SF", "days": 3, "metric": true, "fields": ["rain"], `+st+`}`), "")
	expect(t, strict, calls(f, `{"city": "SF", "days": 3, "metric": true, "fields": [5], `+st+`}`), ReasonNestedTypeError)
	expect(t, strict, calls(f, `{"city": "SF", "days": 3, "metric": true, "fields": ["rain"], "stations": [{"id": "B2"}, {"id": "A1"}]}`), ReasonDictValue)
}

// TestVariables: a value of another type than declared passes when the
// acceptable values are of its type (a variable name), compared exactly.
func TestVariables(t *testing.T) {
	c := mkCase(t, "simple_python", forecastDoc, `[{"weather.forecast": {"city": ["SF"], "days": [3], "limits": ["my_limits"]}}]`)
	expect(t, c, calls("weather_forecast", `{"city": "SF", "days": 3, "limits": "my_limits"}`), "")
	expect(t, c, calls("weather_forecast", `{"city": "SF", "days": 3, "limits": "My_Limits"}`), ReasonValueMismatch)
	// A dict where the answer is a variable skips the dict checker.
	expect(t, c, calls("weather_forecast", `{"city": "SF", "days": 3, "limits": {"low": 1}}`), ReasonValueMismatch)
}

func TestCheckerException(t *testing.T) {
	c := mkCase(t, "simple_python",
		`[{"name": "f", "description": "", "parameters": {"type": "dict", "properties": {"x": {"type": "number"}}, "required": []}}]`,
		`[{"f": {"x": [1]}}]`)
	expect(t, c, calls("f", `{"x": 1}`), ReasonCheckerException)
	expect(t, c, calls("f", `{}`), ReasonMissingOptional) // the type table is not consulted
}

const lampDoc = `[{"name": "lamp.set", "description": "Set a lamp.", "parameters": {"type": "dict", "properties": {
	"room": {"type": "string", "description": "Room."}, "level": {"type": "integer", "description": "Brightness."}},
	"required": ["room", "level"]}},
	{"name": "blinds.close", "description": "Close blinds.", "parameters": {"type": "dict", "properties": {
	"room": {"type": "string", "description": "Room."}}, "required": ["room"]}}]`

func TestParallel(t *testing.T) {
	c := mkCase(t, "parallel", lampDoc, `[{"lamp.set": {"room": ["kitchen"], "level": [3]}}, {"lamp.set": {"room": ["hall"], "level": [7]}}]`)
	k, h := `{"room": "kitchen", "level": 3}`, `{"room": "hall", "level": 7}`
	expect(t, c, calls("lamp_set", k, "lamp_set", h), "")
	expect(t, c, calls("lamp_set", h, "lamp_set", k), "") // any order
	expect(t, c, calls("lamp_set", k), ReasonWrongCount)
	expect(t, c, calls("lamp_set", k, "lamp_set", h, "lamp_set", h), ReasonWrongCount) // an extra call
	expect(t, c, calls("lamp_set", k, "lamp_set", k), ReasonNoMatch)
	r := c.Check(calls("lamp_set", k, "lamp_set", `{"room": "hall", "level": 8}`))
	if r.Reason != ReasonNoMatch || !strings.Contains(r.Detail, ReasonValueMismatch) {
		t.Errorf("a changed value in a parallel call: %+v; want cannot_find_match naming value_mismatch", r)
	}

	pm := mkCase(t, "parallel_multiple", lampDoc, `[{"lamp.set": {"room": ["kitchen"], "level": [3]}}, {"blinds.close": {"room": ["kitchen"]}}]`)
	expect(t, pm, calls("blinds_close", `{"room": "Kitchen"}`, "lamp_set", k), "")
	expect(t, pm, calls("lamp_set", k, "lamp_set", k), ReasonNoMatch)
}

func TestMultiple(t *testing.T) {
	c := mkCase(t, "multiple", lampDoc, `[{"blinds.close": {"room": ["study"]}}]`)
	expect(t, c, calls("blinds_close", `{"room": "study"}`), "")
	expect(t, c, calls("lamp_set", `{"room": "study", "level": 1}`), ReasonWrongFuncName)
	expect(t, c, calls("blinds_close", `{"room": "study"}`, "blinds_close", `{"room": "study"}`), ReasonWrongCount)
}

func TestIrrelevance(t *testing.T) {
	c := mkCase(t, "irrelevance", lampDoc, "")
	expect(t, c, Answer{Text: true}, "")
	expect(t, c, calls(), "")
	expect(t, c, calls("lamp_set", `{"room": "x", "level": 1}`), ReasonIrrelevanceCall)
	expect(t, c, calls("anything", `{}`), ReasonIrrelevanceCall)
	// As in BFCL, a call whose arguments do not decode counts as no call.
	expect(t, c, calls("lamp_set", `{"room": `), "")

	rel := mkCase(t, "live_relevance", lampDoc, "")
	expect(t, rel, calls("lamp_set", `{"room": "x", "level": 1}`), "")
	expect(t, rel, Answer{Text: true}, ReasonRelevanceNoCall)
}

const javaDoc = `[{"name": "Ledger.post", "description": "Post an entry.", "parameters": {"type": "dict", "properties": {
	"count": {"type": "integer", "description": "c"}, "id": {"type": "long", "description": "i"},
	"ratio": {"type": "float", "description": "r"}, "share": {"type": "double", "description": "s"},
	"open": {"type": "boolean", "description": "o"}, "name": {"type": "String", "description": "n"},
	"tags": {"type": "ArrayList", "items": {"type": "String"}, "description": "t"},
	"nums": {"type": "Array", "items": {"type": "integer"}, "description": "n"},
	"meta": {"type": "HashMap", "description": "m"}, "ctx": {"type": "any", "description": "c"},
	"mode": {"type": "integer", "description": "a constant"}},
	"required": ["count", "id"]}}]`

const javaGT = `[{"Ledger.post": {"count": [5], "id": [42], "ratio": [1.5, ""], "share": [0.25, ""], "open": [true, ""],
	"name": ["Main Account", ""], "tags": [["q1", "cash"], ""], "nums": [[1, 2], ""], "meta": [{"k": ["v"], "n": [1]}, ""],
	"ctx": ["session", ""], "mode": ["Mode.FAST", ""]}}]`

func TestJavaTypedStrings(t *testing.T) {
	c := mkCase(t, "simple_java", javaDoc, javaGT)
	ref, err := c.Reference()
	if err != nil {
		t.Fatal(err)
	}
	expect(t, c, ref, "")
	const f = "Ledger_post"
	for _, tc := range []struct{ args, reason string }{
		{`{"count": "5", "id": "42L"}`, ""},
		{`{"count": 5, "id": "42L"}`, ReasonJavaTypeError}, // not a string
		{`{"count": "5", "id": 42}`, ReasonJavaTypeError},
		{`{"count": "5", "id": "42"}`, ReasonTypeError}, // a long needs its L
		{`{"count": "5L", "id": "42L"}`, ReasonTypeError},
		{`{"count": "five", "id": "42L"}`, ReasonTypeError},
		{`{"count": "6", "id": "42L"}`, ReasonValueMismatch},
		{`{"count": "5", "id": "42L", "ratio": "1.5f"}`, ""},
		{`{"count": "5", "id": "42L", "ratio": "1.5"}`, ReasonTypeError},
		{`{"count": "5", "id": "42L", "share": "0.25"}`, ""},
		{`{"count": "5", "id": "42L", "open": "true"}`, ""},
		{`{"count": "5", "id": "42L", "open": "True"}`, ReasonTypeError},
		{`{"count": "5", "id": "42L", "name": "main-account"}`, ""},
		{`{"count": "5", "id": "42L", "tags": "new ArrayList<String>() {{ add(\"Q1\"); add(\"cash\"); }}"}`, ""},
		{`{"count": "5", "id": "42L", "tags": "new ArrayList<>(Arrays.asList(\"cash\", \"q1\"))"}`, ReasonListMismatch},
		{`{"count": "5", "id": "42L", "nums": "new int[] {1, 2}"}`, ""},
		{`{"count": "5", "id": "42L", "nums": "[1, 2]"}`, ReasonTypeError},
		{`{"count": "5", "id": "42L", "meta": "new HashMap<String, Object>() {{ put(\"k\", \"v\"); put(\"n\", 1); }}"}`, ""},
		{`{"count": "5", "id": "42L", "meta": "new HashMap<String, Object>() {{ put(\"k\", \"v\"); }}"}`, ReasonDictKey},
		{`{"count": "5", "id": "42L", "ctx": "Session"}`, ""},
		{`{"count": "5", "id": "42L", "mode": "Mode.FAST"}`, ""}, // a constant where an int is declared
		{`{"count": "5", "id": "42L", "mode": "mode.fast"}`, ReasonValueMismatch},
	} {
		expect(t, c, calls(f, tc.args), tc.reason)
	}
}

const jsDoc = `[{"name": "plotChart", "description": "Plot.", "parameters": {"type": "dict", "properties": {
	"title": {"type": "String", "description": "t"}, "width": {"type": "integer", "description": "w"},
	"scale": {"type": "float", "description": "s"}, "animate": {"type": "Boolean", "description": "a"},
	"series": {"type": "array", "items": {"type": "String"}, "description": "s"},
	"style": {"type": "dict", "description": "s", "properties": {"color": {"type": "String"}}},
	"seed": {"type": "Bigint", "description": "s"}, "data": {"type": "any", "description": "d"}},
	"required": ["title"]}}]`

const jsGT = `[{"plotChart": {"title": ["Sales"], "width": [800, ""], "scale": [1.5, ""], "animate": [false, ""],
	"series": [["north", "south"], ""], "style": [{"color": ["red"]}, ""], "seed": [7, ""], "data": ["salesData", ""]}}]`

func TestJavaScriptTypedStrings(t *testing.T) {
	c := mkCase(t, "simple_javascript", jsDoc, jsGT)
	ref, err := c.Reference()
	if err != nil {
		t.Fatal(err)
	}
	expect(t, c, ref, "")
	for _, tc := range []struct{ args, reason string }{
		{`{"title": "'Sales'"}`, ""},
		{`{"title": "sales"}`, ""},
		{`{"title": "Sales", "width": 800}`, ReasonJSTypeError},
		{`{"title": "Sales", "width": "800"}`, ""},
		{`{"title": "Sales", "width": "800.0"}`, ReasonTypeError},
		{`{"title": "Sales", "scale": "1.5"}`, ""},
		{`{"title": "Sales", "animate": "false"}`, ""},
		{`{"title": "Sales", "series": "['north', 'south']"}`, ""},
		{`{"title": "Sales", "series": "new Array('north', 'south')"}`, ""},
		{`{"title": "Sales", "series": "['south', 'north']"}`, ReasonListMismatch},
		{`{"title": "Sales", "style": "{color: 'red'}"}`, ""},
		{`{"title": "Sales", "style": "{color: 'blue'}"}`, ReasonDictValue},
		{`{"title": "Sales", "seed": "7n"}`, ""},
		{`{"title": "Sales", "seed": "7"}`, ReasonTypeError},
		{`{"title": "Sales", "data": "salesData"}`, ""},
	} {
		expect(t, c, calls("plotChart", tc.args), tc.reason)
	}
}

func TestReference(t *testing.T) {
	c := mkCase(t, "simple_python", forecastDoc, `[{"weather.forecast": {"city": ["", "SF"], "days": [3], "metric": [""],
		"limits": [{"low": ["", 1], "high": [""]}], "undeclared": ["", 1]}}]`)
	a, err := c.Reference()
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Calls) != 1 || a.Calls[0].Name != "weather_forecast" {
		t.Fatalf("reference %+v; want one call of weather_forecast", a)
	}
	if got, want := a.Calls[0].Arguments, `{"city": "SF", "days": 3, "limits": {"low": 1}}`; got != want {
		t.Errorf("reference arguments %s; want %s (\"\" skipped, undeclared parameters left out)", got, want)
	}
	expect(t, c, a, "")
	irr := mkCase(t, "irrelevance", lampDoc, "")
	if a, err := irr.Reference(); err != nil || !a.Text {
		t.Errorf("irrelevance reference %+v, %v; want a message", a, err)
	}
}
