package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// checkUTF8 refuses input that is not UTF-8 (encoding/json would read the
// bad bytes as U+FFFD and go on), saying where the first bad byte is. what
// names the input: "the request", "the body".
func checkUTF8(what string, b []byte) *wire.Error {
	if utf8.Valid(b) {
		return nil
	}
	off := 0
	for off < len(b) {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	return wire.Errorf(wire.CodeParseError, "%s is not UTF-8: byte 0x%02x at offset %d is not valid UTF-8; JSON-RPC messages must be UTF-8 text (binary data goes base64-encoded in an image or file part)",
		what, b[off], off)
}

// maxJSONDepth is how deeply arrays and objects may nest in a document:
// encoding/json's limit, past which it stops reading.
const maxJSONDepth = 10000

// syntaxProblem says what is wrong with b, where encoding/json reported se:
// a document nested deeper than maxJSONDepth is "too deeply nested" (it is
// well-formed, so "check quoting" would mislead), anything else is not JSON.
func syntaxProblem(b []byte, se *json.SyntaxError) string {
	if depthAt(b, se.Offset) >= maxJSONDepth {
		return fmt.Sprintf("JSON too deeply nested at offset %d: arrays and objects may nest at most %d levels deep", se.Offset, maxJSONDepth)
	}
	return fmt.Sprintf("not JSON at offset %d: check quoting and brackets", se.Offset)
}

var methods = []string{
	wire.MethodServerInfo, wire.MethodEnvList, wire.MethodEnvDescribe, wire.MethodTaskList,
	wire.MethodSessionCreate, wire.MethodSessionStep, wire.MethodSessionReset, wire.MethodSessionClose,
	wire.MethodSessionResume, wire.MethodRewardAdd, wire.MethodEventsSubscribe, wire.MethodEventsUnsubscribe,
	wire.MethodSamplesAck,
}

// params decodes a request's params strictly: unknown fields and wrong types
// are CodeInvalidParams errors that name the field.
func params(method string, raw json.RawMessage, v any) *wire.Error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return paramsError(method, raw, err)
	}
	if d.More() {
		return wire.Errorf(wire.CodeInvalidParams, "invalid params for %s: trailing data after the params object", method)
	}
	return nil
}

// paramsError describes err, from decoding raw as method's params.
func paramsError(method string, raw []byte, err error) *wire.Error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return wire.Errorf(wire.CodeInvalidParams, "invalid params for %s: params is %s, want an object", method, te.Value)
	case errors.As(err, &te):
		return wire.Errorf(wire.CodeInvalidParams, "invalid params for %s: field %q is %s, want %s", method, te.Field, te.Value, jsonType(te.Type.Kind().String()))
	case errors.As(err, &se):
		return wire.Errorf(wire.CodeInvalidParams, "invalid params for %s: %s", method, syntaxProblem(raw, se))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return wire.Errorf(wire.CodeInvalidParams, "invalid params for %s: %s (see env.describe and docs/protocol.md for the accepted fields)",
			method, strings.TrimPrefix(err.Error(), "json: "))
	case errors.Is(err, io.EOF):
		return wire.Errorf(wire.CodeInvalidParams, "invalid params for %s: empty", method)
	}
	return wire.Errorf(wire.CodeInvalidParams, "invalid params for %s: %v", method, err)
}

func jsonType(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "true or false"
	case "int", "int64", "int32", "uint", "uint64", "float64", "float32":
		return "a number"
	}
	return goKind
}

// caller is who sends a request: a WebSocket connection, which holds
// subscriptions, or nil for HTTP, which cannot.
type caller interface {
	unsubscribe(id string) *wire.Error
	ackSamples(p wire.SamplesAckParams) (any, *wire.Error)
}

// answer runs one request of a frame: a step read with the frame as it
// is, anything else through call.
func (s *Server) answer(ctx context.Context, c caller, r *request) (any, *wire.Error) {
	if r.decoded {
		return s.step(ctx, r.step)
	}
	return s.call(ctx, c, r.Method, r.Params)
}

// call runs one method. The result is JSON-encodable.
func (s *Server) call(ctx context.Context, c caller, method string, raw json.RawMessage) (any, *wire.Error) {
	switch method {
	case wire.MethodServerInfo:
		return s.info(), nil
	case wire.MethodEnvList:
		return s.envList(), nil
	case wire.MethodEnvDescribe:
		var p wire.EnvDescribeParams
		if e := params(method, raw, &p); e != nil {
			return nil, e
		}
		return s.describe(p.Env)
	case wire.MethodTaskList:
		var p wire.TaskListParams
		if e := params(method, raw, &p); e != nil {
			return nil, e
		}
		return s.taskList(p)
	case wire.MethodSessionCreate:
		var p wire.CreateParams
		if e := params(method, raw, &p); e != nil {
			return nil, e
		}
		return s.create(ctx, p)
	case wire.MethodSessionStep:
		return s.stepRaw(ctx, raw)
	case wire.MethodSessionReset:
		var p wire.ResetParams
		if e := params(method, raw, &p); e != nil {
			return nil, e
		}
		return s.reset(ctx, p)
	case wire.MethodSessionClose:
		var p wire.CloseParams
		if e := params(method, raw, &p); e != nil {
			return nil, e
		}
		return s.closeSession(ctx, p)
	case wire.MethodSessionResume:
		var p wire.ResumeParams
		if e := params(method, raw, &p); e != nil {
			return nil, e
		}
		return s.resume(ctx, p)
	case wire.MethodRewardAdd:
		var p wire.RewardParams
		if e := params(method, raw, &p); e != nil {
			return nil, e
		}
		return s.addReward(ctx, p)
	case wire.MethodEventsSubscribe:
		// WebSocket connections handle it before call.
		return nil, wire.Errorf(wire.CodeBadRequest, "events.subscribe needs a WebSocket connection (/v1/ws); over HTTP poll GET /v1/events?after_seq=N")
	case wire.MethodEventsUnsubscribe:
		var p wire.UnsubscribeParams
		if e := params(method, raw, &p); e != nil {
			return nil, e
		}
		if c == nil {
			return nil, wire.Errorf(wire.CodeUnknownSub, "subscriptions live on WebSocket connections; HTTP has none")
		}
		if e := c.unsubscribe(p.Subscription); e != nil {
			return nil, e
		}
		return struct {
			Subscription string `json:"subscription"`
			Ended        bool   `json:"ended"`
		}{p.Subscription, true}, nil
	case wire.MethodSamplesAck:
		var p wire.SamplesAckParams
		if e := params(method, raw, &p); e != nil {
			return nil, e
		}
		if c == nil {
			return nil, wire.Errorf(wire.CodeUnknownSub, "samples streams live on WebSocket connections; over HTTP pull GET /v1/samples?after_seq=N")
		}
		return c.ackSamples(p)
	}
	return nil, &wire.Error{Code: wire.CodeMethodNotFound, Message: fmt.Sprintf("unknown method %q: one of %s", method, strings.Join(methods, ", ")),
		Data: &wire.ErrorData{Accepted: methods}}
}

func (s *Server) info() wire.ServerInfo {
	return wire.ServerInfo{
		Name: "nextstate", Version: Version, Protocol: wire.Version, Envs: gym.Kinds(),
		MaxFrameBytes: s.cfg.MaxFrameBytes, Sessions: s.mgr.Len(), MaxSessions: s.mgrMax(), LastSeq: s.store.LastSeq(),
	}
}

func (s *Server) mgrMax() int {
	if s.cfg.Sessions.MaxSessions > 0 {
		return s.cfg.Sessions.MaxSessions
	}
	return 16384
}

func (s *Server) envList() wire.EnvListResult {
	var out wire.EnvListResult
	for _, name := range gym.Kinds() {
		spec, _ := gym.Lookup(name)
		out.Envs = append(out.Envs, wire.EnvSummary{Name: name, Description: spec.Description,
			Tasks: len(s.mgr.Tasks().List(name, ""))})
	}
	return out
}

func (s *Server) describe(env string) (any, *wire.Error) {
	if env == "" {
		return nil, &wire.Error{Code: wire.CodeInvalidParams, Message: `env.describe needs "env": one of ` + strings.Join(gym.Kinds(), ", "),
			Data: &wire.ErrorData{Accepted: gym.Kinds()}}
	}
	spec, err := gym.Lookup(env)
	if err != nil {
		return nil, wire.FromError(err)
	}
	spec.Tasks = nil
	for _, t := range s.mgr.Tasks().List(env, "") {
		spec.Tasks = append(spec.Tasks, t.Public())
	}
	res := wire.EnvDescribeResult{Spec: spec, PartSchemas: map[gym.PartType]json.RawMessage{}}
	for _, t := range gym.PartTypes {
		res.PartSchemas[t] = gym.PartSchema(t)
	}
	return res, nil
}

func (s *Server) taskList(p wire.TaskListParams) (any, *wire.Error) {
	if p.Env != "" {
		if _, err := gym.Lookup(p.Env); err != nil {
			return nil, wire.FromError(err)
		}
	}
	res := wire.TaskListResult{Tasks: []gym.Task{}}
	for _, t := range s.mgr.Tasks().List(p.Env, p.Split) {
		res.Tasks = append(res.Tasks, t.Public())
	}
	return res, nil
}

func (s *Server) create(ctx context.Context, p wire.CreateParams) (any, *wire.Error) {
	if s.shutting.Load() {
		return nil, wire.FromError(gym.ErrDraining)
	}
	sess, res, err := s.mgr.Create(ctx, p)
	if err != nil {
		return nil, wire.FromError(err)
	}
	s.metrics.sessionCreated(sess.Kind)
	return res, nil
}

func (s *Server) stepRaw(ctx context.Context, raw json.RawMessage) (any, *wire.Error) {
	p, e := decodeStepJSON(raw)
	if e != nil {
		return nil, e
	}
	return s.step(ctx, p)
}

func (s *Server) step(ctx context.Context, p wire.StepParams) (any, *wire.Error) {
	sess, werr := s.session(p.Session)
	if werr != nil {
		if werr.Code == wire.CodeUnknownSession && p.StepID != "" {
			return s.replayStep(ctx, p, werr)
		}
		return nil, werr
	}
	res, err := sess.StepTurn(ctx, p.StepID, p.Action, p.Turn)
	if err != nil {
		if errors.Is(err, gym.ErrSessionClosed) && p.StepID != "" {
			return s.replayStep(ctx, p, wire.FromError(err))
		}
		return nil, wire.FromError(err)
	}
	s.metrics.stepped(sess.Kind, res)
	return res, nil
}

// replayStep answers a retried step of a session that has closed since
// (the step that ended it, say) from the store, so a client that lost the
// answer still gets it. orig is the error to give when there is no record.
func (s *Server) replayStep(ctx context.Context, p wire.StepParams, orig *wire.Error) (any, *wire.Error) {
	ev, ok, err := s.store.StepEvent(ctx, p.Session, p.StepID)
	if err != nil || !ok || ev.Action == nil {
		return nil, orig
	}
	a, _ := json.Marshal(byContent(p.Action))
	b, _ := json.Marshal(byContent(*ev.Action))
	if !bytes.Equal(a, b) {
		return nil, wire.FromError(fmt.Errorf("%w: %q", gym.ErrStepIDReused, p.StepID))
	}
	return ev.StepResult(), nil // the public form: the answer goes to the agent
}

func (s *Server) session(id string) (*gym.Session, *wire.Error) {
	if id == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, `"session" is missing: pass the id session.create returned`)
	}
	sess, err := s.mgr.Get(id)
	if err != nil {
		return nil, wire.FromError(err)
	}
	return sess, nil
}

func (s *Server) reset(ctx context.Context, p wire.ResetParams) (any, *wire.Error) {
	sess, werr := s.session(p.Session)
	if werr != nil {
		return nil, werr
	}
	task := p.Task
	if task == nil && p.TaskID != "" {
		t, ok := s.mgr.Tasks().Get(sess.Kind, p.TaskID)
		if !ok {
			return nil, wire.FromError(fmt.Errorf("%w %q for %s", gym.ErrUnknownTask, p.TaskID, sess.Kind))
		}
		task = t
	}
	if task != nil && task.Env == "" {
		c := *task
		c.Env = sess.Kind
		task = &c
	}
	if task != nil {
		if err := task.Validate(); err != nil {
			return nil, wire.FromError(fmt.Errorf("%w: %v", gym.ErrBadRequest, err))
		}
	}
	res, err := sess.Reset(ctx, task, p.Seed, p.Options)
	if err != nil {
		return nil, wire.FromError(err)
	}
	return res, nil
}

// byContent returns a copy of a with every blob named by the hash of its
// content, as the store records large ones, so an action sent inline and
// its recorded form compare equal.
func byContent(a gym.Action) gym.Action {
	out := gym.Action{Parts: make([]gym.Part, len(a.Parts))}
	for i, p := range a.Parts {
		norm := func(b gym.Blob) gym.Blob {
			if len(b.Data) > 0 {
				b.Ref = store.Ref(b.Data)
			}
			b.Data, b.Size = nil, 0
			return b
		}
		if p.Image != nil {
			img := norm(*p.Image)
			p.Image = &img
		}
		if p.File != nil {
			f := *p.File
			f.Blob = norm(f.Blob)
			p.File = &f
		}
		out.Parts[i] = p
	}
	return out
}

func (s *Server) closeSession(ctx context.Context, p wire.CloseParams) (any, *wire.Error) {
	if p.Session == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, `"session" is missing: pass the id session.create returned`)
	}
	if err := s.mgr.Close(ctx, p.Session, gym.CloseClient); err != nil {
		return nil, wire.FromError(err)
	}
	return wire.CloseResult{Session: p.Session, Closed: true}, nil
}

func (s *Server) resume(ctx context.Context, p wire.ResumeParams) (any, *wire.Error) {
	if p.Session == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, `"session" is missing: pass the id session.create returned`)
	}
	if p.Limit <= 0 || p.Limit > wire.MaxResumeEvents {
		p.Limit = wire.MaxResumeEvents
	}
	// Public: an agent holding the session id reads these.
	evs, err := s.store.Events(ctx, store.Filter{Session: p.Session, AfterSeq: p.AfterSeq, Limit: p.Limit + 1, Public: true})
	if err != nil {
		return nil, wire.FromError(gym.InfraFault("store", err))
	}
	_, getErr := s.mgr.Get(p.Session)
	live := getErr == nil
	if !live && len(evs) == 0 && p.AfterSeq == 0 {
		return nil, wire.FromError(fmt.Errorf("%w %q: no such session was ever recorded", gym.ErrUnknownSession, p.Session))
	}
	res := wire.ResumeResult{Session: p.Session, Live: live, Events: evs, LastSeq: p.AfterSeq}
	if len(evs) > p.Limit {
		res.Events, res.More = evs[:p.Limit], true
	}
	if res.Events == nil {
		res.Events = []gym.Event{}
	}
	if n := len(res.Events); n > 0 {
		res.LastSeq = res.Events[n-1].Seq
	}
	return res, nil
}

func (s *Server) addReward(ctx context.Context, p wire.RewardParams) (any, *wire.Error) {
	if p.Session == "" || p.StepID == "" || p.Source == "" || p.Reward == nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, `reward.add needs "session", "step_id", "reward" and "source"`)
	}
	ev, ok, err := s.store.StepEvent(ctx, p.Session, p.StepID)
	if err != nil {
		return nil, wire.FromError(gym.InfraFault("store", err))
	}
	if !ok {
		return nil, wire.FromError(fmt.Errorf("%w: session %q has no recorded step %q", gym.ErrBadRequest, p.Session, p.StepID))
	}
	r := *p.Reward
	seq, rerr := s.mgr.AddReward(ctx, gym.Event{Session: p.Session, Run: ev.Run, Env: ev.Env, Task: ev.Task,
		Episode: ev.Episode, Step: ev.Step, StepID: p.StepID, Reward: &r, Source: p.Source, Info: p.Info})
	if rerr != nil {
		return nil, wire.FromError(rerr)
	}
	return wire.RewardResult{Seq: seq}, nil
}
