package gym_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func compile(t *testing.T, doc json.RawMessage) *gym.Schema {
	t.Helper()
	s, err := gym.CompileSchema(doc)
	if err != nil {
		t.Fatalf("compile %s: %v", doc, err)
	}
	return s
}

func TestPartsSchemaAccepts(t *testing.T) {
	all := compile(t, gym.PartsSchema(1, 0))
	for _, doc := range []string{
		`{"parts":[{"type":"text","text":"ls -la"}]}`,
		`{"parts":[{"type":"text","text":""}]}`,
		`{"parts":[{"type":"tool_call","tool_call":{"id":"call_1","type":"function","function":{"name":"get_order","arguments":"{\"id\":\"W1\"}"}}}]}`,
		`{"parts":[{"type":"tool_call","tool_call":{"function":{"name":"f","arguments":"not json: the env judges it"}}}]}`,
		`{"parts":[{"type":"tool_result","tool_result":{"tool_call_id":"call_1","content":"ok","is_error":false}}]}`,
		`{"parts":[{"type":"gui_action","gui_action":{"action":"click","x":10,"y":20}}]}`,
		`{"parts":[{"type":"gui_action","gui_action":{"action":"drag","x":1,"y":2,"to_x":3,"to_y":4}}]}`,
		`{"parts":[{"type":"image","image":{"mime":"image/png","data":"iVBORw0KGgo=","width":1,"height":1}}]}`,
		`{"parts":[{"type":"image","image":{"mime":"image/png","ref":"sha256:00"}}]}`,
		`{"parts":[{"type":"file","file":{"path":"a.txt","mime":"text/plain","data":"aGk="}}]}`,
		`{"parts":[{"type":"text","text":"a"},{"type":"tool_call","tool_call":{"function":{"name":"f","arguments":"{}"}}}]}`,
	} {
		if err := all.Validate([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
	if err := compile(t, gym.PartsSchema(0, 0, gym.PartText)).Validate([]byte(`{"parts":[]}`)); err != nil {
		t.Errorf("minParts 0 rejects no parts: %v", err)
	}
}

func TestPartsSchemaRejects(t *testing.T) {
	text := compile(t, gym.PartsSchema(1, 2, gym.PartText))
	all := compile(t, gym.PartsSchema(1, 0))
	for _, tc := range []struct {
		schema *gym.Schema
		doc    string
		want   []string // every problem, in order
	}{
		{text, `{"parts":[]}`, []string{"at /parts: minItems: got 0, want 1"}},
		{text, `{}`, []string{"at /: missing property 'parts'"}},
		{text, `{"parts":"ls"}`, []string{"at /parts: got string, want array"}},
		{text, `{"parts":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"c"}]}`,
			[]string{"at /parts: maxItems: got 3, want 2"}},
		{text, `{"parts":[{"type":"tool_call","tool_call":{"function":{"name":"f","arguments":"{}"}}}]}`,
			[]string{`at /parts/0/type: got "tool_call", want "text"`}},
		{text, `{"parts":[{"type":"text","text":7}]}`, []string{"at /parts/0/text: got number, want string"}},
		{text, `{"parts":[{"type":"text","text":"a","extra":1}]}`, []string{"at /parts/0: additional properties 'extra' not allowed"}},
		{all, `{"parts":[{"type":"bogus"}]}`,
			[]string{`at /parts/0/type: got "bogus", want one of "text", "tool_call", "tool_result", "gui_action", "image", "file"`}},
		{all, `{"parts":[{"type":"gui_action","gui_action":{"action":"fly","ms":-1}}]}`, []string{
			"at /parts/0/gui_action/action: value must be one of 'click', 'double_click', 'right_click', 'move', 'drag', 'type', 'key', 'scroll', 'wait', 'click_element', 'done'",
			"at /parts/0/gui_action/ms: minimum: got -1, want 0"}},
		{all, `{"parts":[{"type":"tool_call","tool_call":{"function":{"name":""}}}]}`, []string{
			"at /parts/0/tool_call/function/name: minLength: got 0, want 1",
			"at /parts/0/tool_call/function: missing property 'arguments'"}},
		{all, `{"parts":[{"type":"file","file":{"mime":"text/plain"}}]}`, []string{"at /parts/0/file: missing property 'path'"}},
		{all, `{"parts":[{"type":"text","text":"ok"},{"type":"image","image":{}}]}`, []string{"at /parts/1/image: missing property 'mime'"}},
		{text, `{"parts":[`, []string{"not JSON: unexpected EOF"}},
	} {
		err := tc.schema.Validate([]byte(tc.doc))
		var se *gym.SchemaError
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v, want a *gym.SchemaError", tc.doc, err)
			continue
		}
		if strings.Join(se.Problems, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n got  %q\n want %q", tc.doc, se.Problems, tc.want)
		}
		if !strings.HasPrefix(err.Error(), "does not match the schema: ") {
			t.Errorf("%s: error %q", tc.doc, err)
		}
	}
}

func TestSchemaErrorCapsProblems(t *testing.T) {
	var parts []string
	for range 12 {
		parts = append(parts, `{"type":"text","text":1}`)
	}
	doc := `{"parts":[` + strings.Join(parts, ",") + `]}`
	err := compile(t, gym.PartsSchema(0, 0, gym.PartText)).Validate([]byte(doc))
	var se *gym.SchemaError
	if !errors.As(err, &se) || len(se.Problems) != 9 || se.Problems[8] != "and 4 more" {
		t.Errorf("got %v", err)
	}
}

func TestSchemaValidateValueAndZero(t *testing.T) {
	var zero *gym.Schema
	if err := zero.Validate([]byte(`anything`)); err != nil {
		t.Errorf("nil schema: %v", err)
	}
	empty := compile(t, nil)
	if err := empty.Validate([]byte(`{"x":1}`)); err != nil {
		t.Errorf("empty schema: %v", err)
	}
	s := compile(t, gym.PartsSchema(1, 1, gym.PartText))
	if string(s.Raw()) != string(gym.PartsSchema(1, 1, gym.PartText)) {
		t.Errorf("Raw: %s", s.Raw())
	}
	ok := map[string]any{"parts": []any{map[string]any{"type": "text", "text": "a"}}}
	if err := s.ValidateValue(ok); err != nil {
		t.Errorf("ValidateValue: %v", err)
	}
	if err := s.ValidateValue(map[string]any{"parts": []any{}}); err == nil {
		t.Error("ValidateValue accepted no parts")
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	for _, doc := range []string{`{`, `{"type":7}`, `{"$ref":"#/nope"}`} {
		if _, err := gym.CompileSchema(json.RawMessage(doc)); err == nil {
			t.Errorf("%s compiled", doc)
		}
	}
}

func TestPartSchemas(t *testing.T) {
	for _, pt := range gym.PartTypes {
		doc := gym.PartSchema(pt)
		if !json.Valid(doc) {
			t.Errorf("%s: schema is not JSON", pt)
		}
		if !strings.Contains(string(gym.PartsSchema(0, 0)), `"`+string(pt)+`":`) {
			t.Errorf("%s: missing from PartsSchema's $defs", pt)
		}
	}
}
