package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/gym"
)

// runKeys are the keys of a results.jsonl row, as issue 7's contract lists them.
var runKeys = []string{"trial_id", "task", "env", "sample", "seed", "status", "reward", "process_reward", "terminated",
	"truncated", "steps", "failure", "session", "duration_ms", "prompt_tokens", "completion_tokens", "model", "trajectory", "finished_at"}

func runJSON(t *testing.T, args ...string) RunSummary {
	t.Helper()
	out, err := run(t, append([]string{"run", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("nextstate run %v: %v\n%s", args, err, out)
	}
	// Progress lines go to the same buffer; the JSON is the last object.
	i := strings.LastIndex(out, "\n{")
	var s RunSummary
	if err := json.Unmarshal([]byte(out[i+1:]), &s); err != nil {
		t.Fatalf("run --json printed %q: %v", out, err)
	}
	return s
}

func checkRows(t *testing.T, dir string, model string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var row map[string]any
		if err := json.Unmarshal(l, &row); err != nil {
			t.Fatalf("row %q: %v", l, err)
		}
		var keys []string
		for k := range row {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := slices.Clone(runKeys)
		sort.Strings(want)
		if !slices.Equal(keys, want) {
			t.Errorf("row keys %v, want %v", keys, want)
		}
		if row["model"] != model {
			t.Errorf("row model %v, want %s", row["model"], model)
		}
		if _, err := os.Stat(filepath.Join(dir, row["trajectory"].(string))); err != nil {
			t.Errorf("trajectory of %v: %v", row["trial_id"], err)
		}
		rows = append(rows, row)
	}
	return rows
}

func TestRunOracleOnBuiltInSuites(t *testing.T) {
	suites := []string{"bfcl-v1"}
	for _, k := range []string{"tau2-retail-v1", "tau2-telecom-v1"} {
		if _, err := gym.Lookup(k); err == nil {
			suites = append(suites, k)
		} else {
			t.Logf("%s is not registered in this binary", k)
		}
	}
	dir := t.TempDir()
	args := []string{"--oracle", "-k", "2", "--out", dir}
	for _, s := range suites {
		args = append(args, "--suite", s)
	}
	s := runJSON(t, args...)
	if s.Trials == 0 || s.Passed != s.Trials || s.Pass1 != 1 || s.PassK != 1 || s.MeanReward != 1 {
		t.Errorf("oracle run %+v: want every trial passed", s)
	}
	rows := checkRows(t, dir, "oracle")
	if len(rows) != s.Trials {
		t.Errorf("%d rows for %d trials", len(rows), s.Trials)
	}
	for _, f := range []string{"report.md", "report.html", "run.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if s.ReportMD == "" || s.ReportHTML == "" {
		t.Errorf("summary names no report: %+v", s)
	}
	// echo-v1 has no oracle: the run says so.
	if _, err := run(t, "run", "--oracle", "--suite", "echo-v1", "--out", t.TempDir()); err == nil || !strings.Contains(err.Error(), "no task of echo-v1 has an oracle") {
		t.Errorf("oracle run of echo-v1: %v", err)
	}
}

var numRE = regexp.MustCompile(`-?\d+`)

// bisectEndpoint is an OpenAI-compatible endpoint that plays guess-v1 by
// binary search over the history it is sent; delay slows each answer.
func bisectEndpoint(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad request or key"}}`, http.StatusUnauthorized)
			return
		}
		time.Sleep(delay)
		ms := req.Messages
		lo, hi := 1, 100
		if n := numRE.FindAllString(ms[1].Content, 2); len(n) == 2 {
			lo, _ = strconv.Atoi(n[0])
			hi, _ = strconv.Atoi(n[1])
		}
		for i := 2; i+1 < len(ms); i += 2 {
			g, _ := strconv.Atoi(ms[i].Content)
			switch ms[i+1].Content {
			case "higher":
				lo = g + 1
			case "lower":
				hi = g - 1
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": strconv.Itoa((lo + hi) / 2)}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": len(b) / 4, "completion_tokens": 2}})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestRunModelWithScriptedEndpoint(t *testing.T) {
	srv, calls := bisectEndpoint(t, 0)
	t.Setenv("TEST_KEY", "sk-test")
	dir := t.TempDir()
	s := runJSON(t, "--suite", "guess-v1", "--tasks", "guess-1-100,guess-1-5*", "--base-url", srv.URL+"/v1", "--model", "bisect",
		"--api-key-env", "TEST_KEY", "-k", "3", "--concurrency", "4", "--out", dir)
	if s.Trials != 6 || s.Tasks != 2 || s.Passed != 6 || s.PassK != 1 || s.Ran != 6 {
		t.Errorf("summary %+v: want 6 trials of guess-1-100 and guess-1-50, all passed", s)
	}
	rows := checkRows(t, dir, "bisect")
	for _, r := range rows {
		if r["prompt_tokens"].(float64) == 0 || r["status"] != "passed" {
			t.Errorf("row %v: want passed with the endpoint's token counts", r)
		}
	}
	n := calls.Load()
	// A rerun has nothing left to do.
	s = runJSON(t, "--suite", "guess-v1", "--tasks", "guess-1-100,guess-1-5*", "--base-url", srv.URL+"/v1", "--model", "bisect",
		"--api-key-env", "TEST_KEY", "-k", "3", "--out", dir)
	if s.Ran != 0 || s.Resumed != 6 || s.Passed != 6 || calls.Load() != n {
		t.Errorf("rerun %+v made %d calls; want nothing run", s, calls.Load()-n)
	}
	// Another model into the same directory is refused.
	if _, err := run(t, "run", "--suite", "guess-v1", "--base-url", srv.URL+"/v1", "--model", "other", "--out", dir); err == nil ||
		!strings.Contains(err.Error(), "another --out") {
		t.Errorf("another model into the run directory: %v", err)
	}
}

// TestRunResumesAfterKill kills a run process mid-way (SIGKILL: no
// cleanup at all), then runs the same command again: the finished trials
// are kept, the rest run, and the results end complete, one final row per
// trial. A second process stopped by SIGTERM leaves the directory
// resumable too.
func TestRunResumesAfterKill(t *testing.T) {
	srv, _ := bisectEndpoint(t, 20*time.Millisecond)
	dir := t.TempDir()
	args := []string{"run", "--suite", "guess-v1", "--base-url", srv.URL + "/v1", "--model", "bisect", "--api-key-env", "TEST_KEY",
		"-k", "8", "--concurrency", "2", "--out", dir}
	results := filepath.Join(dir, "results.jsonl")
	start := func() (*exec.Cmd, chan error) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "NEXTSTATE_TEST_MAIN=1", "TEST_KEY=sk-test")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, done
	}
	waitRows := func(n int, done chan error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		if err := pollUntil(ctx, func() bool {
			b, _ := os.ReadFile(results)
			return bytes.Count(b, []byte("\n")) >= n
		}); err != nil {
			select {
			case err := <-done:
				t.Fatalf("the run exited (%v) before writing %d rows", err, n)
			default:
			}
			t.Fatalf("no %d rows: %v", n, err)
		}
	}

	cmd, done := start()
	waitRows(3, done)
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	killed, err := readResults(results)
	if err != nil {
		t.Fatalf("results after the kill: %v", err)
	}

	cmd, done = start()
	waitRows(len(killed)+3, done)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err == nil {
			t.Log("the run finished before SIGTERM arrived")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not stop after SIGTERM")
	}
	termed, err := readResults(results)
	if err != nil || len(termed) < len(killed)+3 {
		t.Fatalf("results after SIGTERM: %d rows, %v", len(termed), err)
	}

	t.Setenv("TEST_KEY", "sk-test")
	s := runJSON(t, args[1:]...)
	if s.Trials != 24 || s.Passed != 24 || s.Missing != 0 || s.Resumed != len(termed) || s.Ran != 24-len(termed) {
		t.Errorf("final run %+v after %d then %d rows: want all 24 trials passed, %d resumed", s, len(killed), len(termed), len(termed))
	}
	final, err := readResults(results)
	if err != nil || len(final) != 24 {
		t.Fatalf("%d trials in the results (%v), want 24", len(final), err)
	}
	lines := checkRows(t, dir, "bisect")
	if len(lines) != 24 {
		t.Errorf("%d rows for 24 trials: finished trials were run twice", len(lines))
	}
}

func TestRunFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", dir, "--oracle"}, "--suite is required"},
		{[]string{"--suite", "bfcl-v1", "--oracle"}, "--out is required"},
		{[]string{"--suite", "nope-v9", "--oracle", "--out", dir}, "neither a task file or directory"},
		{[]string{"--suite", "bfcl-v1", "--out", dir}, "--base-url and --model are required"},
		{[]string{"--suite", "bfcl-v1", "--oracle", "--model", "m", "--out", dir}, "leave out --base-url and --model"},
		{[]string{"--suite", "bfcl-v1", "--oracle", "--tasks", "zzz*", "--out", dir}, "has no task"},
		{[]string{"--suite", "bfcl-v1", "--oracle", "--tasks", "[", "--out", dir}, "--tasks"},
		{[]string{"--suite", "bfcl-v1", "--oracle", "-k", "0", "--out", dir}, "must be at least 1"},
		{[]string{"--suite", "bfcl-v1", "--oracle", "--set", "novalue", "--out", dir}, "want name=value"},
	} {
		_, err := run(t, append([]string{"run"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// readResults reads a results.jsonl's rows (a last line cut short by the
// kill left out).
func readResults(path string) ([]rundir.Result, error) {
	res, err := rundir.ReadResultsFile(path)
	return res.Rows, err
}
