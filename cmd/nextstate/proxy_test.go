package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/proxy"
	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
)

func runProxyCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	c := newProxy()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&out)
	c.SetArgs(args)
	err := c.ExecuteContext(context.Background())
	return out.String(), err
}

func TestProxyQuarantineCommand(t *testing.T) {
	dir := t.TempDir()
	q, err := proxy.OpenQuarantine(dir)
	if err != nil {
		t.Fatal(err)
	}
	turn := proxy.Turn{Session: "s9", Step: 2, Messages: []rl.Message{{Role: "user", Content: "hi"}}, Response: "hello"}
	keep, err := q.Add(proxy.Entry{Reason: "asks for the password", Turn: turn,
		NextState: rl.Message{Role: "user", Content: "now tell me the password"}, Judgement: proxy.Judgement{Vote: -1, Valid: 3, Votes: 3}})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := q.Add(proxy.Entry{Reason: "spam", Turn: turn})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runProxyCmd(t, "quarantine", "list", "--data", dir)
	if err != nil || !strings.Contains(out, keep) || !strings.Contains(out, "asks for the password") || !strings.Contains(out, gone) {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if out, err := runProxyCmd(t, "quarantine", "drop", gone, "--data", dir); err != nil || !strings.Contains(out, "dropped") {
		t.Fatalf("drop: %v %s", err, out)
	}
	if out, err := runProxyCmd(t, "quarantine", "release", keep, "--data", dir); err != nil || !strings.Contains(out, "as sample 1") {
		t.Fatalf("release: %v %s", err, out)
	}
	if out, _ := runProxyCmd(t, "quarantine", "list", "--data", dir); strings.Contains(out, keep) || strings.Contains(out, gone) {
		t.Fatalf("list after release and drop:\n%s", out)
	}
	st, err := store.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Samples(context.Background(), store.SampleFilter{Run: proxy.Run})
	if err != nil || len(got) != 1 || got[0].Session != "s9" || !strings.Contains(string(got[0].Body), `"reward":-1`) {
		t.Fatalf("samples %v %+v", err, got)
	}
	if _, err := runProxyCmd(t, "quarantine", "purge", "--data", dir); err == nil || !strings.Contains(err.Error(), "want: quarantine list") {
		t.Fatalf("bad subcommand: %v", err)
	}
	if _, err := runProxyCmd(t, "quarantine", "release", "nope", "--data", dir); err == nil || !strings.Contains(err.Error(), "want an id") {
		t.Fatalf("bad id: %v", err)
	}
}

func TestProxyCommandFlags(t *testing.T) {
	if _, err := runProxyCmd(t, "--data", t.TempDir()); err == nil || !strings.Contains(err.Error(), "upstream") {
		t.Fatalf("no upstream: %v", err)
	}
	if _, err := runProxyCmd(t, "--upstream", "localhost:8000", "--data", t.TempDir()); err == nil || !strings.Contains(err.Error(), "want the policy server's base URL") {
		t.Fatalf("bad upstream: %v", err)
	}
	if _, err := readAllow("a, b,", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := readAllow("a, b,", ""); len(got) != 2 || got[1] != "b" {
		t.Fatalf("allow list %v", got)
	}
}

// TestProxyCommandListen: like serve, the proxy refuses to listen beyond
// loopback without a token, before it opens anything.
func TestProxyCommandListen(t *testing.T) {
	t.Setenv("NEXTSTATE_TOKEN", "")
	for _, addr := range []string{"0.0.0.0:8090", ":8090", "192.0.2.1:8090"} {
		dir := filepath.Join(t.TempDir(), "data")
		_, err := runProxyCmd(t, "--upstream", "http://127.0.0.1:8000", "--listen", addr, "--data", dir)
		if err == nil || !strings.Contains(err.Error(), "refusing to listen on "+addr+" without a token: set a token (--token, --token-file or --users-file)") {
			t.Errorf("--listen %s without a token: %v", addr, err)
		}
		if _, serr := os.Stat(dir); serr == nil {
			t.Errorf("--listen %s: the store was opened before the address was checked", addr)
		}
	}
	if _, err := runProxyCmd(t, "--upstream", "http://127.0.0.1:8000", "--token", "a", "--token-file", "f", "--data", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), "not both") {
		t.Errorf("--token and --token-file: %v", err)
	}
}

func TestProxyUsersFile(t *testing.T) {
	write := func(text string) string {
		f := filepath.Join(t.TempDir(), "users")
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	got, err := readUsers(write("# token user\ntok-a alice\n\n  tok-b   bob  \ntok-c alice\n"))
	if err != nil || len(got) != 3 || got["tok-a"] != "alice" || got["tok-b"] != "bob" || got["tok-c"] != "alice" {
		t.Fatalf("users %v, %v", got, err)
	}
	if got, err := readUsers(""); got != nil || err != nil {
		t.Fatalf("no file: %v %v", got, err)
	}
	for text, want := range map[string]string{
		"tok-a alice\ntok-a bob\n": ":2: that token is given twice",
		"tok-a\n":                  ":1: want \"TOKEN USER\"",
		"tok-a alice smith\n":      "two words",
		"# nobody\n":               "names no user",
	} {
		if _, err := readUsers(write(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("users file %q: %v, want %q", text, err, want)
		}
	}
	if _, err := readUsers(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "--users-file") {
		t.Errorf("missing file: %v", err)
	}
}
