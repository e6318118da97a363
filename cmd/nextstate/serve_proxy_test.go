package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/server"
	"github.com/nextstate-rl/nextstate/wire"
)

// chatReply answers any chat completion with content.
func chatReply(content string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
	}
}

// TestServeMountsProxy: with --proxy-upstream, serve answers chat
// completions on its own address, behind its token, and a judged turn
// becomes a sample on the server's own samples stream.
func TestServeMountsProxy(t *testing.T) {
	var upstreamAuth []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamAuth = append(upstreamAuth, r.Header.Get("Authorization"))
		chatReply("4")(w, r)
	}))
	defer upstream.Close()
	judge := httptest.NewServer(chatReply(`The user thanked the agent. \boxed{1}`))
	defer judge.Close()

	dir := t.TempDir()
	srv, err := server.New(server.Config{DataDir: dir, Token: "sekret"})
	if err != nil {
		t.Fatal(err)
	}
	if err := mountProxy(srv, dir, proxyFlags{upstream: upstream.URL}, judgeFlags{url: judge.URL + "/v1", model: "j", votes: 3}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	base := "http://" + ln.Addr().String()

	post := func(token, body string) *http.Response {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Session-Id", "s1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := post("wrong", `{"messages":[{"role":"user","content":"2+2?"}]}`); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: status %d, want 401", resp.StatusCode)
	}
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"2+2?"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"4"},{"role":"user","content":"thanks!"}]}`,
	} {
		resp := post("sekret", body)
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.Choices[0].Message.Content != "4" {
			t.Fatalf("proxied answer: status %d, %+v, %v", resp.StatusCode, out, err)
		}
		resp.Body.Close()
	}
	for _, a := range upstreamAuth {
		if a != "" {
			t.Errorf("the server's token went upstream: %q", a)
		}
	}

	// The first turn, judged by the thanks that followed, is a sample on
	// the server's own stream.
	var page wire.SamplesPage
	deadline := time.Now().Add(30 * time.Second) // a bound against a hang, not a timing assertion
	for len(page.Samples) == 0 && time.Now().Before(deadline) {
		req, _ := http.NewRequest("GET", base+"/v1/samples?after_seq=0", nil)
		req.Header.Set("Authorization", "Bearer sekret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if len(page.Samples) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(page.Samples) != 1 {
		t.Fatalf("samples on the server's stream: %d, want 1", len(page.Samples))
	}
	var sample struct {
		Reward   float64 `json:"reward"`
		Response string  `json:"response"`
	}
	if err := json.Unmarshal(page.Samples[0].Sample, &sample); err != nil || sample.Reward != 1 || sample.Response != "4" {
		t.Errorf("sample %s: %v; want reward 1 and response 4", page.Samples[0].Sample, err)
	}
}
