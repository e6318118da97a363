package gym

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// partSchemas holds the JSON Schema of each part type. They are the wire
// contract documented in docs/protocol.md; env.describe returns them inside
// each kind's action and observation schemas.
var partSchemas = map[PartType]string{
	PartText: `{"type":"object","required":["type"],"additionalProperties":false,
		"properties":{"type":{"const":"text"},"text":{"type":"string"}}}`,
	PartToolCall: `{"type":"object","required":["type","tool_call"],"additionalProperties":false,
		"properties":{"type":{"const":"tool_call"},"tool_call":{"type":"object","required":["function"],
			"properties":{"id":{"type":"string"},"type":{"const":"function"},
				"function":{"type":"object","required":["name","arguments"],
					"properties":{"name":{"type":"string","minLength":1},"arguments":{"type":"string"}}}}}}}`,
	PartToolResult: `{"type":"object","required":["type","tool_result"],"additionalProperties":false,
		"properties":{"type":{"const":"tool_result"},"tool_result":{"type":"object","required":["content"],
			"properties":{"tool_call_id":{"type":"string"},"name":{"type":"string"},"content":{"type":"string"},"is_error":{"type":"boolean"}}}}}`,
	PartGUIAction: `{"type":"object","required":["type","gui_action"],"additionalProperties":false,
		"properties":{"type":{"const":"gui_action"},"gui_action":{"type":"object","required":["action"],"additionalProperties":false,
			"properties":{"action":{"enum":["click","double_click","right_click","move","drag","type","key","scroll","wait","click_element","done"]},
				"x":{"type":"integer"},"y":{"type":"integer"},"to_x":{"type":"integer"},"to_y":{"type":"integer"},
				"text":{"type":"string"},"key":{"type":"string"},"dx":{"type":"integer"},"dy":{"type":"integer"},
				"ms":{"type":"integer","minimum":0},"ref":{"type":"string"}}}}}`,
	PartImage: `{"type":"object","required":["type","image"],"additionalProperties":false,
		"properties":{"type":{"const":"image"},"image":{"$ref":"#/$defs/blob"}}}`,
	PartFile: `{"type":"object","required":["type","file"],"additionalProperties":false,
		"properties":{"type":{"const":"file"},"file":{"allOf":[{"$ref":"#/$defs/blob"},{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}]}}}`,
}

const blobSchema = `{"type":"object","required":["mime"],
	"properties":{"mime":{"type":"string"},"data":{"type":"string","contentEncoding":"base64"},"ref":{"type":"string"},
		"size":{"type":"integer"},"width":{"type":"integer"},"height":{"type":"integer"}}}`

// PartsSchema returns the JSON Schema of an object {"parts":[...]} whose parts
// are of the given types, with at least minParts and at most maxParts of them
// (maxParts 0: no upper bound). Kinds use it to build their Spec schemas.
func PartsSchema(minParts, maxParts int, types ...PartType) json.RawMessage {
	if len(types) == 0 {
		types = PartTypes
	}
	var b strings.Builder
	b.WriteString(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","required":["parts"],"properties":{"parts":{"type":"array"`)
	fmt.Fprintf(&b, `,"minItems":%d`, minParts)
	if maxParts > 0 {
		fmt.Fprintf(&b, `,"maxItems":%d`, maxParts)
	}
	b.WriteString(`,"items":{"oneOf":[`)
	for i, t := range types {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"$ref":"#/$defs/%s"}`, t)
	}
	b.WriteString(`]}}},"$defs":{"blob":`)
	b.WriteString(blobSchema)
	for _, t := range types {
		fmt.Fprintf(&b, `,%q:%s`, string(t), partSchemas[t])
	}
	b.WriteString(`}}`)
	var out bytes.Buffer
	if err := json.Compact(&out, []byte(b.String())); err != nil {
		panic("gym: bad built-in part schema: " + err.Error())
	}
	fastRules.Store(out.String(), &partsRule{min: minParts, max: maxParts, types: types})
	return out.Bytes()
}

// fastRules maps each schema document PartsSchema made to the rule it was
// made from, so CompileSchema can give such schemas a native fast path.
var fastRules sync.Map

// partsRule is what a PartsSchema document says, checked in Go. It is only
// ever used to accept: an action it does not accept goes through the JSON
// Schema validator, which gives the verdict and its precise message. So a
// fast-path check may be stricter than the schema, never looser; a test
// holds the two together on generated actions.
type partsRule struct {
	min, max int
	types    []PartType
}

var guiActions = map[string]bool{"click": true, "double_click": true, "right_click": true, "move": true, "drag": true,
	"type": true, "key": true, "scroll": true, "wait": true, "click_element": true, "done": true}

func (r *partsRule) accepts(a Action) bool {
	if len(a.Parts) < r.min || (r.max > 0 && len(a.Parts) > r.max) {
		return false
	}
	for i := range a.Parts {
		p := &a.Parts[i]
		if !slices.Contains(r.types, p.Type) || p.check() != nil {
			return false
		}
		switch p.Type {
		case PartToolCall:
			if p.ToolCall.Function.Name == "" || (p.ToolCall.Type != "" && p.ToolCall.Type != "function") {
				return false
			}
		case PartGUIAction:
			if !guiActions[p.GUIAction.Action] || p.GUIAction.Ms < 0 {
				return false
			}
		}
	}
	return true
}

// Schema is a compiled JSON Schema. The zero value accepts everything.
type Schema struct {
	raw  json.RawMessage
	sch  *jsonschema.Schema
	fast *partsRule // set for PartsSchema documents
}

var schemaSeq atomic.Int64

// CompileSchema compiles a JSON Schema document (draft 2020-12 unless it says
// otherwise).
func CompileSchema(doc json.RawMessage) (*Schema, error) {
	if len(doc) == 0 {
		return &Schema{}, nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	url := fmt.Sprintf("mem://schema/%d.json", schemaSeq.Add(1))
	if err := c.AddResource(url, v); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	out := &Schema{raw: doc, sch: s}
	var compact bytes.Buffer
	if json.Compact(&compact, doc) == nil {
		if r, ok := fastRules.Load(compact.String()); ok {
			out.fast = r.(*partsRule)
		}
	}
	return out, nil
}

// ValidateAction checks an action. Schemas made by PartsSchema accept valid
// actions natively, without JSON; anything else, and every rejection, goes
// through the JSON Schema validator on the action's JSON form, which raw
// returns.
func (s *Schema) ValidateAction(a Action, raw func() []byte) error {
	if s == nil || s.sch == nil || (s.fast != nil && s.fast.accepts(a)) {
		return nil
	}
	return s.Validate(raw())
}

// Raw returns the schema document.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// Validate checks a JSON document against the schema and returns a
// *SchemaError that says every place it fails.
func (s *Schema) Validate(doc []byte) error {
	if s == nil || s.sch == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return &SchemaError{Problems: []string{"not JSON: " + err.Error()}}
	}
	return s.ValidateValue(v)
}

// ValidateValue checks a decoded JSON value (as encoding/json decodes into
// any, with json.Number or float64 numbers).
func (s *Schema) ValidateValue(v any) error {
	if s == nil || s.sch == nil {
		return nil
	}
	err := s.sch.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return &SchemaError{Problems: []string{err.Error()}}
	}
	return &SchemaError{Problems: flatten(ve)}
}

// SchemaError lists where a document fails its schema, each problem as
// "at /parts/0/type: value must be one of ...".
type SchemaError struct {
	Problems []string
}

func (e *SchemaError) Error() string {
	return "does not match the schema: " + strings.Join(e.Problems, "; ")
}

// english renders validation messages. The library's messages go through a
// message.Printer, and a nil one panics; a Printer is copied per call, so one
// is safe to share.
var english = message.NewPrinter(language.English)

// flatten keeps the leaves of a validation error tree, which name the
// precise failures, and drops duplicates.
func flatten(ve *jsonschema.ValidationError) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		add := func(loc []string, what string) {
			msg := fmt.Sprintf("at /%s: %s", strings.Join(loc, "/"), what)
			if !seen[msg] {
				seen[msg] = true
				out = append(out, msg)
			}
		}
		if len(e.Causes) == 0 {
			add(e.InstanceLocation, e.ErrorKind.LocalizedString(english))
			return
		}
		causes := e.Causes
		switch e.ErrorKind.(type) {
		case *kind.OneOf, *kind.AnyOf:
			// A oneOf over part types fails in every branch; only the
			// branches whose "type" matched say what is wrong.
			var matched []*jsonschema.ValidationError
			var want []string
			var got any
			for _, c := range causes {
				if k := typeMismatch(c, e.InstanceLocation); k != nil {
					want, got = append(want, fmt.Sprintf("%q", k.Want)), k.Got
				} else {
					matched = append(matched, c)
				}
			}
			if len(matched) == 0 && len(want) > 0 {
				what := "want " + want[0]
				if len(want) > 1 {
					what = "want one of " + strings.Join(want, ", ")
				}
				add(append(e.InstanceLocation[:len(e.InstanceLocation):len(e.InstanceLocation)], "type"),
					fmt.Sprintf("got %q, %s", fmt.Sprint(got), what))
				return
			}
			if len(matched) > 0 {
				causes = matched
			}
		}
		for _, c := range causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(out)
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("and %d more", len(out)-8))
	}
	return out
}

// typeMismatch finds, in one branch of a oneOf at loc, the failed
// {"const": ...} on loc's "type" property: the branch is for another type.
func typeMismatch(branch *jsonschema.ValidationError, loc []string) *kind.Const {
	if k, ok := branch.ErrorKind.(*kind.Const); ok && len(branch.InstanceLocation) == len(loc)+1 &&
		branch.InstanceLocation[len(loc)] == "type" {
		return k
	}
	for _, c := range branch.Causes {
		if k := typeMismatch(c, loc); k != nil {
			return k
		}
	}
	return nil
}

// PartSchema returns the JSON Schema of one part type, with "#/$defs/blob"
// references resolved against PartsSchema's $defs.
func PartSchema(t PartType) json.RawMessage { return json.RawMessage(partSchemas[t]) }
