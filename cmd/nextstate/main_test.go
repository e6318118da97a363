package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/server"
	"github.com/nextstate-rl/nextstate/wire"
)

// run executes the CLI with args and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

func TestDemoPlaysEveryBuiltInTask(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, "demo", "--json", "--episodes", "2", "--data", dir)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	var rep DemoReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("demo --json printed %q: %v", out, err)
	}
	skipped := func(env string) bool {
		return slices.ContainsFunc(rep.Skipped, func(s string) bool { return strings.HasPrefix(s, env) })
	}
	want := 0
	for _, tk := range gym.NewCatalog().List("", "") {
		if !skipped(tk.Env) {
			want++
		}
	}
	if !skipped("swe-v1") {
		want += len(demoSWESpecs) // the SWE instances the demo builds
	}
	if len(rep.Rows) != want || want == 0 {
		t.Errorf("demo played %d tasks, want %d (the catalog's and the demo's SWE instances, less skipped kinds %v)", len(rep.Rows), want, rep.Skipped)
	}
	episodes := 0
	for _, r := range rep.Rows {
		episodes += r.Episodes
		n := 2
		if m, ok := demoEpisodes[r.Env]; ok {
			n = min(n, m)
		}
		if r.Episodes != n || r.Terminated != n {
			t.Errorf("%s: %+v, want %d terminated episodes", r.Task, r, n)
		}
		// Bisection always wins guess-v1; every other kind but echo-v1 is
		// played by its tasks' oracles, which must reach the full reward.
		if r.Env != "echo-v1" && r.MeanReturn != 1 {
			t.Errorf("%s: mean return %v, want 1 (the scripted policy or oracle solves it)", r.Task, r.MeanReturn)
		}
	}
	if rep.Exported != episodes {
		t.Errorf("exported %d episodes, played %d", rep.Exported, episodes)
	}
	if rep.EventsByType["step"] != rep.Steps || rep.EventsByType["reset"] != episodes {
		t.Errorf("streamed %v for %d steps and %d episodes", rep.EventsByType, rep.Steps, episodes)
	}

	// The store the demo wrote exports the same episodes from the CLI.
	out, err = run(t, "export", "--data", dir, "--format", "jsonl", "--run", "demo")
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != episodes {
		t.Fatalf("export wrote %d lines, want %d", len(lines), episodes)
	}
	var ep struct {
		Env   string            `json:"env"`
		Steps []json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &ep); err != nil || ep.Env == "" || len(ep.Steps) == 0 {
		t.Errorf("first exported episode %s: %v", lines[0], err)
	}
	if _, err := run(t, "export", "--data", dir, "--format", "csv"); err == nil || !strings.Contains(err.Error(), "jsonl") {
		t.Errorf("export --format csv: %v, want an error naming the accepted formats", err)
	}
}

func TestBenchWS(t *testing.T) {
	srv, err := server.New(server.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
	})
	heap := filepath.Join(t.TempDir(), "client.heap")
	out, err := run(t, "bench", "ws", "--addr", "ws://"+ln.Addr().String(), "--sessions", "40", "--conns", "8",
		"--steps", "5", "--json", "--mem-profile", heap)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	if fi, err := os.Stat(heap); err != nil || fi.Size() == 0 {
		t.Errorf("--mem-profile wrote no profile: %v", err)
	}
	var rep BenchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SessionsOK != 40 || rep.SuccessRate != 1 || rep.Steps != 200 || rep.StepErrors != 0 || rep.Conns != 8 {
		t.Errorf("report %+v, want 40 sessions over 8 connections, 200 steps, no errors", rep)
	}
	if rep.LatencyMS.P50 <= 0 || rep.LatencyMS.P99 < rep.LatencyMS.P50 || rep.StepsPerSecond <= 0 {
		t.Errorf("latency %+v, %v steps/s: not measured", rep.LatencyMS, rep.StepsPerSecond)
	}
	// Paced: each session is a timer between its steps.
	out, err = run(t, "bench", "ws", "--addr", "ws://"+ln.Addr().String(), "--sessions", "30",
		"--steps", "4", "--think", "2ms", "--json")
	if err != nil {
		t.Fatalf("bench --think: %v\n%s", err, out)
	}
	rep = BenchReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SessionsOK != 30 || rep.Steps != 120 || rep.StepErrors != 0 || rep.Conns != 30 {
		t.Errorf("paced report %+v, want 30 sessions over 30 connections, 120 steps, no errors", rep)
	}
	// Every session was closed after the runs.
	if n := srv.Manager().Len(); n != 0 {
		t.Errorf("%d sessions left open", n)
	}
}

func TestTasksListValidatesSuites(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte("name: mine\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "easy.yaml"), []byte(`id: easy-guess
env: guess-v1
instruction: Guess between 1 and 3.
split: test
data: {low: 1, high: 3}
verifier: {secret_hint: never shown}
`), 0o644)
	out, err := run(t, "tasks", "list", "--json", "--env", "guess-v1", "--split", "test", dir)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []gym.Task
	if err := json.Unmarshal([]byte(out), &tasks); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, tk := range tasks {
		if tk.ID == "easy-guess" {
			found = true
			if tk.Verifier != nil {
				t.Error("tasks list shows the verifier's inputs")
			}
		}
		if tk.Split != "test" {
			t.Errorf("task %s of split %q listed under --split test", tk.ID, tk.Split)
		}
	}
	if !found {
		t.Errorf("easy-guess not listed: %s", out)
	}
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("id: x\nenv: nope-v1\n"), 0o644)
	if _, err := run(t, "tasks", "list", dir); err == nil || !strings.Contains(err.Error(), "guess-v1") {
		t.Errorf("unknown kind: %v, want an error listing the registered kinds", err)
	}
}

// A folder of a tau2 domain the binary does not run (airline's, which has
// retail's files) is refused as such, naming the domains it runs.
func TestTasksListUnsupportedTau2Domain(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tasks.json"), []byte(`[{"id": "0", "user_scenario": {"instructions": {"domain": "airline", "reason_for_call": "r", "task_instructions": "i"}}}]`), 0o644)
	os.WriteFile(filepath.Join(dir, "db.json"), []byte(`{"flights": {}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "policy.md"), []byte("# Airline policy"), 0o644)
	_, err := run(t, "tasks", "list", dir)
	if err == nil || !strings.Contains(err.Error(), `tau2 domain "airline" is not supported: the supported tau2 domains are retail and telecom`) {
		t.Errorf("airline folder: %v", err)
	}
}

func TestServeRefusesOpenAddressWithoutToken(t *testing.T) {
	_, err := run(t, "serve", "--addr", "0.0.0.0:0", "--data", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("serve on 0.0.0.0 without a token: %v, want a refusal naming the token", err)
	}
}

func TestGCPercentRefused(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--data", t.TempDir(), "--gc-percent", "0"},
		{"bench", "ws", "--addr", "ws://127.0.0.1:1", "--gc-percent", "-5"},
	} {
		_, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "want a percent above 0, or -1 to turn the collector off") {
			t.Errorf("%v: %v, want a refusal saying what is accepted", args, err)
		}
	}
}

func TestEnvsAndVersion(t *testing.T) {
	out, err := run(t, "envs", "--json")
	if err != nil || !strings.Contains(out, `"guess-v1"`) || !strings.Contains(out, `"echo-v1"`) {
		t.Errorf("envs --json: %v\n%s", err, out)
	}
	out, err = run(t, "version")
	if err != nil || !strings.Contains(out, wire.Version) {
		t.Errorf("version: %v %q", err, out)
	}
}

// TestDocListsCommands: the package doc (main.go) names every command the
// binary has, and no other.
func TestDocListsCommands(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(f.Doc.Text(), "\n") {
		if rest, ok := strings.CutPrefix(line, "\t"); ok && rest != "" && rest[0] != ' ' {
			listed[strings.Fields(rest)[0]] = true
		}
	}
	for _, c := range newRoot().Commands() {
		if !listed[c.Name()] {
			t.Errorf("the package doc does not list the command %q", c.Name())
		}
		delete(listed, c.Name())
	}
	for name := range listed {
		t.Errorf("the package doc lists %q, which is not a command", name)
	}
}
