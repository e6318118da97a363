package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func httpService(t *testing.T, opt Options) (*Service, *Client, *httptest.Server) {
	t.Helper()
	s := newService(t, newModel(t, 64, 8, 0.5), opt)
	ts := httptest.NewServer(NewHandler(s))
	t.Cleanup(ts.Close)
	return s, NewClient(ts.URL), ts
}

func rawPost(t *testing.T, url, key string, body any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if key != "" {
		req.Header.Set(IdempotencyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// The whole API over HTTP: a step, a version, samples from it, a state
// saved and loaded.
func TestHTTPRoundTrip(t *testing.T) {
	s, c, _ := httpService(t, Options{StateDir: t.TempDir()})
	prompt := []int32{3, 4, 5}
	seed := uint64(9)
	smp, err := c.Sample(ctx, SampleRequest{PromptTokens: prompt, NumSamples: 2, MaxTokens: 4, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if smp.Version != 0 || len(smp.Sequences) != 2 || len(smp.Sequences[0].Tokens) != len(smp.Sequences[0].LogProbs) {
		t.Fatalf("sample: %+v", smp)
	}
	var data []Datum
	for i, sq := range smp.Sequences {
		data = append(data, Datum{Tokens: append(append([]int32(nil), prompt...), sq.Tokens...), ResponseLength: len(sq.Tokens),
			RolloutLogProbs: sq.LogProbs, Advantage: float32(1 - 2*i)})
	}
	fb, err := c.ForwardBackward(ctx, ForwardBackwardRequest{Data: data, Loss: pgLoss(TermConfig{Kind: "kl", Weight: 0.1})})
	if err != nil {
		t.Fatal(err)
	}
	if fb.Metrics["pg/ratio_mean"] != 1 || fb.Tokens != 8 {
		t.Fatalf("forward_backward: %+v", fb)
	}
	st, err := c.OptimStep(ctx, AdamParams{LR: 1e-2, MaxGradNorm: 1})
	if err != nil || st.Step != 1 || st.GradNorm <= 0 {
		t.Fatalf("optim_step: %+v, %v", st, err)
	}
	v, err := c.SaveWeightsForSampler(ctx)
	if err != nil || v.Version != 1 || len(v.Checksum) != 64 {
		t.Fatalf("save_weights_for_sampler: %+v, %v", v, err)
	}
	saved, err := c.SaveState(ctx)
	if err != nil || saved.Step != 1 {
		t.Fatalf("save_state: %+v, %v", saved, err)
	}
	if _, err := c.ForwardBackward(ctx, ForwardBackwardRequest{Data: data, Loss: pgLoss()}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OptimStep(ctx, AdamParams{LR: 1e-2}); err != nil {
		t.Fatal(err)
	}
	loaded, err := c.LoadState(ctx, saved.Path)
	if err != nil || loaded.Step != 1 {
		t.Fatalf("load_state: %+v, %v", loaded, err)
	}
	v2, err := c.SaveWeightsForSampler(ctx)
	if err != nil || v2.Checksum != v.Checksum {
		t.Fatalf("the loaded state's weights have checksum %s, the saved ones %s (%v)", v2.Checksum, v.Checksum, err)
	}
	info, err := c.Info(ctx) // versions 0 (the reference), 1 and 2
	if err != nil || info.Step != 1 || info.Config.VocabSize != 64 || info.Trainable == 0 || len(info.Versions) != 3 || info.Versions[0].Version != 0 {
		t.Fatalf("info: %+v, %v", info, err)
	}
	_ = s
}

// A call repeated with the same idempotency key runs once and gets the
// first answer; the same key on another body is refused; bad input gets
// a message saying what was wrong.
func TestIdempotency(t *testing.T) {
	s, _, ts := httpService(t, Options{})
	body := ForwardBackwardRequest{Data: []Datum{{Tokens: []int32{1, 2, 3, 4}, ResponseLength: 2, Advantage: 1}}, Loss: LossConfig{Terms: []TermConfig{{Kind: "sft", Weight: 1}}}}
	var wg sync.WaitGroup
	answers := make([][]byte, 4)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, b := rawPost(t, ts.URL+"/v1/forward_backward", "key-1", body)
			if code != http.StatusOK {
				t.Errorf("retry %d: %d %s", i, code, b)
			}
			answers[i] = b
		}()
	}
	wg.Wait()
	for i := range answers {
		if !bytes.Equal(answers[i], answers[0]) {
			t.Fatalf("answer %d differs from the first: %s vs %s", i, answers[i], answers[0])
		}
	}
	if n := s.Training().Pending(); n != 1 {
		t.Fatalf("4 calls with one key added gradients %d times, want once", n)
	}
	code, b := rawPost(t, ts.URL+"/v1/optim_step", "key-1", AdamParams{LR: 1e-3})
	if code != http.StatusConflict || !strings.Contains(string(b), "idempotency key reused") {
		t.Fatalf("a key reused on another call: %d %s", code, b)
	}
	for _, tc := range []struct {
		path string
		body any
		want string
	}{
		{"/v1/forward_backward", map[string]any{"data": []any{}, "loss": map[string]any{}}, "no terms"},
		{"/v1/forward_backward", map[string]any{"data": []map[string]any{{"tokens": []int{1, 2}, "response_length": 2}}, "loss": map[string]any{"terms": []map[string]any{{"kind": "sft", "weight": 1}}}}, "response_length 2 with 2 tokens"},
		{"/v1/forward_backward", map[string]any{"data": []map[string]any{{"tokens": []int{1, 99}, "response_length": 1}}, "loss": map[string]any{"terms": []map[string]any{{"kind": "sft", "weight": 1}}}}, "outside the vocabulary"},
		{"/v1/forward_backward", map[string]any{"data": []any{}, "loss": map[string]any{"terms": []map[string]any{{"kind": "ppo", "weight": 1}}}}, `kind "ppo": want policy_gradient`},
		{"/v1/optim_step", map[string]any{"learning_rate": 1e-3, "momentum": 0.9}, `unknown field "momentum"`},
		{"/v1/sample", map[string]any{"prompt_tokens": []int{1}, "version": 7}, "weight version 7 is not served"},
		{"/v1/sample", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}}, "messages need the tokenizer"},
		{"/v1/save_state", map[string]any{}, "no state folder"},
	} {
		code, b := rawPost(t, ts.URL+tc.path, "", tc.body)
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal(b, &e)
		if code != http.StatusBadRequest || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s %v: %d %s, want 400 saying %q", tc.path, tc.body, code, b, tc.want)
		}
	}
	if n := s.Training().Pending(); n != 1 {
		t.Fatalf("refused calls changed the gradients: %d pending", n)
	}
}

// The client retries a call whose answer was lost with the same key: the
// server ran it once.
func TestClientRetry(t *testing.T) {
	s := newService(t, newModel(t, 64, 8, 0.5), Options{})
	h := NewHandler(s)
	var mu sync.Mutex
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first { // run the call, then lose its answer
			h.ServeHTTP(httptest.NewRecorder(), r)
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c := NewClient(ts.URL)
	res, err := c.ForwardBackward(ctx, ForwardBackwardRequest{Data: []Datum{{Tokens: []int32{1, 2, 3}, ResponseLength: 1, Advantage: 1}}, Loss: pgLoss()})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || res.Tokens != 1 || s.Training().Pending() != 1 {
		t.Fatalf("%d calls, %d tokens, %d pending gradients: want the retry answered from the first run", calls, res.Tokens, s.Training().Pending())
	}
	var e *Error
	if _, err := c.OptimStep(ctx, AdamParams{}); !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		t.Fatalf("optim_step without a learning rate: %v", err)
	}
}
