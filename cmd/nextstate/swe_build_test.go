package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/swe/gobuild"
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
		{[]string{"--builtin", "--list", "f"}, "not both"},
		{[]string{"--builtin", "m", "a", "b"}, "take no MODULE OLD NEW"},
		{[]string{"--builtin-list", "--builtin"}, "only prints the shipped list"},
		{[]string{"--builtin-list", "m", "a", "b"}, "only prints the shipped list"},
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

// --builtin-list prints the shipped list and builds nothing: no download,
// no repository, no instances file.
func TestSWEBuildGoBuiltinListOnlyLists(t *testing.T) {
	specs, err := gobuild.ReadList(gobuild.BuiltinList)
	if err != nil {
		t.Fatal(err)
	}
	for _, asJSON := range []bool{false, true} {
		out := t.TempDir()
		args := []string{"--builtin-list", "--out", out, "--modcache", filepath.Join(out, "gomod"), "--proxy", "off"}
		if asJSON {
			args = append(args, "--json")
		}
		c := newSWEBuildGo()
		var stdout, stderr bytes.Buffer
		c.SetOut(&stdout)
		c.SetErr(&stderr)
		c.SetArgs(args)
		if err := c.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		if left, _ := os.ReadDir(out); len(left) > 0 {
			t.Errorf("%v wrote %d entries into --out", args, len(left))
		}
		if asJSON {
			got, err := gobuild.ReadList(stdout.Bytes())
			if err != nil || !reflect.DeepEqual(got, specs) {
				t.Errorf("--json: %v, %v; want the shipped list %v", got, err, specs)
			}
			continue
		}
		for _, s := range specs {
			if !strings.Contains(stdout.String(), gobuild.InstanceID(s.Module, s.New)) {
				t.Errorf("the table lacks %s %s: %s", s.Module, s.New, stdout.String())
			}
		}
	}
}
