package shelltool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/tools"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

var testTools = MustTools(Exec{Description: "Run a command.", Default: time.Minute, Max: 10 * time.Minute},
	tools.Tool{Name: "fail", Parameters: Object(nil)},
	tools.Tool{Name: ToolSubmit, Parameters: Object(nil)},
)

func call(id, name, args string) gym.Part {
	return gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: id, Type: "function",
		Function: gym.FunctionCall{Name: name, Arguments: args}}}
}

// testCall is a decoded call of testTools.
type testCall struct {
	Call
	Command string
	Timeout time.Duration
}

// decode reads shell_exec's arguments; the command "bad" is rejected as
// a kind's decoder would.
func decode(c Call) (testCall, error) {
	d := testCall{Call: c}
	var err error
	if c.Name == ToolExec {
		d.Command, d.Timeout, err = testTools.ExecArgs(c)
		if err == nil && d.Command == "bad" {
			err = testTools.BadArguments(c.Name, "no bad commands")
		}
	}
	return d, err
}

// run answers shell_exec with its command and timeout, and fails "fail"
// as a tool that ran.
func run(_ context.Context, c testCall, info gym.Info) (string, error) {
	switch c.Name {
	case ToolExec:
		info["ran"] = c.Command
		return c.Command + " " + c.Timeout.String(), nil
	case "fail":
		return "", tools.Errorf("it broke")
	case ToolSubmit:
		return "submitted", nil
	}
	return "", errors.New("no such tool")
}

func TestStep(t *testing.T) {
	tr, err := Step(t.Context(), testTools, gym.Action{Parts: []gym.Part{
		gym.TextPart("words beside calls"),
		call("c1", ToolExec, `{"command":"ls","timeout":"90s"}`),
		call("c2", ToolExec, `{"command":"  "}`),
		call("c2b", ToolExec, `{"command":"bad"}`),
		call("c3", ToolExec, `{"cmd":"ls"}`),
		call("c4", "fail", `null`),
		call("c5", ToolSubmit, ``),
		call("c6", ToolExec, `{"command":"after"}`),
	}}, false, decode, run)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		content string
		isErr   bool
		err     string
	}{
		{"ls 1m30s", false, ""},
		{`Error: bad arguments for shell_exec: "command" is empty. Expected: shell_exec {"command": string, "timeout"?: number}.`, true, "bad_call"},
		{"Error: bad arguments for shell_exec: no bad commands.", true, "bad_call"},
		{"additional properties 'cmd' not allowed", true, "bad_call"},
		{"it broke", true, "tool_failed"},
		{"submitted", false, ""},
		{"not run: submit ended the episode", true, ""},
	}
	ids := []string{"c1", "c2", "c2b", "c3", "c4", "c5", "c6"}
	infos := tr.Info["calls"].([]gym.Info)
	if len(tr.Observation.Parts) != len(want) || len(infos) != len(want) || !tr.Terminated {
		t.Fatalf("%+v", tr)
	}
	for i, w := range want {
		r := tr.Observation.Parts[i].ToolResult
		if r == nil || !strings.Contains(r.Content, w.content) || r.IsError != w.isErr || r.CallID != ids[i] {
			t.Errorf("result %d: %+v, want %q", i, r, w.content)
		}
		if e, _ := infos[i]["error"].(string); e != w.err {
			t.Errorf("info %d: %v, want error %q", i, infos[i], w.err)
		}
		// Calls that ran are timed; rejected ones and those after submit are not.
		if _, timed := infos[i]["elapsed_ms"]; timed != (w.err != "bad_call" && i < 6) {
			t.Errorf("info %d: %v", i, infos[i])
		}
	}
	if infos[0]["ran"] != "ls" || infos[0]["tool"] != ToolExec {
		t.Errorf("info 0: %v", infos[0])
	}
}

func TestStepText(t *testing.T) {
	tr, err := Step(t.Context(), testTools, gym.Action{Parts: []gym.Part{gym.TextPart("pwd"), gym.TextPart(" ")}}, false, decode, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Observation.Parts) != 2 || tr.Observation.Parts[0].Text != "pwd 1m0s" ||
		!strings.Contains(tr.Observation.Parts[1].Text, "an empty text action") ||
		!strings.Contains(tr.Observation.Parts[1].Text, "(shell_exec, fail, submit)") {
		t.Errorf("%+v", tr.Observation.Parts)
	}
	tr, _ = Step(t.Context(), testTools, gym.TextAction("I am done."), true, decode, run)
	if !tr.Terminated || tr.Observation.Parts[0].Text != "submitted" {
		t.Errorf("final text: %+v", tr)
	}
	tr, _ = Step(t.Context(), testTools, gym.Action{}, false, decode, run)
	if len(tr.Observation.Parts) != 1 || !strings.Contains(tr.Observation.Parts[0].Text, "nothing to do") {
		t.Errorf("no calls: %+v", tr)
	}
	// An error that is neither the call's nor the tool's fails the step.
	if _, err := Step(t.Context(), testTools, gym.Action{Parts: []gym.Part{call("x", "fail", "{}")}}, false, decode,
		func(context.Context, testCall, gym.Info) (string, error) { return "", sandbox.ErrGone }); !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("err = %v", err)
	}
}

func TestExecArgsLimits(t *testing.T) {
	for args, want := range map[string]time.Duration{
		`{"command":"x"}`:                time.Minute,
		`{"command":"x","timeout":null}`: time.Minute,
		`{"command":"x","timeout":1.5}`:  1500 * time.Millisecond,
		`{"command":"x","timeout":1e9}`:  10 * time.Minute,
		`{"command":"x","timeout":"1m"}`: time.Minute,
	} {
		c := testTools.Parse(gym.Action{Parts: []gym.Part{call("c", ToolExec, args)}}, false)[0]
		if c.Err != nil {
			t.Errorf("%s: %v", args, c.Err)
			continue
		}
		if _, got, err := testTools.ExecArgs(c); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", args, got, err, want)
		}
	}
	c := testTools.Parse(gym.Action{Parts: []gym.Part{call("c", ToolExec, `{"command":"x","timeout":0}`)}}, false)[0]
	if _, _, err := testTools.ExecArgs(c); err == nil || !strings.Contains(err.Error(), `"timeout" must be a positive number of seconds`) {
		t.Errorf("timeout 0: %v", err)
	}
}

func TestFormatExec(t *testing.T) {
	for _, c := range []struct {
		r    sandbox.ExecResult
		want string
	}{
		{sandbox.ExecResult{Stdout: []byte("a\n"), Stderr: []byte("b")}, "a\nb\n[exit code 0]"},
		{sandbox.ExecResult{ExitCode: 3}, "[exit code 3]"},
		{sandbox.ExecResult{Stdout: []byte("x"), TimedOut: true, ExitCode: 130}, "x\n[timed out after 2s: the command was interrupted]\n[exit code 130]"},
	} {
		if got := FormatExec(c.r, 2*time.Second); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
