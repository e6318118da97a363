package live

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRouter(t *testing.T) {
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			io.WriteString(w, name+" "+string(b))
		})
	}
	rt := &Router{Users: map[string]http.Handler{"ann": named("ann"), "bob": named("bob")}, Default: named("base")}
	for _, c := range []struct{ header, body, want string }{
		{"ann", `{"user":"bob"}`, `ann {"user":"bob"}`}, // the header wins, as in the proxy
		{"", `{"user":"bob","messages":[]}`, `bob {"user":"bob","messages":[]}`},
		{"", `{"messages":[]}`, `base {"messages":[]}`},
		{"eve", `{}`, `base {}`},
		{"", `not json`, `base not json`},
	} {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(c.body))
		if c.header != "" {
			req.Header.Set("X-User-Id", c.header)
		}
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, req)
		if got := w.Body.String(); got != c.want {
			t.Errorf("X-User-Id %q, body %s: served %q, want %q", c.header, c.body, got, c.want)
		}
	}
}
