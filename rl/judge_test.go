package rl

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

func TestNewJudgeErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  JudgeConfig
		want string
	}{
		{"no endpoint", JudgeConfig{Model: "m"}, "base URL"},
		{"not a URL", JudgeConfig{Endpoint: "localhost:8000", Model: "m"}, "base URL"},
		{"ftp", JudgeConfig{Endpoint: "ftp://h/v1", Model: "m"}, "base URL"},
		{"no model", JudgeConfig{Endpoint: "http://h/v1"}, "model"},
		{"votes", JudgeConfig{Endpoint: "http://h/v1", Model: "m", Votes: -1}, "votes = -1"},
		{"votes by kind", JudgeConfig{Endpoint: "http://h/v1", Model: "m", VotesByKind: map[string]int{"gui": 0}}, `votes_by_kind["gui"]`},
		{"temperature", JudgeConfig{Endpoint: "http://h/v1", Model: "m", Temperature: ptr(3.0)}, "temperature 3"},
		{"max tokens", JudgeConfig{Endpoint: "http://h/v1", Model: "m", MaxTokens: -5}, "max_tokens"},
		{"timeout", JudgeConfig{Endpoint: "http://h/v1", Model: "m", Timeout: -1}, "negative"},
		{"window", JudgeConfig{Endpoint: "http://h/v1", Model: "m", Windows: map[string]Window{"swe": {Head: -1}}}, `windows["swe"]`},
		{"templates", JudgeConfig{Endpoint: "http://h/v1", Model: "m", Templates: "/nonexistent/prompts"}, "prompt templates"},
	}
	for _, c := range cases {
		if _, err := NewJudge(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

func TestJudgeDefaults(t *testing.T) {
	j, err := NewJudge(JudgeConfig{Endpoint: "http://localhost:8000/v1", Model: "m",
		VotesByKind: map[string]int{KindTerminal: 5}, Windows: map[string]Window{KindSWE: {Head: 1, Tail: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if j.VotesFor(KindTerminal) != 5 || j.VotesFor(KindGUI) != DefaultVotes || j.VotesFor("") != DefaultVotes {
		t.Errorf("votes: terminal %d, gui %d, default %d", j.VotesFor(KindTerminal), j.VotesFor(KindGUI), j.VotesFor(""))
	}
	if j.temp != 0.6 || j.cfg.MaxTokens != 4096 || j.timeout != 2*time.Minute || j.retries != 2 || j.backoff != 500*time.Millisecond {
		t.Errorf("defaults: %+v", j)
	}
	if j.WindowFor(KindSWE) != (Window{1, 3}) || j.WindowFor(KindTerminal) != (Window{2, 2}) {
		t.Errorf("windows: swe %+v, terminal %+v", j.WindowFor(KindSWE), j.WindowFor(KindTerminal))
	}
	g, _ := NewJudge(JudgeConfig{Endpoint: "http://h/v1", Model: "m", Temperature: ptr(0.0), Retries: -1})
	if g.temp != 0 || g.retries != 0 {
		t.Errorf("greedy, no retries: temp %v, retries %d", g.temp, g.retries)
	}
}

func TestScoreGood(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment") // must not be sent
	s := newScriptedJudge(t, nil)
	j := testJudge(t, s, nil)
	v, err := j.Score(context.Background(), JudgeInput{Kind: KindTerminal, Instruction: "make hello.txt", Action: "ACT_GOOD"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Reward != 1 || v.Valid != 3 || v.Invalid != 0 || len(v.Votes) != 3 || v.Hint != "" || v.TimedOut {
		t.Fatalf("verdict %+v", v)
	}
	for _, vote := range v.Votes {
		if !vote.Valid || vote.Score != 1 || vote.Raw != replyGood || vote.Err != nil {
			t.Fatalf("vote %+v", vote)
		}
	}
	if s.callCount() != 3 {
		t.Fatalf("%d calls, want 3 (one per vote)", s.callCount())
	}
	req := s.requests()[0]
	if req.Model != "judge-1" || req.Temperature == nil || *req.Temperature != 0.6 || req.MaxTokens != 4096 || req.N > 1 {
		t.Fatalf("request %+v", req)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || !strings.Contains(req.Messages[1].text(), "make hello.txt") {
		t.Fatalf("messages %+v", req.Messages)
	}
	auth, paths := s.headers()
	if paths[0] != "/v1/chat/completions" || auth[0] != "" {
		t.Fatalf("path %q, authorization %q: want /v1/chat/completions and none", paths[0], auth[0])
	}
	// With a key, it is the bearer token.
	s2 := newScriptedJudge(t, nil)
	j2 := testJudge(t, s2, func(c *JudgeConfig) { c.APIKey = "k-123"; c.Votes = 1; c.Endpoint += "/" })
	if _, err := j2.Score(context.Background(), JudgeInput{Action: "ACT_GOOD"}); err != nil {
		t.Fatal(err)
	}
	auth, paths = s2.headers()
	if auth[0] != "Bearer k-123" || paths[0] != "/v1/chat/completions" {
		t.Fatalf("authorization %q, path %q", auth[0], paths[0])
	}
}

func TestScoreMixedVotes(t *testing.T) {
	// Four votes: 1, 1, -1 (with a hint) and a \boxed{2}, in some order.
	s := newScriptedJudge(t, nil)
	j := testJudge(t, s, func(c *JudgeConfig) { c.Votes = 4 })
	v, err := j.Score(context.Background(), JudgeInput{Action: "ACT_MIXED"})
	if err != nil {
		t.Fatal(err)
	}
	// (1 + 1 − 1) / 3 valid votes
	if !near(v.Reward, 1.0/3) || v.Valid != 3 || v.Invalid != 1 || v.Timeouts != 0 {
		t.Fatalf("verdict %+v", v.Tally)
	}
	if v.Hint != "Run ls -la first: the config file is hidden." {
		t.Fatalf("hint %q", v.Hint)
	}
	bad := 0
	for _, vote := range v.Votes {
		if !vote.Valid {
			bad++
			if !errors.Is(vote.Err, ErrBadBox) || vote.Raw != replyMalformed {
				t.Fatalf("malformed vote %+v", vote)
			}
		}
	}
	if bad != 1 {
		t.Fatalf("%d invalid votes", bad)
	}
}

func TestScoreNoBoxAndMalformed(t *testing.T) {
	s := newScriptedJudge(t, nil)
	j := testJudge(t, s, nil)
	for action, want := range map[string]error{"ACT_NOBOX": ErrNoBox, "ACT_MALFORMED": ErrBadBox} {
		v, err := j.Score(context.Background(), JudgeInput{Action: action})
		if err != nil {
			t.Fatal(err)
		}
		if v.Reward != 0 || v.Valid != 0 || v.Invalid != 3 || v.TimedOut {
			t.Fatalf("%s: %+v", action, v.Tally)
		}
		for _, vote := range v.Votes {
			if !errors.Is(vote.Err, want) {
				t.Fatalf("%s: vote error %v, want %v", action, vote.Err, want)
			}
		}
	}
}

func TestScoreHintSelection(t *testing.T) {
	// Votes: a short hint (kept out), a long hint on an invalid vote
	// (kept out), and two valid hints, of which the longer wins.
	replies := []string{
		"[HINT_START]Try again[HINT_END] \\boxed{-1}",
		"[HINT_START]" + strings.Repeat("This hint is long but its vote is not valid. ", 3) + "[HINT_END] \\boxed{7}",
		"[HINT_START]Read the error message.[HINT_END] \\boxed{-1}",
		"[HINT_START]Read the error message, then fix the import in app.py.[HINT_END] \\boxed{0}",
	}
	s := newScriptedJudge(t, func(call int, _ chatRequest) reply { return reply{texts: []string{replies[call%4]}} })
	j := testJudge(t, s, func(c *JudgeConfig) { c.Votes = 4 })
	v, err := j.Score(context.Background(), JudgeInput{Action: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Hint != "Read the error message, then fix the import in app.py." {
		t.Fatalf("hint %q", v.Hint)
	}
	// (−1 − 1 + 0) / 3
	if !near(v.Reward, -2.0/3) || v.Valid != 3 || v.Invalid != 1 {
		t.Fatalf("tally %+v", v.Tally)
	}
}

func TestScoreTimeout(t *testing.T) {
	s := newScriptedJudge(t, nil)
	// A second per call: the hanging calls are cut there, and every attempt
	// reaches the endpoint long before, however loaded the machine.
	j := testJudge(t, s, func(c *JudgeConfig) { c.Timeout = gym.Duration(time.Second); c.Retries = 1 })
	v, err := j.Score(context.Background(), JudgeInput{Action: "ACT_SLOW"})
	if err != nil {
		t.Fatal(err)
	}
	if !v.TimedOut || v.Timeouts != 3 || v.Valid != 0 || v.Invalid != 0 || v.Reward != 0 {
		t.Fatalf("verdict %+v", v)
	}
	for _, vote := range v.Votes {
		if !vote.TimedOut || !errors.Is(vote.Err, ErrJudgeTimeout) || !strings.Contains(vote.Err.Error(), "2 attempt(s)") {
			t.Fatalf("vote %+v (%v)", vote, vote.Err)
		}
	}
	if s.callCount() != 6 {
		t.Fatalf("%d calls, want 6: 3 votes, each tried twice", s.callCount())
	}
}

func TestScoreRetryAfter500(t *testing.T) {
	s := newScriptedJudge(t, nil)
	j := testJudge(t, s, func(c *JudgeConfig) { c.Votes = 1 })
	v, err := j.Score(context.Background(), JudgeInput{Action: "ACT_FLAKY"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Reward != 1 || v.Valid != 1 || s.callCount() != 2 {
		t.Fatalf("verdict %+v after %d calls; want a valid vote on the second call", v.Tally, s.callCount())
	}
	// With no retries the 500 is the vote's error.
	s = newScriptedJudge(t, nil)
	j = testJudge(t, s, func(c *JudgeConfig) { c.Votes = 1; c.Retries = -1 })
	v, _ = j.Score(context.Background(), JudgeInput{Action: "ACT_FLAKY"})
	if v.Valid != 0 || v.Invalid != 1 || v.Votes[0].Err == nil || !strings.Contains(v.Votes[0].Err.Error(), "500") || s.callCount() != 1 {
		t.Fatalf("no retries: %+v, %d calls", v.Votes, s.callCount())
	}
}

func TestScoreRetryRules(t *testing.T) {
	for _, c := range []struct {
		status, calls int
	}{{http.StatusBadRequest, 1}, {http.StatusUnauthorized, 1}, {http.StatusNotFound, 1},
		{http.StatusTooManyRequests, 3}, {http.StatusServiceUnavailable, 3}} {
		s := newScriptedJudge(t, func(int, chatRequest) reply { return reply{status: c.status} })
		j := testJudge(t, s, func(cfg *JudgeConfig) { cfg.Votes = 1 })
		v, err := j.Score(context.Background(), JudgeInput{Action: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if v.Valid != 0 || v.Invalid != 1 || s.callCount() != c.calls {
			t.Errorf("status %d: %d calls, want %d; %+v", c.status, s.callCount(), c.calls, v.Tally)
		}
	}
}

func TestScoreSingleRequest(t *testing.T) {
	s := newScriptedJudge(t, nil)
	j := testJudge(t, s, func(c *JudgeConfig) { c.SingleRequest = true; c.VotesByKind = map[string]int{KindSWE: 5} })
	v, err := j.Score(context.Background(), JudgeInput{Kind: KindSWE, Action: "ACT_BAD"})
	if err != nil {
		t.Fatal(err)
	}
	if s.callCount() != 1 || s.requests()[0].N != 5 || v.Valid != 5 || v.Reward != -1 || v.Hint == "" {
		t.Fatalf("%d calls, n=%d, %+v", s.callCount(), s.requests()[0].N, v.Tally)
	}
	// Fewer choices than asked: the missing votes are invalid.
	s = newScriptedJudge(t, func(int, chatRequest) reply { return reply{texts: []string{replyGood, replyNeutral}} })
	j = testJudge(t, s, func(c *JudgeConfig) { c.SingleRequest = true })
	v, _ = j.Score(context.Background(), JudgeInput{Action: "x"})
	if v.Valid != 2 || v.Invalid != 1 || !near(v.Reward, 0.5) || !strings.Contains(v.Votes[2].Err.Error(), "2 choices for n=3") {
		t.Fatalf("short reply: %+v, %v", v.Tally, v.Votes[2].Err)
	}
}

func TestScoreImages(t *testing.T) {
	png := []byte("\x89PNG fake")
	s := newScriptedJudge(t, func(int, chatRequest) reply { return reply{texts: []string{replyGood}} })
	resolved := ""
	j := testJudge(t, s, func(c *JudgeConfig) {
		c.Votes = 1
		c.BlobResolver = func(_ context.Context, ref string) ([]byte, error) {
			resolved = ref
			return []byte("from the store"), nil
		}
	})
	in := JudgeInput{Kind: KindGUI, Instruction: "press OK", Action: `{"action":"click","x":3,"y":4}`,
		Before: &gym.Blob{MIME: "image/png", Data: png}, After: &gym.Blob{MIME: "image/jpeg", Ref: "sha256:abc"}}
	if _, err := j.Score(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, p := range s.requests()[0].Messages[1].parts() {
		if p.Type == "image_url" {
			urls = append(urls, p.ImageURL.URL)
		}
	}
	want := []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(png),
		"data:image/jpeg;base64," + base64.StdEncoding.EncodeToString([]byte("from the store"))}
	if len(urls) != 2 || urls[0] != want[0] || urls[1] != want[1] || resolved != "sha256:abc" {
		t.Fatalf("image urls %v, want %v (resolved %q)", urls, want, resolved)
	}
	// A reference without a resolver cannot be judged.
	j = testJudge(t, s, func(c *JudgeConfig) { c.Votes = 1 })
	if _, err := j.Score(context.Background(), in); err == nil || !strings.Contains(err.Error(), "BlobResolver") {
		t.Fatalf("err = %v", err)
	}
}

func TestScoreCancelled(t *testing.T) {
	s := newScriptedJudge(t, nil)
	j := testJudge(t, s, nil) // a 2-minute timeout: only ctx ends the wait
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for s.callCount() < 3 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	v, err := j.Score(ctx, JudgeInput{Action: "ACT_SLOW"})
	if !errors.Is(err, context.Canceled) || v.Valid != 0 || len(v.Votes) != 3 {
		t.Fatalf("err = %v, verdict %+v", err, v.Tally)
	}
}
