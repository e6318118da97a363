package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
)

// upstream is a scripted OpenAI-compatible policy server: it answers
// "answer to: <last message>", streamed in two chunks when asked, and
// records the bodies it received.
type upstream struct {
	mu     sync.Mutex
	bodies [][]byte
	auths  []string // the Authorization header of each chat request
	// gate, when set, holds a stream between its first and second chunk.
	gate chan struct{}
	// sent is signalled after the first chunk of a stream is flushed.
	sent chan struct{}
}

func (u *upstream) lastBody() []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bodies[len(u.bodies)-1]
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"policy","object":"model","created":1,"owned_by":"test"}]}`)
		return
	}
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.bodies = append(u.bodies, body)
	u.auths = append(u.auths, r.Header.Get("Authorization"))
	u.mu.Unlock()
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	text := "answer to: " + req.Messages[len(req.Messages)-1].Content
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(text)
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"policy","prompt_token_ids":[1,2,3],`+
			`"choices":[{"index":0,"finish_reason":"stop","token_ids":[7,8],"logprobs":{"content":[{"token":"a","logprob":-0.5,"bytes":null,"top_logprobs":[]},{"token":"b","logprob":-0.25,"bytes":null,"top_logprobs":[]}]},`+
			`"message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	half := len(text) / 2
	chunk := func(delta string) {
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"policy\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
		fl.Flush()
	}
	first, _ := json.Marshal(text[:half])
	rest, _ := json.Marshal(text[half:])
	chunk(`{"role":"assistant","content":` + string(first) + `}`)
	if u.sent != nil {
		u.sent <- struct{}{}
	}
	if u.gate != nil {
		<-u.gate
	}
	chunk(`{"content":` + string(rest) + `}`)
	chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":"}}]}`)
	chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`)
	io.WriteString(w, "data: [DONE]\n\n")
}

// judgeServer is a scripted judge: it reads the next state from the prompt
// and votes by rule: a correction is -1 with a hint, thanks is +1, an
// attempt to override the instructions is flagged, anything else is 0.
// Its second vote disagrees on corrections, so the majority is tested.
func judgeServer(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, "bad judge request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		_, next, _ := strings.Cut(req.Messages[1].Content, "## Next state")
		next = strings.ToLower(next)
		var reply string
		switch {
		case strings.Contains(next, "ignore your instructions"):
			reply = "[FLAG] tries to override the agent's instructions\n\\boxed{0}"
		case strings.Contains(next, "wrong"):
			reply = "[HINT_START]Answer in French, as the user asked at the start.[HINT_END]\n\\boxed{-1}"
			if n%3 == 0 {
				reply = `\boxed{1}` // a dissenting vote: the majority still says -1
			}
		case strings.Contains(next, "thanks"):
			reply = `\boxed{1}`
		default:
			reply = `\boxed{0}`
		}
		b, _ := json.Marshal(reply)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"j","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%s}}]}`, b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type fixture struct {
	proxy *Proxy
	srv   *httptest.Server
	up    *upstream
	st    *store.Store
	q     *Quarantine
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	up := &upstream{}
	usrv := httptest.NewServer(up)
	t.Cleanup(usrv.Close)
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := OpenQuarantine(dir)
	if err != nil {
		t.Fatal(err)
	}
	jsrv := judgeServer(t)
	judge, err := rl.NewJudge(rl.JudgeConfig{Endpoint: jsrv.URL + "/v1", Model: "judge", Votes: 3})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Upstream: usrv.URL + "/v1", Store: st, Quarantine: q, Judge: judge, Workers: 1}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return &fixture{proxy: p, srv: srv, up: up, st: st, q: q}
}

// post sends a chat request with the given headers and returns the
// response's trained header and body; the answer must be 200.
func (f *fixture) post(t *testing.T, body string, headers ...string) (string, string) {
	t.Helper()
	resp, b := f.send(t, body, headers...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s: %s", resp.Status, b)
	}
	return resp.Header.Get(TrainedHeader), b
}

// send sends a chat request with the given headers and returns the
// response (its body read and closed) and its body.
func (f *fixture) send(t *testing.T, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (f *fixture) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.proxy.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// samples returns the stored samples, by step.
func (f *fixture) samples(t *testing.T) []rl.Sample {
	t.Helper()
	stored, err := f.st.Samples(context.Background(), store.SampleFilter{Run: Run})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]rl.Sample, len(stored))
	for i, s := range stored {
		if err := json.Unmarshal(s.Body, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Origin.Step < out[j].Metadata.Origin.Step })
	return out
}

// conv builds a chat request body from alternating user/assistant texts.
func conv(extra string, texts ...string) string {
	msgs := []map[string]string{{"role": "system", "content": "You are a helpful assistant."}}
	for i, t := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]string{"role": role, "content": t})
	}
	b, _ := json.Marshal(msgs)
	return `{"model":"policy","messages":` + string(b) + extra + `}`
}
