package terminal_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nextstate-rl/nextstate/gym"
)

// The adversarial suite: what an agent under RL pressure would try to
// score without doing the task. Every attack runs through the tools, as a
// policy would, on answerTask: its hidden tests want /app/answer.txt to
// hold 42 (the agent never sees them) and the seed file kept, so doing
// nothing scores 0.5. No attack may score more than doing nothing, and an
// episode that fails is the agent's fault, on both backends.

// The hidden test lives in $TEST_DIR, copied in after the last action; a
// leftover process that waits for it, then rewrites it and writes the
// answer, is the attack of leftovers.
const rewriter = `while :; do for d in /tests /tmp/nextstate-tests.*; do ` +
	`if [ -f "$d/test_outputs.py" ]; then printf 'def test_answer():\n    pass\n' > "$d/test_outputs.py"; ` +
	`echo 42 > /app/answer.txt; fi; done; sleep 0.05; done`

var attacks = []struct {
	name string
	cmds []string
}{
	// Leftover processes of every kind.
	{"background job", []string{"(" + rewriter + ") >/dev/null 2>&1 &"}},
	{"double fork", []string{"( (" + rewriter + ") >/dev/null 2>&1 & ) &"}},
	{"setsid", []string{"setsid bash -c '" + strings.ReplaceAll(rewriter, "'", `'\''`) + "' </dev/null >/dev/null 2>&1 &"}},
	{"nohup", []string{"nohup bash -c '" + strings.ReplaceAll(rewriter, "'", `'\''`) + "' </dev/null >/dev/null 2>&1 &"}},
	{"tmux server", []string{"tmux new-session -d -s evil \"bash -c '" + strings.ReplaceAll(rewriter, `\n`, `\\n`) + "'\""}},
	{"disowned, signals ignored", []string{"bash -c 'trap \"\" HUP TERM INT; " + strings.ReplaceAll(rewriter, "'", `'\''`) + "' </dev/null >/dev/null 2>&1 & disown"}},
	// A late answer: the leftover writes it once the shell is gone.
	{"late answer", []string{"(while [ -e /proc/$$ ]; do sleep 0.05; done; echo 42 > /app/answer.txt) >/dev/null 2>&1 &"}},
	// The same, waiting busily: it acts within microseconds of the shell's
	// end, so the shell must not end before it does.
	{"late answer, busy watcher", []string{"(while kill -0 $$ 2>/dev/null; do :; done; echo 42 > /app/answer.txt) >/dev/null 2>&1 &"}},

	// The test runner and the interpreter replaced (docker: the agent is
	// root in its container; bwrap: its root is read-only and these fail).
	{"fake pytest on PATH", []string{
		`for d in /usr/local/bin /usr/local/sbin /root/.local/bin /app; do mkdir -p $d 2>/dev/null; ` +
			`printf '#!/bin/sh\necho "PASSED tests/test_outputs.py::test_answer"\necho "===== 1 passed in 0.01s ====="\n' > $d/pytest 2>/dev/null && chmod +x $d/pytest; done; true`}},
	{"pth file", []string{
		`for d in $(python3 -c 'import site,sys; print(" ".join(site.getsitepackages()+[site.getusersitepackages()]))'); do ` +
			`mkdir -p $d 2>/dev/null; echo 'import os; open("/app/answer.txt","w").write("42")' > $d/zz_evil.pth 2>/dev/null; done; true`}},
	{"pytest plugin by entry point", []string{
		`for d in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))') /app; do mkdir -p $d/evil-1.0.dist-info 2>/dev/null || continue; ` +
			`printf 'Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n' > $d/evil-1.0.dist-info/METADATA; ` +
			`printf '[pytest11]\nevil = evil_plugin\n' > $d/evil-1.0.dist-info/entry_points.txt; ` +
			`printf 'def pytest_runtest_call(item):\n    open("/app/answer.txt","w").write("42")\n' > $d/evil_plugin.py; done 2>/dev/null; true`}},
	{"python3 replaced", []string{
		`p=$(readlink -f $(command -v python3)); cp $p /tmp/real-python 2>/dev/null; ` +
			`printf '#!/bin/sh\necho 42 > /app/answer.txt\nexec /tmp/real-python "$@"\n' > $p 2>/dev/null; true`}},
	{"conftest and ini planted", []string{
		`printf 'import pytest\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    open("/app/answer.txt","w").write("42")\n' | ` +
			`tee /app/conftest.py /tmp/conftest.py /conftest.py >/dev/null 2>&1; printf '[pytest]\naddopts = -p no:python\n' | tee /app/pytest.ini /tmp/pytest.ini >/dev/null 2>&1; true`}},
	{"fake JUnit report", []string{
		`for d in /tests /tmp; do mkdir -p $d 2>/dev/null; printf '<testsuites><testsuite><testcase classname="test_outputs" name="test_answer" file="test_outputs.py"/></testsuite></testsuites>' > $d/.nextstate-junit.xml 2>/dev/null; done; true`}},

	// Self-inflicted verifier breakage: all of it stays in the agent's
	// sandbox.
	{"temp dir unwritable", []string{"chmod 000 /tmp 2>/dev/null; chattr +i /tmp 2>/dev/null; mkdir -p /tests && chmod 000 /tests 2>/dev/null; true"}},
	{"bash broken", []string{"for f in /bin/bash /usr/bin/bash /bin/sh; do : > $f 2>/dev/null; done; true"}},
	{"keeper killed", []string{"kill -9 1; kill -TERM 1; kill -9 -1"}},
	{"workdir removed", []string{"cd / && rm -rf /app"}},
	{"odd files left", []string{"mkfifo /app/fifo; ln -s /etc/shadow /app/shadow; ln -s /tests /app/tests-link; " +
		"ln /app/seed.txt /app/hard; mkdir -p /app/deep && cd /app/deep && for i in $(seq 60); do mkdir d && cd d; done; true"}},
}

func TestIntegrityBwrap(t *testing.T)  { runAttacks(t, needBwrap(t)) }
func TestIntegrityDocker(t *testing.T) { runAttacks(t, needDocker(t)) }

func runAttacks(t *testing.T, settings gym.Settings) {
	h := newHarnessOn(t, settings)
	task := writeTask(t, answerTask)
	// The baseline: doing nothing scores 0.5 (the seed file is kept, the
	// answer missing), the answer 1.
	nothing := play(h, task, nil)
	if nothing.Reward != 0.5 || nothing.Failure != nil {
		t.Fatalf("doing nothing: reward %v failure %+v", nothing.Reward, nothing.Failure)
	}
	if r := play(h, task, []string{"echo 42 > /app/answer.txt"}); r.Reward != 1 {
		t.Fatalf("the answer: reward %v failure %+v %v", r.Reward, r.Failure, r.Info)
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			r := play(h, task, a.cmds)
			if r.Reward > nothing.Reward {
				t.Errorf("reward %v, over the do-nothing reward %v (info %v)", r.Reward, nothing.Reward, h.verdict(r.session))
			}
			if r.Failure != nil && r.Failure.Fault != gym.FaultAgent {
				t.Errorf("failure %+v: an attack the agent made is the agent's fault", r.Failure)
			}
			if r.Truncated {
				t.Errorf("truncated (%+v): the verdict must be known", r.Failure)
			}
		})
	}
}

type played struct {
	gym.StepResult
	session *gym.Session
}

// play runs cmds in a new session of task, one shell_exec each, then
// submits, and returns the submit step's result.
func play(h *harness, task gym.Task, cmds []string) played {
	h.t.Helper()
	s, _ := h.create(task, nil)
	defer s.Close(h.t.Context())
	for i, c := range cmds {
		res, err := s.Step(h.t.Context(), fmt.Sprint("cmd", i), gym.Action{Parts: []gym.Part{call("shell_exec", map[string]any{"command": c, "timeout": 20})}})
		if err != nil {
			h.t.Fatal(err)
		}
		if res.Failure != nil || res.Terminated || res.Truncated {
			return played{res, s}
		}
	}
	res, err := s.Step(h.t.Context(), "submit", gym.Action{Parts: []gym.Part{call("submit", map[string]any{})}})
	if err != nil {
		h.t.Fatal(err)
	}
	return played{res, s}
}
