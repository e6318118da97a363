package webtasks_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/envs/gui/browser"
	"github.com/nextstate-rl/nextstate/envs/gui/web"
	"github.com/nextstate-rl/nextstate/envs/gui/web/webtasks"
	"github.com/nextstate-rl/nextstate/gym"
)

// The suite through real web-v1 sessions, as an agent plays it: the reset
// option {"elements": true}, the instruction and gui.ElementsFrom(info)
// fed to the policy, its actions sent as steps.

// TestMain checks, after the tests, that no browser process or profile
// directory of this test process is left.
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

// newManager returns a manager shut down (its browsers closed) when the
// test ends, or skips the test when there is no browser. Its pages' time
// limit (web.episode_ms) is far beyond a test's work, so that no test races
// a page's clock on a loaded machine.
func newManager(t *testing.T) *gym.Manager {
	t.Helper()
	if err := browser.Available(""); err != nil {
		t.Skipf("no browser: %v", err)
	}
	m := gym.NewManager(gym.Config{Settings: gym.Settings{web.SettingEpisodeMS: strconv.Itoa(web.MaxEpisodeMS)}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("manager shutdown: %v", err)
		}
	})
	return m
}

var withElements = gym.Options{"elements": true}

// session starts a web-v1 session of a built-in task (the kind lists them
// as "web-<name>"), closed when the test ends.
func session(t *testing.T, m *gym.Manager, name string, seed int64) (*gym.Session, gym.ResetResult) {
	t.Helper()
	s, res, err := m.Create(t.Context(), gym.CreateRequest{Env: web.KindName, TaskID: "web-" + name, Seed: seed, Options: withElements})
	if err != nil {
		t.Fatalf("creating a %s session of web-%s: %v", web.KindName, name, err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, res
}

func reset(t *testing.T, s *gym.Session, seed int64) gym.ResetResult {
	t.Helper()
	res, err := s.Reset(t.Context(), nil, seed, withElements)
	if err != nil {
		t.Fatalf("reset with seed %d: %v", seed, err)
	}
	return res
}

// resetTo starts an episode of another built-in task on the session.
func resetTo(t *testing.T, m *gym.Manager, s *gym.Session, name string, seed int64) gym.ResetResult {
	t.Helper()
	task, ok := m.Tasks().Get(web.KindName, "web-"+name)
	if !ok {
		t.Fatalf("%s lists no task web-%s", web.KindName, name)
	}
	res, err := s.Reset(t.Context(), task, seed, withElements)
	if err != nil {
		t.Fatalf("reset to web-%s with seed %d: %v", name, seed, err)
	}
	return res
}

func instruction(t *testing.T, info gym.Info) string {
	t.Helper()
	instr, _ := info["instruction"].(string)
	if instr == "" {
		t.Fatalf("the reset info has no instruction: %v", info)
	}
	return instr
}

// outcome is where an episode stood when play stopped.
type outcome struct {
	steps      int
	terminated bool
	truncated  bool
	reward     float64
	info       gym.Info
	stopped    bool // the policy said done; done was not sent
}

// play feeds a policy the instruction and the element list and steps its
// actions until the episode ends, the policy says done, or limit steps.
func play(t *testing.T, s *gym.Session, res gym.ResetResult, p policy, limit int) outcome {
	t.Helper()
	instr, info := instruction(t, res.Info), res.Info
	for n := 0; n < limit; n++ {
		a, err := p(instr, gui.ElementsFrom(info))
		if err != nil {
			t.Fatalf("%q, step %d: %v", instr, n, err)
		}
		if a.Action == "done" {
			return outcome{steps: n, info: info, stopped: true}
		}
		r, err := s.Step(t.Context(), "", gym.Action{Parts: []gym.Part{{Type: gym.PartGUIAction, GUIAction: &a}}})
		if err != nil {
			t.Fatalf("%q, step %d (%+v): %v", instr, n, a, err)
		}
		if e, ok := r.Info["error"]; ok {
			t.Fatalf("%q, step %d (%+v): the kind refused the action: %v", instr, n, a, e)
		}
		info = r.Info
		if r.Terminated || r.Truncated {
			return outcome{steps: n + 1, terminated: r.Terminated, truncated: r.Truncated, reward: r.Reward, info: info}
		}
	}
	return outcome{steps: limit, info: info}
}

// Every oracle reaches raw reward 1 for seeds 1 to 5.
func TestOraclesThroughWebV1(t *testing.T) {
	m := newManager(t)
	for _, task := range webtasks.Tasks() {
		t.Run(task.Name, func(t *testing.T) {
			s, res := session(t, m, task.Name, 1)
			for seed := int64(1); seed <= 5; seed++ {
				if seed > 1 {
					res = reset(t, s, seed)
				}
				o, _ := webtasks.NewOracle(task.Name)
				out := play(t, s, res, o, task.MaxSteps)
				if !out.terminated || out.reward != 1 || out.info["raw_reward"] != 1.0 || out.info["ended_by"] != "page" {
					t.Errorf("seed %d (%q): %+v, want the page to end the episode with raw reward 1", seed, instruction(t, res.Info), out)
				}
				if d, _ := out.info["discounted_reward"].(float64); d <= 0 || d > 1 {
					t.Errorf("seed %d: discounted reward %v, want in (0, 1]", seed, out.info["discounted_reward"])
				}
			}
		})
	}
}

// Wrong play gets -1, or leaves the episode running at 0; done at once
// ends it with 0.
func TestWrongPlayThroughWebV1(t *testing.T) {
	m := newManager(t)
	for _, c := range wrongCases {
		task, _ := webtasks.Lookup(c.task)
		t.Run(c.task+"/"+c.name, func(t *testing.T) {
			s, res := session(t, m, task.Name, 1)
			for seed := int64(1); seed <= 2; seed++ {
				if seed > 1 {
					res = reset(t, s, seed)
				}
				out := play(t, s, res, c.play(), task.MaxSteps)
				raw, _ := out.info["raw_reward"].(float64)
				if c.ends {
					if !out.terminated || out.reward != c.raw || raw != c.raw {
						t.Errorf("seed %d (%q): %+v, want the episode ended with %v", seed, instruction(t, res.Info), out, c.raw)
					}
					continue
				}
				if !out.stopped || out.terminated || out.truncated || raw != 0 {
					t.Errorf("seed %d (%q): %+v, want the episode still running at reward 0", seed, instruction(t, res.Info), out)
				}
			}
		})
	}
	t.Run("done-at-once", func(t *testing.T) {
		s, _ := session(t, m, "click-button", 1)
		for _, task := range webtasks.Tasks() {
			res := resetTo(t, m, s, task.Name, 1)
			r, err := s.Step(t.Context(), "", gym.Action{Parts: []gym.Part{{Type: gym.PartGUIAction, GUIAction: &gym.GUIAction{Action: "done"}}}})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Terminated || r.Reward != 0 || r.Info["ended_by"] != "agent" || r.Info["raw_reward"] != 0.0 {
				t.Errorf("%s (%q): done at once gave %+v, want the episode ended by the agent at 0", task.Name, instruction(t, res.Info), r)
			}
		}
	})
}

// The same seed gives the same instruction; different seeds differ for
// most tasks (the page tests check determinism closely).
func TestSeedsThroughWebV1(t *testing.T) {
	m := newManager(t)
	s, _ := session(t, m, "click-button", 1)
	same := 0
	for _, task := range webtasks.Tasks() {
		first := instruction(t, resetTo(t, m, s, task.Name, 11).Info)
		if again := instruction(t, resetTo(t, m, s, task.Name, 11).Info); again != first {
			t.Errorf("%s: seed 11 gave %q, then %q", task.Name, first, again)
		}
		other := instruction(t, resetTo(t, m, s, task.Name, 12).Info)
		if other == first {
			same++
		}
	}
	if same > 2 {
		t.Errorf("seeds 11 and 12 gave the same instruction in %d of %d tasks", same, len(webtasks.Tasks()))
	}
}
