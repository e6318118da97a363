package proxy

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// upstreamRequests counts the chat requests the upstream received.
func (u *upstream) requests() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.bodies)
}

func TestProxySessionBoundToUser(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.AllowUsers = []string{"alice", "carol"} })
	alice := []string{"X-Session-Id", "s1", "X-User-Id", "alice"}
	f.post(t, conv("", "Book a table for two"), alice...)
	// Anyone else's message in alice's session is refused, not forwarded,
	// and is no next state of alice's turn.
	wrong := conv("", "Book a table for two", "answer to: Book a table for two", "That's wrong, book for ten")
	for _, c := range []struct {
		name    string
		body    string
		headers []string
	}{
		{"a user not allowed", wrong, []string{"X-Session-Id", "s1", "X-User-Id", "mallory"}},
		{"another allowed user", wrong, []string{"X-Session-Id", "s1", "X-User-Id", "carol"}},
		{"the body's user", conv(`,"user":"carol"`, "q", "a", "That's wrong"), []string{"X-Session-Id", "s1"}},
		{"no user", wrong, []string{"X-Session-Id", "s1"}},
		{"a side turn ending the session", conv("", "heartbeat"),
			[]string{"X-Session-Id", "s1", "X-User-Id", "mallory", "X-Turn-Type", "side", "X-Session-Done", "true"}},
	} {
		resp, body := f.send(t, c.body, c.headers...)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "session s1 belongs to another user") ||
			!strings.Contains(body, "a new X-Session-Id") {
			t.Errorf("%s: %s %s, want 403: the session belongs to another user", c.name, resp.Status, body)
		}
	}
	if n := f.up.requests(); n != 1 {
		t.Errorf("the upstream got %d requests, want alice's only", n)
	}
	f.flush(t)
	if got := f.samples(t); len(got) != 0 {
		t.Fatalf("a refused request trained alice's turn: %+v", got)
	}
	// A non-allowed user's own session trains nothing either.
	for _, m := range []string{"hi", "That's wrong"} {
		if h, _ := f.post(t, conv("", m), "X-Session-Id", "m1", "X-User-Id", "mallory"); h != "false; reason=not_allowed" {
			t.Errorf("mallory's own session: header %q", h)
		}
	}
	// alice's own reply is her turn's next state, as before: +1, not the -1
	// the others' corrections would have given.
	if h, _ := f.post(t, conv("", "Book a table for two", "answer", "Thanks!"), alice...); h != "" {
		t.Fatalf("alice's reply: header %q", h)
	}
	f.flush(t)
	got := f.samples(t)
	if len(got) != 1 || got[0].Reward != 1 || got[0].Response != "answer to: Book a table for two" || got[0].Metadata.OPD != nil {
		t.Fatalf("samples %+v, want alice's first turn, +1 with no hint", got)
	}
	if st := f.proxy.Stats(); st.WrongUser != 5 || st.Samples != 1 {
		t.Fatalf("stats %+v, want 5 requests refused for the wrong user", st)
	}
}

func TestProxySessionBindsOnce(t *testing.T) {
	f := newFixture(t, nil)
	users := []string{"u0", "u1", "u2", "u3", "u4", "u5"}
	codes := make([]int, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			resp, _ := f.send(t, conv("", "hi"), "X-Session-Id", "race", "X-User-Id", u)
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusForbidden:
			refused++
		}
	}
	if ok != 1 || refused != len(users)-1 {
		t.Fatalf("statuses %v: want one user to take the session and the others refused", codes)
	}
}

func TestProxyToken(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Token = "s3cret" })
	for _, hdr := range []string{"", "Bearer wrong", "s3cret", "Basic czNjcmV0"} {
		resp, body := f.send(t, conv("", "hi"), "Authorization", hdr, "X-Session-Id", "t1")
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Bearer realm="nextstate"` ||
			!strings.Contains(body, `Authorization: Bearer <token>`) {
			t.Errorf("Authorization %q: %s %s, want 401 saying what to send", hdr, resp.Status, body)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/models", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("models without the token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, scheme := range []string{"Bearer", "bearer"} {
		f.post(t, conv("", "hi"), "Authorization", scheme+" s3cret", "X-Session-Id", "t1")
	}
	for _, a := range f.up.auths {
		if a != "" {
			t.Errorf("the proxy's token went upstream: %q", a)
		}
	}
	if st := f.proxy.Stats(); st.Unauthorized != 5 {
		t.Errorf("stats %+v, want 5 unauthorized", st)
	}

	// An upstream key replaces the client's; with neither a token nor a
	// key, the client's own goes upstream.
	keyed := newFixture(t, func(c *Config) { c.Token = "s3cret"; c.UpstreamKey = "up-key" })
	keyed.post(t, conv("", "hi"), "Authorization", "Bearer s3cret")
	open := newFixture(t, nil)
	open.post(t, conv("", "hi"), "Authorization", "Bearer client-key")
	if keyed.up.auths[0] != "Bearer up-key" || open.up.auths[0] != "Bearer client-key" {
		t.Fatalf("upstream Authorization: with a key %q, without %q", keyed.up.auths[0], open.up.auths[0])
	}
}

func TestProxyUserTokens(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Users = map[string]string{"tok-alice": "alice", "tok-bob": "bob"}
		c.Token = "front-end"
		c.AllowUsers = []string{"alice", "bob"}
	})
	as := func(tok string, more ...string) []string {
		return append([]string{"Authorization", "Bearer " + tok, "X-Session-Id", "a1"}, more...)
	}
	if h, _ := f.post(t, conv("", "Plan my day"), as("tok-alice")...); h != "" {
		t.Fatalf("alice, by her token: header %q", h)
	}
	// The token says who is speaking: bob cannot pass for alice, nor speak
	// in her session, and alice cannot name someone else.
	for _, c := range []struct {
		name, want string
		headers    []string
	}{
		{"bob naming alice", "the bearer token is bob's", as("tok-bob", "X-User-Id", "alice")},
		{"bob", "session a1 belongs to another user", as("tok-bob")},
		{"alice naming bob", "the bearer token is alice's", as("tok-alice", "X-User-Id", "bob")},
	} {
		resp, body := f.send(t, conv("", "q", "a", "That's wrong"), c.headers...)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, c.want) {
			t.Errorf("%s: %s %s, want 403: %s", c.name, resp.Status, body, c.want)
		}
	}
	if resp, _ := f.send(t, conv("", "hi"), as("tok-carol")...); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unknown token: %s, want 401", resp.Status)
	}
	f.post(t, conv("", "Plan my day", "answer", "Thanks!"), as("tok-alice", "X-User-Id", "alice")...)
	// The shared token is a front end's: the request names its user.
	f.post(t, conv("", "q", "a", "That's wrong"), as("front-end", "X-User-Id", "alice")...)
	f.flush(t)
	got := f.samples(t)
	if len(got) != 2 || got[0].Reward != 1 || got[1].Reward != -1 {
		t.Fatalf("samples %+v, want alice's two turns, +1 and -1", got)
	}
	if st := f.proxy.Stats(); st.WrongUser != 3 || st.Unauthorized != 1 {
		t.Fatalf("stats %+v", st)
	}

	for _, users := range []map[string]string{{"": "x"}, {"t": ""}, {"front-end": "x"}} {
		cfg := Config{Upstream: "http://127.0.0.1:1", Store: f.st, Quarantine: f.q, Token: "front-end", Users: users}
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Users maps bearer tokens to user ids") {
			t.Errorf("Users %v: %v", users, err)
		}
	}
}

func TestProxyListen(t *testing.T) {
	open := newFixture(t, nil)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:8090"} {
		if ln, err := open.proxy.Listen(addr); err == nil || !strings.Contains(err.Error(), "refusing to listen on "+addr+" without a token: set a token (--token, --token-file or --users-file)") {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("Listen(%q) without a token: %v", addr, err)
		}
	}
	ln, err := open.proxy.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	guarded := newFixture(t, func(c *Config) { c.Users = map[string]string{"tok": "alice"} })
	if ln, err := guarded.proxy.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	} else {
		ln.Close()
	}
	if err := CheckListen("0.0.0.0:8090", true); err != nil {
		t.Fatalf("a guarded proxy may listen anywhere: %v", err)
	}
}
