package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
)

// signal-v1 is a test kind whose steps do what their action says, so the
// judge's rules and the outcome are known in advance: "win" terminates (the
// verifier then gives the task's score), "crash" fails the infrastructure,
// "agentfail" is the agent's failure, "shot" answers with a screenshot too
// large to keep inline (a blob), anything else with "saw <action>".
type signalKind struct{}

// signalData is signal-v1's task data.
type signalData struct {
	Score float64 `json:"score"`
}

var bigScreenshot = bytes.Repeat([]byte("PNG!"), 8<<10) // 32 KiB: stored as a blob

func (signalKind) Spec() gym.Spec {
	return gym.Spec{Name: "signal-v1", Description: "test: steps that do what they say",
		ActionSchema: gym.PartsSchema(1, 1, gym.PartText), ObservationSchema: gym.PartsSchema(0, 2, gym.PartText, gym.PartImage),
		Tasks: []gym.Task{
			{ID: "sig-win", Env: "signal-v1", Instruction: "Win the game.", Data: json.RawMessage(`{"score":1}`)},
			{ID: "sig-half", Env: "signal-v1", Instruction: "Win half the game.", Data: json.RawMessage(`{"score":0.5}`)},
		}}
}

func (signalKind) New(context.Context) (gym.Env, error) { return &signalEnv{}, nil }

type signalEnv struct{ data signalData }

func (e *signalEnv) Reset(_ context.Context, task *gym.Task, _ int64, _ gym.Options) (gym.Observation, gym.Info, error) {
	e.data = signalData{Score: 1}
	if len(task.Data) > 0 {
		if err := json.Unmarshal(task.Data, &e.data); err != nil {
			return gym.Observation{}, nil, err
		}
	}
	return gym.TextObservation("start"), nil, nil
}

func (e *signalEnv) Step(_ context.Context, a gym.Action) (gym.Transition, error) {
	t := a.Text()
	switch {
	case t == "win":
		return gym.Transition{Observation: gym.TextObservation("won"), Terminated: true}, nil
	case t == "crash":
		return gym.Transition{}, gym.InfraFault("crashed", errors.New("the test env crashed"))
	case t == "agentfail":
		return gym.Transition{}, gym.AgentFault("bad_move", errors.New("the agent broke the rules"))
	case strings.HasPrefix(t, "shot"):
		return gym.Transition{Observation: gym.Observation{Parts: []gym.Part{gym.TextPart("a screen"),
			{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: bigScreenshot}}}}}, nil
	}
	return gym.Transition{Observation: gym.TextObservation("saw " + t)}, nil
}

func (e *signalEnv) Verify(context.Context) (float64, gym.Info, error) {
	return e.data.Score, gym.Info{"score": e.data.Score}, nil
}

func (e *signalEnv) Close(context.Context) error { return nil }

func init() { gym.Register(signalKind{}) }

// judgeReplies of the scripted judge, by the marker in the judged action.
const (
	judgeGood    = "The step worked. \\boxed{1}"
	judgeBad     = "It failed.\n[HINT_START]Look around first: say look before you move.[HINT_END]\n\\boxed{-1}"
	judgeNeutral = "Cannot tell. \\boxed{0}"
)

// scriptedJudge is an OpenAI-compatible chat endpoint that votes by the
// marker in the judged action: ACT_GOOD 1, ACT_BAD -1 with a hint,
// ACT_HANG waits until released (or the caller gives up), anything else 0.
type scriptedJudge struct {
	srv     *httptest.Server
	release chan struct{}
	entered chan string // the judged action of each call that arrived

	mu     sync.Mutex
	calls  int
	images []string // the image data URLs the calls carried
	once   sync.Once
}

// newScriptedJudge starts the endpoint. It is started before the server,
// so its goroutines are in the server's goroutine baseline, and stopped
// after it.
func newScriptedJudge(t testing.TB) *scriptedJudge {
	j := &scriptedJudge{release: make(chan struct{}), entered: make(chan string, 1024)}
	j.srv = httptest.NewServer(http.HandlerFunc(j.serve))
	t.Cleanup(func() {
		j.releaseAll()
		j.srv.Close()
	})
	return j
}

func (j *scriptedJudge) releaseAll() { j.once.Do(func() { close(j.release) }) }

// config returns a judge config for the endpoint: 3 votes, fast retries,
// no kept-alive connections (so none outlives the test).
func (j *scriptedJudge) config() rl.JudgeConfig {
	return rl.JudgeConfig{Endpoint: j.srv.URL + "/v1", Model: "judge-test", Votes: 3, Backoff: gym.Duration(time.Millisecond),
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
}

// judgedAction finds the action of the step to judge in the prompt.
func judgedAction(prompt string) string {
	_, rest, ok := strings.Cut(prompt, "the step to judge\nAction:\n")
	if !ok {
		return ""
	}
	action, _, _ := strings.Cut(rest, "\n\nNext state")
	return action
}

func (j *scriptedJudge) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	var prompt strings.Builder
	var images []string
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			prompt.WriteString(s)
			continue
		}
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL *struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		_ = json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			prompt.WriteString(p.Text)
			if p.ImageURL != nil {
				images = append(images, p.ImageURL.URL)
			}
		}
	}
	action := judgedAction(prompt.String())
	j.mu.Lock()
	j.calls++
	j.images = append(j.images, images...)
	j.mu.Unlock()
	select {
	case j.entered <- action:
	default:
	}
	text := judgeNeutral
	switch {
	case strings.Contains(action, "ACT_HANG"):
		select {
		case <-j.release:
		case <-r.Context().Done():
			return
		}
		text = judgeGood
	case strings.Contains(action, "ACT_GOOD"):
		text = judgeGood
	case strings.Contains(action, "ACT_BAD"):
		text = judgeBad
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}}})
}

func (j *scriptedJudge) imageURLs() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.images...)
}

// waitEntered waits for a judge call on an action containing marker.
func (j *scriptedJudge) waitEntered(tb testing.TB, marker string) {
	tb.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case a := <-j.entered:
			if strings.Contains(a, marker) {
				return
			}
		case <-deadline:
			tb.Fatalf("no judge call on %q came in %s", marker, waitTimeout)
		}
	}
}

// withJudge configures the server's signals with j.
func withJudge(j *scriptedJudge, edit func(*SignalsConfig)) func(*Config) {
	return func(c *Config) {
		c.Signals.Judge = j.config()
		c.Signals.Drain = 200 * time.Millisecond
		if edit != nil {
			edit(&c.Signals)
		}
	}
}

// judgeRewards returns the judge's reward events by step id.
func (ts *testServer) judgeRewards() map[string]gym.Event {
	ts.tb.Helper()
	evs, err := ts.store.Events(context.Background(), store.Filter{Types: []gym.EventType{gym.EventReward}})
	if err != nil {
		ts.tb.Fatal(err)
	}
	out := map[string]gym.Event{}
	for _, ev := range evs {
		if ev.Source == rl.DefaultSource {
			out[ev.StepID] = ev
		}
	}
	return out
}

// waitRewards waits until the judge's reward events of every step id are
// recorded, and returns them by step id.
func (ts *testServer) waitRewards(ids ...string) map[string]gym.Event {
	ts.tb.Helper()
	var got map[string]gym.Event
	waitFor(ts.tb, fmt.Sprintf("judge rewards of %v", ids), func() bool {
		got = ts.judgeRewards()
		for _, id := range ids {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	})
	return got
}

// samples returns the stored samples, decoded, in offset order.
func (ts *testServer) samples(f store.SampleFilter) []rl.Sample {
	ts.tb.Helper()
	rows, err := ts.store.Samples(context.Background(), f)
	if err != nil {
		ts.tb.Fatal(err)
	}
	out := make([]rl.Sample, len(rows))
	for i, r := range rows {
		mustUnmarshal(ts.tb, r.Body, &out[i])
	}
	return out
}

// waitSamples waits until a session's samples are stored and returns them.
func (ts *testServer) waitSamples(session string) []rl.Sample {
	ts.tb.Helper()
	var got []rl.Sample
	waitFor(ts.tb, "the samples of session "+session, func() bool {
		got = ts.samples(store.SampleFilter{Session: session})
		return len(got) > 0
	})
	return got
}

// flushSignals waits until the signals pipeline has handled every event
// committed so far.
func (ts *testServer) flushSignals() {
	ts.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := ts.sig.flush(ctx); err != nil {
		ts.tb.Fatal(err)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
