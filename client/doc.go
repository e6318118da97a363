// Package client is the Go client of a nextstate server: it drives sessions
// (create, step, reset, resume, close), lists env kinds and tasks, adds late
// rewards and subscribes to the event and training-sample streams, over one WebSocket speaking
// JSON-RPC 2.0 (protocol wire.Version, the contract in wire and
// docs/protocol.md).
//
// # Connecting
//
// Dial connects and returns a Client; options set the bearer token
// (WithToken), extra handshake headers (WithHeader), the dialer
// (WithDialer), the reconnect policy (WithReconnect, WithoutReconnect), the
// logger, the frame cap (WithMaxFrame), the outbound queue (WithQueueLen),
// the subscription buffer (WithEventBuffer) and keepalive pings
// (WithKeepalive). The URL may be ws://host:port or http://host:port; with no
// path, /v1/ws is appended. The ctx given to Dial bounds the dial only.
//
// # Concurrency
//
// A Client is safe for concurrent use. Every call takes a ctx and returns
// when its answer arrives or the ctx ends, whichever is first; calls from
// many goroutines share the connection, each matched to its answer by
// request id. Each connection has one reader goroutine; a writer runs only
// while the bounded outbound queue has requests, and a caller finding the
// queue full waits (bounded by its ctx). Keepalive pings come from a timer,
// and the goroutine that reconnects starts when a connection fails, so an
// idle Client is one parked goroutine (10,000 agents in one process are
// 10,000, which the garbage collector scans every cycle). The reader never
// waits on a caller or on a subscriber. Close ends the connection and waits
// for every goroutine the client started.
//
// # Errors
//
// A server error comes back as the error gym would have returned in
// process, so errors.Is(err, gym.ErrUnknownSession), errors.Is(err,
// gym.ErrEpisodeOver) and errors.As(err, &capErr) with capErr a
// *gym.CapacityError work as on the server; errors.As to a *wire.Error gives
// the code and its data. A call on a closed Client returns ErrClosed.
//
// # Reconnecting and idempotency
//
// Sessions outlive connections. When the connection drops, the client
// redials with exponential backoff (WithReconnect; on by default) and sends
// again the calls that are safe to send twice: reads (server.info,
// env.list, env.describe, task.list, session.resume), session.close, and
// steps, because Session.Step gives each step a unique step id and the
// server answers a step id it has seen from its record (StepResult.Replayed
// is then true) instead of running the action again. Calls that are not
// safe to repeat (Create, Session.Reset, AddReward, a step with an empty
// step id) are never sent twice: if the connection dropped after one was
// written, it fails with an error that wraps ErrConnectionLost and says
// that its outcome is unknown; Session.Resume then shows whether it
// happened. Calls made while the client is redialing wait for the new
// connection. With reconnecting off, or once the policy gives up, every
// call in flight and every later call fails with an error wrapping
// ErrConnectionLost; Dial again and Attach the sessions to go on.
//
// Session.LastSeq is the highest event seq a Session handle has seen in its
// own answers; Session.Resume(ctx, s.LastSeq()) returns exactly the events
// of the session it has not seen, such as a reset whose answer was lost or
// rewards added by a judge.
//
// # Subscriptions
//
// Subscribe streams events matching a filter: stored ones after a seq, then
// live ones. The client keeps a subscription going through what would end
// it (the server's events.ended for a slow consumer, a dropped connection,
// a reader that falls behind the client's buffer) by subscribing again from
// the last seq it queued, so C delivers events in seq order with no
// duplicates and no gaps. Both streams, events and samples, are kept going
// by one resubscriber: it resubscribes with the reconnect policy's backoff
// until the server refuses for good (an invalid filter, no such method,
// unauthorized) or the client gives up, and ends the server-side
// subscriptions it replaces; what differs is where each stream resumes.
//
// Events read back, by Subscribe and by Session.Resume, come as an agent
// may see them (gym.Event.Public): rewards without the verifier's details,
// which stay in the server's store (`nextstate export --with-verifier`). A
// session whose server died is closed by the next server on its store:
// Resume and Subscribe then end it with a session.closed event of reason
// gym.CloseServerRestart.
//
// # Training samples
//
// SubscribeSamples streams the server's training samples (package rl's
// Sample as JSON, each with its offset) after an offset, at most a window
// of them unacknowledged: call Ack with the offset of what you have
// processed, at least every window/2 samples. Through a dropped connection
// the client subscribes again after the last acknowledged offset; the
// server then sends the unacknowledged samples again, and the client puts
// none of them on C twice. A consumer that restarts subscribes with
// AfterSeq = the offset it last acknowledged (at least once). Session.StepTurn
// sends the policy's side of a step (gym.Turn: prompt, response, token ids,
// log-probs), which the server records for the samples.
package client
