package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// paramsOf returns a fresh params value for each method that decodes
// params with params(); session.step decodes its own (see stepRaw).
var paramsOf = map[string]func() any{
	wire.MethodEnvDescribe:       func() any { return new(wire.EnvDescribeParams) },
	wire.MethodTaskList:          func() any { return new(wire.TaskListParams) },
	wire.MethodSessionCreate:     func() any { return new(wire.CreateParams) },
	wire.MethodSessionReset:      func() any { return new(wire.ResetParams) },
	wire.MethodSessionClose:      func() any { return new(wire.CloseParams) },
	wire.MethodSessionResume:     func() any { return new(wire.ResumeParams) },
	wire.MethodRewardAdd:         func() any { return new(wire.RewardParams) },
	wire.MethodEventsSubscribe:   func() any { return new(wire.SubscribeParams) },
	wire.MethodEventsUnsubscribe: func() any { return new(wire.UnsubscribeParams) },
}

// decodeStep is stepRaw's decoding, without running the step.
func decodeStep(raw json.RawMessage) *wire.Error {
	var p stepParams
	if e := params(wire.MethodSessionStep, raw, &p); e != nil {
		return e
	}
	if len(p.Action) == 0 {
		return wire.Errorf(wire.CodeInvalidParams, "no action")
	}
	var a gym.Action
	if err := json.Unmarshal(p.Action, &a); err != nil {
		return &wire.Error{Code: wire.CodeBadAction, Message: paramsError(wire.MethodSessionStep, p.Action, err).Message}
	}
	return nil
}

var frameCodes = []int{wire.CodeParseError, wire.CodeInvalidRequest}

// FuzzDecodeFrame feeds arbitrary frames to decodeFrame and every request
// it yields to the params decoding of every method. Nothing may panic; each
// item is a well-formed request or an error with a JSON-RPC code; params
// decode or fail with -32602 (-32004 for a step's action); every answer
// encodes to valid JSON.
func FuzzDecodeFrame(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"server.info"}`,
		`{"jsonrpc":"2.0","id":"a","method":"session.create","params":{"env":"echo-v1","seed":3,"run":"r","labels":{"k":"v"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session.create","params":{"task":{"id":"t","env":"guess-v1","limits":{"max_steps":3,"step_timeout":"1s"},"data":{"low":1,"high":9}}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session.step","params":{"session":"s_1","step_id":"x","action":{"parts":[{"type":"text","text":"ls"}]}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session.step","params":{"session":"s_1","action":{"parts":[{"type":"tool_call","tool_call":{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}}]}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"session.step","params":{"session":"s_1","action":{"parts":[{"type":"image","image":{"mime":"image/png","data":"AAEC"}}]}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"session.step","params":{"session":"s_1","action":"ls"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"session.reset","params":{"session":"s_1","task_id":"guess-1-100","seed":-1,"options":{"a":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"session.resume","params":{"session":"s_1","after_seq":10,"limit":5}}`,
		`{"jsonrpc":"2.0","id":9,"method":"reward.add","params":{"session":"s","step_id":"x","reward":0.5,"source":"judge","info":{}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"events.subscribe","params":{"run":"r","types":["step"],"after_seq":-1}}`,
		`{"jsonrpc":"2.0","id":11,"method":"events.unsubscribe","params":{"subscription":"sub_1"}}`,
		`{"jsonrpc":"2.0","id":12,"method":"session.create","params":{"env":5}}`,
		`{"jsonrpc":"2.0","id":13,"method":"session.create","params":{"colour":"red"}}`,
		`{"jsonrpc":"2.0","id":14,"method":"session.create","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":15,"method":"session.create","params":{"env":"a"} {"x":1}}`,
		`{"jsonrpc":"2.0","method":"server.info"}`,
		`{"jsonrpc":"2.0","id":null,"method":"server.info"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"server.info"}`,
		`{"jsonrpc":"2.0","id":true,"method":"x"}`,
		`{"id":1,"method":"server.info"}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":2,"id":1,"method":"x"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"server.info"},{"bad":true},7,"x",null,[]]`,
		`[]`, `[`, `{`, `42`, `null`, `"str"`, ``, `   `, "\x00\xff",
		`{"jsonrpc":"2.0","id":1e400,"method":"x"}`,
		`{"jsonrpc":"2.0","id":-0.5,"method":"x","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"session.create","params":{"task":{"limits":{"step_timeout":"forever"}}}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\",\"method\":\"x\"}", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xed\xa0\x80\"}]",
		`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", maxJSONDepth+1) + `}`, strings.Repeat("[{\"a\":", 5001),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		slow := checkDecode(t, frame) // each request as encoding/json reads it
		items, batch := decodeFrame(nil, frame)
		if len(items) == 0 {
			t.Fatal("no items")
		}
		if !batch && len(items) != 1 {
			t.Fatalf("%d items without a batch", len(items))
		}
		for i, it := range items {
			if !json.Valid(encodeResponse(it.req.ID, nil, it.err)) {
				t.Fatalf("the answer to %q is not JSON (id %q)", frame, it.req.ID)
			}
			if it.err != nil {
				if !slices.Contains(frameCodes, it.err.Code) || it.err.Message == "" {
					t.Fatalf("frame %q: error %d %q", frame, it.err.Code, it.err.Message)
				}
				continue
			}
			if it.req.JSONRPC != "2.0" || it.req.Method == "" {
				t.Fatalf("frame %q decoded to %+v", frame, it.req)
			}
			raw := slow[i].Params // a step read with the frame keeps none
			if e := decodeStep(raw); e != nil && e.Code != wire.CodeInvalidParams && e.Code != wire.CodeBadAction {
				t.Fatalf("step params %q: error %d", raw, e.Code)
			}
			for m, mk := range paramsOf {
				if e := params(m, raw, mk()); e != nil && (e.Code != wire.CodeInvalidParams || !strings.Contains(e.Message, m)) {
					t.Fatalf("%s params %q: error %d %q", m, raw, e.Code, e.Message)
				}
			}
			laneKey(it.req)
		}
	})
}

// TestHandlerPanicConfined makes a request handler panic (the server has no
// session manager): the request is answered with an internal error and the
// panic goes no further.
func TestHandlerPanicConfined(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.metrics = newMetrics(prometheus.NewRegistry(), s)
	c := &conn{s: s}
	out := c.handle(request{Request: wire.Request{JSONRPC: "2.0", ID: json.RawMessage(`5`), Method: wire.MethodServerInfo}}, nil)
	m, err := parseMsg(out)
	if err != nil {
		t.Fatalf("the answer %q is not JSON-RPC: %v", out, err)
	}
	if string(m.ID) != "5" || m.Error == nil || m.Error.Code != wire.CodeInternal || !strings.Contains(m.Error.Message, "server.info") {
		t.Fatalf("a panicking handler answered %s", out)
	}
	// A notification that panics is not answered.
	if out := c.handle(request{Request: wire.Request{JSONRPC: "2.0", Method: wire.MethodServerInfo}}, nil); out != nil {
		t.Fatalf("a panicking notification answered %s", out)
	}
}
