package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSWEBuildGoLocalPair(t *testing.T) {
	for _, tool := range []string{"go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	synth := filepath.Join("..", "..", "envs", "swe", "gobuild", "testdata", "synth")
	out := t.TempDir()
	c := newSWEBuildGo()
	var stdout, stderr bytes.Buffer
	c.SetOut(&stdout)
	c.SetErr(&stderr)
	c.SetArgs([]string{"--old-dir", filepath.Join(synth, "old"), "--new-dir", filepath.Join(synth, "new"),
		"--out", out, "--modcache", filepath.Join(out, "gomod"), "--proxy", "off", "--json",
		"example.com/calc", "v1.0.0", "v1.0.1"})
	if err := c.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep SWEBuildGoReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if len(rep.Results) != 1 || rep.Results[0].Instance.InstanceID != "example.com__calc-v1.0.1" ||
		strings.Join(rep.Results[0].Instance.FailToPass, ",") != "TestAbs,TestAbs/-4" {
		t.Errorf("report: %s", stdout.String())
	}
}

func TestSWEBuildGoArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"github.com/google/uuid", "v1.5.0"}, "want MODULE OLD NEW"},
		{[]string{"--old-dir", "x"}, "give both --old-dir and --new-dir"},
		{[]string{"--builtin-list", "--list", "f"}, "not both"},
		{[]string{"--builtin-list", "m", "a", "b"}, "take no MODULE OLD NEW"},
	} {
		cmd := newSWEBuildGo()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(c.args)
		if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}
