package rl

import (
	"encoding/json"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

func TestActionText(t *testing.T) {
	x, y := 3, 4
	a := gym.Action{Parts: []gym.Part{
		gym.TextPart("let me look"),
		{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "c1", Type: "function", Function: gym.FunctionCall{Name: "shell_exec", Arguments: `{"command":"ls"}`}}},
		{Type: gym.PartGUIAction, GUIAction: &gym.GUIAction{Action: "click", X: &x, Y: &y}},
		{Type: gym.PartFile, File: &gym.File{Path: "a.txt"}},
	}}
	want := "let me look\nshell_exec({\"command\":\"ls\"})\n{\"action\":\"click\",\"x\":3,\"y\":4}\n[file a.txt]"
	if got := ActionText(a); got != want {
		t.Fatalf("ActionText = %q, want %q", got, want)
	}
}

func TestObservationTextAndImage(t *testing.T) {
	shot := &gym.Blob{MIME: "image/png", Width: 640, Height: 480, Ref: "sha256:ab"}
	o := gym.Observation{Parts: []gym.Part{
		{Type: gym.PartToolResult, ToolResult: &gym.ToolResult{CallID: "c1", Name: "shell_exec", Content: "a.txt\n[exit code 0]"}},
		{Type: gym.PartToolResult, ToolResult: &gym.ToolResult{Name: "write_file", Content: "no such dir", IsError: true}},
		gym.TextPart("done"),
		{Type: gym.PartImage, Image: shot},
	}}
	want := "[result of shell_exec]\na.txt\n[exit code 0]\n[result of write_file, an error]\nno such dir\ndone\n[image 640x480]"
	if got := ObservationText(o); got != want {
		t.Fatalf("ObservationText = %q, want %q", got, want)
	}
	if ObservationImage(o) != shot || ObservationImage(gym.TextObservation("x")) != nil {
		t.Fatal("ObservationImage")
	}
}

func TestExitCode(t *testing.T) {
	calls := gym.Info{"calls": []gym.Info{{"exit_code": 0}, {"elapsed_ms": 3}, {"exit_code": 2}, {"error": "bad_call"}}}
	if c := ExitCode(calls); c == nil || *c != 2 {
		t.Fatalf("terminal calls: %v", c)
	}
	// The same after a JSON round trip.
	b, _ := json.Marshal(calls)
	var back gym.Info
	_ = json.Unmarshal(b, &back)
	if c := ExitCode(back); c == nil || *c != 2 {
		t.Fatalf("after JSON: %v", c)
	}
	if c := ExitCode(gym.Info{"exit_code": 1.0}); c == nil || *c != 1 {
		t.Fatalf("top-level: %v", c)
	}
	if ExitCode(gym.Info{"exit_code": 1.5}) != nil || ExitCode(nil) != nil || ExitCode(gym.Info{"calls": "x"}) != nil {
		t.Fatal("no exit code expected")
	}
}

func TestStepRefAndOutcomeOf(t *testing.T) {
	reward := 0.5
	fail := &gym.Failure{Fault: gym.FaultAgent, Reason: "timeout"}
	ev := &gym.Event{Type: gym.EventStep, Session: "s", Run: "r", Env: "terminal-v1", Task: "t", Episode: 2, Step: 5,
		StepID: "st-5", Reward: &reward, Truncated: true, Failure: fail}
	if got := StepRefOf(ev); got != (StepRef{Session: "s", Episode: 2, Step: 5, StepID: "st-5", Run: "r", Env: "terminal-v1", Task: "t"}) {
		t.Fatalf("StepRefOf = %+v", got)
	}
	// A truncated episode's outcome is 0, whatever its last step's reward.
	if got := OutcomeOf(ev); got != (Outcome{Truncated: true, Failure: fail}) {
		t.Fatalf("OutcomeOf = %+v", got)
	}
	ev.Truncated, ev.Terminated, ev.Failure = false, true, nil
	if got := OutcomeOf(ev); got != (Outcome{Reward: 0.5, Terminated: true}) {
		t.Fatalf("OutcomeOf a terminated episode = %+v", got)
	}
	if got := OutcomeOf(&gym.Event{Terminated: true}); got != (Outcome{Terminated: true}) {
		t.Fatalf("OutcomeOf without a reward = %+v", got)
	}
}
