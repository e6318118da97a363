package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/server/store"
)

// Reasons a turn is not trained on, sent in the X-Nextstate-Trained header
// as "false; reason=...".
const (
	ReasonNoSession   = "no_session"
	ReasonSideTurn    = "side_turn"
	ReasonNotAllowed  = "not_allowed"
	ReasonRateLimited = "rate_limited"
	ReasonSessionDone = "session_done"
	ReasonNoJudge     = "no_judge"
)

// TrainedHeader is the response header that says a turn will not be trained on.
const TrainedHeader = "X-Nextstate-Trained"

// Run is the run label of the proxy's samples.
const Run = "proxy"

// Config configures a Proxy.
type Config struct {
	// Upstream is the policy's OpenAI-compatible server: its base URL
	// ("http://localhost:8000"); a trailing /v1 is accepted. Required.
	Upstream string
	// Store receives the samples (AppendSamples). Required.
	Store *store.Store
	// Quarantine keeps flagged turns. Required.
	Quarantine *Quarantine
	// Judge judges main turns; nil stores no sample (turns are forwarded only).
	Judge Judge
	// AllowUsers lists the users whose feedback trains; nil or empty allows everyone.
	AllowUsers []string
	// SessionRate and UserRate bound the trained turns per minute of one
	// session and of one user (token buckets, bursts of the same size); 0
	// is no bound.
	SessionRate, UserRate float64
	// Workers judge turns concurrently [4]; Queue bounds the turns waiting
	// for them [256], past which a turn is dropped (logged, counted).
	Workers, Queue int
	// OnSample, if set, is called with each stored sample's offset (to wake
	// the readers of a store shared with a server).
	OnSample func(offset int64)
	// Client forwards the requests; nil for a client with no timeout.
	Client *http.Client
	Log    *slog.Logger
}

// Stats counts what the proxy did.
type Stats struct {
	Requests, NoSession, Side, Trained, Samples, Quarantined, Dropped, JudgeErrors int64
}

// Proxy is the OpenAI-compatible proxy, an http.Handler.
type Proxy struct {
	cfg      Config
	upstream *url.URL
	allow    map[string]bool
	log      *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	users    map[string]*bucket

	jobs    chan job
	wg      sync.WaitGroup
	closing atomic.Bool
	closeMu sync.RWMutex

	busy atomic.Int64 // turns submitted and not yet stored

	requests, noSession, side, trained, samples, quarantined, dropped, judgeErrors atomic.Int64
}

// session is one conversation's state: its last main turn, waiting for its
// next state.
type session struct {
	seen    time.Time
	pending *Turn
	steps   int
	bucket  *bucket
}

// Turn is a main turn to be trained on once its next state comes.
type Turn struct {
	Session  string       `json:"session"`
	User     string       `json:"user,omitempty"`
	Step     int          `json:"step"`
	Messages []rl.Message `json:"messages"`
	Response string       `json:"response"`

	PromptIDs   []int     `json:"prompt_ids,omitempty"`
	ResponseIDs []int     `json:"response_ids,omitempty"`
	LogProbs    []float64 `json:"logprobs,omitempty"`
}

type job struct {
	t    *Turn
	next rl.Message
}

// New checks cfg and starts the judge workers; Close stops them.
func New(cfg Config) (*Proxy, error) {
	u, err := url.Parse(cfg.Upstream)
	if cfg.Upstream == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream %q: want the policy server's base URL, such as http://localhost:8000", cfg.Upstream)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	if cfg.Store == nil || cfg.Quarantine == nil {
		return nil, errors.New("proxy: a store and a quarantine are required")
	}
	if cfg.SessionRate < 0 || cfg.UserRate < 0 {
		return nil, errors.New("proxy: rate limits are trained turns per minute, 0 (none) or more")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 256
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1024, ForceAttemptHTTP2: false}}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p := &Proxy{cfg: cfg, upstream: u, log: cfg.Log, sessions: map[string]*session{}, users: map[string]*bucket{},
		jobs: make(chan job, cfg.Queue)}
	if len(cfg.AllowUsers) > 0 {
		p.allow = map[string]bool{}
		for _, a := range cfg.AllowUsers {
			p.allow[a] = true
		}
	}
	for range cfg.Workers {
		p.wg.Go(p.work)
	}
	return p, nil
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	return Stats{p.requests.Load(), p.noSession.Load(), p.side.Load(), p.trained.Load(), p.samples.Load(),
		p.quarantined.Load(), p.dropped.Load(), p.judgeErrors.Load()}
}

// Close stops taking turns to judge and waits for the queued ones until
// ctx ends. Turns still waiting for a next state are not trained on.
func (p *Proxy) Close(ctx context.Context) error {
	p.closeMu.Lock()
	if !p.closing.Swap(true) {
		close(p.jobs)
	}
	p.closeMu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush waits until every queued turn has been judged and stored (for
// tests and shutdown); it does not stop the proxy.
func (p *Proxy) Flush(ctx context.Context) error {
	for {
		if len(p.jobs) == 0 && p.busy.Load() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (p *Proxy) submit(j job) {
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closing.Load() {
		p.dropped.Add(1)
		return
	}
	p.busy.Add(1)
	select {
	case p.jobs <- j:
	default:
		p.busy.Add(-1)
		p.dropped.Add(1)
		p.log.Warn("proxy: judge queue full, turn dropped", "session", j.t.Session, "step", j.t.Step)
	}
}

// ServeHTTP forwards the request and records the main turns of sessions.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		httpError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	meta, body, err := readMeta(r.Header, body)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	var rec *Turn // the turn to keep once answered
	chat := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions")
	reason := ""
	switch {
	case !chat:
	case meta.session == "":
		reason = ReasonNoSession
		p.noSession.Add(1)
	case meta.side:
		reason = ReasonSideTurn
		p.side.Add(1)
		if meta.done { // the session ends: its pending turn has no next state
			p.mu.Lock()
			delete(p.sessions, meta.session)
			p.mu.Unlock()
		}
	default:
		var req chatRequest
		if err := jsonUnmarshal(body, &req); err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		if meta.user == "" {
			meta.user = req.User
		}
		msgs := rl.FromChat(req.Messages)
		rec, reason = p.mainTurn(meta, msgs)
	}
	if reason != "" {
		w.Header().Set(TrainedHeader, "false; reason="+reason)
	}
	ans := p.forward(w, r, body)
	if rec == nil || ans == nil || !ans.ok {
		return
	}
	rec.Response = ans.text()
	if len(ans.promptIDs) > 0 && len(ans.responseIDs) > 0 {
		rec.PromptIDs, rec.ResponseIDs = ans.promptIDs, ans.responseIDs
		if len(ans.logProbs) == len(ans.responseIDs) {
			rec.LogProbs = ans.logProbs
		}
	}
	p.mu.Lock()
	if s := p.sessions[meta.session]; s != nil {
		s.pending = rec
	}
	p.mu.Unlock()
}

// mainTurn handles a main turn before it is forwarded: its last message
// is the next state of the session's pending turn, which goes to the
// judge; it returns the turn to keep, or why it is not trained on.
func (p *Proxy) mainTurn(meta turnMeta, msgs []rl.Message) (*Turn, string) {
	now := time.Now()
	p.mu.Lock()
	s := p.sessions[meta.session]
	if s == nil {
		if len(p.sessions) >= maxSessions {
			p.evictLocked()
		}
		s = &session{}
		if p.cfg.SessionRate > 0 {
			s.bucket = newBucket(p.cfg.SessionRate, now)
		}
		p.sessions[meta.session] = s
	}
	s.seen = now
	prev := s.pending
	s.pending = nil
	s.steps++
	step := s.steps
	reason := ""
	switch {
	case meta.done:
		reason = ReasonSessionDone
		delete(p.sessions, meta.session)
	case p.allow != nil && !p.allow[meta.user]:
		reason = ReasonNotAllowed
	case s.bucket != nil && !s.bucket.peek(now):
		reason = ReasonRateLimited
	case p.cfg.UserRate > 0 && !p.userBucket(meta.user, now).peek(now):
		reason = ReasonRateLimited
	default:
		if s.bucket != nil {
			s.bucket.take(now)
		}
		if p.cfg.UserRate > 0 {
			p.userBucket(meta.user, now).take(now)
		}
	}
	p.mu.Unlock()
	if prev != nil && len(msgs) > 0 {
		p.submit(job{t: prev, next: msgs[len(msgs)-1]})
	}
	if reason == "" && p.cfg.Judge == nil {
		reason = ReasonNoJudge
	}
	if reason != "" {
		return nil, reason
	}
	p.trained.Add(1)
	return &Turn{Session: meta.session, User: meta.user, Step: step, Messages: msgs}, ""
}

// maxSessions bounds the sessions held; past it the least recently seen
// one is forgotten (its pending turn is not trained on).
const maxSessions = 100000

func (p *Proxy) evictLocked() {
	var oldest string
	var at time.Time
	for id, s := range p.sessions {
		if oldest == "" || s.seen.Before(at) {
			oldest, at = id, s.seen
		}
	}
	delete(p.sessions, oldest)
}

func (p *Proxy) userBucket(user string, now time.Time) *bucket {
	b := p.users[user]
	if b == nil {
		b = newBucket(p.cfg.UserRate, now)
		p.users[user] = b
	}
	return b
}

// forward sends the request upstream and copies the answer back, flushing
// each piece of a stream as it arrives; it returns the assembled answer of
// a successful chat completion.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte) *answer {
	u := *p.upstream
	u.Path += r.URL.Path
	u.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		httpError(w, http.StatusBadGateway, err.Error())
		return nil
	}
	for k, v := range r.Header {
		if hopHeader(k) {
			continue
		}
		req.Header[k] = v
	}
	req.ContentLength = int64(len(body))
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		httpError(w, http.StatusBadGateway, "upstream: "+err.Error())
		return nil
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		if hopHeader(k) || k == "Content-Length" {
			continue
		}
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	ans := &answer{}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	parse := resp.StatusCode == http.StatusOK
	var full []byte
	sse := &sseParser{ans: ans}
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			if stream && fl != nil {
				fl.Flush()
			}
			if parse {
				if stream {
					sse.write(buf[:n])
				} else if len(full) < 16<<20 {
					full = append(full, buf[:n]...)
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil
		}
	}
	if !parse {
		return nil
	}
	if !stream {
		ans.add(full)
	}
	return ans
}

func hopHeader(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Accept-Encoding", "X-Session-Id", "X-Turn-Type", "X-Session-Done", "X-User-Id":
		return true
	}
	return false
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"nextstate_proxy"}}`+"\n", msg)
}
