package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/envs/gui/internal/confine"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
	"github.com/nextstate-rl/nextstate/sandbox"
)

func toolCall(args string) gym.Action {
	return gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: "call_1", Type: "function",
		Function: gym.FunctionCall{Name: gui.ToolName, Arguments: args}}}}}
}

func move(x, y int) gym.GUIAction { return gym.GUIAction{Action: "move", X: &x, Y: &y} }

func TestConformance(t *testing.T) {
	needX(t)
	bare := bareTask("bare", "true", TaskData{Width: 320, Height: 200})
	word := builtinTask(t, "desktop-xterm-select-word")
	gymtest.CheckKind(t, KindName,
		// A bare screen: input that changes nothing, a mistake, done.
		gymtest.Case{Task: &bare, Seed: 1, Actions: []gym.Action{
			guiAction(move(10, 10)), toolCall(`{"action":"key","key":"a"}`), toolCall(`{"action":"click","x":9999,"y":1}`),
			guiAction(done())}},
		// A built-in task; the step limit is not reached.
		gymtest.Case{Task: &word, Seed: 2, Actions: []gym.Action{
			guiAction(move(600, 600)), guiAction(wait(20 * time.Millisecond)), toolCall(`{"action":"wait","ms":5}`)}},
	)
}

// TestMistakes: the agent's errors are observations (a text part and the
// screen, info "error"), and the episode goes on.
func TestMistakes(t *testing.T) {
	h := newHarness(t)
	s, _ := h.create(bareTask("mistakes", "true", TaskData{Width: 320, Height: 200}), nil)
	for _, c := range []struct {
		action gym.Action
		reason string
		says   string
	}{
		{guiAction(click(320, 5)), "bad_action", "outside the 320x200 screen"},
		{guiAction(key("ctrl+nokey")), "bad_key", `unknown key "nokey"`},
		{guiAction(gym.GUIAction{Action: "click_element", Ref: "e1"}), "no_elements", "not available on a desktop"},
		{guiAction(typ("bell\x07")), "bad_text", "control character"},
		{guiAction(gym.GUIAction{Action: "click"}), "bad_action", "click needs x and y"},
		{gym.Action{Parts: []gym.Part{{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{
			Function: gym.FunctionCall{Name: "mouse", Arguments: `{}`}}}}}, "unknown_tool", `the only tool is "computer"`},
		{toolCall(`{"action":"click","x":1,"y":2,"button":"left"}`), "bad_arguments", "not a valid action"},
	} {
		res, err := s.Step(context.Background(), "", c.action)
		if err != nil || res.Failure != nil {
			t.Fatalf("%s: %v %+v", jsonString(c.action), err, res.Failure)
		}
		parts := res.Observation.Parts
		if res.Info["error"] != c.reason || res.Terminated || res.Truncated || len(parts) != 2 ||
			!strings.Contains(parts[0].Text, c.says) || parts[1].Image == nil {
			t.Errorf("%s: info %v, terminated %v, observation %q; want error %q saying %q and a screenshot",
				jsonString(c.action), res.Info, res.Terminated, res.Observation.Text(), c.reason, c.says)
		}
	}
	if res := h.step(s, done()); !res.Terminated || res.Reward != 1 {
		t.Errorf("done after mistakes: %+v", res)
	}
}

// TestGridCoords solves the dialog task with grid coordinates.
func TestGridCoords(t *testing.T) {
	h := newHarness(t)
	task := builtinTask(t, "desktop-xmessage-reject")
	s, rr := h.create(task, gym.Options{"coords": "grid"})
	if rr.Info["coords"] != "grid" {
		t.Errorf("reset info coords %v, want grid", rr.Info["coords"])
	}
	// The Reject button's centre (193, 139) on the 0..999 grid of a
	// 1280x720 screen.
	h.step(s, click(151, 194))
	h.step(s, wait(300*time.Millisecond))
	if res := h.step(s, done()); res.Reward != 1 {
		t.Errorf("grid click on Reject: reward %v (verifier %v), want 1", res.Reward, h.verdict(s))
	}
	if _, _, err := h.m.Create(context.Background(), gym.CreateRequest{Task: &task, Options: gym.Options{"coords": "polar"}}); err == nil ||
		!strings.Contains(err.Error(), `want "pixels" or "grid"`) {
		t.Errorf("bad coords option: got %v", err)
	}
}

// TestXvfbKilled: an Xvfb killed mid-episode fails the session as the
// infrastructure's fault; the next session works.
func TestXvfbKilled(t *testing.T) {
	h := newHarness(t)
	task := builtinTask(t, "desktop-xterm-create-file")
	s, rr := h.create(task, nil)
	num, _ := strconv.Atoi(strings.TrimPrefix(rr.Info["display"].(string), ":"))
	b, err := os.ReadFile(lockPath(num))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res, err := s.Step(context.Background(), "", guiAction(click(100, 100)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure == nil || res.Failure.Fault != gym.FaultInfra || !res.Truncated {
		t.Fatalf("step after Xvfb died: failure %+v truncated %v; want an infra failure", res.Failure, res.Truncated)
	}
	if _, err := s.Step(context.Background(), "", guiAction(done())); !errors.Is(err, gym.ErrSessionClosed) && !errors.Is(err, gym.ErrUnknownSession) {
		t.Errorf("step on the failed session: %v, want it closed", err)
	}
	if _, err := os.Stat(lockPath(num)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed server's lock file is left: %v", err)
	}
	s2, _ := h.create(task, nil)
	h.step(s2, click(cellX(20), cellY(5)))
	h.step(s2, typ("echo 'hello from the desktop' > greeting.txt\n"))
	if res := h.step(s2, done()); res.Reward != 1 {
		t.Errorf("the next session: reward %v, want 1", res.Reward)
	}
}

// TestConcurrentSessions: sessions at the same time get displays of their
// own.
func TestConcurrentSessions(t *testing.T) {
	h := newHarness(t)
	const n = 3
	displays := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := bareTask(fmt.Sprintf("c%d", i), "true", TaskData{Width: 200, Height: 100, App: "xmessage -geometry +0+0 hi"})
			_, rr, err := h.m.Create(context.Background(), gym.CreateRequest{Task: &task})
			if err != nil {
				t.Error(err)
				return
			}
			displays[i] = rr.Info["display"].(string)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, d := range displays {
		if d == "" || seen[d] {
			t.Errorf("displays %v: want %d different ones", displays, n)
		}
		seen[d] = true
	}
}

// TestEvaluator covers the reward rule: a number on the last stdout line,
// else the exit status; a broken evaluator is an infrastructure failure.
func TestEvaluator(t *testing.T) {
	h := newHarness(t)
	s, _ := h.create(bareTask("eval", "true", TaskData{Width: 200, Height: 100}), nil)
	for _, c := range []struct {
		evaluator string
		timeout   time.Duration
		reward    float64
		failure   string // the failure's message, if it must fail
	}{
		{evaluator: "true", reward: 1},
		{evaluator: "echo checking; echo 0.25", reward: 0.25},
		{evaluator: "echo 1; echo all good >&2", reward: 1},
		{evaluator: "echo ok", reward: 1},
		{evaluator: "echo 1; exit 1", reward: 0},
		{evaluator: "false", reward: 0},
		{evaluator: "test -f missing.txt", reward: 0},
		{evaluator: "echo 7", failure: "want a number in [0,1]"},
		{evaluator: "no-such-command-here", failure: "could not run"},
		{evaluator: "kill -9 $$", failure: "killed"},
		{evaluator: "sleep 10", timeout: 200 * time.Millisecond, failure: "timed out"},
		// The display refuses clients without its cookie.
		{evaluator: `! XAUTHORITY=/dev/null xprop -root >/dev/null 2>&1 && xprop -root >/dev/null`, reward: 1},
		{evaluator: `[ -z "$NEXTSTATE_DESKTOP_TEST_SECRET" ] && [ "$DISPLAY" != "" ] && [ "$HOME" = "$(pwd)" ]`, reward: 1},
	} {
		task := bareTask("eval", c.evaluator, TaskData{Width: 200, Height: 100})
		v, _ := json.Marshal(VerifierData{Evaluator: c.evaluator, Timeout: gym.Duration(c.timeout)})
		task.Verifier = v
		t.Setenv("NEXTSTATE_DESKTOP_TEST_SECRET", "the server's secret")
		if _, err := s.Reset(context.Background(), &task, 0, nil); err != nil {
			t.Fatal(err)
		}
		res, err := s.Step(context.Background(), "", guiAction(done()))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.failure != "":
			if res.Failure == nil || res.Failure.Fault != gym.FaultInfra || !strings.Contains(res.Failure.Message, c.failure) {
				t.Errorf("%q: failure %+v, want an infra failure saying %q", c.evaluator, res.Failure, c.failure)
			}
		case res.Failure != nil || res.Reward != c.reward:
			t.Errorf("%q: reward %v failure %+v, want %v", c.evaluator, res.Reward, res.Failure, c.reward)
		}
	}
}

// TestSandbox: with bubblewrap, apps and evaluators see the host's files
// read-only, a network namespace of their own, and the home directory
// writable; without it they run as the server does.
func TestSandbox(t *testing.T) {
	hostNet, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Skipf("no /proc/self/ns/net: %v", err)
	}
	check := `echo x > in-home.txt && [ "$(readlink /proc/self/ns/net)" ` + "%s" + ` "` + hostNet + `" ]`
	t.Run("none", func(t *testing.T) {
		e, _ := openEnv(t, gym.Settings{SettingSandbox: "none"}, bareTask("none", fmt.Sprintf(check, "="), TaskData{Width: 200, Height: 100}), nil)
		if r, info, err := e.Verify(context.Background()); err != nil || r != 1 {
			t.Errorf("unsandboxed: reward %v %v %v, want 1 (the host's network namespace)", r, info, err)
		}
	})
	t.Run("bwrap", func(t *testing.T) {
		if !confine.Works() {
			t.Skip("bubblewrap is missing or cannot make namespaces here")
		}
		probe := filepath.Join("/usr", "nextstate-desktop-probe-"+strconv.Itoa(os.Getpid()))
		ev := fmt.Sprintf(check, "!=") + ` && ! touch ` + probe + ` 2>/dev/null`
		e, _ := openEnv(t, gym.Settings{SettingSandbox: "bwrap"}, bareTask("bwrap", ev, TaskData{Width: 200, Height: 100}), nil)
		r, info, err := e.Verify(context.Background())
		os.Remove(probe)
		if err != nil || r != 1 {
			t.Errorf("sandboxed: reward %v %v %v, want 1 (own network namespace, read-only host)", r, info, err)
		}
	})
}

// TestReapDeadOwner: Configure ends the processes and removes the state of
// an owner whose server died.
func TestReapDeadOwner(t *testing.T) {
	needX(t)
	base := t.TempDir()
	// A dead owner: this host's id form with the pid of a process that has
	// exited.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	self := sandbox.NewOwnerID()
	f := strings.Split(self, "-")
	owner := strings.Join(f[:len(f)-3], "-") + "-" + strconv.Itoa(dead.Process.Pid) + "-12345-0badf00d"
	if alive, known := sandbox.OwnerAlive(owner); alive || !known {
		t.Skipf("cannot make a dead owner id here (alive %v known %v)", alive, known)
	}
	dir := filepath.Join(base, owner, "123")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Two leftovers: one found by its pid file, one by its label only.
	var procs []*exec.Cmd
	for i, marker := range []string{owner + "/123/xvfb", owner + "/123/app"} {
		cmd := exec.Command("sleep", "1000")
		cmd.Env = []string{markerEnv + "=" + marker}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() }) // if the reaper missed it
		if i == 0 {
			writePidFile(filepath.Join(dir, "xvfb.pid"), cmd.Process.Pid)
		}
		procs = append(procs, cmd)
	}
	ctx := context.Background()
	k, err := (&Kind{}).Configure(ctx, gym.Settings{SettingDir: base, SettingSandbox: "none"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range procs {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Errorf("leftover %d of the dead owner still runs", cmd.Process.Pid)
		}
	}
	if _, err := os.Stat(filepath.Join(base, owner)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead owner's directory is left: %v", err)
	}
	if err := k.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(base); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state directory is left after the last shutdown: %v", err)
	}
}

func TestSettings(t *testing.T) {
	needX(t)
	ctx := context.Background()
	for _, c := range []struct {
		settings gym.Settings
		says     string
	}{
		{gym.Settings{SettingDisplays: "10-5"}, "want a range of display numbers"},
		{gym.Settings{SettingDisplays: "abc"}, "want a range of display numbers"},
		{gym.Settings{SettingSandbox: "docker"}, "want auto, bwrap or none"},
		{gym.Settings{SettingSandbox: "bwrap", "sandbox.hide": "/usr"}, "sandbox.hide"}, // would hide a system directory
		{gym.Settings{SettingXvfb: "/nonexistent/Xvfb"}, "needs Xvfb"},
		{gym.Settings{SettingOwner: "bad owner!"}, "want 1 to 64 ASCII letters"},
	} {
		k, err := (&Kind{}).Configure(ctx, c.settings)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Configure(%v): %v, want an error saying %q", c.settings, err, c.says)
		}
		if err == nil {
			k.Shutdown(ctx)
		}
	}
	// A range of one display serves one session at a time.
	num := 0
	for d := 900; d < 1000; d++ {
		if !displayLocked(d) {
			num = d
			break
		}
	}
	k, err := (&Kind{}).Configure(ctx, gym.Settings{SettingDisplays: strconv.Itoa(num), SettingSandbox: "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Shutdown(ctx)
	task := bareTask("one", "true", TaskData{Width: 100, Height: 100})
	a, _ := k.New(ctx)
	defer a.Close(ctx)
	if _, info, err := a.Reset(ctx, &task, 0, nil); err != nil || info["display"] != ":"+strconv.Itoa(num) {
		t.Fatalf("first env: %v %v", info, err)
	}
	b, _ := k.New(ctx)
	defer b.Close(ctx)
	_, _, err = b.Reset(ctx, &task, 0, nil)
	var fe *gym.FaultError
	if !errors.As(err, &fe) || fe.Fault != gym.FaultInfra || !strings.Contains(err.Error(), "no free display number") {
		t.Errorf("second env on a one-display range: %v, want an infra fault saying there is no free display", err)
	}
}

// TestBadTasks: a task the kind cannot run fails the reset as the
// infrastructure's (the task's author's) fault, saying why.
func TestBadTasks(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		data, verifier string
		says           string
	}{
		{`{"width":10}`, `{"evaluator":"true"}`, "want width and height in 64..4096"},
		{`{"app":"xterm","colour":"red"}`, `{"evaluator":"true"}`, `unknown field "colour"`},
		{`{}`, `{}`, "no evaluator command"},
		{`{}`, `{"evaluator":"true","oracle":[{"action":"fly"}]}`, "oracle action 1"},
		{`{"setup":["exit 3"]}`, `{"evaluator":"true"}`, "setup command 1"},
		{`{"app":"no-such-app-here"}`, `{"evaluator":"true"}`, "exited before opening a window"},
	} {
		task := gym.Task{ID: "bad", Env: KindName, Data: []byte(c.data), Verifier: []byte(c.verifier)}
		_, _, err := h.m.Create(context.Background(), gym.CreateRequest{Task: &task})
		var fe *gym.FaultError
		if !errors.As(err, &fe) || fe.Fault != gym.FaultInfra || !strings.Contains(err.Error(), c.says) {
			t.Errorf("data %s verifier %s: %v, want an infra fault saying %q", c.data, c.verifier, err, c.says)
		}
	}
}
