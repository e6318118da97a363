package client

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nextstate-rl/nextstate/wire"
)

// Opt configures a Client; pass them to Dial.
type Opt func(*options)

type options struct {
	header     http.Header
	dialer     *websocket.Dialer
	reconnect  ReconnectPolicy
	noRetry    bool
	log        *slog.Logger
	maxFrame   int
	queueLen   int
	eventBuf   int
	keepalive  time.Duration
	writeLimit time.Duration
}

func defaultOptions() options {
	return options{
		header:     http.Header{},
		maxFrame:   wire.MaxFrameBytes,
		queueLen:   256,
		eventBuf:   1024,
		keepalive:  15 * time.Second,
		writeLimit: 10 * time.Second,
	}
}

// WithToken sends "Authorization: Bearer <token>" when dialing (and
// redialing).
func WithToken(token string) Opt {
	return func(o *options) { o.header.Set("Authorization", "Bearer "+token) }
}

// WithHeader adds a header to the WebSocket handshake request.
func WithHeader(key, value string) Opt {
	return func(o *options) { o.header.Add(key, value) }
}

// WithDialer sets the WebSocket dialer (proxy, TLS, buffer sizes). The
// default is a copy of websocket.DefaultDialer with a 10s handshake timeout.
// The dialer's Subprotocols are replaced by wire.Version.
func WithDialer(d *websocket.Dialer) Opt {
	return func(o *options) { o.dialer = d }
}

// WithReconnect sets how the client redials after a lost connection.
// Reconnecting is on by default, with the zero ReconnectPolicy's defaults.
func WithReconnect(p ReconnectPolicy) Opt {
	return func(o *options) { o.reconnect, o.noRetry = p, false }
}

// WithoutReconnect turns reconnecting off: when the connection drops, every
// call in flight and every later call fails with an error wrapping
// ErrConnectionLost, and subscriptions end with it. Dial a new Client and
// Attach the sessions to go on.
func WithoutReconnect() Opt {
	return func(o *options) { o.noRetry = true }
}

// WithLogger sets the logger for connection events (drops, redials). The
// default is slog.Default().
func WithLogger(l *slog.Logger) Opt {
	return func(o *options) { o.log = l }
}

// WithMaxFrame caps the size of a request: one larger than n bytes fails
// with an error wrapping gym.ErrBadRequest before it is sent. Default
// wire.MaxFrameBytes, the server's default cap on what it reads; raise both
// together. Messages from the server may be up to 16 times larger (results
// such as resumed events are bigger than requests); a larger one breaks the
// connection.
func WithMaxFrame(n int) Opt {
	return func(o *options) {
		if n > 0 {
			o.maxFrame = n
		}
	}
}

// WithQueueLen bounds the outbound queue of a connection (requests waiting
// for the writer). A caller finding it full waits, bounded by its ctx.
// Default 256.
func WithQueueLen(n int) Opt {
	return func(o *options) {
		if n > 0 {
			o.queueLen = n
		}
	}
}

// WithEventBuffer bounds the events a Subscription holds for its reader.
// When the reader falls further behind, the client drops the server-side
// subscription and, once the reader has caught up, resubscribes from the
// last event it queued, so nothing is lost or repeated. Default 1024.
func WithEventBuffer(n int) Opt {
	return func(o *options) {
		if n > 0 {
			o.eventBuf = n
		}
	}
}

// WithKeepalive sets how often the client pings the server. A connection on
// which nothing (a message, a ping, a pong) arrives for three intervals is
// taken as lost. Default 15s; zero or less turns client pings and the read
// deadline off.
func WithKeepalive(interval time.Duration) Opt {
	return func(o *options) { o.keepalive = interval }
}

// ReconnectPolicy says how a Client redials after its connection drops.
// Zero fields take the stated defaults.
type ReconnectPolicy struct {
	// InitialBackoff is the wait before the first redial. Default 100ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the wait between redials; each failed redial doubles
	// it. Default 5s.
	MaxBackoff time.Duration
	// MaxAttempts is how many redials in a row may fail before the client
	// gives up and fails everything with ErrConnectionLost. Default 10;
	// negative means no limit.
	MaxAttempts int
}

func (p ReconnectPolicy) withDefaults() ReconnectPolicy {
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = 100 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 5 * time.Second
	}
	if p.MaxBackoff < p.InitialBackoff {
		p.MaxBackoff = p.InitialBackoff
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 10
	}
	return p
}

// backoff returns the wait before redial attempt n (from 1): exponential
// from InitialBackoff, capped at MaxBackoff, with the upper half jittered so
// that clients of a restarted server do not all redial at once.
func (p ReconnectPolicy) backoff(n int) time.Duration {
	d := p.InitialBackoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}
