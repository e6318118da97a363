package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// TestBadInputWS sends one bad frame after another on one connection
// (malformed, not UTF-8, nested too deeply, ...). Each is answered with its
// stable code and a message that says what was wrong and what is accepted,
// and after each the connection still serves another session.
func TestBadInputWS(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	other := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	steps := 0
	carryOn := func(t *testing.T) {
		t.Helper()
		steps++
		if r := c.as(t).step(other, "", "still here"); r.Step != steps || r.Observation.Text() != "still here" {
			t.Fatalf("the other session answered step %d %q, want step %d echoing", r.Step, r.Observation.Text(), steps)
		}
	}
	// nullID takes the error answer of a frame whose id cannot be read.
	nullID := func(t *testing.T) *wire.Error {
		t.Helper()
		m := c.as(t).take("an answer with id null", func(m *rpcMsg) bool { return string(m.ID) == "null" })
		if m.Error == nil {
			t.Fatalf("got %s, want an error", m)
		}
		return m.Error
	}

	frames := []struct {
		name  string
		frame string
		id    string // the id the answer carries: null when it cannot be read
		code  int
		want  []string
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, "null", wire.CodeParseError, []string{"not JSON"}},
		{"malformed batch", `[{"jsonrpc":"2.0"`, "null", wire.CodeParseError, []string{"not JSON"}},
		{"not an object", `42`, "null", wire.CodeInvalidRequest, []string{"JSON-RPC 2.0 request object"}},
		{"a string", `"session.step"`, "null", wire.CodeInvalidRequest, []string{"JSON-RPC 2.0 request object"}},
		{"empty", `   `, "null", wire.CodeInvalidRequest, []string{"JSON-RPC 2.0 request object"}},
		{"empty batch", `[]`, "null", wire.CodeInvalidRequest, []string{"at least one request"}},
		{"missing jsonrpc", `{"id":7,"method":"server.info"}`, "7", wire.CodeInvalidRequest, []string{`"jsonrpc" must be "2.0"`}},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":"x","method":"server.info"}`, `"x"`, wire.CodeInvalidRequest, []string{`"2.0"`}},
		{"missing method", `{"jsonrpc":"2.0","id":8}`, "8", wire.CodeInvalidRequest, []string{`"method" is missing`, "session.step"}},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"server.info"}`, "null", wire.CodeInvalidRequest, []string{"string or a number"}},
		// Not UTF-8: refused (encoding/json would read U+FFFD), the id
		// echoed where it can be read.
		{"a Latin-1 byte in a string", latin1Step(other), "21", wire.CodeParseError,
			[]string{"the request is not UTF-8", "byte 0xe9", fmt.Sprintf("offset %d", strings.IndexByte(latin1Step(other), 0xe9)), "must be UTF-8"}},
		{"a bad byte in the id", "{\"jsonrpc\":\"2.0\",\"id\":\"x\xff\",\"method\":\"server.info\"}", "null", wire.CodeParseError,
			[]string{"not UTF-8", "byte 0xff", "offset 24"}},
		{"a bad byte outside strings", "{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"server.info\"}\xc0", "null", wire.CodeParseError,
			[]string{"not UTF-8", "byte 0xc0", "offset 48"}},
		// Too deep: well-formed, so the message says so, with the limit,
		// rather than blame the quoting.
		{"too deeply nested params", `{"jsonrpc":"2.0","id":23,"method":"server.info","params":` + nested(maxJSONDepth+1) + `}`, "null",
			wire.CodeParseError, []string{"too deeply nested", "at most 10000 levels"}},
		{"a too deeply nested batch", nested(maxJSONDepth + 5), "null", wire.CodeParseError, []string{"too deeply nested", "at most 10000 levels"}},
	}
	for _, f := range frames {
		t.Run(f.name, func(t *testing.T) {
			c := c.as(t)
			c.sendRaw([]byte(f.frame))
			m := c.take("the answer with id "+f.id, func(m *rpcMsg) bool { return m.Batch == nil && m.Method == "" })
			if string(m.ID) != f.id || m.Error == nil {
				t.Fatalf("got %s, want an error with id %s", m, f.id)
			}
			wantCode(t, m.Error, f.code, f.want...)
			carryOn(t)
		})
	}

	calls := []struct {
		name   string
		method string
		params any
		code   int
		want   []string
		check  func(*testing.T, *wire.Error)
	}{
		{"unknown method", "session.jump", nil, wire.CodeMethodNotFound, []string{`"session.jump"`, "session.step"},
			func(t *testing.T, e *wire.Error) {
				if e.Data == nil || !slices.Contains(e.Data.Accepted, wire.MethodSessionStep) || len(e.Data.Accepted) != len(methods) {
					t.Errorf("data.accepted = %+v, want every method", e.Data)
				}
			}},
		{"wrong param type", wire.MethodSessionCreate, map[string]any{"env": 5}, wire.CodeInvalidParams,
			[]string{`field "env"`, "want a string"}, nil},
		{"wrong nested type", wire.MethodSessionCreate, map[string]any{"env": "echo-v1", "seed": "seven"}, wire.CodeInvalidParams,
			[]string{`field "seed"`, "want a number"}, nil},
		{"params not an object", wire.MethodSessionCreate, []int{1}, wire.CodeInvalidParams, []string{"session.create"}, nil},
		{"unknown field", wire.MethodSessionCreate, map[string]any{"env": "echo-v1", "colour": "red"}, wire.CodeInvalidParams,
			[]string{`unknown field "colour"`, "accepted fields"}, nil},
		{"unknown step field", wire.MethodSessionStep, map[string]any{"session": "x", "action": gym.TextAction("a"), "retry": true},
			wire.CodeInvalidParams, []string{`unknown field "retry"`}, nil},
		{"step session wrong type", wire.MethodSessionStep, map[string]any{"session": 12, "action": gym.TextAction("a")},
			wire.CodeInvalidParams, []string{`field "session"`}, nil},
		{"step without action", wire.MethodSessionStep, map[string]any{"session": "x"}, wire.CodeInvalidParams, []string{`"action"`}, nil},
		{"step without session", wire.MethodSessionStep, stepArgs("", "", "a"), wire.CodeInvalidParams, []string{`"session" is missing`}, nil},
		{"unknown session", wire.MethodSessionStep, stepArgs("s_nope", "", "a"), wire.CodeUnknownSession, []string{`"s_nope"`}, nil},
		{"unknown session resume", wire.MethodSessionResume, wire.ResumeParams{Session: "s_nope"}, wire.CodeUnknownSession, []string{"s_nope"}, nil},
		{"unknown env", wire.MethodSessionCreate, gym.CreateRequest{Env: "chess-v9"}, wire.CodeUnknownEnv, []string{"chess-v9", "echo-v1", "guess-v1"},
			func(t *testing.T, e *wire.Error) {
				if e.Data == nil || !slices.Contains(e.Data.Accepted, "echo-v1") || !slices.Contains(e.Data.Accepted, "guess-v1") {
					t.Errorf("data.accepted = %+v, want the kinds", e.Data)
				}
			}},
		{"unknown env describe", wire.MethodEnvDescribe, wire.EnvDescribeParams{Env: "chess-v9"}, wire.CodeUnknownEnv, []string{"echo-v1"}, nil},
		{"unknown task", wire.MethodSessionCreate, gym.CreateRequest{TaskID: "guess-1-7"}, wire.CodeUnknownTask, []string{`"guess-1-7"`, "env.describe"}, nil},
		{"unknown task on reset", wire.MethodSessionReset, wire.ResetParams{Session: other, TaskID: "echo-nope"}, wire.CodeUnknownTask, []string{"echo-nope"}, nil},
		{"action not an object", wire.MethodSessionStep, map[string]any{"session": other, "action": "ls"}, wire.CodeBadAction, []string{`{"parts": [...]}`, "env.describe"}, nil},
		{"action off schema", wire.MethodSessionStep, wire.StepParams{Session: other, Action: gym.Action{Parts: []gym.Part{{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: []byte{1}}}}}},
			wire.CodeBadAction, []string{"echo-v1"},
			func(t *testing.T, e *wire.Error) {
				if e.Data == nil || len(e.Data.Problems) == 0 {
					t.Errorf("data = %+v, want problems", e.Data)
				}
			}},
		{"empty action", wire.MethodSessionStep, wire.StepParams{Session: other, Action: gym.Action{Parts: []gym.Part{}}},
			wire.CodeBadAction, nil,
			func(t *testing.T, e *wire.Error) {
				if e.Data == nil || len(e.Data.Problems) == 0 {
					t.Errorf("data = %+v, want problems", e.Data)
				}
			}},
		{"unsubscribe unknown", wire.MethodEventsUnsubscribe, wire.UnsubscribeParams{Subscription: "sub_9"}, wire.CodeUnknownSub, []string{"sub_9"}, nil},
		{"subscribe bad type", wire.MethodEventsSubscribe, map[string]any{"types": []string{"steps"}}, wire.CodeInvalidParams, []string{`"steps"`},
			func(t *testing.T, e *wire.Error) {
				if e.Data == nil || !slices.Contains(e.Data.Accepted, "step") {
					t.Errorf("data.accepted = %+v, want the event types", e.Data)
				}
			}},
		{"reward for no step", wire.MethodRewardAdd, wire.RewardParams{Session: other, StepID: "never", Reward: ptr(1.0), Source: "judge"}, wire.CodeBadRequest, []string{`"never"`}, nil},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			c := c.as(t)
			e := c.callErr(tc.method, tc.params)
			wantCode(t, e, tc.code, tc.want...)
			if tc.check != nil {
				tc.check(t, e)
			}
			carryOn(t)
		})
	}

	t.Run("oversize frame", func(t *testing.T) {
		c := c.as(t)
		big := `{"jsonrpc":"2.0","id":99,"method":"session.step","params":{"session":"` + other +
			`","action":{"parts":[{"type":"text","text":"` + strings.Repeat("x", 100<<10) + `"}]}}}`
		c.sendRaw([]byte(big))
		wantCode(t, nullID(t), wire.CodeFrameTooLarge, "65536", "smaller")
		carryOn(t)
	})

	t.Run("deep but within the limit", func(t *testing.T) {
		c := c.as(t)
		c.sendRaw([]byte(`{"jsonrpc":"2.0","id":24,"method":"server.info","params":` + nested(maxJSONDepth-10) + `}`))
		if m := c.response("24"); m.Error != nil {
			t.Fatalf("a frame nested %d deep was refused: %v", maxJSONDepth-9, m.Error)
		}
		carryOn(t)
	})

	t.Run("a batch with one element not UTF-8", func(t *testing.T) {
		c := c.as(t)
		step, _ := json.Marshal(stepArgs(other, "", "in a batch"))
		c.sendRaw([]byte(`[{"jsonrpc":"2.0","id":"a","method":"session.step","params":` + string(step) + `},` +
			"{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"server.info\",\"params\":{\"x\":\"\xff\"}}]"))
		m := c.take("the batch answer", func(m *rpcMsg) bool { return m.Batch != nil })
		steps++
		if len(m.Batch) != 2 || m.Batch[0].Error != nil || m.Batch[1].Error == nil || string(m.Batch[1].ID) != `"b"` {
			t.Fatalf("batch answered %s, want the step run and b refused", m)
		}
		wantCode(t, m.Batch[1].Error, wire.CodeParseError, "not UTF-8", "byte 0xff")
		carryOn(t)
	})

	t.Run("step after termination", func(t *testing.T) {
		c := c.as(t)
		s := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
		if r := c.step(s, "", "/done"); !r.Terminated {
			t.Fatalf("/done did not terminate: %+v", r)
		}
		wantCode(t, c.callErr(wire.MethodSessionStep, stepArgs(s, "", "more")), wire.CodeEpisodeOver, "reset")
		carryOn(t)
		var rr gym.ResetResult
		c.mustCall(wire.MethodSessionReset, wire.ResetParams{Session: s}, &rr)
		if rr.Episode != 2 {
			t.Errorf("reset gave episode %d, want 2", rr.Episode)
		}
		if r := c.step(s, "", "again"); r.Step != 1 {
			t.Errorf("first step after reset is %d, want 1", r.Step)
		}
	})

	t.Run("step id reused", func(t *testing.T) {
		c := c.as(t)
		c.step(other, "id-1", "first")
		steps++
		wantCode(t, c.callErr(wire.MethodSessionStep, stepArgs(other, "id-1", "second")), wire.CodeStepIDReused, `"id-1"`)
		carryOn(t)
	})

	t.Run("batch with a bad element", func(t *testing.T) {
		c := c.as(t)
		step, _ := json.Marshal(stepArgs(other, "", "in a batch"))
		c.sendRaw([]byte(`[
			{"jsonrpc":"2.0","id":"a","method":"server.info"},
			{"jsonrpc":"2.0","id":"b","method":"no.such"},
			{"jsonrpc":"2.0","id":"c","method":"session.step","params":` + string(step) + `},
			{"id":"d","method":"server.info"},
			{"jsonrpc":"2.0","method":"server.info"},
			7
		]`))
		m := c.take("the batch answer", func(m *rpcMsg) bool { return m.Batch != nil })
		steps++
		var got []string
		for _, e := range m.Batch {
			code := 0
			if e.Error != nil {
				code = e.Error.Code
			}
			got = append(got, string(e.ID)+":"+itoa(code))
		}
		want := []string{`"a":0`, `"b":-32601`, `"c":0`, `"d":-32600`, `null:-32600`}
		if !slices.Equal(got, want) {
			t.Fatalf("batch answered %v, want %v (the notification unanswered): %s", got, want, m)
		}
		var r gym.StepResult
		if err := json.Unmarshal(m.Batch[2].Result, &r); err != nil || r.Step != steps {
			t.Errorf("the batch's step answered %s, want step %d", m.Batch[2].Result, steps)
		}
		carryOn(t)
	})

	t.Run("notifications get no answer", func(t *testing.T) {
		c := c.as(t)
		// A step notification and a step request on one session share its
		// lane, so an answer to the first would come before the second's.
		n, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session.step", "params": stepArgs(other, "", "quiet")})
		c.sendRaw(n)
		c.sendRaw([]byte(`[{"jsonrpc":"2.0","method":"server.info"},{"jsonrpc":"2.0","method":"no.such"}]`))
		id := c.send(wire.MethodSessionStep, stepArgs(other, "", "loud"))
		m := c.next()
		if string(m.ID) != id {
			t.Fatalf("got %s before the answer to %s; notifications must not be answered", m, id)
		}
		var r gym.StepResult
		json.Unmarshal(m.Result, &r)
		steps += 2
		if r.Step != steps {
			t.Errorf("the step after a step notification is %d, want %d (the notification ran)", r.Step, steps)
		}
		carryOn(t)
		c.mu.Lock()
		left := len(c.inbox)
		c.mu.Unlock()
		if left != 0 {
			t.Errorf("%d unexpected messages: %v", left, c.inbox)
		}
	})
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// latin1Step is a step request whose text action has a Latin-1 "é" (0xe9),
// which is not UTF-8.
func latin1Step(session string) string {
	return `{"jsonrpc":"2.0","id":21,"method":"session.step","params":{"session":"` + session +
		`","action":{"parts":[{"type":"text","text":"caf` + "\xe9" + `"}]}}}`
}
