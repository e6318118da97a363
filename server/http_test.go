package server

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/wire"
)

// httpErr decodes an HTTP mirror error body.
func httpErr(t *testing.T, body []byte) *wire.Error {
	t.Helper()
	var e struct {
		Error *wire.Error `json:"error"`
	}
	mustUnmarshal(t, body, &e)
	if e.Error == nil {
		t.Fatalf("body %s has no error", body)
	}
	return e.Error
}

// wantStatus checks an HTTP mirror error: the status is its code's
// HTTPStatus and the body carries the code.
func wantStatus(t *testing.T, status int, body []byte, code int) *wire.Error {
	t.Helper()
	e := httpErr(t, body)
	if e.Code != code || status != e.HTTPStatus() {
		t.Fatalf("HTTP %d with error %d %q, want code %d with HTTP %d", status, e.Code, e.Message, code, (&wire.Error{Code: code}).HTTPStatus())
	}
	return e
}

func TestHTTPMirror(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Sessions.MaxSessions = 2 })
	status, _, body := ts.do("POST", "/v1/sessions", gym.CreateRequest{Env: "echo-v1", Run: "http"})
	if status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", status, body)
	}
	var cr gym.ResetResult
	mustUnmarshal(t, body, &cr)
	sid := cr.Session

	step := func(stepID, text string) (int, []byte) {
		st, _, b := ts.do("POST", "/v1/sessions/"+sid+"/step", map[string]any{"step_id": stepID, "action": gym.TextAction(text)})
		return st, b
	}
	status, body = step("h1", "over http")
	var sr gym.StepResult
	mustUnmarshal(t, body, &sr)
	if status != http.StatusOK || sr.Step != 1 || sr.Observation.Text() != "over http" || sr.Session != sid {
		t.Fatalf("step: HTTP %d %s", status, body)
	}
	status, body = step("h1", "over http")
	mustUnmarshal(t, body, &sr)
	if status != http.StatusOK || !sr.Replayed {
		t.Errorf("retried step: HTTP %d %s", status, body)
	}
	status, body = step("h1", "something else")
	wantStatus(t, status, body, wire.CodeStepIDReused)

	status, _, body = ts.do("POST", "/v1/sessions/"+sid+"/step", map[string]any{"action": gym.TextAction("x"), "bogus": 1})
	wantCode(t, wantStatus(t, status, body, wire.CodeInvalidParams), wire.CodeInvalidParams, `"bogus"`)
	status, _, body = ts.do("POST", "/v1/sessions/"+sid+"/step", "{not json")
	wantStatus(t, status, body, wire.CodeParseError)
	status, _, body = ts.do("POST", "/v1/sessions/"+sid+"/step", map[string]any{"action": map[string]any{"parts": []any{}}})
	if e := wantStatus(t, status, body, wire.CodeBadAction); e.Data == nil || len(e.Data.Problems) == 0 {
		t.Errorf("bad action: %s, want data.problems", body)
	}

	status, _, body = ts.do("POST", "/v1/sessions/"+sid+"/reset", map[string]any{"seed": 3})
	var rr gym.ResetResult
	mustUnmarshal(t, body, &rr)
	if status != http.StatusOK || rr.Episode != 2 {
		t.Errorf("reset: HTTP %d %s", status, body)
	}
	status, _, body = ts.do("POST", "/v1/sessions/"+sid+"/rewards", map[string]any{"step_id": "h1", "reward": 0.5, "source": "judge"})
	if status != http.StatusOK {
		t.Errorf("reward: HTTP %d %s", status, body)
	}

	status, _, body = ts.do("GET", "/v1/sessions/"+sid+"/events?after_seq=0", nil)
	var res wire.ResumeResult
	mustUnmarshal(t, body, &res)
	var types []string
	for _, e := range res.Events {
		types = append(types, string(e.Type))
	}
	if status != http.StatusOK || strings.Join(types, " ") != "session.created reset step step.refused reset reward" {
		t.Errorf("events: HTTP %d, types %v", status, types)
	}
	status, _, body = ts.do("GET", "/v1/sessions/"+sid+"/events?after_seq=x", nil)
	wantStatus(t, status, body, wire.CodeInvalidParams)
	status, _, body = ts.do("GET", "/v1/events?run=http&type=step&limit=1", nil)
	var page struct {
		Events  []gym.Event `json:"events"`
		LastSeq int64       `json:"last_seq"`
		More    bool        `json:"more"`
	}
	mustUnmarshal(t, body, &page)
	if status != http.StatusOK || len(page.Events) != 1 || page.Events[0].StepID != "h1" || page.More {
		t.Errorf("GET /v1/events: HTTP %d %s", status, body)
	}

	// Capacity: one more session fills it, the next is refused with 429.
	if status, _, body = ts.do("POST", "/v1/sessions", gym.CreateRequest{Env: "echo-v1"}); status != http.StatusOK {
		t.Fatalf("second create: HTTP %d %s", status, body)
	}
	status, hdr, body := ts.do("POST", "/v1/sessions", gym.CreateRequest{Env: "echo-v1"})
	if e := wantStatus(t, status, body, wire.CodeOverCapacity); e.Data == nil || e.Data.RetryAfterMS <= 0 {
		t.Errorf("over capacity: %s, want data.retry_after_ms", body)
	}
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After header %q, want whole seconds", hdr.Get("Retry-After"))
	}

	status, _, body = ts.do("POST", "/v1/sessions/"+sid+"/close", nil)
	if status != http.StatusOK {
		t.Errorf("close: HTTP %d %s", status, body)
	}
	status, body = step("h2", "after close")
	wantStatus(t, status, body, wire.CodeUnknownSession)
	status, _, body = ts.do("DELETE", "/v1/sessions/"+sid, nil)
	if status != http.StatusOK {
		t.Errorf("DELETE of a closed session (idempotent): HTTP %d %s", status, body)
	}

	for _, c := range []struct {
		method, path string
		body         any
		code         int
	}{
		{"POST", "/v1/sessions", gym.CreateRequest{Env: "chess-v1"}, wire.CodeUnknownEnv},
		{"POST", "/v1/sessions", gym.CreateRequest{TaskID: "nope"}, wire.CodeUnknownTask},
		{"POST", "/v1/sessions", map[string]any{"env": 1}, wire.CodeInvalidParams},
		{"POST", "/v1/sessions", strings.Repeat(" ", 65<<10) + "{}", wire.CodeFrameTooLarge},
		{"GET", "/v1/envs/chess-v1", nil, wire.CodeUnknownEnv},
		{"GET", "/v1/tasks?env=chess-v1", nil, wire.CodeUnknownEnv},
	} {
		status, _, body := ts.do(c.method, c.path, c.body)
		wantStatus(t, status, body, c.code)
	}
	for _, path := range []string{"/v1/info", "/v1/envs", "/v1/envs/guess-v1", "/v1/tasks?env=guess-v1"} {
		if status, _, body := ts.do("GET", path, nil); status != http.StatusOK || !json.Valid(body) {
			t.Errorf("GET %s: HTTP %d %s", path, status, body)
		}
	}
}

func TestHTTPRPC(t *testing.T) {
	ts := startServer(t)
	status, _, body := ts.do("POST", "/v1/rpc", `{"jsonrpc":"2.0","id":1,"method":"session.create","params":{"env":"echo-v1"}}`)
	m, err := parseMsg(body)
	if err != nil || status != http.StatusOK || m.Error != nil {
		t.Fatalf("rpc create: HTTP %d %s", status, body)
	}
	var cr gym.ResetResult
	mustUnmarshal(t, m.Result, &cr)
	step, _ := json.Marshal(stepArgs(cr.Session, "", "hi"))
	status, _, body = ts.do("POST", "/v1/rpc", `[
		{"jsonrpc":"2.0","id":1,"method":"session.step","params":`+string(step)+`},
		{"jsonrpc":"2.0","id":2,"method":"nope"},
		{"jsonrpc":"2.0","method":"server.info"},
		{"jsonrpc":"2.0","id":3,"method":"events.subscribe","params":{}}
	]`)
	if m, err = parseMsg(body); err != nil || status != http.StatusOK || len(m.Batch) != 3 {
		t.Fatalf("rpc batch: HTTP %d %s", status, body)
	}
	if m.Batch[0].Error != nil || m.Batch[1].Error.Code != wire.CodeMethodNotFound || m.Batch[2].Error.Code != wire.CodeBadRequest {
		t.Errorf("rpc batch answered %s", body)
	}
	if !strings.Contains(m.Batch[2].Error.Message, "/v1/ws") {
		t.Errorf("events.subscribe over HTTP should point at /v1/ws: %s", m.Batch[2].Error.Message)
	}
	if status, _, body = ts.do("POST", "/v1/rpc", `{"jsonrpc":"2.0","method":"server.info"}`); status != http.StatusNoContent || len(body) != 0 {
		t.Errorf("rpc notification: HTTP %d %q, want 204 and nothing", status, body)
	}
	status, _, body = ts.do("POST", "/v1/rpc", `{"jsonrpc":`)
	if m, err = parseMsg(body); err != nil || m.Error == nil || m.Error.Code != wire.CodeParseError || string(m.ID) != "null" {
		t.Errorf("rpc malformed: HTTP %d %s", status, body)
	}
	status, _, body = ts.do("POST", "/v1/rpc", strings.Repeat(" ", 65<<10))
	if m, err = parseMsg(body); err != nil || status != http.StatusRequestEntityTooLarge || m.Error == nil || m.Error.Code != wire.CodeFrameTooLarge {
		t.Errorf("rpc oversize: HTTP %d %s", status, body)
	}
}

func TestAuth(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Token = "s3cret" })
	get := func(path string, hdr string) int {
		req, _ := http.NewRequest("GET", ts.base+path, nil)
		if hdr != "" {
			req.Header.Set("Authorization", hdr)
		}
		resp, err := ts.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("GET %s: 401 without WWW-Authenticate", path)
		}
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, hdr string
		want      int
	}{
		{"/healthz", "", 200},
		{"/v1/info", "", 401},
		{"/v1/info", "Bearer wrong", 401},
		{"/v1/info", "s3cret", 401},
		{"/v1/info", "Basic czNjcmV0", 401},
		{"/v1/info", "Bearer s3cret", 200},
		// The scheme is case-insensitive (RFC 9110 §11.1), the token not.
		{"/v1/info", "bearer s3cret", 200},
		{"/v1/info", "BEARER s3cret", 200},
		{"/v1/info", "bearer S3CRET", 401},
		{"/v1/info", "BEARER", 401},
		{"/v1/info", "Bearers3cret", 401},
		{"/metrics", "", 401},
		{"/metrics", "Bearer s3cret", 200},
		{"/v1/events", "", 401},
	} {
		if got := get(c.path, c.hdr); got != c.want {
			t.Errorf("GET %s with %q: HTTP %d, want %d", c.path, c.hdr, got, c.want)
		}
	}
	status, _, body := ts.do("POST", "/v1/sessions", gym.CreateRequest{Env: "echo-v1"})
	if status != http.StatusOK {
		t.Errorf("create with the token: HTTP %d %s", status, body)
	}
	for _, hdr := range []string{"", "Bearer nope"} {
		h := http.Header{}
		if hdr != "" {
			h.Set("Authorization", hdr)
		}
		ws, resp, err := websocket.DefaultDialer.Dial(ts.ws, h)
		if err == nil {
			ws.Close()
			t.Fatalf("WebSocket upgrade with %q was accepted", hdr)
		}
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("WebSocket upgrade with %q: %v %v, want HTTP 401", hdr, err, resp)
		}
	}
	c := ts.dial()
	c.step(c.create(gym.CreateRequest{Env: "echo-v1"}).Session, "", "authorized")
	for _, scheme := range []string{"bearer", "BEARER"} {
		c := dialWS(t, ts.ws, http.Header{"Authorization": {scheme + " s3cret"}})
		c.step(c.create(gym.CreateRequest{Env: "echo-v1"}).Session, "", "authorized as "+scheme)
	}
}

func TestListenRefusesOpenAddressWithoutToken(t *testing.T) {
	ts := startServer(t)
	_, err := ts.Listen("0.0.0.0:0")
	if err == nil || !strings.Contains(err.Error(), "without a token") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("Listen(0.0.0.0:0) without a token: %v, want a refusal that says why", err)
	}
	if _, err := ts.Listen("[::]:0"); err == nil {
		t.Fatal("Listen([::]:0) without a token was allowed")
	}
	withToken := startServer(t, func(c *Config) { c.Token = "t" })
	ln, err := withToken.Listen("0.0.0.0:0")
	if err != nil {
		t.Fatalf("Listen(0.0.0.0:0) with a token: %v", err)
	}
	ln.Close()
}

func TestMetrics(t *testing.T) {
	ts := startServer(t)
	c := ts.dial()
	s := c.create(gym.CreateRequest{Env: "echo-v1"}).Session
	for range 3 {
		c.step(s, "", "counted")
	}
	c.step(s, "", "/done")
	c.callErr("nope", nil)
	status, _, body := ts.do("GET", "/metrics", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d", status)
	}
	for _, re := range []string{
		`nextstate_steps_total\{env="echo-v1",outcome="ok"\} 3`,
		`nextstate_steps_total\{env="echo-v1",outcome="terminated"\} 1`,
		`nextstate_sessions_created_total\{env="echo-v1"\} 1`,
		`nextstate_sessions_live 1`,
		`nextstate_ws_connections 1`,
		`nextstate_errors_total\{code="-32601",method="unknown"\} 1`,
		`nextstate_request_seconds_count\{method="session.step",transport="ws"\} 4`,
		`nextstate_store_last_seq \d+`,
	} {
		if !regexp.MustCompile("(?m)^" + re + "$").Match(body) {
			t.Errorf("/metrics lacks %s", re)
		}
	}
}
