package rl

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// chatRequest is the part of a chat completions request the scripted
// judge reads.
type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature *float64      `json:"temperature"`
	MaxTokens   int           `json:"max_tokens"`
	N           int           `json:"n"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentPart is one part of a multi-part content.
type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// text returns a message's text, whether its content is a string or parts.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var b strings.Builder
	for _, p := range m.parts() {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (m chatMessage) parts() []contentPart {
	var ps []contentPart
	_ = json.Unmarshal(m.Content, &ps)
	return ps
}

// userText is the request's user message text.
func (r chatRequest) userText() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.text()
		}
	}
	return ""
}

// reply is what the scripted judge answers one call.
type reply struct {
	status int      // 0 for 200
	texts  []string // the choices' contents
	hang   bool     // wait until the client gives up
	hold   bool     // answer texts once released (or give up with the client)
}

// scriptedJudge is an OpenAI-compatible chat endpoint that votes by rule.
type scriptedJudge struct {
	srv     *httptest.Server
	release chan struct{}
	once    sync.Once
	rule    func(call int, req chatRequest) reply
	entered chan string // the user text of each call that arrived, while there is room

	mu    sync.Mutex
	calls int
	reqs  []chatRequest
	auth  []string
	paths []string
}

// newScriptedJudge starts an endpoint; rule nil is byMarker.
func newScriptedJudge(t testing.TB, rule func(call int, req chatRequest) reply) *scriptedJudge {
	if rule == nil {
		rule = byMarker
	}
	s := &scriptedJudge{rule: rule, release: make(chan struct{}), entered: make(chan string, 1024)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.releaseAll() // let hanging handlers return, then stop
		s.srv.Close()
	})
	return s
}

// releaseAll lets the calls that hang or hold go on.
func (s *scriptedJudge) releaseAll() { s.once.Do(func() { close(s.release) }) }

// url is the base URL a JudgeConfig takes.
func (s *scriptedJudge) url() string { return s.srv.URL + "/v1" }

func (s *scriptedJudge) serve(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	call := s.calls
	s.calls++
	s.reqs = append(s.reqs, req)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	select {
	case s.entered <- req.userText():
	default:
	}
	rep := s.rule(call, req)
	if rep.hang || rep.hold {
		select {
		case <-r.Context().Done():
			return
		case <-s.release:
		}
		if rep.hang {
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.status != 0 && rep.status != http.StatusOK {
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `{"error":{"message":"scripted %d","type":"server_error"}}`, rep.status)
		return
	}
	choices := make([]map[string]any, len(rep.texts))
	for i, t := range rep.texts {
		choices[i] = map[string]any{"index": i, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": t}}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion",
		"created": 0, "model": req.Model, "choices": choices})
}

func (s *scriptedJudge) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// headers returns the Authorization header and the path of each call.
func (s *scriptedJudge) headers() (auth, paths []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...), append([]string(nil), s.paths...)
}

func (s *scriptedJudge) requests() []chatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chatRequest(nil), s.reqs...)
}

// Replies of the scripted judge.
const (
	replyGood      = "The command created the file and the test output confirms it. \\boxed{1}"
	replyBadHint   = "The command failed.\n[HINT_START]Run ls -la first: the config file is hidden.[HINT_END]\n\\boxed{-1}"
	replyNeutral   = "Hard to tell. \\boxed{0}"
	replyMalformed = "Mostly good. \\boxed{2}"
	replyNoBox     = "I think the step was fine."
)

// byMarker votes by the marker in the judged action (the user message):
// ACT_GOOD 1, ACT_BAD -1 with a hint, ACT_NEUTRAL 0, ACT_MALFORMED a
// \boxed{2}, ACT_NOBOX no box, ACT_SLOW hangs, ACT_FLAKY a 500 on the first
// call then 1, ACT_MIXED cycles 1, 1, -1, malformed by call number.
func byMarker(call int, req chatRequest) reply {
	text := req.userText()
	n := max(req.N, 1)
	all := func(s string) reply {
		texts := make([]string, n)
		for i := range texts {
			texts[i] = s
		}
		return reply{texts: texts}
	}
	switch {
	case strings.Contains(text, "ACT_SLOW"):
		return reply{hang: true}
	case strings.Contains(text, "ACT_FLAKY"):
		if call == 0 {
			return reply{status: http.StatusInternalServerError}
		}
		return all(replyGood)
	case strings.Contains(text, "ACT_MIXED"):
		return all([]string{replyGood, replyGood, replyBadHint, replyMalformed}[call%4])
	case strings.Contains(text, "ACT_GOOD"):
		return all(replyGood)
	case strings.Contains(text, "ACT_BAD"):
		return all(replyBadHint)
	case strings.Contains(text, "ACT_NEUTRAL"):
		return all(replyNeutral)
	case strings.Contains(text, "ACT_MALFORMED"):
		return all(replyMalformed)
	case strings.Contains(text, "ACT_NOBOX"):
		return all(replyNoBox)
	}
	return reply{status: http.StatusBadRequest}
}

// testJudge makes a Judge on s with fast timings; edit tweaks the config.
func testJudge(t testing.TB, s *scriptedJudge, edit func(*JudgeConfig)) *Judge {
	t.Helper()
	cfg := JudgeConfig{Endpoint: s.url(), Model: "judge-1", Backoff: gym.Duration(time.Millisecond)}
	if edit != nil {
		edit(&cfg)
	}
	j, err := NewJudge(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// slowApart scores the steps whose action has marker with slow, the
// others with rest: so a test gives only the hanging call a short timeout,
// and a loaded machine cannot time the others out instead.
type slowApart struct {
	marker     string
	slow, rest Scorer
}

func (s slowApart) Score(ctx context.Context, in JudgeInput) (Verdict, error) {
	if strings.Contains(in.Action, s.marker) {
		return s.slow.Score(ctx, in)
	}
	return s.rest.Score(ctx, in)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func ptr[T any](v T) *T { return &v }
