package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nextstate-rl/nextstate/internal/auth"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
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

// weightVersionHeader names the weight version of an answer of
// nextstate's trainer (trainer/serve.VersionHeader).
const weightVersionHeader = "X-Weight-Version"

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
	// Judge judges main turns (an *rl.Judge, on JudgeInput's rl.KindChat
	// prompt); nil stores no sample (turns are forwarded only).
	Judge rl.Scorer
	// AllowUsers lists the users whose feedback trains; nil or empty allows everyone.
	AllowUsers []string
	// Token, when set, is a bearer token that lets a request in
	// ("Authorization: Bearer <token>"); the user of a request sent with it
	// is the one the request names (X-User-Id or the body's user), so hold
	// it only where users are authenticated already (a front end).
	Token string
	// Users maps per-user bearer tokens to user ids: a request sent with one
	// is that user's (one in a session that names another user is refused,
	// 403). With
	// Token or Users set, a request without one of them is refused (401).
	Users map[string]string
	// UpstreamKey, when set, is sent upstream as "Authorization: Bearer
	// <key>". A client's own Authorization header goes upstream only when
	// the proxy has no Token, no Users and no UpstreamKey.
	UpstreamKey string
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
	// Unauthorized counts the requests refused for a missing or wrong
	// bearer token; WrongUser those refused because their session is bound
	// to another user, or because they named a user other than their token's.
	Unauthorized, WrongUser int64
}

// Proxy is the OpenAI-compatible proxy, an http.Handler.
type Proxy struct {
	cfg      Config
	upstream *url.URL
	allow    map[string]bool
	users    map[[sha256.Size]byte]string // per-user tokens, by their hash
	log      *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	buckets  map[string]*bucket // per user

	jobs    chan job
	wg      sync.WaitGroup
	closing atomic.Bool
	closeMu sync.RWMutex

	busy atomic.Int64 // turns submitted and not yet stored

	requests, noSession, side, trained, samples, quarantined, dropped, judgeErrors atomic.Int64
	unauthorized, wrongUser                                                        atomic.Int64
}

// session is one conversation's state: its last main turn, waiting for its
// next state, and the user it is bound to (its first main request's).
type session struct {
	user    string
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
	// WeightVersion is the version of the policy's weights that answered
	// (the upstream's X-Weight-Version, as nextstate's trainer sends it).
	WeightVersion *int `json:"weight_version,omitempty"`
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
	p := &Proxy{cfg: cfg, upstream: u, log: cfg.Log, sessions: map[string]*session{}, buckets: map[string]*bucket{},
		jobs: make(chan job, cfg.Queue)}
	if len(cfg.Users) > 0 {
		p.users = map[[sha256.Size]byte]string{}
		for tok, user := range cfg.Users {
			if tok == "" || user == "" || tok == cfg.Token {
				return nil, errors.New("proxy: Users maps bearer tokens to user ids: a token or a user id is empty, or a token is also the shared Token")
			}
			p.users[sha256.Sum256([]byte(tok))] = user
		}
	}
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
	return Stats{Requests: p.requests.Load(), NoSession: p.noSession.Load(), Side: p.side.Load(), Trained: p.trained.Load(),
		Samples: p.samples.Load(), Quarantined: p.quarantined.Load(), Dropped: p.dropped.Load(),
		JudgeErrors: p.judgeErrors.Load(), Unauthorized: p.unauthorized.Load(), WrongUser: p.wrongUser.Load()}
}

// CheckListen is the standalone proxy's listen rule, `nextstate serve`'s:
// a proxy guarded by a token (Token or Users) may listen anywhere, one
// without only on a loopback address, since whoever reaches it can name
// any user.
func CheckListen(addr string, guarded bool) error {
	return auth.CheckListen(addr, guarded, "--token, --token-file or --users-file", "127.0.0.1:8090")
}

// Listen opens the standalone proxy's listener on addr, under CheckListen.
func (p *Proxy) Listen(addr string) (net.Listener, error) {
	if err := CheckListen(addr, p.guarded()); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if err := CheckListen(ln.Addr().String(), p.guarded()); err != nil { // localhost resolved elsewhere
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// guarded says whether requests need a bearer token.
func (p *Proxy) guarded() bool { return p.cfg.Token != "" || p.users != nil }

// authenticate checks h's bearer token when the proxy has tokens: ok is
// false without a right one; user is the user of a per-user token, "" for
// the shared one (the request names its user).
func (p *Proxy) authenticate(h http.Header) (user string, ok bool) {
	if !p.guarded() {
		return "", true
	}
	tok, ok := auth.Bearer(h)
	if !ok {
		return "", false
	}
	if auth.Equal(tok, p.cfg.Token) {
		return "", true
	}
	user, ok = p.users[sha256.Sum256([]byte(tok))] // a hash's lookup time says nothing of the token
	return user, ok
}

func (p *Proxy) allowed(user string) bool { return p.allow == nil || p.allow[user] }

// wrongUserError refuses a request in a session bound to another user.
type wrongUserError struct{ session, bound, user string }

func (e *wrongUserError) Error() string {
	return "session " + e.session + " belongs to another user: a session is bound to the user of its first request " +
		"(X-User-Id, the body's user, or a per-user token; none is a user too), and only that user's requests continue it; " +
		"start another session (a new X-Session-Id) for this user"
}

// refuse answers a request that may not speak in its session (403).
func (p *Proxy) refuse(w http.ResponseWriter, err error) {
	p.wrongUser.Add(1)
	if e := (*wrongUserError)(nil); errors.As(err, &e) {
		p.log.Warn("proxy: request refused: its session is bound to another user", "session", e.session,
			"bound_user", e.bound, "user", e.user)
	} else {
		p.log.Warn("proxy: request refused", "err", err)
	}
	httpError(w, http.StatusForbidden, err.Error())
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
	tokenUser, ok := p.authenticate(r.Header)
	if !ok {
		p.unauthorized.Add(1)
		w.Header().Set("WWW-Authenticate", auth.Challenge)
		httpError(w, http.StatusUnauthorized, auth.Missing)
		return
	}
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
	var rec *Turn     // the turn to keep once answered
	var sess *session // rec's session
	var req chatRequest
	chat := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions")
	if chat && meta.session != "" {
		if err := jsonUnmarshal(body, &req); err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		if meta.user == "" {
			meta.user = req.User
		}
		if tokenUser != "" {
			if meta.user != "" && meta.user != tokenUser {
				p.refuse(w, fmt.Errorf("user %q: the bearer token is %s's, and a per-user token says who is speaking; "+
					"leave X-User-Id and the body's user out, or name %s", meta.user, tokenUser, tokenUser))
				return
			}
			meta.user = tokenUser
		}
	}
	reason := ""
	switch {
	case !chat:
	case meta.session == "":
		reason = ReasonNoSession
		p.noSession.Add(1)
	case meta.side:
		if err := p.sideTurn(meta); err != nil {
			p.refuse(w, err)
			return
		}
		reason = ReasonSideTurn
		p.side.Add(1)
	default:
		var err error
		if rec, sess, reason, err = p.mainTurn(meta, rl.FromChat(req.Messages)); err != nil {
			p.refuse(w, err)
			return
		}
	}
	if reason != "" {
		w.Header().Set(TrainedHeader, "false; reason="+reason)
	}
	ans := p.forward(w, r, body)
	if rec == nil || ans == nil || !ans.ok {
		return
	}
	rec.Response, rec.WeightVersion = ans.text(), ans.version
	if len(ans.promptIDs) > 0 && len(ans.responseIDs) > 0 {
		rec.PromptIDs, rec.ResponseIDs = ans.promptIDs, ans.responseIDs
		if len(ans.logProbs) == len(ans.responseIDs) {
			rec.LogProbs = ans.logProbs
		}
	}
	p.mu.Lock()
	if p.sessions[meta.session] == sess { // not forgotten (and taken by another user) meanwhile
		sess.pending = rec
	}
	p.mu.Unlock()
}

// sideTurn checks a side turn against its session's user and ends the
// session when the turn says so (its pending turn has no next state).
func (p *Proxy) sideTurn(meta turnMeta) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sessions[meta.session]
	if s == nil {
		return nil
	}
	if s.user != meta.user {
		return &wrongUserError{meta.session, s.user, meta.user}
	}
	if meta.done {
		delete(p.sessions, meta.session)
	}
	return nil
}

// mainTurn handles a main turn before it is forwarded: its last message
// is the next state of the session's pending turn, which goes to the
// judge; it returns the turn to keep and its session, or why it is not
// trained on. A session is bound to the user of its first main turn: a
// request of another user is refused (a *wrongUserError) and changes
// nothing.
func (p *Proxy) mainTurn(meta turnMeta, msgs []rl.Message) (*Turn, *session, string, error) {
	now := time.Now()
	p.mu.Lock()
	s := p.sessions[meta.session]
	if s != nil && s.user != meta.user {
		p.mu.Unlock()
		return nil, nil, "", &wrongUserError{meta.session, s.user, meta.user}
	}
	if s == nil {
		if len(p.sessions) >= maxSessions {
			p.evictLocked()
		}
		s = &session{user: meta.user}
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
	case !p.allowed(meta.user):
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
	// A next state trains the pending turn only if its sender is allowed
	// and is the turn's user (which the binding above makes so).
	if prev != nil && len(msgs) > 0 && prev.User == meta.user && p.allowed(meta.user) {
		p.submit(job{t: prev, next: msgs[len(msgs)-1]})
	}
	if reason == "" && p.cfg.Judge == nil {
		reason = ReasonNoJudge
	}
	if reason != "" {
		return nil, s, reason, nil
	}
	p.trained.Add(1)
	return &Turn{Session: meta.session, User: meta.user, Step: step, Messages: msgs}, s, "", nil
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
	b := p.buckets[user]
	if b == nil {
		b = newBucket(p.cfg.UserRate, now)
		p.buckets[user] = b
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
	ownAuth := p.guarded() || p.cfg.UpstreamKey != "" // the client's Authorization is not the upstream's
	for k, v := range r.Header {
		if hopHeader(k) || (ownAuth && k == "Authorization") {
			continue
		}
		req.Header[k] = v
	}
	if p.cfg.UpstreamKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.cfg.UpstreamKey)
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
	if v, err := strconv.Atoi(resp.Header.Get(weightVersionHeader)); err == nil && v >= 0 {
		ans.version = &v
	}
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

// Judging counts the turns submitted to the judge and not yet stored or
// quarantined.
func (p *Proxy) Judging() int64 { return p.busy.Load() }
