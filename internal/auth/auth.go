// Package auth holds the access rules nextstate's HTTP servers share (the
// gym server of package server and the standalone `nextstate proxy`): a
// server with a token requires "Authorization: Bearer <token>" (the scheme
// in any case, RFC 9110 §11.1), compared in constant time; a server with
// none listens only on a loopback address, so that nothing it does is
// reachable from another machine without a token.
package auth

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Challenge is the WWW-Authenticate header of a 401 answer.
const Challenge = `Bearer realm="nextstate"`

// Missing is the message of a 401 answer: what was wrong and what is accepted.
const Missing = `missing or wrong bearer token: send the header "Authorization: Bearer <token>"`

// Bearer returns the token of h's "Authorization: Bearer <token>" header;
// ok is false when there is none (no header, another scheme, no token).
func Bearer(h http.Header) (token string, ok bool) {
	scheme, tok, found := strings.Cut(h.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

// Equal says whether a token sent equals the expected one, in time that
// does not depend on where they differ. An empty want matches nothing.
func Equal(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// Loopback says whether addr (host:port) is a loopback address: localhost,
// 127.0.0.0/8 or ::1. An address with no host (":8090", all interfaces) is not.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckListen applies the listen rule: a server that is not guarded by a
// token may listen only on a loopback address. flags names the flags that
// set a token and example is a loopback address, for the error message.
func CheckListen(addr string, guarded bool, flags, example string) error {
	if guarded || Loopback(addr) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without a token: set a token (%s) or listen on a loopback address such as %s", addr, flags, example)
}
