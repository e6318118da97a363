package live

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// Router serves each user's own policy (one LoRA adapter per user over a
// shared frozen base): a request goes to the handler of its user, named
// by the X-User-Id header or else the body's "user" (the proxy forwards
// both), and a request of any other user, or of none, to Default (the
// base, which no one's feedback trains). So one user's preferences never
// reach another's answers.
type Router struct {
	Users   map[string]http.Handler
	Default http.Handler
}

// ServeHTTP implements http.Handler.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user := r.Header.Get("X-User-Id")
	if user == "" && r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var req struct {
			User string `json:"user"`
		}
		json.Unmarshal(body, &req) // a body that is not JSON goes on as it is, for the policy's own error
		user = req.User
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if h, ok := rt.Users[user]; ok {
		h.ServeHTTP(w, r)
		return
	}
	rt.Default.ServeHTTP(w, r)
}
