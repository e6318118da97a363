package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client calls a Handler over HTTP. Each call carries a fresh idempotency
// key and is retried with the same key when the connection fails or the
// server answers 5xx, so a retried forward_backward or optim_step runs
// once.
type Client struct {
	BaseURL string // e.g. http://127.0.0.1:8300
	HTTP    *http.Client
	// Retries is how many times a failed call is retried (default 3).
	Retries int
}

// NewClient calls the handler at baseURL.
func NewClient(baseURL string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{}}
}

var _ API = (*Client)(nil)
var _ API = (*Service)(nil)

// Error is an error the server answered.
type Error struct {
	Status  int
	Type    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("trainer service: %s (%d %s)", e.Message, e.Status, e.Type)
}

func newKey() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	key := newKey()
	retries := c.Retries
	if retries == 0 {
		retries = 3
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	var last error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return errors.Join(ctx.Err(), last)
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(IdempotencyHeader, key)
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			last = err
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			last = err
			continue
		}
		if resp.StatusCode != http.StatusOK {
			var e struct {
				Error struct{ Message, Type string } `json:"error"`
			}
			json.Unmarshal(b, &e)
			last = &Error{Status: resp.StatusCode, Type: e.Error.Type, Message: e.Error.Message}
			if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
				continue
			}
			return last
		}
		return json.Unmarshal(b, out)
	}
	return last
}

func (c *Client) ForwardBackward(ctx context.Context, req ForwardBackwardRequest) (ForwardBackwardResult, error) {
	var out ForwardBackwardResult
	return out, c.call(ctx, http.MethodPost, "/v1/forward_backward", req, &out)
}

func (c *Client) Forward(ctx context.Context, req ForwardRequest) (ForwardResult, error) {
	var out ForwardResult
	return out, c.call(ctx, http.MethodPost, "/v1/forward", req, &out)
}

func (c *Client) OptimStep(ctx context.Context, p AdamParams) (OptimResult, error) {
	var out OptimResult
	return out, c.call(ctx, http.MethodPost, "/v1/optim_step", p, &out)
}

func (c *Client) SaveWeightsForSampler(ctx context.Context) (Version, error) {
	var out Version
	return out, c.call(ctx, http.MethodPost, "/v1/save_weights_for_sampler", struct{}{}, &out)
}

func (c *Client) Sample(ctx context.Context, req SampleRequest) (SampleResult, error) {
	var out SampleResult
	return out, c.call(ctx, http.MethodPost, "/v1/sample", req, &out)
}

func (c *Client) SaveState(ctx context.Context) (StateResult, error) {
	var out StateResult
	return out, c.call(ctx, http.MethodPost, "/v1/save_state", struct{}{}, &out)
}

func (c *Client) LoadState(ctx context.Context, path string) (StateResult, error) {
	var out StateResult
	return out, c.call(ctx, http.MethodPost, "/v1/load_state", map[string]string{"path": path}, &out)
}

func (c *Client) Info(ctx context.Context) (Info, error) {
	var out Info
	return out, c.call(ctx, http.MethodGet, "/v1/info", nil, &out)
}
