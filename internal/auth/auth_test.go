package auth

import (
	"net/http"
	"strings"
	"testing"
)

func TestBearer(t *testing.T) {
	for _, c := range []struct {
		hdr, tok string
		ok       bool
	}{
		{"Bearer s3cret", "s3cret", true},
		{"bearer s3cret", "s3cret", true},
		{"BEARER  s3cret ", "s3cret", true},
		{"", "", false},
		{"s3cret", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic czNjcmV0", "", false},
	} {
		h := http.Header{}
		if c.hdr != "" {
			h.Set("Authorization", c.hdr)
		}
		if tok, ok := Bearer(h); tok != c.tok || ok != c.ok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", c.hdr, tok, ok, c.tok, c.ok)
		}
	}
	if Equal("", "") || Equal("a", "") || Equal("a", "b") || !Equal("s3cret", "s3cret") {
		t.Error("Equal: an empty want must match nothing, and only the same token matches")
	}
}

func TestCheckListen(t *testing.T) {
	for addr, loop := range map[string]bool{
		"127.0.0.1:8090": true, "localhost:8090": true, "[::1]:0": true, "127.1.2.3:80": true,
		"0.0.0.0:8090": false, ":8090": false, "[::]:8090": false, "192.168.1.10:8090": false,
		"example.com:80": false, "127.0.0.1": false,
	} {
		if Loopback(addr) != loop {
			t.Errorf("Loopback(%q) = %v, want %v", addr, !loop, loop)
		}
		err := CheckListen(addr, false, "--token", "127.0.0.1:8090")
		if loop != (err == nil) {
			t.Errorf("CheckListen(%q) without a token: %v", addr, err)
		}
		if err != nil && !strings.Contains(err.Error(), "refusing to listen on "+addr+" without a token: set a token (--token)") {
			t.Errorf("CheckListen(%q): message %q", addr, err)
		}
		if err := CheckListen(addr, true, "--token", "127.0.0.1:8090"); err != nil {
			t.Errorf("CheckListen(%q) with a token: %v", addr, err)
		}
	}
}
