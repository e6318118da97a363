package simuser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"

	"github.com/nextstate-rl/nextstate/rl"
)

// Config configures Simulate.
type Config struct {
	// BaseURL is the OpenAI-compatible endpoint the users talk to (the
	// proxy's, ending in /v1). Required.
	BaseURL string
	Model   string
	// Token, if set, is sent as a bearer token.
	Token string
	// Users talk, each its own sessions, all at once. Required.
	Users []User
	// Sessions per user [16]; Turns are the replies of a session [3].
	Sessions, Turns int
	// Run names this simulation's sessions ("RUN-USER-sNNN"), so that
	// two runs against one proxy do not share a session.
	Run string
	// Seed makes the users' choices and the replies' sampling repeatable
	// (each request carries a seed of its own).
	Seed        uint64
	Temperature float64
	MaxTokens   int
	// Wait, if set, is called after each round (every user's session r)
	// before the next: to wait until the trainer has learnt from it.
	Wait func(ctx context.Context, round int) error
	// OnSession, if set, gets each session's result as it ends.
	OnSession func(SessionResult)
	Client    *http.Client
}

// Reply is one reply a user got.
type Reply struct {
	Text string `json:"text"`
	// Met says whether it answered the question and met every preference
	// of its user.
	Met bool `json:"met"`
	// Version is the weight version that answered (X-Weight-Version), -1
	// if the server did not say.
	Version int `json:"version"`
	// NotTrained is the proxy's X-Nextstate-Trained reason, when it said
	// the turn will not be trained on.
	NotTrained string `json:"not_trained,omitempty"`
}

// SessionResult is one session of one user.
type SessionResult struct {
	User    string  `json:"user"`
	Wants   string  `json:"wants"`
	Session int     `json:"session"`
	Replies []Reply `json:"replies"`
	// Compliance is the share of its replies that met the user's
	// preferences.
	Compliance float64 `json:"compliance"`
	Adversary  bool    `json:"adversary,omitempty"`
}

// Simulate plays cfg.Sessions rounds: in each, every user plays one
// session of cfg.Turns replies (its users concurrently), then cfg.Wait
// runs. A session's first message is a question; each next message is the
// user's reaction to the last reply and the next question (or, after a
// re-query, the same question rephrased); its last message, the reaction
// to the last reply, is marked session_done, so that the last reply too
// has its next state. It returns every session's result, by round then
// user.
func Simulate(ctx context.Context, cfg Config) ([]SessionResult, error) {
	if cfg.BaseURL == "" || len(cfg.Users) == 0 {
		return nil, errors.New("simuser: a base URL and users are required")
	}
	if cfg.Sessions <= 0 {
		cfg.Sessions = 16
	}
	if cfg.Turns <= 0 {
		cfg.Turns = 3
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 96
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	var out []SessionResult
	for round := 1; round <= cfg.Sessions; round++ {
		res := make([]SessionResult, len(cfg.Users))
		errs := make([]error, len(cfg.Users))
		var wg sync.WaitGroup
		for i := range cfg.Users {
			wg.Go(func() { res[i], errs[i] = cfg.session(ctx, i, round) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return out, err
		}
		for _, r := range res {
			if cfg.OnSession != nil {
				cfg.OnSession(r)
			}
		}
		out = append(out, res...)
		if cfg.Wait != nil {
			if err := cfg.Wait(ctx, round); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// session plays user i's session of round.
func (cfg *Config) session(ctx context.Context, i, round int) (SessionResult, error) {
	u := &cfg.Users[i]
	rng := rand.New(rand.NewPCG(cfg.Seed, seedOf(u.ID, uint64(round))))
	id := fmt.Sprintf("%s-%s-s%03d", cfg.Run, u.ID, round)
	res := SessionResult{User: u.ID, Wants: u.Describe(), Session: round, Adversary: u.Unsafe > 0}
	msgs := []rl.Message{{Role: "system", Content: SystemPrompt}}
	topic := Topics[rng.IntN(len(Topics))]
	question, reaction := topic.Question, ""
	met := 0
	for turn := 1; turn <= cfg.Turns+1; turn++ {
		last := turn > cfg.Turns
		content := join(reaction, question)
		if last {
			content = reaction
		}
		msgs = append(msgs, rl.Message{Role: "user", Content: content})
		text, version, notTrained, err := cfg.chat(ctx, u.ID, id, msgs, last, seedOf(id, uint64(turn)))
		if err != nil {
			return res, fmt.Errorf("user %s, session %d, turn %d: %w", u.ID, round, turn, err)
		}
		if last {
			break
		}
		r := Reply{Text: text, Met: u.Met(topic, text), Version: version, NotTrained: notTrained}
		if r.Met {
			met++
		}
		res.Replies = append(res.Replies, r)
		msgs = append(msgs, rl.Message{Role: "assistant", Content: text})
		var requery bool
		reaction, requery = u.React(topic, text, rng)
		if requery {
			question = topic.Rephrased
		} else {
			topic = Topics[rng.IntN(len(Topics))]
			question = topic.Question
		}
	}
	res.Compliance = float64(met) / float64(len(res.Replies))
	return res, nil
}

// chat sends one request of a session and returns the reply's text, the
// weight version that answered and the proxy's not-trained reason.
func (cfg *Config) chat(ctx context.Context, user, session string, msgs []rl.Message, done bool, seed uint64) (string, int, string, error) {
	body, err := json.Marshal(map[string]any{"model": cfg.Model, "messages": msgs, "temperature": cfg.Temperature,
		"max_tokens": cfg.MaxTokens, "seed": int64(seed >> 1), "user": user, "return_token_ids": true, "logprobs": true})
	if err != nil {
		return "", 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(cfg.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	req.Header.Set("X-User-Id", user)
	if done {
		req.Header.Set("X-Session-Done", "true")
	}
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return "", 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, "", fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var cr struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Choices) == 0 {
		return "", 0, "", fmt.Errorf("not a chat completion: %.200s", b)
	}
	version := -1
	fmt.Sscan(resp.Header.Get("X-Weight-Version"), &version)
	notTrained := ""
	if h := resp.Header.Get("X-Nextstate-Trained"); h != "" {
		_, notTrained, _ = strings.Cut(h, "reason=")
	}
	return cr.Choices[0].Message.Content, version, notTrained, nil
}

func seedOf(s string, n uint64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64() ^ (n * 0x9e3779b97f4a7c15)
}
