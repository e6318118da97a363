package code_test

import (
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/envs/toolcall/code"
	"github.com/nextstate-rl/nextstate/gym"
)

// Code that kills the sandbox's keeper or breaks the interpreter cannot
// turn the episode into the infrastructure's failure: the sandbox lives on,
// a broken interpreter answers the next call with an error, and the
// episode goes on to be scored.
func TestIntegrity(t *testing.T) {
	for name, settings := range map[string]func(testing.TB) gym.Settings{"bwrap": needBwrap, "docker": needDocker} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, settings(t))
			for _, mode := range []string{code.ModeStateless, code.ModeSession} {
				s, _ := h.create(t, sumTask, gym.Options{"mode": mode})
				h.run(t, s, "import os, signal\nfor sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):\n    try: os.kill(1, sig)\n    except Exception as e: print(e)")
				if r := h.run(t, s, "print(6 * 7)"); !strings.Contains(r.Content, "42") {
					t.Errorf("%s: after the keeper was attacked: %+v", mode, r)
				}
				// Remove the interpreter (root in a docker container may;
				// bwrap's root is read-only and refuses).
				h.run(t, s, "import os, sys, glob\nfor p in set(glob.glob('/usr/bin/python3*') + [os.path.realpath(sys.executable)]):\n    try: os.remove(p)\n    except OSError as e: print(e)")
				res := h.step(t, s, call("print(1)"))
				if res.Failure != nil || res.Truncated {
					t.Errorf("%s: after the interpreter was removed: failure %+v truncated %v", mode, res.Failure, res.Truncated)
				}
				res = h.step(t, s, gym.TextPart(`\boxed{5050}`))
				if !res.Terminated || res.Reward != 1 {
					t.Errorf("%s: the answer after it all: %+v", mode, res)
				}
				s.Close(t.Context())
			}
		})
	}
}
