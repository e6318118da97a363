package swe_test

import (
	"testing"

	"github.com/nextstate-rl/nextstate/envs/swe"
	"github.com/nextstate-rl/nextstate/gym"
)

// What an agent would try instead of fixing the instance: a leftover
// process that edits the repository after submit (the fix, once the agent
// is gone), killing the sandbox's keeper, and breaking the tools the diff
// is taken with. None scores, and none is the infrastructure's fault.
func TestIntegrity(t *testing.T) {
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) { testIntegrity(t, backend) })
	}
}

func testIntegrity(t *testing.T, backend string) {
	h := newManager(t, backend)
	tk := task(t, "python", "local__inventory-1")
	// The fix, written by a leftover once the agent's shell is gone.
	fix := `python3 - <<'PY'
p='/testbed/inventory/store.py'
s=open(p).read()
s=s.replace("        self._stock[name] = self._stock.get(name, 0) - count", "        have = self._stock.get(name, 0)\n        if count > have:\n            raise ValueError(f'cannot remove {count} {name}: only {have} in stock')\n        self._stock[name] = have - count")
open(p,'w').write(s)
PY`
	for name, cmd := range map[string]string{
		"late fix":      "cat > /tmp/fix.sh <<'EOF'\n" + fix + "\nEOF\nsetsid bash -c 'while [ -e /proc/'$$' ]; do sleep 0.05; done; bash /tmp/fix.sh' </dev/null >/dev/null 2>&1 &",
		"keeper killed": "kill -9 1; kill -TERM 1; kill -9 -1",
		"git broken":    "for f in $(command -v git) /usr/bin/git; do : > $f 2>/dev/null; done; rm -rf .git/objects 2>/dev/null; true",
		"bash broken":   "for f in /bin/bash /usr/bin/bash; do : > $f 2>/dev/null; done; true",
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := h.create(tk)
			defer s.Close(t.Context())
			res, err := s.Step(t.Context(), "", gym.Action{Parts: []gym.Part{call(swe.ToolExec, map[string]any{"command": cmd, "timeout": 30})}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Failure != nil {
				t.Fatalf("the attack's step failed: %+v", res.Failure)
			}
			res, err = s.Step(t.Context(), "", gym.Action{Parts: []gym.Part{submit}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reward != 0 || res.Truncated || res.Failure != nil && res.Failure.Fault != gym.FaultAgent {
				t.Errorf("reward %v truncated %v failure %+v verdict %v", res.Reward, res.Truncated, res.Failure, h.verdict(s))
			}
		})
	}
}
