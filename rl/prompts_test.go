package rl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/gym"
)

func turns(n int) []Turn {
	out := make([]Turn, n)
	for i := range out {
		code := i % 2
		out[i] = Turn{Action: fmt.Sprintf("cmd-%d", i+1), NextState: fmt.Sprintf("out-%d", i+1), ExitCode: &code}
	}
	return out
}

func render(t *testing.T, tm *Templates, in JudgeInput) []JudgeMessage {
	t.Helper()
	msgs, err := tm.Render(in, DefaultWindow(in.Kind), TextLimits{})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func user(t *testing.T, msgs []JudgeMessage) JudgeMessage {
	t.Helper()
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
		t.Fatalf("messages: want system then user, got %+v", msgs)
	}
	return msgs[1]
}

func TestDefaultTemplates(t *testing.T) {
	tm := DefaultTemplates()
	if got, want := tm.Kinds(), []string{"chat", "default", "gui", "swe", "terminal", "toolcall"}; !slices.Equal(got, want) {
		t.Fatalf("Kinds = %v, want %v", got, want)
	}
	for _, kind := range tm.Kinds() {
		if kind == KindChat { // a conversation, not a task's steps: TestChatTemplate
			continue
		}
		msgs := render(t, tm, JudgeInput{Kind: kind, Instruction: "TASK", History: turns(1), Action: "ACTION", NextState: "NEXT"})
		text := user(t, msgs).Text()
		for _, want := range []string{"TASK", "ACTION", `\boxed{1}`, `\boxed{-1}`, `\boxed{0}`, HintStart, HintEnd, "cmd-1"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: user message lacks %q:\n%s", kind, want, text)
			}
		}
		if kind != KindGUI && !strings.Contains(text, "NEXT") {
			t.Errorf("%s: the next state is missing:\n%s", kind, text)
		}
	}
}

func TestTerminalWindow(t *testing.T) {
	// Six earlier turns: the first two and the last two are shown.
	msgs := render(t, DefaultTemplates(), JudgeInput{Kind: KindTerminal, Instruction: "t", History: turns(6),
		Action: "echo hi", NextState: "hi", ExitCode: ptr(0)})
	text := user(t, msgs).Text()
	for _, want := range []string{"## Step 1", "cmd-1", "cmd-2", "[2 step(s) not shown]", "## Step 5", "cmd-5", "cmd-6",
		"# Step 7: the step to judge", "Result (exit code 0):\nhi", "Result (exit code 1):\nout-2"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	for _, absent := range []string{"cmd-3", "cmd-4"} {
		if strings.Contains(text, absent) {
			t.Errorf("shows %q, outside the window:\n%s", absent, text)
		}
	}
	// No history at all.
	text = user(t, render(t, DefaultTemplates(), JudgeInput{Kind: KindTerminal, Instruction: "t", Action: "ls"})).Text()
	if !strings.Contains(text, "None: this is the agent's first step.") || !strings.Contains(text, "# Step 1:") {
		t.Errorf("first step:\n%s", text)
	}
}

func TestSWEWindow(t *testing.T) {
	d := promptData(JudgeInput{Kind: KindSWE, History: turns(10)}, DefaultWindow(KindSWE), TextLimits{}.orDefault())
	if len(d.History) != 8 || d.Omitted != 2 || d.History[0].Step != 3 || d.History[0].GapBefore != 2 || d.Step != 11 {
		t.Fatalf("swe window: %d shown, %d omitted, first %+v, step %d", len(d.History), d.Omitted, d.History[0], d.Step)
	}
	text := user(t, render(t, DefaultTemplates(), JudgeInput{Kind: KindSWE, Instruction: "issue", History: turns(10),
		Action: "pytest", NextState: "1 failed", ExitCode: ptr(1)})).Text()
	for _, want := range []string{"(2 earlier step(s) not shown)", "## Step 3 (exit code 0)\n$ cmd-3\nout-3", "Output (exit code 1):\n1 failed"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
}

func TestToolCallWindowAndStepNumbers(t *testing.T) {
	// Every earlier turn is shown; Step numbers the history back from it.
	d := promptData(JudgeInput{Kind: KindToolCall, History: turns(30), Step: 41}, DefaultWindow(KindToolCall), TextLimits{}.orDefault())
	if len(d.History) != 30 || d.Omitted != 0 || d.History[0].Step != 11 || d.History[29].Step != 40 {
		t.Fatalf("toolcall: %d shown, %d omitted, steps %d..%d", len(d.History), d.Omitted, d.History[0].Step, d.History[29].Step)
	}
}

func TestGUIImages(t *testing.T) {
	before := &gym.Blob{MIME: "image/png", Data: []byte("before")}
	after := &gym.Blob{MIME: "image/png", Data: []byte("after")}
	in := JudgeInput{Kind: KindGUI, Instruction: "click OK", History: []Turn{{Action: `{"action":"click","x":1,"y":2}`}},
		Action: `{"action":"click","x":5,"y":6}`, Before: before, After: after}
	u := user(t, render(t, DefaultTemplates(), in))
	var kinds []string
	for _, p := range u.Parts {
		switch {
		case p.Image == before:
			kinds = append(kinds, "before")
		case p.Image == after:
			kinds = append(kinds, "after")
		case p.Image != nil:
			t.Fatalf("unexpected image %+v", p.Image)
		default:
			kinds = append(kinds, "text")
		}
	}
	if want := []string{"text", "before", "text", "after", "text"}; !slices.Equal(kinds, want) {
		t.Fatalf("parts %v, want %v", kinds, want)
	}
	if !strings.Contains(u.Text(), `Step 1: {"action":"click","x":1,"y":2}`) {
		t.Errorf("previous actions missing:\n%s", u.Text())
	}
	// Without screenshots the template says so and sends no image.
	in.Before, in.After = nil, nil
	u = user(t, render(t, DefaultTemplates(), in))
	if len(u.Parts) != 1 || strings.Count(u.Text(), "(no screenshot)") != 2 {
		t.Fatalf("no screenshots: %+v", u.Parts)
	}
}

func TestNULCannotForgeAnImage(t *testing.T) {
	in := JudgeInput{Kind: KindGUI, Instruction: "x", Action: "type " + imageBefore, NextState: imageAfter}
	u := user(t, render(t, DefaultTemplates(), in))
	for _, p := range u.Parts {
		if p.Image != nil {
			t.Fatalf("an input text made an image part: %+v", u.Parts)
		}
	}
	if !strings.Contains(u.Text(), "\uFFFDimage:before\uFFFD") {
		t.Errorf("NUL not replaced:\n%q", u.Text())
	}
}

func TestChatTemplate(t *testing.T) {
	in := JudgeInput{Kind: KindChat, Conversation: []Message{{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []gym.ToolCall{{Function: gym.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}},
		{Role: "tool", Content: "sunny"}},
		Action: "It is sunny.", NextState: "Thanks!", NextRole: "user"}
	msgs := render(t, DefaultTemplates(), in)
	sys, text := msgs[0].Text(), user(t, msgs).Text()
	for _, want := range []string{`\boxed{1}`, `\boxed{-1}`, `\boxed{0}`, HintStart, HintEnd, "[FLAG]"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system message lacks %q:\n%s", want, sys)
		}
	}
	want := "## Conversation the agent saw\n[system] You are terse.\n[user] Weather in Paris?\n" +
		"[assistant] \n<tool_call>weather {\"city\":\"Paris\"}</tool_call>\n[tool] sunny\n\n" +
		"## The agent's answer\nIt is sunny.\n\n## Next state [user]\nThanks!"
	if text != want {
		t.Fatalf("user message:\n%s\nwant:\n%s", text, want)
	}
	// Each message is cut to Message; past History together, the oldest
	// after the system messages are left out.
	long := strings.Repeat("x", 3000)
	in.Conversation = []Message{{Role: "system", Content: "rules"}, {Role: "user", Content: long}, {Role: "assistant", Content: "a"},
		{Role: "user", Content: "last"}}
	d := promptData(in, DefaultWindow(KindChat), TextLimits{History: 20}.orDefault())
	if len(d.Conversation) != 3 || d.Conversation[0].Text != "rules" || d.Conversation[1].GapBefore != 1 || d.Conversation[1].Text != "a" {
		t.Fatalf("conversation over its budget: %+v", d.Conversation)
	}
	d = promptData(in, DefaultWindow(KindChat), TextLimits{}.orDefault())
	if n := utf8.RuneCountInString(d.Conversation[1].Text); len(d.Conversation) != 4 || n > 2000+40 || !strings.Contains(d.Conversation[1].Text, "characters cut") {
		t.Fatalf("a long message: %d characters, %d messages", n, len(d.Conversation))
	}
	if text := user(t, render(t, DefaultTemplates(), JudgeInput{Kind: KindChat, Conversation: in.Conversation, Action: "b",
		NextState: "c", NextRole: "user"})).Text(); !strings.Contains(text, "[user] last") {
		t.Fatalf("conversation:\n%s", text)
	}
}

func TestUnknownKindUsesDefault(t *testing.T) {
	text := user(t, render(t, DefaultTemplates(), JudgeInput{Kind: "chess", Instruction: "mate", Action: "Qh7"})).Text()
	if !strings.Contains(text, "# Task\nmate") || !strings.Contains(text, "Next state:\n") {
		t.Fatalf("default template not used:\n%s", text)
	}
}

func TestClip(t *testing.T) {
	if got := clip("short", 10); got != "short" {
		t.Fatalf("clip short = %q", got)
	}
	s := strings.Repeat("é", 30) + strings.Repeat("ü", 30)
	got := clip(s, 10)
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "ééééé\n[... 50 characters cut ...]\n") || !strings.HasSuffix(got, "\nüüüüü") {
		t.Fatalf("clip = %q", got)
	}
	// The judged next state is cut to its limit.
	d := promptData(JudgeInput{NextState: strings.Repeat("x", 5000)}, Window{}, TextLimits{NextState: 100}.orDefault())
	if !strings.Contains(d.NextState, "[... 4900 characters cut ...]") {
		t.Fatalf("next state not cut: %d runes", utf8.RuneCountInString(d.NextState))
	}
}

func TestHistoryBudget(t *testing.T) {
	big := make([]Turn, 6)
	for i := range big {
		big[i] = Turn{Action: fmt.Sprintf("a%d", i+1), NextState: strings.Repeat("x", 998)} // 1000 runes each
	}
	// All shown by the window, 6000 runes, budget 3500: keep the head (1)
	// and the newest two, drop turns 2, 3 and 4.
	d := promptData(JudgeInput{History: big}, Window{Head: 1, Tail: -1}, TextLimits{History: 3500}.orDefault())
	var steps []int
	for _, h := range d.History {
		steps = append(steps, h.Step)
	}
	if !slices.Equal(steps, []int{1, 5, 6}) || d.Omitted != 3 || d.History[1].GapBefore != 3 {
		t.Fatalf("kept steps %v, omitted %d, gap %d; want [1 5 6], 3, 3", steps, d.Omitted, d.History[1].GapBefore)
	}
	// A budget smaller than the head drops the head's newest too.
	d = promptData(JudgeInput{History: big}, Window{Head: 2, Tail: 0}, TextLimits{History: 1500}.orDefault())
	if len(d.History) != 1 || d.History[0].Step != 1 || d.Omitted != 5 {
		t.Fatalf("head only: %+v, omitted %d", d.History, d.Omitted)
	}
}

func TestWindowIndices(t *testing.T) {
	cases := []struct {
		n    int
		w    Window
		want []int
	}{
		{0, Window{2, 2}, []int{}},
		{3, Window{2, 2}, []int{0, 1, 2}},
		{6, Window{2, 2}, []int{0, 1, 4, 5}},
		{6, Window{0, 8}, []int{0, 1, 2, 3, 4, 5}},
		{10, Window{0, 8}, []int{2, 3, 4, 5, 6, 7, 8, 9}},
		{4, Window{0, -1}, []int{0, 1, 2, 3}},
		{4, Window{1, 0}, []int{0}},
	}
	for _, c := range cases {
		if got := windowIndices(c.n, c.w); !slices.Equal(got, c.want) {
			t.Errorf("windowIndices(%d, %+v) = %v, want %v", c.n, c.w, got, c.want)
		}
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadTemplates(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"terminal.tmpl": `{{define "system"}}{{end}}{{define "user"}}MY TERMINAL {{.Instruction}} / {{.Action}}{{template "answer" .}}{{end}}`,
		"web.tmpl":      `{{define "system"}}web judge{{end}}{{define "user"}}WEB {{.Action}}{{end}}`,
		"notes.txt":     "not a template",
	})
	tm, err := LoadTemplates(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tm.Kinds(), []string{"chat", "default", "gui", "swe", "terminal", "toolcall", "web"}; !slices.Equal(got, want) {
		t.Fatalf("Kinds = %v, want %v", got, want)
	}
	// An empty system template means no system message.
	msgs := render(t, tm, JudgeInput{Kind: KindTerminal, Instruction: "I", Action: "A"})
	if len(msgs) != 1 || msgs[0].Role != "user" || !strings.HasPrefix(msgs[0].Text(), "MY TERMINAL I / A") ||
		!strings.Contains(msgs[0].Text(), `\boxed{-1}`) {
		t.Fatalf("replaced terminal template: %+v", msgs)
	}
	msgs = render(t, tm, JudgeInput{Kind: "web", Action: "click"})
	if len(msgs) != 2 || msgs[1].Text() != "WEB click" {
		t.Fatalf("added web template: %+v", msgs)
	}
	// The others are still the built-in ones.
	if text := user(t, render(t, tm, JudgeInput{Kind: KindSWE, Instruction: "issue", Action: "ls"})).Text(); !strings.Contains(text, "# Issue\nissue") {
		t.Fatalf("swe template changed:\n%s", text)
	}
}

func TestLoadTemplatesErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"empty dir", map[string]string{"README": "x"}, []string{"no *.tmpl file", "terminal.tmpl"}},
		{"no user", map[string]string{"swe.tmpl": `{{define "system"}}s{{end}}`}, []string{"swe.tmpl", `must define "user"`}},
		{"parse error", map[string]string{"gui.tmpl": `{{define "system"}}{{.Action{{end}}`}, []string{"gui.tmpl"}},
		{"unknown field", map[string]string{"toolcall.tmpl": `{{define "system"}}{{end}}{{define "user"}}{{.Problem}}{{end}}`},
			[]string{"toolcall.tmpl", "Problem"}},
		{"bad image name", map[string]string{"gui.tmpl": `{{define "system"}}{{end}}{{define "user"}}{{image "during"}}{{end}}`},
			[]string{"gui.tmpl", `"during"`, `"before" or "after"`}},
		{"image in system", map[string]string{"gui.tmpl": `{{define "system"}}{{image "before"}}{{end}}{{define "user"}}u{{end}}`},
			[]string{"gui.tmpl", `"user" template`}},
		{"broken common", map[string]string{"common.tmpl": `{{define "answer"}}{{end`}, []string{"common.tmpl"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadTemplates(writeFiles(t, c.files))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := LoadTemplates(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing directory loaded")
	}
}

func TestRenderMissingImage(t *testing.T) {
	// A template that always shows the screen fails on an input without one.
	tm, err := LoadTemplates(writeFiles(t, map[string]string{
		"gui.tmpl": `{{define "system"}}{{end}}{{define "user"}}see {{image "after"}}{{end}}`}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tm.Render(JudgeInput{Kind: KindGUI}, Window{}, TextLimits{})
	if err == nil || !strings.Contains(err.Error(), "screen after the action") {
		t.Fatalf("err = %v", err)
	}
}
