package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// checkDecode holds decodeFrame's fast path to encoding/json on one frame:
// each request it reads is the one decodeRequestJSON reads from the same
// bytes, with the same error, and a step it decoded has the params
// decodeStepJSON gives, to the last nil slice. It returns, for each item,
// the request as encoding/json reads it (Params included, which a decoded
// step drops).
func checkDecode(t *testing.T, frame []byte) []wire.Request {
	t.Helper()
	items, batch := decodeFrame(nil, frame)
	trimmed := bytes.TrimSpace(frame)
	raws := []json.RawMessage{trimmed}
	if batch {
		raws = nil
		if err := json.Unmarshal(trimmed, &raws); err != nil || len(raws) != len(items) {
			t.Fatalf("frame %q: a batch of %d items, encoding/json reads %d (%v)", frame, len(items), len(raws), err)
		}
	}
	slow := make([]wire.Request, len(items))
	for i, it := range items {
		if !batch && len(trimmed) > 0 && trimmed[0] == '[' {
			if it.err == nil {
				t.Fatalf("frame %q: a bad batch read as a request", frame)
			}
			continue // a batch refused whole: not one request to compare
		}
		if !batch && len(trimmed) == 0 {
			continue
		}
		werr := decodeRequestJSON(raws[i], &slow[i])
		if !reflect.DeepEqual(it.err, werr) {
			t.Fatalf("request %q: error %+v, encoding/json's %+v", raws[i], it.err, werr)
		}
		want := slow[i]
		got := it.req.Request
		if it.req.decoded {
			got.Params = want.Params // dropped once read
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("request %q read as %+v, by encoding/json as %+v", raws[i], got, want)
		}
		if !it.req.decoded {
			continue
		}
		if want.Method != wire.MethodSessionStep {
			t.Fatalf("request %q: params of %s read as a step's", raws[i], want.Method)
		}
		p, e := decodeStepJSON(want.Params)
		if e != nil {
			t.Fatalf("step params %q read fast, refused by encoding/json: %v", want.Params, e)
		}
		if !reflect.DeepEqual(p, it.req.step) {
			t.Fatalf("step params %q read as %#v, by encoding/json as %#v", want.Params, it.req.step, p)
		}
	}
	return slow
}

// TestDecodeFast reads requests of every shape the fast path reads, and of
// shapes it leaves to encoding/json, and checks that both read the same
// (checkDecode), and that the requests agents send are read fast.
func TestDecodeFast(t *testing.T) {
	step := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"session.step","params":` + params + `}`
	}
	fast := map[string]string{
		"the Go client's": string(mustJSON(t, wire.Request{JSONRPC: "2.0", ID: json.RawMessage(`17`), Method: wire.MethodSessionStep,
			Params: mustJSON(t, wire.StepParams{Session: "s_1", StepID: "s_1-3", Action: gym.TextAction("ls -la <a&b>\n\t\"x\"")})})),
		"escapes":        step(`{"session":"s_1","action":{"parts":[{"type":"text","text":"a\nb\t\"c\"\\\/\u00e9\u0000\b\f\r\u2028"}]}}`),
		"utf-8":          step(`{"session":"s_1","action":{"parts":[{"type":"text","text":"héllo wörld ✓ 😀"}]}}`),
		"surrogates":     step(`{"session":"s_1","action":{"parts":[{"type":"text","text":"\ud83d\ude00 \ud83d"}]}}`),
		"whitespace":     " {\n \"jsonrpc\" : \"2.0\" ,\t\"method\" : \"session.step\" , \"params\" : { \"action\" : { \"parts\" : [ { \"text\" : \"x\" , \"type\" : \"text\" } ] } , \"session\" : \"s\" } , \"id\" : \"a\" } ",
		"tool call":      step(`{"session":"s_1","step_id":"x","action":{"parts":[{"type":"tool_call","tool_call":{"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"id\":\"W1\"}"}}},{"type":"text","text":"and"}]}}`),
		"other parts":    step(`{"session":"s_1","action":{"parts":[{"type":"image","image":{"mime":"image/png","data":"AAEC"}},{"type":"gui_action","gui_action":{"action":"click","x":1,"y":2}}]}}`),
		"unknown keys":   step(`{"session":"s_1","action":{"parts":[{"type":"text","text":"x","colour":"red"}],"extra":1}}`),
		"a turn":         step(`{"session":"s_1","action":{"parts":[{"type":"text","text":"x"}]},"turn":{"response":"x","response_ids":[1,2],"messages":[{"role":"user","content":"hi"}]}}`),
		"a null turn":    step(`{"session":"s_1","action":{"parts":[]},"turn":null}`),
		"no parts":       step(`{"session":"s_1","action":{}}`),
		"null parts":     step(`{"session":"s_1","action":{"parts":null}}`),
		"no session":     step(`{"action":{"parts":[{"type":"text","text":"x"}]}}`),
		"an odd type":    step(`{"session":"s","action":{"parts":[{"type":"\u0074ext","text":"x"},{"type":"thought"},{}]}}`),
		"escaped ids":    step(`{"session":"s_\u0031","step_id":"a\"b","action":{"parts":[{"type":"text","text":"x"}]}}`),
		"notification":   `{"jsonrpc":"2.0","method":"session.step","params":{"session":"s","action":{"parts":[]}}}`,
		"a null id":      `{"jsonrpc":"2.0","id":null,"method":"session.step","params":{"session":"s","action":{"parts":[]}}}`,
		"a string id":    `{"jsonrpc":"2.0","id":"x\"y","method":"session.step","params":{"session":"s","action":{"parts":[]}}}`,
		"a float id":     `{"jsonrpc":"2.0","id":-1.5e3,"method":"session.step","params":{"session":"s","action":{"parts":[]}}}`,
		"escaped key":    step(`{"sess\u0069on":"s","action":{"parts":[]}}`),
		"a step batch":   `[` + step(`{"session":"a","action":{"parts":[]}}`) + `,` + step(`{"session":"b","action":{"parts":[]}}`) + `]`,
		"an info":        `{"jsonrpc":"2.0","id":1,"method":"server.info"}`,
		"a create":       `{"jsonrpc":"2.0","id":1,"method":"session.create","params":{"env":"echo-v1"}}`,
		"null params":    `{"jsonrpc":"2.0","id":1,"method":"session.close","params":null}`,
		"unknown method": `{"jsonrpc":"2.0","id":1,"method":"session.jump","params":{"x":1}}`,
	}
	declined := map[string]string{
		"duplicate session":   step(`{"session":"a","session":"b","action":{"parts":[]}}`),
		"duplicate action":    step(`{"session":"a","action":{"parts":[]},"action":{"parts":[{"type":"text","text":"x"}]}}`),
		"duplicate turn":      step(`{"session":"a","action":{"parts":[]},"turn":{"response":"a"},"turn":{"prompt":"b"}}`),
		"a capital key":       step(`{"Session":"a","action":{"parts":[]}}`),
		"a capital action":    step(`{"session":"a","Action":{"parts":[]}}`),
		"an unknown field":    step(`{"session":"a","action":{"parts":[]},"retry":true}`),
		"a number session":    step(`{"session":12,"action":{"parts":[]}}`),
		"a null session":      step(`{"session":null,"action":{"parts":[]}}`),
		"a bool step id":      step(`{"session":"a","step_id":true,"action":{"parts":[]}}`),
		"no action":           step(`{"session":"a"}`),
		"a null action":       step(`{"session":"a","action":null}`),
		"a string action":     step(`{"session":"a","action":"ls"}`),
		"an array action":     step(`{"session":"a","action":[]}`),
		"parts an object":     step(`{"session":"a","action":{"parts":{}}}`),
		"a number part":       step(`{"session":"a","action":{"parts":[5]}}`),
		"a number text":       step(`{"session":"a","action":{"parts":[{"type":"text","text":5}]}}`),
		"a number type":       step(`{"session":"a","action":{"parts":[{"type":7}]}}`),
		"a string tool call":  step(`{"session":"a","action":{"parts":[{"type":"tool_call","tool_call":"x"}]}}`),
		"number arguments":    step(`{"session":"a","action":{"parts":[{"type":"tool_call","tool_call":{"function":{"name":"f","arguments":{}}}}]}}`),
		"a number turn":       step(`{"session":"a","action":{"parts":[]},"turn":5}`),
		"a bad turn field":    step(`{"session":"a","action":{"parts":[]},"turn":{"response_ids":"x"}}`),
		"params an array":     step(`[1,2]`),
		"params a number":     step(`5`),
		"null step params":    step(`null`),
		"no step params":      `{"jsonrpc":"2.0","id":1,"method":"session.step"}`,
		"no jsonrpc":          `{"id":1,"method":"server.info"}`,
		"wrong jsonrpc":       `{"jsonrpc":"1.0","id":1,"method":"server.info"}`,
		"a number jsonrpc":    `{"jsonrpc":2,"id":1,"method":"server.info"}`,
		"no method":           `{"jsonrpc":"2.0","id":1}`,
		"an empty method":     `{"jsonrpc":"2.0","id":1,"method":""}`,
		"a number method":     `{"jsonrpc":"2.0","id":1,"method":5}`,
		"an object id":        `{"jsonrpc":"2.0","id":{"a":1},"method":"server.info"}`,
		"a bool id":           `{"jsonrpc":"2.0","id":true,"method":"server.info"}`,
		"a duplicate id":      `{"jsonrpc":"2.0","id":1,"id":2,"method":"server.info"}`,
		"a capital Method":    `{"jsonrpc":"2.0","id":1,"Method":"server.info"}`,
		"an extra key":        `{"jsonrpc":"2.0","id":1,"method":"server.info","x":1}`,
		"not UTF-8":           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session.step\",\"params\":{\"session\":\"\xe9\",\"action\":{\"parts\":[]}}}",
		"not JSON":            `{"jsonrpc":"2.0","id":1,"method":`,
		"trailing data":       `{"jsonrpc":"2.0","id":1,"method":"server.info"} {}`,
		"not an object":       `42`,
		"too deep":            step(`{"session":"a","action":{"parts":[{"type":"text","text":"x","gui_action":` + nested(maxJSONDepth+1) + `}]}}`),
		"a bad batch element": `[` + step(`{"session":"a","session":"b","action":{"parts":[]}}`) + `,{"jsonrpc":"2.0"}]`,
	}
	for name, frame := range fast {
		t.Run("fast/"+name, func(t *testing.T) {
			checkDecode(t, []byte(frame))
			items, _ := decodeFrame(nil, []byte(frame))
			for _, it := range items {
				if it.err != nil {
					t.Fatalf("%s: %v", frame, it.err)
				}
				if it.req.Method == wire.MethodSessionStep && !it.req.decoded {
					t.Errorf("%s: the step was not read with the frame", frame)
				}
			}
		})
	}
	for name, frame := range declined {
		t.Run("declined/"+name, func(t *testing.T) {
			checkDecode(t, []byte(frame))
			items, _ := decodeFrame(nil, []byte(frame))
			for _, it := range items {
				if it.req.decoded {
					t.Errorf("%s: read fast, want it left to encoding/json", frame)
				}
			}
		})
	}
}

// TestDecodeFrameCopies: the requests decodeFrame reads do not refer to the
// frame's bytes, which the reader reuses for the next frame.
func TestDecodeFrameCopies(t *testing.T) {
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":"abc","method":"session.step","params":{"session":"s_1","step_id":"x","action":{"parts":[{"type":"text","text":"hello"},{"type":"tool_call","tool_call":{"id":"c","function":{"name":"f","arguments":"{}"}}}]},"turn":{"response":"r"}}}`,
		`{"jsonrpc":"2.0","id":"abc","method":"session.create","params":{"env":"echo-v1"}}`,
		`{"jsonrpc":"2.0","id":"abc","method":"session.step","params":{"session":"s_1","action":{"parts":[{"type":"image","image":{"mime":"image/png","data":"AAEC"}}]}}}`,
	} {
		buf := []byte(frame)
		items, _ := decodeFrame(nil, buf)
		before := mustJSON(t, items[0].req.Request)
		step := mustJSON(t, items[0].req.step)
		for i := range buf {
			buf[i] = 'X'
		}
		if after := mustJSON(t, items[0].req.Request); !bytes.Equal(before, after) {
			t.Errorf("%s: the request changed with the frame's bytes: %s, then %s", frame, before, after)
		}
		if after := mustJSON(t, items[0].req.step); !bytes.Equal(step, after) {
			t.Errorf("%s: the step changed with the frame's bytes: %s, then %s", frame, step, after)
		}
	}
}

// TestUnquote holds unquote to encoding/json on strings with every escape,
// and checks what it leaves to encoding/json.
func TestUnquote(t *testing.T) {
	for _, tok := range []string{`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u0041\u00e9\u2028\uFFFF\u0000"`, `"é ✓ 😀"`, `"a\u0062c"`} {
		var want string
		if err := json.Unmarshal([]byte(tok), &want); err != nil {
			t.Fatal(err)
		}
		if got, ok := unquote([]byte(tok)); !ok || got != want {
			t.Errorf("unquote(%s) = %q, %v; encoding/json %q", tok, got, ok, want)
		}
	}
	for _, tok := range []string{`"\ud83d\ude00"`, `"\udc00"`, "\"\xe9\"", `"a`, `5`, `null`, `"\x"`, `"\u12"`} {
		if got, ok := unquote([]byte(tok)); ok {
			t.Errorf("unquote(%s) = %q, want it left to encoding/json", tok, got)
		}
	}
	if got, ok := unquoteOneOf([]byte(`"session.step"`), methods); !ok || got != wire.MethodSessionStep {
		t.Errorf("unquoteOneOf = %q, %v", got, ok)
	}
	if got, ok := unquoteOneOf([]byte(`"sess\u0069on.step"`), methods); !ok || got != wire.MethodSessionStep {
		t.Errorf("unquoteOneOf(escaped) = %q, %v", got, ok)
	}
}

// TestElemIter holds elemIter to encoding/json on arrays.
func TestElemIter(t *testing.T) {
	for _, doc := range []string{`[]`, ` [ ] `, `[1]`, `[1, "a" ,{"b":[2,"]"]},[[]],null,true,-2.5e-3]`, "[\n\"x\"\t]"} {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		var got []string
		e := iterElems([]byte(doc))
		for v, ok := e.next(); ok; v, ok = e.next() {
			got = append(got, string(v))
		}
		if e.err != nil {
			t.Fatalf("elemIter(%s): %v", doc, e.err)
		}
		if len(got) != len(want) {
			t.Fatalf("elemIter(%s) = %q, encoding/json %q", doc, got, want)
		}
		for i := range got {
			if got[i] != string(want[i]) {
				t.Fatalf("elemIter(%s)[%d] = %q, encoding/json %q", doc, i, got[i], want[i])
			}
		}
	}
	for _, doc := range []string{`{}`, `5`, `"[1]"`, `[1`} {
		e := iterElems([]byte(doc))
		for _, ok := e.next(); ok; _, ok = e.next() {
		}
		if e.err == nil {
			t.Errorf("elemIter(%s) accepted it", doc)
		}
	}
}

// FuzzDecodeFast holds the fast path to encoding/json on arbitrary steps
// (see checkDecode): the action and params the fuzzer makes are put in a
// step frame, and also sent as they are.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range []string{
		`{"parts":[{"type":"text","text":"ls"}]}`, `{"parts":[{"type":"tool_call","tool_call":{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}}]}`,
		`{"parts":[{"type":"text","text":"\u00e9\ud83d\ude00\n"}]}`, `{"parts":[]}`, `{"parts":null}`, `{"Parts":[]}`, `{"parts":[{"type":"text","type":"x"}]}`,
		`{"parts":[{"type":"image","image":{"mime":"image/png","data":"AAEC"}}]}`, `"ls"`, `[]`, `{}`,
	} {
		f.Add([]byte(s), []byte(`"s_1"`), []byte(`{"response":"r"}`))
	}
	f.Fuzz(func(t *testing.T, action, session, turn []byte) {
		params := `{"session":` + string(session) + `,"action":` + string(action) + `,"turn":` + string(turn) + `}`
		for _, frame := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"session.step","params":` + params + `}`,
			`{"jsonrpc":"2.0","id":1,"method":"session.step","params":{"action":` + string(action) + `}}`,
			string(action),
		} {
			checkDecode(t, []byte(frame))
		}
	})
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
