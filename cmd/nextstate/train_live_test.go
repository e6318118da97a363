package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/live"
	"github.com/nextstate-rl/nextstate/simuser"
)

func TestTrainProxyFlags(t *testing.T) {
	model := writeTinyModel(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--proxy", "127.0.0.1:0", "--model", model, "--out", t.TempDir()}, "--proxy needs a judge"},
		{[]string{"--proxy", "127.0.0.1:0", "--model", model, "--out", t.TempDir(), "--judge", "rule", "--suite", "guess-v1"}, "leave --suite out"},
		{[]string{"--proxy", "127.0.0.1:0", "--model", model, "--out", t.TempDir(), "--judge", "rule", "--per-user-lora"}, "needs --model and --lora RANK"},
		{[]string{"--proxy", "127.0.0.1:0", "--model", model, "--out", t.TempDir(), "--judge", "rule", "--per-user-lora", "--lora", "4"}, "needs --allow-users"},
		{[]string{"--proxy", "0.0.0.0:0", "--model", model, "--out", t.TempDir(), "--judge", "rule"}, "loopback"},
	} {
		_, err := run(t, append([]string{"train"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("train %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if _, err := run(t, "users", "simulate", "--user", "ann=loud"); err == nil || !strings.Contains(err.Error(), "want lowercase, no-bullets") {
		t.Errorf("an unknown preference: %v", err)
	}
}

// train --proxy with one adapter per user, two simulated users talking to
// it for two sessions each (waiting on /v1/live between rounds): each
// user's adapter takes an update per session, on that user's samples
// alone, and the reports are written.
func TestTrainProxyPerUser(t *testing.T) {
	model := writeTinyModel(t)
	out := t.TempDir()
	ready := filepath.Join(t.TempDir(), "addr")
	ctx, cancel := context.WithCancel(t.Context())
	var stdout bytes.Buffer
	done := make(chan error, 1)
	go func() {
		f := trainFlags{model: model, out: out, judge: "rule", loss: "combined", estimator: "plain", lr: 1e-3, rank: 4,
			targets: "q_proj,v_proj", maxGradNorm: 1, maxBatch: 4, seed: 1, logLevel: "warn",
			live: liveFlags{listen: "127.0.0.1:0", readyFile: ready, batch: 3, flushAfter: time.Second, allowUsers: "ann,bob", perUser: true}}
		done <- runTrainProxy(ctx, &stdout, os.Stderr, f)
	}()
	addr := waitReady(t, ready, done)
	var sim bytes.Buffer
	err := runSimulate(ctx, &sim, simulateFlags{url: "http://" + addr + "/v1", status: "http://" + addr + "/v1/live",
		users: []string{"ann=lowercase", "bob=short"}, sessions: 2, turns: 3, maxTokens: 8, temperature: 1, requery: 0.3, seed: 1,
		run: "t", out: filepath.Join(out, live.SessionsFile), timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%s", sim.String(), stdout.String())
	for _, u := range []string{"ann", "bob"} {
		ups, err := live.ReadUpdates(filepath.Join(out, "users", u))
		if err != nil || len(ups) != 2 {
			t.Fatalf("%s's updates: %d, %v; want one per session", u, len(ups), err)
		}
		for _, up := range ups {
			if len(up.Samples) != 3 {
				t.Fatalf("%s's update %d: %d samples, want a session's 3", u, up.N, len(up.Samples))
			}
			for _, s := range up.Samples {
				if s.User != u {
					t.Fatalf("%s's adapter trained on %s's sample", u, s.User)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(out, "users", u, live.ReportFile)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := simuser.ReadSessions(filepath.Join(out, live.SessionsFile))
	if err != nil || len(res) != 4 {
		t.Fatalf("sessions: %d, %v; want 2 users × 2", len(res), err)
	}
	if got, err := run(t, "users", "report", out); err != nil || !strings.Contains(got, "| "+filepath.Base(out)+" |") {
		t.Fatalf("users report: %v\n%s", err, got)
	}
}
