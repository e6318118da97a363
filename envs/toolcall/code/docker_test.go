package code_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nextstate-rl/nextstate/envs/toolcall/code"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// containers lists the containers that carry owner's label.
func containers(t testing.TB, owner string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+sandbox.LabelOwner+"="+owner).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v: %s", err, out)
	}
	return strings.Fields(string(out))
}

// On the docker backend the interpreter behaves as on bwrap, in a
// container of the base image, and leaves no container behind.
func TestDocker(t *testing.T) {
	settings := needDocker(t)
	owner := "nstest-code-" + strconv.Itoa(os.Getpid())
	settings["sandbox.owner"] = owner
	h := newHarness(t, settings)
	t.Cleanup(func() {
		// The harness's Shutdown (registered before) has run: the
		// backend is closed and every container gone.
		if left := containers(t, owner); len(left) != 0 {
			t.Errorf("containers left after Shutdown: %v", left)
			exec.Command("docker", append([]string{"rm", "-f"}, left...)...).Run()
		}
	})
	for _, mode := range []string{code.ModeStateless, code.ModeSession} {
		t.Run(mode, func(t *testing.T) {
			quick, _ := h.create(t, sumTask, gym.Options{"mode": mode, "timeout": 3})
			if r := h.run(t, quick, "while True:\n    pass"); !strings.Contains(r.Content, "[timed out after 3s") {
				t.Errorf("timeout: %q", r.Content)
			}
			if r := h.run(t, quick, "print('ok')"); r.Content != "ok\n" {
				t.Errorf("after the timeout: %q", r.Content)
			}
			quick.Close(t.Context())
			s, _ := h.create(t, sumTask, gym.Options{"mode": mode})
			if n := len(containers(t, owner)); n != 1 {
				t.Errorf("%d containers for one session, want 1", n)
			}
			h.run(t, s, "secret = 41")
			r := h.run(t, s, "print(globals().get('secret'))")
			if want := map[string]string{code.ModeStateless: "None\n", code.ModeSession: "41\n"}[mode]; r.Content != want {
				t.Errorf("state between calls: %q, want %q", r.Content, want)
			}
			if r := h.run(t, s, "1/0"); !strings.Contains(r.Content, "ZeroDivisionError") || r.IsError {
				t.Errorf("traceback: %+v", r)
			}
			if r := h.run(t, s, "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=3)\n    print('connected')\n"+
				"except OSError as e:\n    print('refused:', e)"); !strings.HasPrefix(r.Content, "refused:") {
				t.Errorf("network: %q", r.Content)
			}
			r = h.run(t, s, "b = bytearray(2 << 30)\nprint('allocated', len(b))")
			if strings.Contains(r.Content, "allocated") ||
				!strings.Contains(r.Content, "MemoryError") && !strings.Contains(r.Content, "may have run out of memory") {
				t.Errorf("memory: %q", r.Content)
			}
			if r := h.run(t, s, "print('x' * 40000)"); !strings.Contains(r.Content, "bytes truncated") {
				t.Errorf("output cap: %d bytes without the marker", len(r.Content))
			}
			if r := h.run(t, s, "print('ok')"); r.Content != "ok\n" {
				t.Errorf("after all that: %q", r.Content)
			}
			if err := s.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			if left := containers(t, owner); len(left) != 0 {
				t.Errorf("containers left after Close: %v", left)
			}
		})
	}
	t.Run("oracle", func(t *testing.T) {
		for _, task := range code.SmokeTasks() {
			s, last := playOracle(t, h, task)
			if last.Reward != 1 {
				t.Errorf("%s: reward %v: %v", task.ID, last.Reward, h.verdict(s))
			}
			s.Close(t.Context())
		}
	})
}

// A restarted episode on docker restores the container's snapshot.
func TestDockerRestart(t *testing.T) {
	settings := needDocker(t)
	ctx := t.Context()
	d, err := code.NewDomain().Configure(ctx, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()
	ep, err := d.Start(ctx, &sumTask, 1, gym.Options{"mode": code.ModeSession})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ep.Close(context.Background()) }()
	for i := range 3 {
		if ep, err = ep.(restarter).Restart(ctx, &sumTask, 1, gym.Options{"mode": code.ModeSession}); err != nil {
			t.Fatal(err)
		}
		r, err := ep.Call(ctx, code.ToolCode, []byte(`{"code": "import os\nprint(os.listdir('.'), 'v' in globals())\nopen('mark', 'w').write('x')\nv = 1"}`))
		if err != nil {
			t.Fatal(err)
		}
		if r.Content != "[] False\n" {
			t.Errorf("episode %d starts with %q", i+2, r.Content)
		}
	}
}
