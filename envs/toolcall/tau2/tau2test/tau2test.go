// Package tau2test holds what the tests of the tau2 kinds share: a
// scripted user simulator (FakeUser, an OpenAI-compatible chat completions
// endpoint whose replies are messages or tool calls, in order, and which
// keeps the requests it was sent), the shared data's folders (DataDir),
// episodes played through an Env or a Manager (Play, OracleSessions), and
// the gold-replay benchmark (BenchReplay).
package tau2test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Reply is one scripted reply: a message (Text), or a tool call (Tool,
// with Args, a JSON object) when Tool is set.
type Reply struct {
	Text string
	Tool string
	Args string
}

// Say is a message reply.
func Say(text string) Reply { return Reply{Text: text} }

// ToolCall is a tool call reply.
func ToolCall(tool, args string) Reply { return Reply{Tool: tool, Args: args} }

// FakeUser answers chat completion requests with its Replies, in order
// ("###OUT-OF-SCOPE###" once they run out), or every request with Status
// when it is set. Lock Mu to read Requests and Auth. It is an
// http.Handler: serve it with httptest.NewServer.
type FakeUser struct {
	Mu       sync.Mutex
	Replies  []Reply
	Requests []Request
	Auth     []string // each request's Authorization header
	Status   int
}

// Request is a chat completion request as the fake reads it.
type Request struct {
	Model       string    `json:"model"`
	Temperature float64   `json:"temperature"`
	Seed        int64     `json:"seed"`
	Messages    []Message `json:"messages"`
	Tools       []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// Message is one message of a request.
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Roles lists the messages' roles, space separated.
func (r Request) Roles() string {
	roles := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		roles[i] = m.Role
	}
	return strings.Join(roles, " ")
}

// ServeHTTP implements http.Handler.
func (f *FakeUser) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.Requests = append(f.Requests, req)
	f.Auth = append(f.Auth, r.Header.Get("Authorization"))
	w.Header().Set("Content-Type", "application/json")
	if f.Status != 0 {
		w.WriteHeader(f.Status)
		fmt.Fprint(w, `{"error":{"message":"scripted failure","type":"invalid_request_error"}}`)
		return
	}
	reply := Say("###OUT-OF-SCOPE###")
	if len(f.Replies) > 0 {
		reply, f.Replies = f.Replies[0], f.Replies[1:]
	}
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	finish := "stop"
	if reply.Tool != "" {
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%d", len(f.Requests)), "type": "function",
			"function": map[string]any{"name": reply.Tool, "arguments": reply.Args}}}
		finish = "tool_calls"
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
	})
}
