package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

func TestConformance(t *testing.T) {
	needBrowser(t)
	// The built-in tasks with generated actions (a tool call the kind
	// does not know, which is a recoverable mistake, and a wait).
	gymtest.CheckKindSettings(t, KindName, testSettings(nil))
	// The tests' own page, through every kind of action.
	x, y := 20, 70
	gymtest.CheckKindSettings(t, KindName, testSettings(nil), gymtest.Case{Task: testTask(t, "test-click"), Seed: 3, Actions: []gym.Action{
		guiAction(gym.GUIAction{Action: "move", X: &x, Y: &y}),
		guiAction(gym.GUIAction{Action: "scroll", DY: 40}),
		at("click", 30, 100),
		guiAction(gym.GUIAction{Action: "type", Text: "abc"}),
		guiAction(gym.GUIAction{Action: "key", Key: "ctrl+a"}),
		guiAction(gym.GUIAction{Action: "click_element", Ref: "999"}),
		{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "c1", Type: "function",
			Function: gym.FunctionCall{Name: gui.ToolName, Arguments: `{"action":"click","x":40,"y":70}`}}}}},
	}})
}

// TestContract: the MiniWoB++ contract on the tests' own page: seeded
// instruction, the page's reward and end, raw and discounted rewards.
func TestContract(t *testing.T) {
	m, _ := newManager(t, nil)
	task := testTask(t, "test-click")
	s, res := create(t, m, task, 7, gym.Options{"elements": true})
	instr := res.Info[infoInstruction].(string)
	if !strings.HasPrefix(instr, "Click B") {
		t.Fatalf("instruction %q", instr)
	}
	if txt := res.Observation.Parts[1].Text; txt != instr {
		t.Errorf("the observation's text is %q, want the instruction", txt)
	}
	img := res.Observation.Parts[0].Image
	if img == nil || img.MIME != "image/png" || img.Width != DefaultWidth || img.Height != DefaultHeight {
		t.Fatalf("first part %+v, want a %dx%d PNG", res.Observation.Parts[0], DefaultWidth, DefaultHeight)
	}
	if pic, err := png.Decode(bytes.NewReader(img.Data)); err != nil || pic.Bounds().Dx() != DefaultWidth || pic.Bounds().Dy() != DefaultHeight {
		t.Errorf("the screenshot is not a %dx%d PNG (%v)", DefaultWidth, DefaultHeight, err)
	}
	if u, _ := res.Info[infoURL].(string); !strings.HasSuffix(u, "/miniwob/test-click.html") || res.Info[infoTitle] != "test-click" {
		t.Errorf("url %v, title %v", res.Info[infoURL], res.Info[infoTitle])
	}
	if !strings.Contains(res.Observation.Parts[2].Text, `button "B1"`) {
		t.Errorf("the element list %q lacks the buttons", res.Observation.Parts[2].Text)
	}

	// The same seed gives the same problem; the session's second episode
	// too.
	_, res2 := create(t, m, task, 7, nil)
	if res2.Info[infoInstruction] != instr {
		t.Errorf("same seed, instruction %q then %q", instr, res2.Info[infoInstruction])
	}
	seen := map[string]bool{}
	for seed := range int64(8) {
		_, r := create(t, m, task, seed, nil)
		seen[r.Info[infoInstruction].(string)] = true
	}
	if len(seen) < 2 {
		t.Errorf("8 seeds gave one instruction: %v", seen)
	}

	// A click on the wrong button: -1, the page's reason. (The page's
	// clock is the test's: the creates above took none of its time.)
	want := strings.TrimSuffix(strings.TrimPrefix(instr, "Click "), ".")
	wrong := "B1"
	if want == "B1" {
		wrong = "B2"
	}
	b := element(t, res.Info, wrong)
	r := step(t, s, at("click", b.X+b.W/2, b.Y+b.H/2))
	if !r.Terminated || r.Truncated || r.Reward != -1 || r.Info[infoEndedBy] != "page" {
		t.Errorf("wrong button: terminated %v, reward %v, info %v; want terminated with -1 by the page", r.Terminated, r.Reward, r.Info)
	}
	if !strings.Contains(fmt.Sprint(r.Info[infoReason]), "not "+want) {
		t.Errorf("reason %v", r.Info[infoReason])
	}

	// The right one, after a reset: 1 (raw), then discounted below 1.
	for _, mode := range []string{"raw", "discounted"} {
		res, err := s.Reset(t.Context(), nil, 7, gym.Options{"elements": true, "reward": mode})
		if err != nil {
			t.Fatal(err)
		}
		b := element(t, res.Info, want)
		r := step(t, s, guiAction(gym.GUIAction{Action: "click_element", Ref: b.Ref}))
		if !r.Terminated || r.Info[infoRawReward] != 1.0 {
			t.Fatalf("%s: the right button: terminated %v, info %v", mode, r.Terminated, r.Info)
		}
		if mode == "raw" && r.Reward != 1 {
			t.Errorf("raw reward %v, want 1", r.Reward)
		}
		if mode == "discounted" && (r.Reward >= 1 || r.Reward <= 0 || r.Reward != r.Info[infoDiscounted]) {
			t.Errorf("discounted reward %v (info %v), want in (0, 1)", r.Reward, r.Info[infoDiscounted])
		}
	}
}

// TestActions: typing and keys reach the page; done ends the episode with
// 0; grid coordinates map to pixels.
func TestActions(t *testing.T) {
	m, _ := newManager(t, nil)
	s, res := create(t, m, testTask(t, "test-type"), 1, gym.Options{"elements": true})
	word := strings.Split(res.Info[infoInstruction].(string), `"`)[1]
	box := gui.ElementsFrom(res.Info)[1]
	if box.Tag != "input" {
		t.Fatalf("elements %+v", gui.ElementsFrom(res.Info))
	}
	bx, by := box.Center()
	step(t, s, at("click", bx, by))
	r := step(t, s, guiAction(gym.GUIAction{Action: "type", Text: word}))
	if r.Terminated {
		t.Fatalf("typing ended the episode: %v", r.Info)
	}
	if v := gui.ElementsFrom(r.Info)[1].Value; v != word {
		t.Errorf("the box holds %q after typing %q", v, word)
	}
	r = step(t, s, guiAction(gym.GUIAction{Action: "key", Key: "Enter"}))
	if !r.Terminated || r.Reward != 1 {
		t.Errorf("Enter: terminated %v reward %v info %v", r.Terminated, r.Reward, r.Info)
	}

	// done before the page ends: terminated, reward 0.
	if _, err := s.Reset(t.Context(), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	r = step(t, s, guiAction(gym.GUIAction{Action: "done"}))
	if !r.Terminated || r.Reward != 0 || r.Info[infoEndedBy] != "agent" {
		t.Errorf("done: terminated %v reward %v info %v, want terminated with 0 by the agent", r.Terminated, r.Reward, r.Info)
	}

	// The grid: the button's centre in grid units clicks it.
	s, res = create(t, m, testTask(t, "test-click"), 7, gym.Options{"elements": true, "coords": "grid"})
	instr := res.Info[infoInstruction].(string)
	b := element(t, res.Info, strings.TrimSuffix(strings.TrimPrefix(instr, "Click "), "."))
	cx, cy := b.Center()
	gx, gy := (cx*gui.GridSize+gui.GridSize/2)/DefaultWidth, (cy*gui.GridSize+gui.GridSize/2)/DefaultHeight
	r = step(t, s, at("click", gx, gy))
	if !r.Terminated || r.Reward != 1 {
		t.Errorf("grid click at (%d,%d) for pixel (%d,%d): terminated %v reward %v info %v", gx, gy, cx, cy, r.Terminated, r.Reward, r.Info)
	}
	if !strings.Contains(res.Observation.Parts[2].Text, "0..999 grid") {
		t.Errorf("a grid session's element list does not say its boxes are on the grid: %q", res.Observation.Parts[2].Text)
	}
}

// TestMistakes: a recoverable mistake is the observation's error, the
// episode goes on, nothing is applied.
func TestMistakes(t *testing.T) {
	m, _ := newManager(t, nil)
	s, _ := create(t, m, testTask(t, "test-click"), 2, nil)
	x := 5
	for _, c := range []struct {
		name   string
		action gym.Action
		want   string
	}{
		{"missing y", guiAction(gym.GUIAction{Action: "click", X: &x}), "needs x and y"},
		{"off the screen", at("click", 500, 10), "outside the 160x210 screen"},
		{"unknown ref", guiAction(gym.GUIAction{Action: "click_element", Ref: "4242"}), "not on the page"},
		{"bad key", guiAction(gym.GUIAction{Action: "key", Key: "ctrl+nothing"}), "unknown key"},
		{"another tool", gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			Function: gym.FunctionCall{Name: "browser", Arguments: "{}"}}}}}, "unknown tool"},
		{"bad arguments", gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			Function: gym.FunctionCall{Name: gui.ToolName, Arguments: `{"action":"click","x":"ten"}`}}}}}, "not a valid action"},
	} {
		r := step(t, s, c.action)
		msg, _ := r.Info[infoError].(string)
		if r.Terminated || r.Truncated || !strings.Contains(msg, c.want) {
			t.Errorf("%s: terminated %v truncated %v error %q, want the episode going on with an error containing %q",
				c.name, r.Terminated, r.Truncated, msg, c.want)
		}
		last := r.Observation.Parts[len(r.Observation.Parts)-1]
		if !strings.HasPrefix(last.Text, "error: ") {
			t.Errorf("%s: the observation does not show the error: %+v", c.name, last)
		}
	}
	// Reset options are checked.
	for _, opts := range []gym.Options{{"coords": "cm"}, {"elements": "yes"}, {"reward": "both"}, {"episode_ms": 5.5}, {"nope": 1}} {
		_, err := s.Reset(t.Context(), nil, 1, opts)
		var fe *gym.FaultError
		if !errors.As(err, &fe) || fe.Fault != gym.FaultAgent || fe.Reason != "bad_option" {
			t.Errorf("reset with %v: got %v, want an agent fault bad_option", opts, err)
		}
	}
}

// TestTimeLimits: the page's clock ends the episode with -1 while the
// agent thinks, and the next action is not applied; a page whose clock
// is broken is cut off by the env. The test drives the Env itself, to move
// the page's clock on (advanceClock) between its steps.
func TestTimeLimits(t *testing.T) {
	e := newEnv(t, nil)
	task := testTask(t, "test-click")
	_, info, err := e.Reset(t.Context(), task, 4, gym.Options{"episode_ms": 1000, "elements": true})
	if err != nil {
		t.Fatal(err)
	}
	if info["episode_ms"] != int64(1000) {
		t.Errorf("episode_ms %v", info["episode_ms"])
	}
	// The agent thinks past the limit (the env's own cut-off, a second
	// later by the real clock, comes after the page's end in a step).
	advanceClock(t, e, 1400)
	// A click where the START cover now is would restart the page's
	// episode; it must not be applied.
	r := stepEnv(t, e, at("click", 80, 100))
	if !r.Terminated || r.Reward != -1 || r.Info[infoReason] != "timed out" || r.Info[infoEndedBy] != "page" {
		t.Errorf("after the page's time: terminated %v reward %v info %v; want -1, timed out, by the page", r.Terminated, r.Reward, r.Info)
	}

	// The page ends the episode 150 ms after a click: a later step sees
	// it.
	_, info, err = e.Reset(t.Context(), task, 4, gym.Options{"elements": true})
	if err != nil {
		t.Fatal(err)
	}
	r = stepEnv(t, e, guiAction(gym.GUIAction{Action: "click_element", Ref: element(t, info, "Later").Ref}))
	if r.Terminated {
		t.Fatalf("the delayed end came at once: %v", r.Info)
	}
	advanceClock(t, e, 200)
	r = stepEnv(t, e, guiAction(gym.GUIAction{Action: "wait", Ms: 50}))
	if !r.Terminated || r.Reward != 1 || r.Info[infoReason] != "later" || r.Info[infoEndedBy] != "page" {
		t.Errorf("after the page's delayed end: terminated %v reward %v info %v", r.Terminated, r.Reward, r.Info)
	}

	// A broken clock: the page's limit passes without an end, and the env
	// cuts the episode off.
	_, info, err = e.Reset(t.Context(), task, 4, gym.Options{"episode_ms": 1000, "elements": true})
	if err != nil {
		t.Fatal(err)
	}
	stepEnv(t, e, guiAction(gym.GUIAction{Action: "click_element", Ref: element(t, info, "Stop").Ref}))
	advanceClock(t, e, 1400)
	r = waitSteps(t, e)
	if r.Terminated || !r.Truncated || r.Info["truncated_by"] != "page_time_limit" {
		t.Errorf("past the time limit with a broken page clock: terminated %v truncated %v info %v", r.Terminated, r.Truncated, r.Info)
	}
}

// waitSteps sends wait actions until the episode ends (within a minute, far
// beyond the env's cut-off), and returns the last step.
func waitSteps(t *testing.T, e *Env) gym.Transition {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := stepEnv(t, e, guiAction(gym.GUIAction{Action: "wait", Ms: 50}))
		if r.Terminated || r.Truncated {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the episode has not ended after a minute: %v", r.Info)
		}
	}
}

// TestBrowserKilled: a browser killed mid-episode fails the session with
// the infrastructure's fault; the next session works.
func TestBrowserKilled(t *testing.T) {
	m, _ := newManager(t, nil)
	s, _ := create(t, m, testTask(t, "test-click"), 1, nil)
	inst := m.Instance(KindName).(*instance)
	pids := inst.pool.PIDs()
	if len(pids) == 0 {
		t.Fatal("no browser is running")
	}
	crashed := inst.Stats().Crashed
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	// The browser dies, and the pool sees it, in their own time.
	for deadline := time.Now().Add(time.Minute); inst.Stats().Crashed < crashed+len(pids); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool has not seen its browsers die after a minute: %+v", inst.Stats())
		}
	}
	r, err := s.Step(t.Context(), "", at("click", 10, 10))
	if err != nil {
		t.Fatal(err)
	}
	if r.Failure == nil || r.Failure.Fault != gym.FaultInfra || r.Failure.Reason != "browser_crashed" || !r.Truncated {
		t.Fatalf("step after the browser died: failure %+v truncated %v, want infra browser_crashed", r.Failure, r.Truncated)
	}
	if _, err := s.Step(t.Context(), "", at("click", 10, 10)); !errors.Is(err, gym.ErrSessionClosed) && !errors.Is(err, gym.ErrUnknownSession) {
		t.Errorf("the session goes on after an infra failure: %v", err)
	}
	s2, _ := create(t, m, testTask(t, "test-click"), 1, nil)
	if r := step(t, s2, at("click", 10, 10)); r.Failure != nil {
		t.Errorf("a new session after the crash: %+v", r.Failure)
	}
}

// TestConcurrentSessions: 16 sessions at once all work.
func TestConcurrentSessions(t *testing.T) {
	m, _ := newManager(t, nil)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ctx := t.Context()
			s, res, err := m.Create(ctx, gym.CreateRequest{Task: testTask(t, "test-click"), Seed: int64(i), Options: gym.Options{"elements": true}})
			if err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
				return
			}
			defer s.Close(context.Background())
			for k := range 3 {
				x, y := 20+k*10, 160
				r, err := s.Step(ctx, "", at("move", x, y))
				if err == nil && r.Failure != nil {
					err = errors.New(r.Failure.Message)
				}
				if err != nil {
					errs <- fmt.Errorf("session %d step %d: %w", i, k, err)
					return
				}
			}
			instr := res.Info[infoInstruction].(string)
			b := element(t, res.Info, strings.TrimSuffix(strings.TrimPrefix(instr, "Click "), "."))
			r, err := s.Step(ctx, "", guiAction(gym.GUIAction{Action: "click_element", Ref: b.Ref}))
			if err != nil || r.Reward != 1 {
				errs <- fmt.Errorf("session %d: the right button gave %v (%v)", i, r.Reward, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := m.Instance(KindName).(*instance).Stats(); st.Browsers != n/4 {
		t.Errorf("pool %+v, want %d browsers of 4 sessions", st, n/4)
	}
}

// TestOracles: every built-in task's oracle solves it.
func TestOracles(t *testing.T) {
	m, _ := newManager(t, nil)
	for _, task := range BuiltinTasks() {
		t.Run(task.ID, func(t *testing.T) {
			o, err := gym.OracleFor(&task)
			if err != nil {
				t.Fatal(err)
			}
			opts := o.(gym.OracleOptions).ResetOptions()
			for seed := range int64(2) {
				o, _ := gym.OracleFor(&task)
				s, res := create(t, m, &task, seed, opts)
				obs, info := res.Observation, res.Info
				var last gym.StepResult
				for range task.Limits.MaxSteps {
					a, done, err := o.Next(obs, info)
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					if done {
						break
					}
					last = step(t, s, a)
					obs, info = last.Observation, last.Info
					if last.Terminated || last.Truncated {
						break
					}
				}
				if !last.Terminated || last.Reward != 1 {
					t.Errorf("seed %d: the oracle ended with terminated %v reward %v (%v)", seed, last.Terminated, last.Reward, last.Info[infoReason])
				}
			}
		})
	}
	if _, err := gym.OracleFor(testTask(t, "test-click")); !errors.Is(err, gym.ErrNoOracle) {
		t.Errorf("a MiniWoB++ folder's task has an oracle: %v", err)
	}
}

// TestWindowKeepsTheTaskInView: a page is laid out in MiniWoB++'s 500x320
// window with the 160x210 viewport its top-left corner, so that
// test-dialog, which does what MiniWoB++'s click-dialog does (a dialog
// placed 300 pixels wide, its close button focused, then sized down),
// starts with the task in view: the window is not scrolled, the close
// button is in the element list inside the viewport, and clicking it
// solves the task. A task whose window is its viewport shows the fault
// this avoids: the window scrolls sideways and the button is out of view.
func TestWindowKeepsTheTaskInView(t *testing.T) {
	m, _ := newManager(t, nil)
	for seed := int64(1); seed <= 3; seed++ {
		s, res := create(t, m, testTask(t, "test-dialog"), seed, gym.Options{"elements": true})
		if w, _ := res.Info["window"].(map[string]int); w["width"] != DefaultWindowWidth || w["height"] != DefaultWindowHeight {
			t.Errorf("seed %d: info window %v, want %dx%d", seed, res.Info["window"], DefaultWindowWidth, DefaultWindowHeight)
		}
		x := element(t, res.Info, "x")
		if x.X < 0 || x.Y < 0 || x.X+x.W > DefaultWidth || x.Y+x.H > DefaultHeight {
			t.Errorf("seed %d: the close button's box %+v is not inside the %dx%d viewport", seed, x, DefaultWidth, DefaultHeight)
		}
		r := step(t, s, guiAction(gym.GUIAction{Action: "click_element", Ref: x.Ref}))
		if !r.Terminated || r.Reward != 1 {
			t.Errorf("seed %d: clicking the close button: terminated %v, reward %v, info %v", seed, r.Terminated, r.Reward, r.Info)
		}
	}

	env := newEnv(t, nil)
	task := testTask(t, "test-dialog")
	task.Data = TaskData{Page: "miniwob/test-dialog.html", WindowWidth: DefaultWidth, WindowHeight: DefaultHeight}.json()
	_, info, err := env.Reset(t.Context(), task, 1, gym.Options{"elements": true})
	if err != nil {
		t.Fatal(err)
	}
	var sx float64
	if err := env.page.Eval(t.Context(), "window.scrollX", &sx); err != nil {
		t.Fatal(err)
	}
	if sx == 0 {
		t.Error("in a window of the viewport's size, test-dialog did not scroll sideways: the test page no longer shows the fault")
	}
	for _, e := range gui.ElementsFrom(info) {
		if e.Text == "x" {
			t.Errorf("in a window of the viewport's size the close button is listed at %+v; want it out of view (scrollX %v)", e, sx)
		}
	}
}

// TestMiniWoBFolder: a MiniWoB++ html/ folder loads as a suite, and the
// web.miniwob_dir setting serves it in place of the built-in pages.
func TestMiniWoBFolder(t *testing.T) {
	suite, err := gym.LoadSuite(testdataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range suite.Tasks {
		ids = append(ids, tk.ID)
	}
	if strings.Join(ids, " ") != "miniwob-test-click miniwob-test-dialog miniwob-test-type" {
		t.Fatalf("suite tasks %v", ids)
	}
	m, _ := newManager(t, gym.Settings{SettingMiniWoBDir: testdataDir(t)})
	_, res := create(t, m, &suite.Tasks[0], 1, nil)
	if !strings.HasPrefix(res.Info[infoInstruction].(string), "Click B") {
		t.Errorf("suite task: instruction %v", res.Info[infoInstruction])
	}
	// A task with no folder of its own is served from the setting's.
	_, res = create(t, m, &gym.Task{ID: "t", Env: KindName, Data: TaskData{Page: "miniwob/test-type.html"}.json()}, 1, nil)
	if !strings.HasPrefix(res.Info[infoInstruction].(string), "Type ") {
		t.Errorf("web.miniwob_dir task: instruction %v", res.Info[infoInstruction])
	}
}

func TestSettingsAndTasksChecked(t *testing.T) {
	needBrowser(t)
	var k Kind
	for _, s := range []gym.Settings{
		{SettingSessionsPerBrowser: "0"},
		{SettingMaxBrowsers: "many"},
		{SettingMiniWoBDir: t.TempDir()},
		{SettingChromium: "/nonexistent/chromium"},
		{SettingEpisodeMS: "-5"},
		{SettingSandbox: "docker"},
		{SettingSandbox: "bwrap", "sandbox.hide": "relative/path"},
	} {
		if inst, err := k.Configure(t.Context(), s); err == nil {
			t.Errorf("Configure(%v) accepted a bad setting", s)
			inst.Shutdown(t.Context())
		}
	}
	m, _ := newManager(t, nil)
	for _, data := range []string{`{"page":"../../etc/passwd.html"}`, `{"page":"x.txt"}`, `{}`, `{"page":"a.html","zoom":2}`, `{"page":"a.html","width":-1}`, `{"page":"a.html","window_width":100}`, `{"page":"a.html","window_height":5000}`} {
		_, _, err := m.Create(t.Context(), gym.CreateRequest{Task: &gym.Task{ID: "bad", Env: KindName, Data: []byte(data)}})
		var fe *gym.FaultError
		if !errors.As(err, &fe) || fe.Reason != "bad_task" {
			t.Errorf("task data %s: got %v, want bad_task", data, err)
		}
	}
	// A page that does not follow the contract.
	_, _, err := m.Create(t.Context(), gym.CreateRequest{Task: &gym.Task{ID: "nocore", Env: KindName, Dir: testdataDir(t),
		Data: TaskData{Page: "core/core.css.html"}.json()}})
	if err == nil {
		t.Error("a page that is not there started an episode")
	}
}

// TestRealMiniWoB runs the real MiniWoB++ suite when
// NEXTSTATE_MINIWOB_DIR names its html/ folder (the project does not ship
// it): every task resets with its task area (#wrap) at the viewport's
// top-left, the window not scrolled, and takes a step; click-test and
// click-dialog (whose dialog scrolled a window of the viewport's size
// sideways) are solved; three tasks pass the conformance checks.
func TestRealMiniWoB(t *testing.T) {
	dir := os.Getenv("NEXTSTATE_MINIWOB_DIR")
	if dir == "" {
		t.Skip("NEXTSTATE_MINIWOB_DIR is not set (a checkout's miniwob/html folder)")
	}
	suite, err := gym.LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(suite.Tasks) < 100 {
		t.Fatalf("%d tasks in %s", len(suite.Tasks), dir)
	}
	m, _ := newManager(t, nil)
	env := newEnv(t, nil)
	for i := range suite.Tasks {
		task := &suite.Tasks[i]
		s, res, err := m.Create(t.Context(), gym.CreateRequest{Task: task, Seed: 1, Options: gym.Options{"elements": true}})
		if err != nil {
			t.Errorf("%s: %v", task.ID, err)
			continue
		}
		r, err := s.Step(t.Context(), "", guiAction(gym.GUIAction{Action: "wait", Ms: 1}))
		if err != nil || r.Failure != nil {
			t.Errorf("%s: step: %v %+v", task.ID, err, r.Failure)
		}
		if res.Info[infoInstruction] == "" {
			t.Errorf("%s: no instruction", task.ID)
		}
		s.Close(t.Context())
		for seed := int64(1); seed <= 3; seed++ {
			if _, _, err := env.Reset(t.Context(), task, seed, nil); err != nil {
				t.Errorf("%s seed %d: %v", task.ID, seed, err)
				continue
			}
			var v struct {
				X, Y float64
				Wrap []float64
			}
			if err := env.page.Eval(t.Context(), `(() => { const w = document.getElementById('wrap'); const r = w ? w.getBoundingClientRect() : null;
			  return {x: scrollX, y: scrollY, wrap: r ? [r.left, r.top, r.width, r.height] : null}; })()`, &v); err != nil {
				t.Fatal(err)
			}
			if v.X != 0 || v.Y != 0 || !slices.Equal(v.Wrap, []float64{0, 0, DefaultWidth, DefaultHeight}) {
				t.Errorf("%s seed %d: the window is scrolled to (%v,%v) and #wrap is at %v; want (0,0) and the task at [0 0 %d %d]",
					task.ID, seed, v.X, v.Y, v.Wrap, DefaultWidth, DefaultHeight)
			}
		}
	}
	task, _ := suite.Task("miniwob-click-test")
	s, res := create(t, m, task, 5, gym.Options{"elements": true})
	r := step(t, s, guiAction(gym.GUIAction{Action: "click_element", Ref: element(t, res.Info, "Click Me!").Ref}))
	if !r.Terminated || r.Reward != 1 {
		t.Errorf("click-test: terminated %v reward %v info %v", r.Terminated, r.Reward, r.Info)
	}
	task, _ = suite.Task("miniwob-click-dialog")
	for seed := int64(1); seed <= 3; seed++ {
		s, res := create(t, m, task, seed, gym.Options{"elements": true})
		var closeRef string
		for _, e := range gui.ElementsFrom(res.Info) {
			if strings.Contains(e.Classes, "ui-dialog-titlebar-close") && e.X+e.W <= DefaultWidth && e.Y+e.H <= DefaultHeight {
				closeRef = e.Ref
			}
		}
		if closeRef == "" {
			t.Errorf("click-dialog seed %d: the dialog's close button is not listed inside the viewport: %+v", seed, gui.ElementsFrom(res.Info))
			continue
		}
		r := step(t, s, guiAction(gym.GUIAction{Action: "click_element", Ref: closeRef}))
		if !r.Terminated || r.Reward != 1 {
			t.Errorf("click-dialog seed %d: terminated %v reward %v info %v", seed, r.Terminated, r.Reward, r.Info)
		}
	}
	for _, id := range []string{"miniwob-click-test", "miniwob-click-button", "miniwob-enter-text"} {
		task, _ := suite.Task(id)
		gymtest.CheckKindSettings(t, KindName, testSettings(nil), gymtest.Case{Task: task, Seed: 2, Actions: []gym.Action{
			at("click", 80, 100), guiAction(gym.GUIAction{Action: "type", Text: "hello"}), at("click", 30, 150)}})
	}
}
