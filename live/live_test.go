package live_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/internal/testmodel"
	"github.com/nextstate-rl/nextstate/live"
	"github.com/nextstate-rl/nextstate/proxy"
	"github.com/nextstate-rl/nextstate/simuser"
	"github.com/nextstate-rl/nextstate/store"
	"github.com/nextstate-rl/nextstate/train"
	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/cpu"
	"github.com/nextstate-rl/nextstate/trainer/safetensors"
	"github.com/nextstate-rl/nextstate/trainer/service"
	"github.com/nextstate-rl/nextstate/trainer/tokenizer"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// rig is a personal agent in one process: a random byte-level model on
// the trainer, served on loopback, the proxy in front of it judged by the
// feedback rules, and a live trainer on the proxy's samples.
type rig struct {
	svc     *service.Service
	policy  *train.PolicyServer
	proxy   *proxy.Proxy
	url     string // the proxy's /v1
	trainer *live.Trainer
	dir     string
	cfg     live.Config
	stop    func() // stops the trainer and waits for it
}

// start starts a Trainer of r.cfg, and stop stops it.
func (r *rig) start(t *testing.T) {
	t.Helper()
	var err error
	if r.trainer, err = live.New(r.cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- r.trainer.Run(ctx) }()
	r.stop = func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("the live trainer: %v", err)
		}
		r.stop = func() {}
	}
}

func newRig(t *testing.T, cfg live.Config) *rig {
	t.Helper()
	dir := t.TempDir()
	model := testmodel.Write(t, 0.1, safetensors.F32)
	m, err := trainer.Load(model, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{dir: dir}
	if r.svc, err = service.New(m, service.Options{Training: trainer.TrainOptions{Seed: 1}, Tokenizer: tok,
		StateDir: filepath.Join(dir, "states")}); err != nil {
		t.Fatal(err)
	}
	if r.policy, err = train.ServePolicy(r.svc, tok, "tiny", quiet()); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "proxy"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := proxy.OpenQuarantine(filepath.Join(dir, "proxy"))
	if err != nil {
		t.Fatal(err)
	}
	if r.proxy, err = proxy.New(proxy.Config{Upstream: r.policy.URL, Store: st, Quarantine: q, Judge: proxy.FeedbackJudge{},
		Workers: 1, Log: quiet()}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r.proxy)
	r.url = srv.URL + "/v1"
	cfg.Trainer, cfg.Store, cfg.Dir, cfg.Log = r.svc, st, dir, quiet()
	r.cfg = cfg
	r.start(t)
	t.Cleanup(func() {
		r.stop()
		srv.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		r.proxy.Close(sctx)
		r.policy.Close(sctx)
		st.Close()
		r.svc.Close()
		m.Close()
	})
	return r
}

// idle waits until every turn answered so far is judged and trained on.
func (r *rig) idle(ctx context.Context) error {
	for r.proxy.Judging() > 0 || !r.trainer.Status().Idle() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not idle: judging %d, trainer %+v", r.proxy.Judging(), r.trainer.Status())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// request is a chat request of question, sampled with seed.
func request(question string, seed int, stream bool) string {
	return fmt.Sprintf(`{"model":"tiny","messages":[{"role":"system","content":%q},{"role":"user","content":%q}],"max_tokens":8,"temperature":1,"seed":%d,"stream":%v,"return_token_ids":true}`,
		simuser.SystemPrompt, question, seed, stream)
}

// complete asks base for a reply to question with seed and returns its
// text, its token ids and its X-Weight-Version.
func complete(t *testing.T, base, question string, seed int) (string, []int, string) {
	t.Helper()
	body := request(question, seed, false)
	resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %v %s", resp.Status, err, b)
	}
	var cr struct {
		Choices []struct {
			Message  struct{ Content string } `json:"message"`
			TokenIDs []int                    `json:"token_ids"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Choices) != 1 {
		t.Fatalf("%v: %s", err, b)
	}
	return cr.Choices[0].Message.Content, cr.Choices[0].TokenIDs, resp.Header.Get("X-Weight-Version")
}

// A scripted user who wants replies that begin with an ASCII byte talks to
// the agent for a handful of sessions, correcting every reply that does not; the
// trainer learns from each session as it ends. The served model then
// meets the preference more often than the weights it started from, on
// the same questions and sampling seeds.
func TestComplianceRises(t *testing.T) {
	r := newRig(t, live.Config{Loss: service.LossConfig{Terms: []service.TermConfig{{Kind: "policy_gradient", Weight: 1, Advantage: "rl"}}},
		Adam: service.AdamParams{LR: 2e-2}, Batch: 4, FlushAfter: time.Hour})
	// What a random byte-level model does about half the time (train's
	// tests learn the same): a reply that begins with an ASCII byte.
	ascii := simuser.Preference{Name: "ascii", Correction: "Please begin with a plain ASCII character.",
		Met: func(r string) bool { return r != "" && r[0] < 0x80 }}
	user := simuser.User{ID: "ann", Wants: []simuser.Preference{ascii}, AnyAnswer: true}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := simuser.Simulate(ctx, simuser.Config{BaseURL: r.url, Model: "tiny", Users: []simuser.User{user}, Sessions: 16, Turns: 4,
		Run: "test", Seed: 1, Temperature: 1, MaxTokens: 8, Wait: func(ctx context.Context, _ int) error { return r.idle(ctx) }})
	if err != nil {
		t.Fatal(err)
	}
	st := r.trainer.Status()
	if st.Updates != 16 || st.Trained != 64 || st.Version != 16 {
		t.Fatalf("after 16 sessions of 4 turns: %+v, want 16 updates of 4 samples, version 16", st)
	}
	for i, s := range res {
		t.Logf("session %d: compliance %.2f", i+1, s.Compliance)
	}
	met := func(base string) int {
		n := 0
		for seed := range 64 {
			text, _, _ := complete(t, base, simuser.Topics[seed%len(simuser.Topics)].Question, seed)
			if ascii.Met(text) {
				n++
			}
		}
		return n
	}
	before, after := met(strings.TrimSuffix(r.policy.URL, "/v1")+"/reference/v1"), met(r.policy.URL)
	t.Logf("replies of 64 that meet the preference: %d with the initial weights, %d after", before, after)
	late, early := 0.0, 0.0
	for i := range 4 {
		early += res[i].Compliance / 4
		late += res[len(res)-1-i].Compliance / 4
	}
	t.Logf("compliance: %.2f in the first 4 sessions, %.2f in the last 4", early, late)
	ups, err := live.ReadUpdates(r.dir)
	if err != nil || len(ups) != 16 {
		t.Fatalf("updates: %d, %v; want 16", len(ups), err)
	}
	for _, u := range ups {
		for _, s := range u.Samples {
			if s.User != "ann" || s.Version == nil || *s.Version != u.Version-1 || (s.Vote < 0) != (s.Hint == ascii.Correction) {
				t.Fatalf("update %d (version %d): sample %+v: want ann's, answered by the version before, a hint on each correction", u.N, u.Version, s)
			}
		}
	}
	if after < before+12 || late < early+0.2 {
		t.Fatalf("replies of 64 that meet the preference: %d before, %d after 16 sessions; compliance %.2f in the first 4 sessions, %.2f in the last 4: want a clear rise",
			before, after, early, late)
	}
}

// A streamed answer begun before a publish ends on the version it began
// with, token for token what that version answers, and the next request
// gets the new version: publishing interrupts nothing.
func TestPublishDuringStream(t *testing.T) {
	r := newRig(t, live.Config{Loss: service.LossConfig{Terms: []service.TermConfig{{Kind: "policy_gradient", Weight: 1, Advantage: "rl"}}},
		Batch: 1000, FlushAfter: time.Hour})
	question := simuser.Topics[0].Question
	_, want, v := complete(t, r.url, question, 5)
	if v != "0" {
		t.Fatalf("first answer's version %q, want 0", v)
	}
	resp, err := http.Post(r.url+"/chat/completions", "application/json", strings.NewReader(request(question, 5, true)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := resp.Header.Get("X-Weight-Version"); got != "0" {
		t.Fatalf("stream's version %q, want 0", got)
	}
	rd := bufio.NewReader(resp.Body)
	var ids []int
	readEvent := func() bool {
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream broke: %v", err)
			}
			data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				return false
			}
			var ch struct {
				Choices []struct {
					TokenIDs []int `json:"token_ids"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &ch); err != nil {
				t.Fatalf("chunk %s: %v", data, err)
			}
			for _, c := range ch.Choices {
				ids = append(ids, c.TokenIDs...)
			}
			return true
		}
	}
	readEvent()
	// A large step on other text changes every answer; it is published
	// while the stream is open.
	ctx := context.Background()
	tokens := make([]int32, 40)
	for i := range tokens {
		tokens[i] = int32('A' + i%26)
	}
	if _, err := r.svc.ForwardBackward(ctx, service.ForwardBackwardRequest{Data: []service.Datum{{Tokens: tokens, ResponseLength: 20}},
		Loss: service.LossConfig{Terms: []service.TermConfig{{Kind: "sft", Weight: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.OptimStep(ctx, service.AdamParams{LR: 0.1}); err != nil {
		t.Fatal(err)
	}
	if ver, err := r.svc.SaveWeightsForSampler(ctx); err != nil || ver.Version != 1 {
		t.Fatalf("publish: %+v, %v", ver, err)
	}
	for readEvent() {
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("the stream begun on version 0 answered %v; version 0 answers %v", ids, want)
	}
	_, after, v := complete(t, r.url, question, 5)
	if v != "1" {
		t.Fatalf("the next answer's version %q, want 1", v)
	}
	if slices.Equal(after, want) {
		t.Fatalf("version 1 answers as version 0 did (%v): the publish changed nothing", after)
	}
}

// A trainer stopped after two updates and started again on the same run
// directory loads the saved state, publishes it, and reads on after the
// last sample it trained: the next update holds the new session's samples
// alone.
func TestResume(t *testing.T) {
	r := newRig(t, live.Config{Loss: service.LossConfig{Terms: []service.TermConfig{{Kind: "policy_gradient", Weight: 1, Advantage: "rl"}}},
		Adam: service.AdamParams{LR: 1e-2}, Batch: 4, FlushAfter: time.Hour})
	ascii := simuser.Preference{Name: "ascii", Correction: "Please begin with a plain ASCII character.",
		Met: func(r string) bool { return r != "" && r[0] < 0x80 }}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	play := func(run string, sessions int) {
		_, err := simuser.Simulate(ctx, simuser.Config{BaseURL: r.url, Model: "tiny", Sessions: sessions, Turns: 4, Run: run, Seed: 1,
			Temperature: 1, MaxTokens: 8, Wait: func(ctx context.Context, _ int) error { return r.idle(ctx) },
			Users: []simuser.User{{ID: "ann", Wants: []simuser.Preference{ascii}, AnyAnswer: true}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	play("a", 2)
	r.stop()
	r.start(t)
	if err := r.idle(ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.trainer.Status(); st.Updates != 2 || st.Read != 8 || st.Version != 3 {
		t.Fatalf("resumed: %+v, want 2 updates, offset 8 read, the saved state published as version 3", st)
	}
	play("b", 1)
	ups, err := live.ReadUpdates(r.dir)
	if err != nil || len(ups) != 3 {
		t.Fatalf("updates: %d, %v; want 3", len(ups), err)
	}
	for i, s := range ups[2].Samples {
		if s.Offset != int64(9+i) || !strings.HasPrefix(s.Session, "b-") {
			t.Fatalf("the update after resuming trained on %+v: want the new session's samples, offsets 9 to 12", s)
		}
	}
	if ups[2].Version != 4 {
		t.Fatalf("the update after resuming published version %d, want 4", ups[2].Version)
	}
}
