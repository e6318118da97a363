package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/internal/auth"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/wire"
)

// routes lays out the endpoints. Every one but /healthz needs the token.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", s.auth(promhttp.HandlerFor(s.gather, promhttp.HandlerOpts{})))
	mux.Handle("GET /v1/ws", s.auth(http.HandlerFunc(s.serveWS)))

	mux.Handle("GET /v1/info", s.mirror(wire.MethodServerInfo, nil))
	mux.Handle("GET /v1/envs", s.mirror(wire.MethodEnvList, nil))
	mux.Handle("GET /v1/envs/{env}", s.mirror(wire.MethodEnvDescribe, func(r *http.Request, _ []byte) (any, error) {
		return wire.EnvDescribeParams{Env: r.PathValue("env")}, nil
	}))
	mux.Handle("GET /v1/tasks", s.mirror(wire.MethodTaskList, func(r *http.Request, _ []byte) (any, error) {
		q := r.URL.Query()
		return wire.TaskListParams{Env: q.Get("env"), Split: q.Get("split")}, nil
	}))
	mux.Handle("POST /v1/sessions", s.mirror(wire.MethodSessionCreate, body))
	mux.Handle("POST /v1/sessions/{id}/step", s.mirror(wire.MethodSessionStep, withSession))
	mux.Handle("POST /v1/sessions/{id}/reset", s.mirror(wire.MethodSessionReset, withSession))
	mux.Handle("POST /v1/sessions/{id}/close", s.mirror(wire.MethodSessionClose, withSession))
	mux.Handle("DELETE /v1/sessions/{id}", s.mirror(wire.MethodSessionClose, withSession))
	mux.Handle("POST /v1/sessions/{id}/rewards", s.mirror(wire.MethodRewardAdd, withSession))
	mux.Handle("GET /v1/sessions/{id}/events", s.mirror(wire.MethodSessionResume, func(r *http.Request, _ []byte) (any, error) {
		after, lim, err := seqAndLimit(r)
		return wire.ResumeParams{Session: r.PathValue("id"), AfterSeq: after, Limit: lim}, err
	}))
	mux.Handle("GET /v1/events", s.auth(http.HandlerFunc(s.events)))
	mux.Handle("GET /v1/samples", s.auth(http.HandlerFunc(s.samplesHTTP)))
	mux.Handle("POST /v1/rpc", s.auth(http.HandlerFunc(s.rpc)))
	return mux
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.shutting.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ok\n")
}

func (s *Server) auth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", auth.Challenge)
			writeHTTPError(w, wire.Errorf(wire.CodeUnauthorized, auth.Missing))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// paramsFunc builds a method's params from an HTTP request and its body.
type paramsFunc func(r *http.Request, body []byte) (any, error)

func body(_ *http.Request, b []byte) (any, error) { return json.RawMessage(b), nil }

// withSession adds the path's session id to the body's params object.
func withSession(r *http.Request, b []byte) (any, error) {
	m := map[string]json.RawMessage{}
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, wire.Errorf(wire.CodeParseError, "the body is not a JSON object: %s", syntaxProblem(b, se))
			}
			return nil, wire.Errorf(wire.CodeParseError, "the body is not a JSON object: %v", err)
		}
	}
	id, _ := json.Marshal(r.PathValue("id"))
	m["session"] = id
	return m, nil
}

func seqAndLimit(r *http.Request) (after int64, limit int, err error) {
	q := r.URL.Query()
	if v := q.Get("after_seq"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, 0, wire.Errorf(wire.CodeInvalidParams, "after_seq=%q: want an integer", v)
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			return 0, 0, wire.Errorf(wire.CodeInvalidParams, "limit=%q: want a positive integer", v)
		}
	}
	return after, limit, nil
}

// mirror serves one JSON-RPC method over HTTP. The result is the body; an
// error is {"error": {...}} with the code's HTTP status.
func (s *Server) mirror(method string, build paramsFunc) http.Handler {
	return s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var werr *wire.Error
		defer func() { s.metrics.request(method, "http", start, werr) }()
		b, werr := s.readBody(w, r)
		if werr == nil {
			werr = checkUTF8("the body", b) // POST /v1/rpc checks each request (decodeFrame)
		}
		if werr != nil {
			writeHTTPError(w, werr)
			return
		}
		var raw json.RawMessage
		if build != nil {
			p, err := build(r, b)
			if err != nil {
				werr = wire.FromError(err)
				writeHTTPError(w, werr)
				return
			}
			if rm, ok := p.(json.RawMessage); ok {
				raw = rm
			} else {
				raw, _ = json.Marshal(p)
			}
		}
		s.requests.add()
		// Like a WebSocket request, a step that started finishes and is
		// recorded even if the HTTP client goes away.
		res, werr := s.call(context.WithoutCancel(r.Context()), nil, method, raw)
		s.requests.done()
		if werr != nil {
			writeHTTPError(w, werr)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}))
}

func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *wire.Error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxFrameBytes)))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, wire.Errorf(wire.CodeFrameTooLarge, "body larger than %d bytes", s.cfg.MaxFrameBytes)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidRequest, "reading the body: %v", err)
	}
	return b, nil
}

// events serves stored events: GET /v1/events?run=&env=&session=&type=&after_seq=&limit=
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	after, limit, err := seqAndLimit(r)
	if err != nil {
		writeHTTPError(w, wire.FromError(err))
		return
	}
	if limit == 0 || limit > wire.MaxResumeEvents {
		limit = wire.MaxResumeEvents
	}
	q := r.URL.Query()
	f := store.Filter{Run: q.Get("run"), Env: q.Get("env"), Session: q.Get("session"), Task: q.Get("task"), AfterSeq: after, Limit: limit + 1,
		Public: true}
	for _, t := range q["type"] {
		f.Types = append(f.Types, gym.EventType(t))
	}
	evs, err := s.store.Events(r.Context(), f)
	if err != nil {
		writeHTTPError(w, wire.FromError(gym.InfraFault("store", err)))
		return
	}
	more := len(evs) > limit
	if more {
		evs = evs[:limit]
	}
	if evs == nil {
		evs = []gym.Event{}
	}
	last := after
	if len(evs) > 0 {
		last = evs[len(evs)-1].Seq
	}
	writeJSON(w, http.StatusOK, struct {
		Events  []gym.Event `json:"events"`
		LastSeq int64       `json:"last_seq"`
		More    bool        `json:"more"`
	}{evs, last, more})
}

// rpc serves POST /v1/rpc: any JSON-RPC request or batch over HTTP.
func (s *Server) rpc(w http.ResponseWriter, r *http.Request) {
	b, werr := s.readBody(w, r)
	if werr != nil {
		writeJSONBytes(w, werr.HTTPStatus(), encodeResponse(nil, nil, werr))
		return
	}
	items, batch := decodeFrame(nil, b)
	out := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		var msg []byte
		if it.err != nil {
			msg = encodeResponse(it.req.ID, nil, it.err)
		} else {
			start := time.Now()
			s.requests.add()
			res, e := s.answer(context.WithoutCancel(r.Context()), nil, &it.req)
			s.requests.done()
			s.metrics.request(it.req.Method, "http", start, e)
			if len(it.req.ID) == 0 {
				continue
			}
			msg = encodeResponse(it.req.ID, res, e)
		}
		out = append(out, msg)
	}
	switch {
	case len(out) == 0:
		w.WriteHeader(http.StatusNoContent)
	case batch:
		bb, _ := json.Marshal(out)
		writeJSONBytes(w, http.StatusOK, bb)
	default:
		writeJSONBytes(w, http.StatusOK, out[0])
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeHTTPError(w, wire.Errorf(wire.CodeInternal, "encoding the result: %v", err))
		return
	}
	writeJSONBytes(w, status, b)
}

func writeJSONBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte{'\n'})
}

func writeHTTPError(w http.ResponseWriter, e *wire.Error) {
	if e.Data != nil && e.Data.RetryAfterMS > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt((e.Data.RetryAfterMS+999)/1000, 10))
	}
	b, _ := json.Marshal(struct {
		Error *wire.Error `json:"error"`
	}{e})
	writeJSONBytes(w, e.HTTPStatus(), b)
}
