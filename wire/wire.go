// Package wire holds nextstate's wire contract: the JSON-RPC 2.0 envelope,
// the method names with their params and results, and the error codes, as
// docs/protocol.md documents them. The server and the Go client both use it,
// so the two cannot drift apart. It maps gym's errors to codes and back, so
// errors.Is(err, gym.ErrUnknownSession) holds on both sides of a connection.
package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// Version is the protocol version; it is also the WebSocket subprotocol.
const Version = "nextstate.v1"

// MaxFrameBytes is the default cap on one incoming WebSocket message or HTTP
// body. Larger frames are answered with CodeFrameTooLarge.
const MaxFrameBytes = 4 << 20

// Methods.
const (
	MethodServerInfo        = "server.info"
	MethodEnvList           = "env.list"
	MethodEnvDescribe       = "env.describe"
	MethodTaskList          = "task.list"
	MethodSessionCreate     = "session.create"
	MethodSessionStep       = "session.step"
	MethodSessionReset      = "session.reset"
	MethodSessionClose      = "session.close"
	MethodSessionResume     = "session.resume"
	MethodRewardAdd         = "reward.add"
	MethodEventsSubscribe   = "events.subscribe"
	MethodEventsUnsubscribe = "events.unsubscribe"
	MethodSamplesAck        = "samples.ack"

	// NotifyEvent is the server-pushed notification of events.subscribe.
	NotifyEvent = "events.event"
	// NotifySubscriptionEnded says a subscription stopped (slow consumer,
	// shutdown) and why; the client resubscribes from its last seq.
	NotifySubscriptionEnded = "events.ended"
	// NotifySample is the server-pushed notification of a samples stream
	// (events.subscribe with "stream": "samples").
	NotifySample = "samples.sample"
)

// Request is a JSON-RPC 2.0 request or, without ID, a notification.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response: Result or Error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Notification is a server-pushed message with no id.
type Notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// Error codes. The JSON-RPC ones are from the spec; the others are
// nextstate's and stable across versions.
const (
	CodeParseError     = -32700 // the frame is not JSON
	CodeInvalidRequest = -32600 // not a JSON-RPC 2.0 request object
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602 // params missing, of a wrong type, or unknown fields
	CodeInternal       = -32603

	CodeUnknownSession = -32001
	CodeUnknownEnv     = -32002
	CodeUnknownTask    = -32003
	CodeBadAction      = -32004 // the action does not match the env's action schema
	CodeOverCapacity   = -32005 // data.retry_after_ms says when to retry
	CodeSessionClosed  = -32006
	CodeEpisodeOver    = -32007 // reset before stepping again
	CodeStepIDReused   = -32008
	CodeShuttingDown   = -32009 // data.retry_after_ms
	CodeUnauthorized   = -32010
	CodeFrameTooLarge  = -32011
	CodeInfra          = -32012 // the env or store failed; data.failure says how
	CodeSlowConsumer   = -32013
	CodeBadRequest     = -32014 // a request that is well-formed but cannot be served as asked
	CodeUnknownSub     = -32015
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

// ErrorData carries the details some codes have.
type ErrorData struct {
	RetryAfterMS int64        `json:"retry_after_ms,omitempty"`
	Failure      *gym.Failure `json:"failure,omitempty"`
	Problems     []string     `json:"problems,omitempty"` // schema failures, one per place
	Accepted     []string     `json:"accepted,omitempty"` // the values that would have been accepted
}

func (e *Error) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// Errorf makes an Error.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// HTTPStatus is the HTTP status the HTTP mirror answers an error code with.
func (e *Error) HTTPStatus() int {
	switch e.Code {
	case CodeParseError, CodeInvalidRequest, CodeInvalidParams, CodeBadAction, CodeBadRequest:
		return 400
	case CodeUnauthorized:
		return 401
	case CodeMethodNotFound, CodeUnknownSession, CodeUnknownEnv, CodeUnknownTask, CodeUnknownSub:
		return 404
	case CodeSessionClosed, CodeEpisodeOver, CodeStepIDReused:
		return 409
	case CodeFrameTooLarge:
		return 413
	case CodeOverCapacity:
		return 429
	case CodeShuttingDown:
		return 503
	case CodeInfra:
		return 502
	}
	return 500
}

var codeOf = []struct {
	err  error
	code int
}{
	{gym.ErrUnknownSession, CodeUnknownSession},
	{gym.ErrUnknownKind, CodeUnknownEnv},
	{gym.ErrUnknownTask, CodeUnknownTask},
	{gym.ErrBadAction, CodeBadAction},
	{gym.ErrSessionClosed, CodeSessionClosed},
	{gym.ErrEpisodeOver, CodeEpisodeOver},
	{gym.ErrStepIDReused, CodeStepIDReused},
	{gym.ErrDraining, CodeShuttingDown},
	{gym.ErrBadRequest, CodeBadRequest},
}

// FromError maps an error to its wire form.
func FromError(err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	var ce *gym.CapacityError
	if errors.As(err, &ce) {
		return &Error{Code: CodeOverCapacity, Message: err.Error(), Data: &ErrorData{RetryAfterMS: ce.RetryAfter.Milliseconds()}}
	}
	for _, c := range codeOf {
		if errors.Is(err, c.err) {
			e := &Error{Code: c.code, Message: err.Error()}
			var se *gym.SchemaError
			if errors.As(err, &se) {
				e.Data = &ErrorData{Problems: se.Problems}
			}
			if c.code == CodeShuttingDown {
				e.Data = &ErrorData{RetryAfterMS: 1000}
			}
			if c.code == CodeUnknownEnv {
				e.Data = &ErrorData{Accepted: gym.Kinds()}
			}
			return e
		}
	}
	var fe *gym.FaultError
	if errors.As(err, &fe) {
		return &Error{Code: CodeInfra, Message: err.Error(), Data: &ErrorData{Failure: gym.FailureOf(err)}}
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

// Native returns an error that wraps the gym error matching the code, so
// callers use errors.Is on the client side as on the server side.
func (e *Error) Native() error {
	for _, c := range codeOf {
		if c.code == e.Code {
			return &nativeError{wire: e, native: c.err}
		}
	}
	if e.Code == CodeOverCapacity {
		var ra time.Duration
		if e.Data != nil {
			ra = time.Duration(e.Data.RetryAfterMS) * time.Millisecond
		}
		return &nativeError{wire: e, native: &gym.CapacityError{Limit: "sessions", RetryAfter: ra}}
	}
	return e
}

type nativeError struct {
	wire   *Error
	native error
}

func (n *nativeError) Error() string   { return n.wire.Error() }
func (n *nativeError) Unwrap() []error { return []error{n.wire, n.native} }
