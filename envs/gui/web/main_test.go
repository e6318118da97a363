package web

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/envs/gui/browser"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// TestMain checks, after the package's tests, that no browser process or
// profile directory of this test process is left.
func TestMain(m *testing.M) {
	code := m.Run()
	if pids, dirs := browser.Leftovers("", browser.OwnerPrefix()); len(pids)+len(dirs) > 0 {
		fmt.Fprintf(os.Stderr, "leak: the tests left browser processes %v and directories %v\n", pids, dirs)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func needBrowser(t testing.TB) {
	t.Helper()
	if err := browser.Available(""); err != nil {
		t.Skipf("no browser: %v", err)
	}
}

// testSettings are settings with what every test's kind is configured
// with: a page clock (web.episode_ms) far beyond any test's work, so that
// no test races the built-in pages' clock on a loaded machine. The tests'
// own pages run on a clock the tests advance (advanceClock).
func testSettings(settings gym.Settings) gym.Settings {
	out := gym.Settings{SettingEpisodeMS: strconv.Itoa(MaxEpisodeMS)}
	maps.Copy(out, settings)
	return out
}

// newManager returns a manager with settings (over testSettings), shut
// down when the test ends.
func newManager(t testing.TB, settings gym.Settings) (*gym.Manager, *gymtest.Memory) {
	t.Helper()
	needBrowser(t)
	mem := &gymtest.Memory{}
	m := gym.NewManager(gym.Config{Recorder: mem, Settings: testSettings(settings)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("manager shutdown: %v", err)
		}
	})
	return m, mem
}

// newEnv returns an Env of a Kind of its own, configured with settings
// (over testSettings), for a test that reaches into its page; Cleanup
// closes both.
func newEnv(t testing.TB, settings gym.Settings) *Env {
	t.Helper()
	needBrowser(t)
	k, err := (&Kind{}).Configure(t.Context(), testSettings(settings))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := k.Shutdown(ctx); err != nil {
			t.Errorf("kind shutdown: %v", err)
		}
	})
	env, err := k.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env.(*Env)
}

// advanceClock moves the clock of one of the tests' own pages on by ms
// (core.clock in testdata/html/core/core.js), running the page's timers
// that fall due: its episode's time limit, its delays.
func advanceClock(t testing.TB, e *Env, ms int) {
	t.Helper()
	if err := e.page.Eval(t.Context(), fmt.Sprintf("core.clock.advance(%d)", ms), nil); err != nil {
		t.Fatalf("advancing the page's clock: %v", err)
	}
}

// stepEnv steps an Env directly.
func stepEnv(t testing.TB, e *Env, a gym.Action) gym.Transition {
	t.Helper()
	tr, err := e.Step(t.Context(), a)
	if err != nil {
		t.Fatalf("step %+v: %v", a, err)
	}
	return tr
}

// testdataDir is the MiniWoB++-shaped folder of the tests' own pages.
func testdataDir(t testing.TB) string {
	dir, err := filepath.Abs(filepath.Join("testdata", "html"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// testTask is a task of one of the tests' own pages.
func testTask(t testing.TB, name string) *gym.Task {
	return &gym.Task{ID: "test-" + name, Env: KindName, Dir: testdataDir(t), Limits: gym.Limits{MaxSteps: 500},
		Data: TaskData{Page: "miniwob/" + name + ".html"}.json()}
}

func create(t testing.TB, m *gym.Manager, task *gym.Task, seed int64, opts gym.Options) (*gym.Session, gym.ResetResult) {
	t.Helper()
	s, res, err := m.Create(t.Context(), gym.CreateRequest{Task: task, Seed: seed, Options: opts})
	if err != nil {
		t.Fatalf("create %s: %v", task.ID, err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, res
}

func guiAction(g gym.GUIAction) gym.Action {
	return gym.Action{Parts: []gym.Part{{Type: gym.PartGUIAction, GUIAction: &g}}}
}

func at(action string, x, y int) gym.Action {
	return guiAction(gym.GUIAction{Action: action, X: &x, Y: &y})
}

func step(t testing.TB, s *gym.Session, a gym.Action) gym.StepResult {
	t.Helper()
	res, err := s.Step(t.Context(), "", a)
	if err != nil {
		t.Fatalf("step %+v: %v", a, err)
	}
	return res
}

// element finds the listed element with that text.
func element(t testing.TB, info gym.Info, text string) gui.Element {
	t.Helper()
	for _, e := range gui.ElementsFrom(info) {
		if e.Text == text {
			return e
		}
	}
	t.Fatalf("no element with text %q in %+v", text, gui.ElementsFrom(info))
	return gui.Element{}
}
