package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// IdempotencyHeader carries a call's client-chosen key: a call repeated
// with the same key (a retry after a lost answer) gets the first call's
// answer and runs once.
const IdempotencyHeader = "Idempotency-Key"

// maxBody bounds a request body (a batch of samples).
const maxBody = 256 << 20

// Handler serves an API over HTTP (JSON; docs/training.md):
//
//	POST /v1/forward_backward          ForwardBackwardRequest → ForwardBackwardResult
//	POST /v1/forward                   ForwardRequest → ForwardResult
//	POST /v1/optim_step                AdamParams → OptimResult
//	POST /v1/save_weights_for_sampler  {} → Version
//	POST /v1/sample                    SampleRequest → SampleResult
//	POST /v1/save_state                {} → StateResult
//	POST /v1/load_state                {"path": ...} → StateResult
//	GET  /v1/info                      Info
//
// Errors are {"error": {"message", "type"}}: 400 for a call that cannot
// be taken (bad input, a step without gradients), 409 for a key reused
// with another body, 503 once the service is closed.
type Handler struct {
	api  API
	mux  *http.ServeMux
	keys *keyCache
}

// NewHandler serves api; it remembers the answers of the last 4096
// idempotency keys.
func NewHandler(api API) *Handler {
	h := &Handler{api: api, mux: http.NewServeMux(), keys: newKeyCache(4096)}
	route := func(path string, call func(ctx context.Context, body []byte) (any, error)) {
		h.mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, call) })
	}
	route("/v1/forward_backward", func(ctx context.Context, b []byte) (any, error) {
		var req ForwardBackwardRequest
		if err := decode(b, &req); err != nil {
			return nil, err
		}
		return api.ForwardBackward(ctx, req)
	})
	route("/v1/forward", func(ctx context.Context, b []byte) (any, error) {
		var req ForwardRequest
		if err := decode(b, &req); err != nil {
			return nil, err
		}
		return api.Forward(ctx, req)
	})
	route("/v1/optim_step", func(ctx context.Context, b []byte) (any, error) {
		var p AdamParams
		if err := decode(b, &p); err != nil {
			return nil, err
		}
		return api.OptimStep(ctx, p)
	})
	route("/v1/save_weights_for_sampler", func(ctx context.Context, _ []byte) (any, error) { return api.SaveWeightsForSampler(ctx) })
	route("/v1/sample", func(ctx context.Context, b []byte) (any, error) {
		var req SampleRequest
		if err := decode(b, &req); err != nil {
			return nil, err
		}
		return api.Sample(ctx, req)
	})
	route("/v1/save_state", func(ctx context.Context, _ []byte) (any, error) { return api.SaveState(ctx) })
	route("/v1/load_state", func(ctx context.Context, b []byte) (any, error) {
		var req struct {
			Path string `json:"path"`
		}
		if err := decode(b, &req); err != nil {
			return nil, err
		}
		return api.LoadState(ctx, req.Path)
	})
	h.mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, r *http.Request) {
		info, err := api.Info(r.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, info)
	})
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func decode(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	return nil
}

// answer is one call's response, kept for its idempotency key.
type answer struct {
	code int
	body []byte
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, call func(context.Context, []byte) (any, error)) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, fmt.Errorf("request body: %w", err))
		return
	}
	key := r.Header.Get(IdempotencyHeader)
	ctx := r.Context()
	if key != "" {
		// A keyed call runs to its end even when the client goes away, so
		// that its retry finds the answer instead of a half-done call.
		ctx = context.WithoutCancel(ctx)
	}
	run := func() answer {
		v, err := call(ctx, body)
		if err != nil {
			code, b := errorBody(err)
			return answer{code, b}
		}
		b, err := json.Marshal(v)
		if err != nil {
			code, b := errorBody(err)
			return answer{code, b}
		}
		return answer{http.StatusOK, b}
	}
	var a answer
	if key == "" {
		a = run()
	} else {
		a, err = h.keys.do(key, r.URL.Path, body, run)
		if err != nil {
			code, b := errorBody(err)
			a = answer{code, b}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.code)
	w.Write(a.body)
}

var errKeyReused = errors.New("idempotency key reused with a different request")

func errorBody(err error) (int, []byte) {
	code, typ := http.StatusBadRequest, "invalid_request_error"
	switch {
	case errors.Is(err, errKeyReused):
		code, typ = http.StatusConflict, "idempotency_conflict"
	case errors.Is(err, errClosed):
		code, typ = http.StatusServiceUnavailable, "unavailable"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": err.Error(), "type": typ}})
	return code, b
}

func writeError(w http.ResponseWriter, err error) {
	code, b := errorBody(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// keyCache runs each idempotency key's call once: a repeat waits for the
// first and gets its answer; the oldest keys are forgotten past max.
type keyCache struct {
	mu    sync.Mutex
	max   int
	order []string
	calls map[string]*keyed
}

type keyed struct {
	sum  [32]byte
	done chan struct{}
	a    answer
}

func newKeyCache(max int) *keyCache { return &keyCache{max: max, calls: map[string]*keyed{}} }

func (c *keyCache) do(key, path string, body []byte, run func() answer) (answer, error) {
	sum := sha256.Sum256(append([]byte(path+"\x00"), body...))
	c.mu.Lock()
	if k, ok := c.calls[key]; ok {
		c.mu.Unlock()
		if k.sum != sum {
			return answer{}, fmt.Errorf("%w (key %q)", errKeyReused, key)
		}
		<-k.done
		return k.a, nil
	}
	k := &keyed{sum: sum, done: make(chan struct{})}
	c.calls[key] = k
	c.order = append(c.order, key)
	for len(c.order) > c.max {
		delete(c.calls, c.order[0])
		c.order = c.order[1:]
	}
	c.mu.Unlock()
	k.a = run()
	close(k.done)
	return k.a, nil
}
