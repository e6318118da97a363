package desktop

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/gym/gymtest"
)

// TestMain fails the run if anything the tests started outlived them: a
// process labelled with an owner of this test process (an Xvfb, an app, a
// setup or evaluator command), or the state directory of such an owner.
func TestMain(m *testing.M) {
	code := m.Run()
	if left := leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "desktop tests left behind:\n  %s\n", strings.Join(left, "\n  "))
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// ownedHere reports whether an owner id (sandbox.NewOwnerID's form,
// "<host>-<pid>-<start>-<random>") was made by this process.
func ownedHere(owner string) bool {
	f := strings.Split(owner, "-")
	return len(f) >= 4 && f[len(f)-3] == strconv.Itoa(os.Getpid())
}

func leftovers() []string {
	var out []string
	deadline := time.Now().Add(time.Minute) // killed processes take a moment to go, longer on a loaded machine
	for {
		out = out[:0]
		for _, pid := range markedProcs("") {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
			for _, kv := range strings.Split(string(b), "\x00") {
				v, ok := strings.CutPrefix(kv, markerEnv+"=")
				owner, _, _ := strings.Cut(v, "/")
				if ok && ownedHere(owner) {
					cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
					out = append(out, fmt.Sprintf("process %d (%s): %s", pid, v, strings.ReplaceAll(string(cmdline), "\x00", " ")))
				}
			}
		}
		if len(out) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	base := filepath.Join(os.TempDir(), "nextstate-desktops")
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if ownedHere(e.Name()) {
			out = append(out, "state directory "+filepath.Join(base, e.Name()))
		}
	}
	return out
}

// needX skips a test when the X tools the desktop kind and its built-in
// tasks use are missing (CI installs them: scripts/deps.sh).
func needX(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"Xvfb", "xterm", "xedit", "xmessage", "xsel", "xprop"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("desktop tests need %s (Debian: apt-get install xvfb xterm x11-apps x11-utils xsel): %v", bin, err)
		}
	}
}

// harness runs sessions of desktop-v1 on a private manager that records
// every event.
type harness struct {
	t   testing.TB
	m   *gym.Manager
	mem *gymtest.Memory
}

func newHarness(t testing.TB) *harness {
	needX(t)
	mem := &gymtest.Memory{}
	h := &harness{t: t, mem: mem, m: gym.NewManager(gym.Config{Recorder: mem, Logger: slog.New(slog.DiscardHandler)})}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.m.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return h
}

func (h *harness) create(task gym.Task, opts gym.Options) (*gym.Session, gym.ResetResult) {
	h.t.Helper()
	s, res, err := h.m.Create(context.Background(), gym.CreateRequest{Task: &task, Options: opts})
	if err != nil {
		h.t.Fatal(err)
	}
	return s, res
}

// step sends one action and fails the test on an error or a failure.
func (h *harness) step(s *gym.Session, g gym.GUIAction) gym.StepResult {
	h.t.Helper()
	res, err := s.Step(context.Background(), "", guiAction(g))
	if err != nil {
		h.t.Fatal(err)
	}
	if res.Failure != nil {
		h.t.Fatalf("step %s failed: %+v", jsonString(g), res.Failure)
	}
	return res
}

// verdict returns the verifier's info recorded for the last episode of s.
func (h *harness) verdict(s *gym.Session) map[string]any {
	var out map[string]any
	for _, ev := range h.mem.Session(s.ID) {
		if v, ok := ev.Info["verifier"]; ok {
			b, _ := json.Marshal(v)
			json.Unmarshal(b, &out)
		}
	}
	return out
}

func guiAction(g gym.GUIAction) gym.Action {
	return gym.Action{Parts: []gym.Part{{Type: gym.PartGUIAction, GUIAction: &g}}}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// builtinTask returns a built-in task by id.
func builtinTask(t testing.TB, id string) gym.Task {
	t.Helper()
	for _, task := range BuiltinTasks() {
		if task.ID == id {
			return task
		}
	}
	t.Fatalf("no built-in task %q", id)
	return gym.Task{}
}

// bareTask is a task with no app, an evaluator and optional setup.
func bareTask(id, evaluator string, data TaskData) gym.Task {
	d, _ := json.Marshal(data)
	v, _ := json.Marshal(VerifierData{Evaluator: evaluator})
	return gym.Task{ID: id, Env: KindName, Instruction: "test", Data: d, Verifier: v}
}
