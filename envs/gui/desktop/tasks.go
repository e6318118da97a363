package desktop

import (
	"encoding/json"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// The built-in tasks place their windows with -geometry at the top left
// and use bitmap fonts, so the oracles' coordinates hold on any host with
// Debian's X11 fonts: xterm's 10x20 cells start at (3, 3), xedit's text
// is "fixed" (7 pixels wide, 14 high).
const (
	xtermFlags = "-fn 10x20 -geometry 80x24+0+0 -sl 1000"
	// xtermShell is an xterm running an interactive bash with the prompt
	// "$ " (the session sets PS1; --norc keeps the distribution's from
	// replacing it).
	xtermShell = "xterm " + xtermFlags + " -e bash --norc --noprofile"
)

// cellX and cellY are the pixel centre of an xterm cell (column, row).
func cellX(col int) int { return 3 + 10*col + 5 }
func cellY(row int) int { return 3 + 20*row + 10 }

// Oracle action builders, in screenshot pixels.
func click(x, y int) gym.GUIAction { return gym.GUIAction{Action: "click", X: &x, Y: &y} }
func dblclick(x, y int) gym.GUIAction {
	return gym.GUIAction{Action: "double_click", X: &x, Y: &y}
}
func rclick(x, y int) gym.GUIAction { return gym.GUIAction{Action: "right_click", X: &x, Y: &y} }
func drag(x, y, tx, ty int) gym.GUIAction {
	return gym.GUIAction{Action: "drag", X: &x, Y: &y, ToX: &tx, ToY: &ty}
}
func typ(s string) gym.GUIAction { return gym.GUIAction{Action: "type", Text: s} }
func key(k string) gym.GUIAction { return gym.GUIAction{Action: "key", Key: k} }
func scroll(x, y, dy int) gym.GUIAction {
	return gym.GUIAction{Action: "scroll", X: &x, Y: &y, DY: dy}
}
func wait(d time.Duration) gym.GUIAction {
	return gym.GUIAction{Action: "wait", Ms: int(d.Milliseconds())}
}
func done() gym.GUIAction { return gym.GUIAction{Action: "done"} }

// builtin is a built-in task before it is encoded.
type builtin struct {
	name        string
	instruction string
	data        TaskData
	evaluator   string
	oracle      []gym.GUIAction
	labels      map[string]string
}

// selection is the start of an evaluator that reads the PRIMARY selection
// into $sel (xsel missing is exit 127: the verdict is unknown, not 0).
const selection = `command -v xsel >/dev/null || exit 127; sel=$(xsel -o -p); `

var builtins = []builtin{
	{
		name: "xterm-create-file",
		instruction: "Using the terminal, create a file named greeting.txt in the home directory whose only line is: " +
			"hello from the desktop",
		data:      TaskData{App: xtermShell},
		evaluator: `[ "$(cat greeting.txt)" = "hello from the desktop" ] && [ "$(wc -l < greeting.txt)" -le 1 ]`,
		oracle: []gym.GUIAction{click(cellX(20), cellY(5)), typ("echo 'hello from the desktop' > greeting.txt\n"),
			wait(200 * time.Millisecond), done()},
		labels: map[string]string{"skill": "type"},
	},
	{
		name: "xterm-sum",
		instruction: "The file numbers.txt in the home directory holds one integer per line. Using the terminal, " +
			"write their sum (just the number) into a file named sum.txt.",
		data: TaskData{App: xtermShell, Setup: []string{
			`printf '%s\n' 17 42 8 311 97 5 260 33 71 1009 > numbers.txt`}},
		evaluator: `[ "$(tr -d ' \n' < sum.txt)" = 1853 ]`,
		oracle: []gym.GUIAction{click(cellX(20), cellY(5)),
			typ("awk '{s+=$1} END {print s}' numbers.txt > sum.txt\n"), wait(200 * time.Millisecond), done()},
		labels: map[string]string{"skill": "type"},
	},
	{
		name: "xedit-new-file",
		instruction: "The text editor has an empty file todo.txt open. Type the line 'buy milk' into it and " +
			"save it with the editor's Save button.",
		data:      TaskData{App: "xedit -geometry 640x400+0+0 todo.txt"},
		evaluator: `[ "$(cat todo.txt)" = "buy milk" ]`,
		oracle:    []gym.GUIAction{click(300, 200), typ("buy milk\n"), click(55, 10), wait(200 * time.Millisecond), done()},
		labels:    map[string]string{"skill": "click,type"},
	},
	{
		name: "xedit-fix-typo",
		instruction: "The text editor shows notes.txt. Its second line has a typo: 'teh lazy dog'. Correct it to " +
			"'the lazy dog', change nothing else, and save the file with the Save button.",
		data: TaskData{App: "xedit -geometry 640x400+0+0 notes.txt", Setup: []string{
			`printf 'The quick brown fox\nteh lazy dog\njumps over the fence.\n' > notes.txt`}},
		evaluator: `printf 'The quick brown fox\nthe lazy dog\njumps over the fence.\n' | cmp -s - notes.txt`,
		// The click lands in the space after "teh" (7-pixel characters
		// from x=17), which puts the insertion point after the h.
		oracle: []gym.GUIAction{click(17+3*7+3, 132), key("BackSpace"), key("BackSpace"), key("BackSpace"),
			typ("the"), click(55, 10), wait(200 * time.Millisecond), done()},
		labels: map[string]string{"skill": "click,key,type"},
	},
	{
		name: "xterm-select-word",
		instruction: "The terminal shows a delivery note. Select the tracking number (the word right after " +
			"'tracking:') by double-clicking it, so that it is the selected text.",
		data: TaskData{App: "xterm " + xtermFlags + ` -e sh -c 'cat note.txt; exec sleep 1000000'`, Setup: []string{
			`printf 'Delivery note\nitems: 3 boxes\ntracking: ZX81TRK4417 (express)\nsigned: yes\n' > note.txt`}},
		evaluator: selection + `[ "$sel" = ZX81TRK4417 ]`,
		oracle:    []gym.GUIAction{dblclick(cellX(14), cellY(2)), done()},
		labels:    map[string]string{"skill": "double_click"},
	},
	{
		name: "xterm-drag-select",
		instruction: "In the terminal, select exactly the words 'beta gamma' (nothing more) by dragging the " +
			"mouse across them, so that they are the selected text.",
		data: TaskData{App: "xterm " + xtermFlags + ` -e sh -c 'cat phrase.txt; exec sleep 1000000'`, Setup: []string{
			`echo 'Greek letters: alpha beta gamma delta epsilon' > phrase.txt`}},
		evaluator: selection + `[ "$sel" = "beta gamma" ]`,
		// "beta" starts in column 21, "gamma" ends in column 30: xterm
		// selects from the cell pressed up to the cell released in,
		// which it leaves out.
		oracle: []gym.GUIAction{drag(3+10*21+2, cellY(0), 3+10*31+2, cellY(0)), done()},
		labels: map[string]string{"skill": "drag"},
	},
	{
		name: "xterm-extend-selection",
		instruction: "In the terminal, select the whole second line, 'The quick brown fox jumps over the lazy dog.', " +
			"so that it is the selected text: click on its first letter, then right-click just after its final period " +
			"(in xterm the right button extends the selection to where it is clicked).",
		data: TaskData{App: "xterm " + xtermFlags + ` -e sh -c 'cat text.txt; exec sleep 1000000'`, Setup: []string{
			`printf 'A pangram follows.\nThe quick brown fox jumps over the lazy dog.\nThat was it.\n' > text.txt`}},
		evaluator: selection + `[ "$sel" = "The quick brown fox jumps over the lazy dog." ]`,
		oracle:    []gym.GUIAction{click(3+2, cellY(1)), rclick(3+10*44+2, cellY(1)), done()},
		labels:    map[string]string{"skill": "right_click"},
	},
	{
		name: "xterm-scroll-find",
		instruction: "Earlier output of the terminal holds a secret code, on a line that reads 'the secret code is: ...'; " +
			"it has scrolled out of view. Scroll the terminal back to it and select the code (the word after " +
			"'code is:') by double-clicking it.",
		data: TaskData{App: "xterm " + xtermFlags + ` -e sh -c 'cat log.txt; exec sleep 1000000'`, Setup: []string{
			`for i in $(seq 1 100); do echo "log line $i: all good"; done > log.txt; ` +
				`echo 'the secret code is: tangerine42 (keep it)' >> log.txt; ` +
				`for i in $(seq 1 60); do echo "log line $((i+100)): all good"; done >> log.txt`}},
		evaluator: selection + `[ "$sel" = tangerine42 ]`,
		// The screen shows the last 23 lines (lines 138..160 of 161 and
		// the cursor's); a wheel click scrolls 5 lines, and 9 clicks
		// (900 pixels) bring the secret line to row 7.
		oracle: []gym.GUIAction{scroll(400, 200, -900), dblclick(cellX(24), cellY(7)), done()},
		labels: map[string]string{"skill": "scroll,double_click"},
	},
	{
		name: "xterm-interrupt",
		instruction: "A job is running in the terminal and will never end on its own. Stop it with Ctrl+C, then, at " +
			"the shell prompt that appears, create a file named stopped.txt (any content).",
		data: TaskData{
			App: "xterm " + xtermFlags + ` -e bash --norc --noprofile -c 'bash job.sh; exec bash --norc --noprofile'`,
			Setup: []string{`printf '%s\n' "trap 'echo interrupted > interrupted.txt; exit 130' INT" ` +
				`"echo 'A long job is running (it never ends on its own).'" 'sleep 1000000 & wait' > job.sh`}},
		evaluator: `[ -f interrupted.txt ] && [ -f stopped.txt ]`,
		oracle: []gym.GUIAction{click(cellX(20), cellY(5)), key("ctrl+c"), wait(300 * time.Millisecond),
			typ("touch stopped.txt\n"), wait(200 * time.Millisecond), done()},
		labels: map[string]string{"skill": "key_combo"},
	},
	{
		name:        "xmessage-reject",
		instruction: "A dialog asks whether to approve purchase order #4471. Reject the order.",
		data: TaskData{App: `xmessage -geometry +100+100 -buttons Approve:10,Reject:11 ` +
			`"Approve purchase order #4471?"; echo $? > choice.txt`},
		evaluator: `[ "$(cat choice.txt)" = 11 ]`,
		oracle:    []gym.GUIAction{click(193, 139), wait(300 * time.Millisecond), done()},
		labels:    map[string]string{"skill": "click"},
	},
}

// BuiltinTasks returns the built-in tasks, "desktop-<name>", each with its
// oracle in the verifier data.
func BuiltinTasks() []gym.Task {
	out := make([]gym.Task, 0, len(builtins))
	for _, b := range builtins {
		data, err := json.Marshal(b.data)
		if err != nil {
			panic(err)
		}
		ver, err := json.Marshal(VerifierData{Evaluator: b.evaluator, Oracle: b.oracle})
		if err != nil {
			panic(err)
		}
		labels := map[string]string{"suite": "desktop-builtin"}
		for k, v := range b.labels {
			labels[k] = v
		}
		out = append(out, gym.Task{
			ID: "desktop-" + b.name, Env: KindName, Instruction: b.instruction, Split: "test",
			Data: data, Verifier: ver, Labels: labels,
			Limits: gym.Limits{MaxSteps: max(15, 3*len(b.oracle))},
		})
	}
	return out
}
