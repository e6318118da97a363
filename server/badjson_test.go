package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/wire"
)

// nested returns JSON arrays nested depth levels deep.
func nested(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// TestNotUTF8AndTooDeepHTTP sends bodies that are not UTF-8 or nest too
// deeply to the HTTP mirror and to POST /v1/rpc: a 400 with a parse error
// that says so.
func TestNotUTF8AndTooDeepHTTP(t *testing.T) {
	ts := startServer(t)
	for _, c := range []struct {
		path, body string
		code       int
		want       []string
	}{
		{"/v1/sessions", "{\"env\":\"echo-v1\",\"run\":\"\xfe\"}", wire.CodeParseError, []string{"the body is not UTF-8", "byte 0xfe", "offset 24"}},
		{"/v1/sessions", `{"env":"echo-v1","options":` + nested(maxJSONDepth+1) + `}`, wire.CodeInvalidParams,
			[]string{"invalid params for session.create", "too deeply nested", "at most 10000 levels"}},
		{"/v1/sessions/s_x/step", `{"action":` + nested(maxJSONDepth+1) + `}`, wire.CodeParseError,
			[]string{"the body is not a JSON object", "too deeply nested", "at most 10000 levels"}},
	} {
		status, _, body := ts.do("POST", c.path, c.body)
		var e struct {
			Error *wire.Error `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || status != http.StatusBadRequest || e.Error == nil {
			t.Fatalf("POST %s: HTTP %d %s, want 400 with an error", c.path, status, body)
		}
		wantCode(t, e.Error, c.code, c.want...)
	}
	status, _, body := ts.do("POST", "/v1/rpc", "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session.create\",\"params\":{\"env\":\"echo-v1\",\"run\":\"\xfe\"}}")
	m, err := parseMsg(body)
	if err != nil || status != http.StatusOK || m.Error == nil || string(m.ID) != "5" {
		t.Fatalf("rpc not UTF-8: HTTP %d %s, want the error answer to id 5", status, body)
	}
	wantCode(t, m.Error, wire.CodeParseError, "the request is not UTF-8", "byte 0xfe")
	if ts.Manager().Len() != 0 {
		t.Errorf("%d sessions were created from bodies that are not UTF-8", ts.Manager().Len())
	}
}
