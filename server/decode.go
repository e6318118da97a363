package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// Reading requests. A frame is read once, where it arrives: decodeFrame
// checks it (UTF-8, JSON), reads the envelope and, for session.step, the
// params down to the gym.Action, which then goes to the session as it is.
// The common request takes the fast path (fastRequest, fastStep,
// fastAction): one walk over the bytes (memberIter, elemIter, unquote),
// no reflection, and allocations only for the strings and slices it
// returns. The fast path only ever accepts: a request it does not read
// (unusual spelling, escapes it leaves to encoding/json, duplicate keys,
// any error) is read the way it always was, with encoding/json, which
// gives the answer and its error message. A test holds the two paths to
// the same result on every request the fast one reads.

// maxBatch caps the requests of one JSON-RPC batch.
const maxBatch = 256

// request is one request of a frame. For session.step, step holds the
// params decoded with the frame (decoded set); otherwise, and when the
// fast path left a step's params alone, stepRaw decodes Params when the
// request runs.
type request struct {
	wire.Request
	step    wire.StepParams
	decoded bool
}

// frameItem is one request of a frame, or why it could not be read.
type frameItem struct {
	req request
	err *wire.Error
}

// decodeFrame parses one incoming frame: a request object or a batch array.
// A frame that is not JSON is one item with an error; in a batch each
// element is read on its own, so one bad element spoils only its answer.
// The items do not refer to b, which the caller may reuse. A frame of one
// request is appended to dst (the caller's scratch space, typically
// dst[:0]); a batch gets a slice of its own.
func decodeFrame(dst []frameItem, b []byte) (items []frameItem, batch bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return append(dst, frameItem{err: wire.Errorf(wire.CodeInvalidRequest, "empty message: send a JSON-RPC 2.0 request object")}), false
	}
	if b[0] != '[' {
		dst = append(dst, frameItem{})
		it := &dst[len(dst)-1] // read in place: a local would escape
		it.err = decodeRequest(b, &it.req)
		return dst, false
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return append(dst, frameItem{err: wire.Errorf(wire.CodeParseError, "%s", syntaxProblem(b, se))}), false
		}
		return append(dst, frameItem{err: wire.Errorf(wire.CodeParseError, "not JSON: %v", err)}), false
	}
	if len(raws) == 0 {
		return append(dst, frameItem{err: wire.Errorf(wire.CodeInvalidRequest, "empty batch: send at least one request")}), false
	}
	if len(raws) > maxBatch {
		return append(dst, frameItem{err: wire.Errorf(wire.CodeInvalidRequest, "batch of %d requests: at most %d are accepted", len(raws), maxBatch)}), false
	}
	items = make([]frameItem, len(raws))
	for i, r := range raws {
		items[i].err = decodeRequest(r, &items[i].req)
	}
	return items, true
}

// decodeRequest reads one request object. What it sets in r does not
// refer to b.
func decodeRequest(b []byte, r *request) *wire.Error {
	if utf8.Valid(b) && json.Valid(b) && fastRequest(b, &r.Request) {
		if r.Method == wire.MethodSessionStep {
			r.step, r.decoded = fastStep(r.Params)
		}
		r.ID = bytes.Clone(r.ID)
		if r.decoded {
			r.Params = nil // read; the step needs no more of it
		} else {
			r.Params = bytes.Clone(r.Params)
		}
		return nil
	}
	*r = request{}
	return decodeRequestJSON(b, &r.Request)
}

// decodeRequestJSON reads one request object with encoding/json and judges
// it: the path every request the fast one declines takes, and the source
// of every error message about a request.
func decodeRequestJSON(b []byte, r *wire.Request) *wire.Error {
	if e := checkUTF8("the request", b); e != nil {
		// Read on for the id, so that the client can tell which request
		// was refused (encoding/json reads bad bytes as U+FFFD).
		if json.Unmarshal(b, r) != nil || !utf8.Valid(r.ID) || !validID(r.ID) {
			r.ID = nil
		}
		return e
	}
	if err := json.Unmarshal(b, r); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return wire.Errorf(wire.CodeParseError, "%s", syntaxProblem(b, se))
		}
		return wire.Errorf(wire.CodeInvalidRequest, "not a JSON-RPC 2.0 request object: %v", err)
	}
	if r.JSONRPC != "2.0" {
		return wire.Errorf(wire.CodeInvalidRequest, `"jsonrpc" must be "2.0", got %q`, r.JSONRPC)
	}
	if r.Method == "" {
		return wire.Errorf(wire.CodeInvalidRequest, `"method" is missing: one of %s`, strings.Join(methods, ", "))
	}
	if !validID(r.ID) {
		r.ID = nil // not an id to echo: the answer has "id": null
		return wire.Errorf(wire.CodeInvalidRequest, `"id" must be a string or a number`)
	}
	return nil
}

// validID says whether a request's raw id is one to echo: absent, a
// string, a number or null.
func validID(id json.RawMessage) bool {
	return len(id) == 0 || id[0] == '"' || (id[0] >= '0' && id[0] <= '9') || id[0] == '-' || string(id) == "null"
}

// fastRequest reads a valid request whose keys are jsonrpc ("2.0"), id
// (a string, a number or null), method (a string other than "") and
// params, each at most once, into r, whose ID and Params are then
// sub-slices of b. It reports false for anything else. b must be valid
// JSON.
func fastRequest(b []byte, r *wire.Request) bool {
	var seen uint8
	m := iterMembers(b)
	for {
		key, val, more := m.next()
		if !more {
			break
		}
		var bit uint8
		ok := true
		switch string(key) {
		case "jsonrpc":
			bit, ok = 1, string(val) == `"2.0"`
			r.JSONRPC = "2.0"
		case "id":
			bit, ok = 2, validID(val)
			r.ID = val
		case "method":
			bit = 4
			r.Method, ok = unquoteOneOf(val, methods)
			ok = ok && r.Method != ""
		case "params":
			bit = 8
			r.Params = val
		default:
			ok = false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	return m.err == nil && seen&5 == 5
}

// fastStep reads session.step's params as stepRaw would, when their keys
// are session and step_id (strings), action (which fastAction reads) and
// turn (an object or null), each at most once. It reports false for
// anything else, and stepRaw then reads (and judges) the params when the
// request runs. raw must be valid JSON.
func fastStep(raw []byte) (p wire.StepParams, ok bool) {
	var seen uint8
	m := iterMembers(raw)
	for {
		key, val, more := m.next()
		if !more {
			break
		}
		var bit uint8
		switch string(key) {
		case "session":
			bit = 1
			p.Session, ok = unquote(val)
		case "step_id":
			bit = 2
			p.StepID, ok = unquote(val)
		case "action":
			bit = 4
			p.Action, ok = fastAction(val)
		case "turn":
			bit = 8
			p.Turn, ok = decodeTurn(val)
		default:
			ok = false
		}
		if !ok || seen&bit != 0 {
			return wire.StepParams{}, false
		}
		seen |= bit
	}
	return p, m.err == nil && seen&4 != 0
}

// decodeTurn reads a step's "turn": null or an object.
func decodeTurn(val []byte) (*gym.Turn, bool) {
	if string(val) == "null" {
		return nil, true
	}
	if len(val) == 0 || val[0] != '{' {
		return nil, false
	}
	t := new(gym.Turn)
	if json.Unmarshal(val, t) != nil {
		return nil, false
	}
	return t, true
}

// fastAction reads an action object as json.Unmarshal into a gym.Action
// would, reporting false where json.Unmarshal fails. Actions of text and
// tool_call parts (what agents send most) are read by readAction, others
// by encoding/json.
func fastAction(val []byte) (gym.Action, bool) {
	if len(val) == 0 || val[0] != '{' {
		return gym.Action{}, false
	}
	if a, ok := readAction(val); ok {
		return a, true
	}
	var a gym.Action
	if json.Unmarshal(val, &a) != nil {
		return gym.Action{}, false
	}
	return a, true
}

// readAction reads {"parts": [...]} whose parts have the keys type, text
// and tool_call (id, type and function with name and arguments), each at
// most once, all strings but tool_call and function, which are objects.
// It reports false for anything else.
func readAction(b []byte) (a gym.Action, ok bool) {
	m := iterMembers(b)
	key, val, more := m.next()
	if !more || string(key) != "parts" {
		return a, false
	}
	if a.Parts, ok = readParts(val); !ok {
		return a, false
	}
	_, _, more = m.next()
	return a, !more && m.err == nil
}

func readParts(b []byte) ([]gym.Part, bool) {
	parts := make([]gym.Part, 0, 1)
	e := iterElems(b)
	for {
		val, more := e.next()
		if !more {
			break
		}
		p, ok := readPart(val)
		if !ok {
			return nil, false
		}
		parts = append(parts, p)
	}
	return parts, e.err == nil
}

func readPart(b []byte) (p gym.Part, ok bool) {
	var seen uint8
	m := iterMembers(b)
	for {
		key, val, more := m.next()
		if !more {
			break
		}
		var bit uint8
		switch string(key) {
		case "type":
			bit = 1
			var t string
			t, ok = unquoteOneOf(val, partTypes)
			p.Type = gym.PartType(t)
		case "text":
			bit = 2
			p.Text, ok = unquote(val)
		case "tool_call":
			bit = 4
			p.ToolCall, ok = readToolCall(val)
		default:
			ok = false
		}
		if !ok || seen&bit != 0 {
			return p, false
		}
		seen |= bit
	}
	return p, m.err == nil
}

// partTypes is gym.PartTypes as strings, for unquoteOneOf.
var partTypes = func() []string {
	out := make([]string, len(gym.PartTypes))
	for i, t := range gym.PartTypes {
		out[i] = string(t)
	}
	return out
}()

// functionType is the one type of a tool call, for unquoteOneOf.
var functionType = []string{"function"}

func readToolCall(b []byte) (*gym.ToolCall, bool) {
	tc := new(gym.ToolCall)
	var seen uint8
	m := iterMembers(b)
	for {
		key, val, more := m.next()
		if !more {
			break
		}
		var bit uint8
		ok := true
		switch string(key) {
		case "id":
			bit = 1
			tc.ID, ok = unquote(val)
		case "type":
			bit = 2
			tc.Type, ok = unquoteOneOf(val, functionType)
		case "function":
			bit = 4
			ok = readFunction(val, &tc.Function)
		default:
			ok = false
		}
		if !ok || seen&bit != 0 {
			return nil, false
		}
		seen |= bit
	}
	return tc, m.err == nil
}

func readFunction(b []byte, f *gym.FunctionCall) bool {
	var seen uint8
	m := iterMembers(b)
	for {
		key, val, more := m.next()
		if !more {
			break
		}
		var bit uint8
		ok := true
		switch string(key) {
		case "name":
			bit = 1
			f.Name, ok = unquote(val)
		case "arguments":
			bit = 2
			f.Arguments, ok = unquote(val)
		default:
			ok = false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	return m.err == nil
}

// stepParams is session.step's params with the action left raw, so that an
// action of the wrong shape is reported as a bad action (CodeBadAction), not
// as bad params.
type stepParams struct {
	Session string          `json:"session"`
	StepID  string          `json:"step_id,omitempty"`
	Action  json.RawMessage `json:"action"`
	Turn    *gym.Turn       `json:"turn,omitempty"` // allocated only when sent
}

// decodeStepJSON reads session.step's params with encoding/json and judges
// them: the path of the params fastStep declines, and of every error
// message about them.
func decodeStepJSON(raw json.RawMessage) (wire.StepParams, *wire.Error) {
	var p stepParams
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return wire.StepParams{}, paramsError(wire.MethodSessionStep, raw, err)
	}
	var unknown string
	topLevel(raw, func(key string, _ []byte) bool {
		switch key {
		case "session", "step_id", "action", "turn":
			return true
		}
		unknown = key
		return false
	})
	if unknown != "" {
		return wire.StepParams{}, wire.Errorf(wire.CodeInvalidParams, "invalid params for %s: unknown field %q (accepted: session, step_id, action, turn)", wire.MethodSessionStep, unknown)
	}
	var a gym.Action
	if len(p.Action) == 0 {
		return wire.StepParams{}, wire.Errorf(wire.CodeInvalidParams, `session.step needs "action": {"parts": [...]} (see env.describe for the kind's action schema)`)
	}
	if err := json.Unmarshal(p.Action, &a); err != nil {
		e := paramsError(wire.MethodSessionStep, p.Action, err)
		return wire.StepParams{}, &wire.Error{Code: wire.CodeBadAction, Message: "the action is not an object {\"parts\": [...]}: " +
			strings.TrimPrefix(e.Message, "invalid params for session.step: ") + " (env.describe gives the kind's action schema)"}
	}
	return wire.StepParams{Session: p.Session, StepID: p.StepID, Action: a, Turn: p.Turn}, nil
}
