package server

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// checkTopLevel holds topLevel to encoding/json on one valid document.
func checkTopLevel(t *testing.T, doc []byte) {
	var m map[string]json.RawMessage
	isObject := json.Unmarshal(doc, &m) == nil && m != nil
	var keys []string
	vals := map[string][]byte{}
	err := topLevel(doc, func(k string, v []byte) bool {
		keys = append(keys, k)
		vals[k] = v
		return true
	})
	if !isObject {
		if err == nil && json.Valid(doc) && !bytes.HasPrefix(bytes.TrimSpace(doc), []byte("{")) {
			t.Fatalf("topLevel(%q) accepted a non-object", doc)
		}
		return
	}
	if err != nil {
		t.Fatalf("topLevel(%q): %v", doc, err)
	}
	want := make([]string, 0, len(m))
	for k := range m {
		want = append(want, k)
	}
	slices.Sort(want)
	got := slices.Compact(slices.Sorted(slices.Values(keys)))
	if !slices.Equal(got, want) {
		t.Fatalf("topLevel(%q) keys %q, encoding/json %q", doc, got, want)
	}
	for k, v := range m {
		// Duplicate keys: encoding/json keeps the last, and so does vals.
		if !bytes.Equal(bytes.TrimSpace(vals[k]), bytes.TrimSpace(v)) {
			t.Fatalf("topLevel(%q)[%q] = %q, encoding/json %q", doc, k, vals[k], v)
		}
	}
}

func TestTopLevel(t *testing.T) {
	for _, doc := range []string{
		`{}`, ` { } `, `{"session":"s_1","step_id":"a","action":{"parts":[{"type":"text","text":"}{\"]["}]}}`,
		`{"a":1,"b":-2.5e3,"c":true,"d":null,"e":[1,[2,{"x":"y"}]],"f":"\\\"","g":{}}`,
		"{\n\t\"k\\u0041y\" : \"v\" ,\r\n \"z\":[ ]}", `[1,2]`, `"x"`, `12`, `null`,
		`{"a":1,"a":2}`,
	} {
		checkTopLevel(t, []byte(doc))
	}
	for doc, want := range map[string]string{
		`{"session":"s_1","action":{"session":"inner"}}`: "s_1",
		`{"action":{"session":"inner"},"session":"s_2"}`: "s_2",
		`{"session":"s_\u0033"}`:                         "s_3",
		`{"session":5}`:                                  "",
		`{"action":{}}`:                                  "",
	} {
		if got := sessionOf([]byte(doc)); got != want {
			t.Errorf("sessionOf(%s) = %q, want %q", doc, got, want)
		}
	}
}

func FuzzTopLevel(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":"c"}],"d":"\"}"}`, `{"session":"x","action":{"parts":[]}}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			topLevel(doc, func(string, []byte) bool { return true }) // must not panic
			sessionOf(doc)
			return
		}
		checkTopLevel(t, doc)
	})
}
