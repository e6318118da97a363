package webtasks_test

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/envs/gui/web/webtasks"
	"github.com/nextstate-rl/nextstate/gym"
)

// The suite's shape, without a browser: every task has a page and an
// oracle, every page has a task and follows the layout and the contract.
func TestTasksHavePagesAndOracles(t *testing.T) {
	tasks := webtasks.Tasks()
	if len(tasks) < 15 {
		t.Fatalf("%d tasks; the suite needs at least 15", len(tasks))
	}
	seen := map[string]bool{}
	for _, task := range tasks {
		if seen[task.Name] {
			t.Errorf("task %q is listed twice", task.Name)
		}
		seen[task.Name] = true
		if task.Description == "" || task.Width <= 0 || task.Height <= 0 || task.MaxSteps <= 0 {
			t.Errorf("task %q: want a description, a size and a step limit: %+v", task.Name, task)
		}
		if _, err := fs.Stat(webtasks.FS, task.Page()); err != nil {
			t.Errorf("task %q has no page: %v", task.Name, err)
		}
		if _, ok := webtasks.NewOracle(task.Name); !ok {
			t.Errorf("task %q has no oracle", task.Name)
		}
		if got, ok := webtasks.Lookup(task.Name); !ok || got != task {
			t.Errorf("Lookup(%q) = %+v, %v", task.Name, got, ok)
		}
	}
	for _, p := range webtasks.Pages() {
		if !seen[p] {
			t.Errorf("page miniwob/%s.html belongs to no task", p)
		}
	}
	if len(webtasks.Pages()) != len(tasks) {
		t.Errorf("%d pages for %d tasks", len(webtasks.Pages()), len(tasks))
	}
	if _, ok := webtasks.NewOracle("no-such-task"); ok {
		t.Error("NewOracle found an oracle for an unknown task")
	}
	if _, ok := webtasks.Lookup("no-such-task"); ok {
		t.Error("Lookup found an unknown task")
	}
	// Tasks returns a copy.
	tasks[0].Name = "changed"
	if webtasks.Tasks()[0].Name == "changed" {
		t.Error("Tasks shares its slice with the caller")
	}
}

func TestPagesFollowTheLayout(t *testing.T) {
	must := []string{
		`<script src="../core/core.js"></script>`,
		`<link rel="stylesheet" href="../core/core.css">`,
		`<div id="wrap">`, `<div id="query"></div>`, `<div id="area"></div>`,
		`function genProblem()`,
		`window.onload = function () { core.startEpisode(); };`,
		`core.EPISODE_MAX_TIME = `,
	}
	ends := regexp.MustCompile(`core\.(succeed|fail)\(`)
	for _, task := range webtasks.Tasks() {
		b, err := fs.ReadFile(webtasks.FS, task.Page())
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		for _, m := range must {
			if !strings.Contains(page, m) {
				t.Errorf("%s lacks %s", task.Page(), m)
			}
		}
		if got := ends.FindAllStringSubmatch(page, -1); !slices.ContainsFunc(got, func(m []string) bool { return m[1] == "succeed" }) ||
			!slices.ContainsFunc(got, func(m []string) bool { return m[1] == "fail" }) {
			t.Errorf("%s does not both succeed and fail", task.Page())
		}
		if strings.Contains(page, "Math.random") {
			t.Errorf("%s calls Math.random itself; use core's helpers so the seed governs it", task.Page())
		}
		if strings.Contains(page, "draggable") {
			t.Errorf("%s uses HTML5 drag and drop; drags must be mouse events", task.Page())
		}
	}
}

func TestCoreDefinesTheContract(t *testing.T) {
	b, err := fs.ReadFile(webtasks.FS, "core/core.js")
	if err != nil {
		t.Fatal(err)
	}
	js := string(b)
	for _, m := range []string{
		"Math.seedrandom = function (seed)",
		"core.startEpisode = function ()",
		"core.startEpisodeReal = function ()",
		"core.endEpisode = function (reward, timeProportional, reason)",
		"core.getUtterance = function ()",
		"var WOB_REWARD_GLOBAL = 0;",
		"var WOB_RAW_REWARD_GLOBAL = 0;",
		"var WOB_REWARD_REASON = null;",
		"var WOB_DONE_GLOBAL = false;",
		"var WOB_EPISODE_ID = 0;",
		"var WOB_TASK_READY = true;",
		"core.EPISODE_MAX_TIME = 10000;",
		"core.endEpisode(-1, false, 'timed out')",
		"'sync-task-cover'",
	} {
		if !strings.Contains(js, m) {
			t.Errorf("core.js lacks %s", m)
		}
	}
	if _, err := fs.Stat(webtasks.FS, "core/core.css"); err != nil {
		t.Error(err)
	}
}

// Oracles on hand-made element lists: what they pick and what they refuse.
func TestOracleReadsTheInstruction(t *testing.T) {
	query := gui.Element{Ref: "1", Tag: "div", ID: "query", Text: `Click the button labelled "Save".`, X: 0, Y: 0, W: 160, H: 50}
	bold := gui.Element{Ref: "2", Tag: "b", Text: `"Save"`, X: 100, Y: 2, W: 30, H: 11}
	save := gui.Element{Ref: "3", Tag: "button", Text: "Save", X: 10, Y: 60, W: 40, H: 20}
	undo := gui.Element{Ref: "4", Tag: "button", Text: "Undo", X: 60, Y: 60, W: 40, H: 20}
	o, _ := webtasks.NewOracle("click-button")
	a, err := o(query.Text, []gui.Element{query, bold, undo, save})
	if err != nil {
		t.Fatal(err)
	}
	if a.Action != "click" || *a.X != 30 || *a.Y != 70 {
		t.Errorf("clicked %+v, want the Save button's centre (30, 70)", a)
	}
	if a, _ := o(query.Text, nil); a.Action != "done" {
		t.Errorf("after its click the oracle sent %q, want done", a.Action)
	}
	o, _ = webtasks.NewOracle("click-button")
	if _, err := o(query.Text, []gui.Element{query, bold, undo}); err == nil || !strings.Contains(err.Error(), `"Save"`) {
		t.Errorf("with no Save button: err %v, want one naming it", err)
	}
	o, _ = webtasks.NewOracle("click-button")
	if _, err := o("Click something.", []gui.Element{save}); err == nil {
		t.Error("an instruction with nothing quoted was accepted")
	}
}

func TestOracleEnterDate(t *testing.T) {
	instr := "Enter March 4, 2021 as the due date (MM/DD/YYYY), then click Submit."
	box := gui.Element{Ref: "5", Tag: "input", Type: "text", Placeholder: "MM/DD/YYYY", X: 10, Y: 70, W: 110, H: 18}
	submit := gui.Element{Ref: "6", Tag: "button", Text: "Submit", X: 10, Y: 95, W: 50, H: 20}
	o, _ := webtasks.NewOracle("enter-date")
	want := []gym.GUIAction{{Action: "click"}, {Action: "type", Text: "03/04/2021"}, {Action: "click"}, {Action: "done"}}
	for i, w := range want {
		els := []gui.Element{box, submit}
		if i == 2 {
			els[0].Value = "03/04/2021"
		}
		a, err := o(instr, els)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if a.Action != w.Action || a.Text != w.Text {
			t.Fatalf("step %d: %+v, want %+v", i, a, w)
		}
	}
	// Keystrokes that did not reach the box are caught before Submit.
	o, _ = webtasks.NewOracle("enter-date")
	o(instr, []gui.Element{box, submit})
	o(instr, []gui.Element{box, submit})
	if _, err := o(instr, []gui.Element{box, submit}); err == nil {
		t.Error("the oracle submitted an empty box")
	}
}

func TestOracleToggleSwitchPairsRows(t *testing.T) {
	instr := `Turn "Wi-Fi" on and "Sounds" off, leave the rest as they are, and click Save.`
	row := func(y int, name, state string) []gui.Element {
		return []gui.Element{
			{Tag: "span", Text: name, X: 5, Y: y + 3, W: 40, H: 13},
			{Tag: "button", Text: state, X: 110, Y: y, W: 38, H: 18},
		}
	}
	save := gui.Element{Tag: "button", Text: "Save", X: 5, Y: 150, W: 40, H: 20}
	page := func(wifi, sounds string) []gui.Element {
		return slices.Concat(row(60, "Wi-Fi", wifi), row(82, "Bluetooth", "Off"), row(104, "Sounds", sounds), []gui.Element{save})
	}
	o, _ := webtasks.NewOracle("toggle-switch")
	for _, c := range []struct {
		els  []gui.Element
		want int // the y clicked
	}{
		{page("Off", "On"), 69},
		{page("On", "On"), 113},
		{page("On", "Off"), 160},
	} {
		a, err := o(instr, c.els)
		if err != nil {
			t.Fatal(err)
		}
		if a.Action != "click" || *a.Y != c.want {
			t.Fatalf("clicked %+v, want y %d", a, c.want)
		}
	}
}
