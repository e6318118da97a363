package gym

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// randomAction builds actions that are valid and invalid in every way the
// part schemas care about.
func randomAction(r *rand.Rand) Action {
	n := r.IntN(4)
	a := Action{Parts: make([]Part, n)}
	ints := func() *int {
		if r.IntN(3) == 0 {
			return nil
		}
		v := r.IntN(2000) - 100
		return &v
	}
	for i := range a.Parts {
		p := &a.Parts[i]
		p.Type = PartTypes[r.IntN(len(PartTypes))]
		if r.IntN(12) == 0 {
			p.Type = "bogus"
		}
		// Usually the payload of its own type, sometimes another's or two.
		payload := p.Type
		if r.IntN(8) == 0 {
			payload = PartTypes[r.IntN(len(PartTypes))]
		}
		payloads := []PartType{payload}
		if r.IntN(6) == 0 {
			payloads = append(payloads, PartTypes[r.IntN(len(PartTypes))])
		}
		for _, t := range payloads {
			switch t {
			case PartText:
				p.Text = []string{"", "ls -la", "50"}[r.IntN(3)]
			case PartToolCall:
				p.ToolCall = &ToolCall{ID: "c1", Type: []string{"", "function", "other"}[r.IntN(3)],
					Function: FunctionCall{Name: []string{"", "get_order"}[r.IntN(2)], Arguments: `{"id":1}`}}
			case PartToolResult:
				p.ToolResult = &ToolResult{CallID: "c1", Content: "ok", IsError: r.IntN(2) == 0}
			case PartGUIAction:
				p.GUIAction = &GUIAction{Action: []string{"click", "type", "done", "fly", ""}[r.IntN(5)], X: ints(), Y: ints(),
					Text: "hi", Ms: r.IntN(100) - 10, DX: r.IntN(5)}
			case PartImage:
				p.Image = &Blob{MIME: "image/png", Data: []byte{1, 2, 3}, Width: 3}
			case PartFile:
				p.File = &File{Path: "a.txt", Blob: Blob{MIME: "text/plain", Ref: "sha256:00"}}
			}
		}
	}
	return a
}

// TestFastPathAgreesWithSchema holds the native check to the JSON Schema
// validator: it never accepts what the schema rejects, and it accepts what
// the schema accepts (so the fast path is taken), on generated actions.
func TestFastPathAgreesWithSchema(t *testing.T) {
	rules := []struct {
		min, max int
		types    []PartType
	}{
		{1, 1, []PartType{PartText}},
		{1, 16, []PartType{PartText}},
		{0, 0, nil},
		{1, 8, []PartType{PartToolCall, PartText}},
		{1, 1, []PartType{PartGUIAction}},
		{0, 3, []PartType{PartImage, PartFile, PartToolResult}},
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (a failure reproduces with it)", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	for _, rule := range rules {
		sch, err := CompileSchema(PartsSchema(rule.min, rule.max, rule.types...))
		if err != nil {
			t.Fatal(err)
		}
		if sch.fast == nil {
			t.Fatalf("PartsSchema(%d, %d, %v) has no fast path", rule.min, rule.max, rule.types)
		}
		accepted := 0
		for range 3000 {
			a := randomAction(r)
			raw, _ := json.Marshal(a)
			slow := sch.Validate(raw) == nil
			fast := sch.fast.accepts(a)
			if fast && !slow {
				t.Fatalf("rule %+v: the fast path accepts %s, which the schema rejects: %v", rule, raw, sch.Validate(raw))
			}
			if slow && !fast {
				t.Errorf("rule %+v: the schema accepts %s but the fast path does not (it would be slow)", rule, raw)
			}
			if slow {
				accepted++
			}
			if got := sch.ValidateAction(a, func() []byte { return raw }); (got == nil) != slow {
				t.Fatalf("ValidateAction(%s) = %v, the schema says %v", raw, got, sch.Validate(raw))
			}
		}
		if accepted == 0 {
			t.Errorf("rule %+v: no generated action was valid; the test proves nothing", rule)
		}
	}
}

// A hand-written schema gets no fast path and is checked by the validator.
func TestHandWrittenSchemaHasNoFastPath(t *testing.T) {
	sch, err := CompileSchema(json.RawMessage(`{"type":"object","required":["parts"],"properties":{"parts":{"type":"array","maxItems":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if sch.fast != nil {
		t.Fatal("a hand-written schema was given a fast path")
	}
	a := Action{Parts: []Part{TextPart("a"), TextPart("b")}}
	if err := sch.ValidateAction(a, func() []byte { b, _ := json.Marshal(a); return b }); err == nil {
		t.Fatal("two parts accepted against maxItems 1")
	}
}
