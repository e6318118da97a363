package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/rl"
	"github.com/nextstate-rl/nextstate/store"
)

// TestExportSamplesCLI: export --format samples writes one sample a line,
// each with its offset, filtered like the other formats.
func TestExportSamplesCLI(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"a", "b", "a"} {
		_, _, err := st.AppendSamples(context.Background(), store.Trajectory{Run: run, Task: "t"}, func(group, index int) ([][]byte, error) {
			return [][]byte{fmt.Appendf(nil, `{"group_index":%d,"index":%d,"reward":1}`, group, index)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "export", "--data", dir, "--format", "samples", "--run", "a")
	if err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want the 2 samples of run a:\n%s", len(lines), out)
	}
	for i, want := range []int64{1, 3} {
		var v struct {
			Offset     int64 `json:"offset"`
			GroupIndex int   `json:"group_index"`
			Index      int   `json:"index"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &v); err != nil || v.Offset != want || v.GroupIndex != 0 || v.Index != int(want-1) {
			t.Errorf("line %d: %s (%v), want offset %d, group 0", i, lines[i], err, want)
		}
	}
	out, _ = run(t, "export", "--data", dir, "--format", "samples", "--after-seq", "2")
	if !strings.HasPrefix(out, `{"offset":3,`) || strings.Count(out, "\n") != 1 {
		t.Errorf("--after-seq 2: %s", out)
	}
}

// TestServeSignalFlags turns serve's judge and mix flags into the server's
// config, and refuses the incomplete ones.
func TestServeSignalFlags(t *testing.T) {
	cfg, err := signalsConfig(judgeFlags{mix: "c=0.5,outcome=2acc-1"})
	if err != nil || cfg.Mix == nil || *cfg.Mix != (rl.Mix{C: 0.5, Gamma: 1, OutcomeMap: rl.OutcomeTwoAcc}) || cfg.Judge.Endpoint != "" {
		t.Errorf("--mix: %+v %v", cfg, err)
	}
	t.Setenv("TEST_JUDGE_KEY", "sk-test")
	cfg, err = signalsConfig(judgeFlags{url: "http://127.0.0.1:8000/v1", model: "Qwen/Qwen3-8B", apiKeyEnv: "TEST_JUDGE_KEY",
		votes: 5, concurrency: 8, timeout: 30 * time.Second, retries: -1, kinds: []string{"terminal-v1"}, votesByKind: map[string]int{"gui": 1}})
	if err != nil || cfg.Judge.APIKey != "sk-test" || cfg.Judge.Votes != 5 || cfg.Concurrency != 8 || cfg.Judge.VotesByKind["gui"] != 1 ||
		time.Duration(cfg.Judge.Timeout) != 30*time.Second || cfg.Judge.Retries != -1 || cfg.Kinds[0] != "terminal-v1" {
		t.Errorf("judge flags: %+v %v", cfg, err)
	}
	for name, f := range map[string]judgeFlags{
		"model without url":   {model: "m"},
		"unset key variable":  {url: "http://127.0.0.1:8000/v1", model: "m", apiKeyEnv: "TEST_NO_SUCH_KEY_VARIABLE"},
		"bad mix":             {mix: "gamma=3"},
		"templates, no judge": {templates: "/tmp"},
	} {
		if _, err := signalsConfig(f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
