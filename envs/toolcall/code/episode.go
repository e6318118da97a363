package code

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// box is the sandbox an episode runs code in, with the interpreter of
// session mode and the snapshot a restarted episode returns to.
type box struct {
	sb     sandbox.Sandbox
	snap   sandbox.Snapshot // nil until an Env restarts an episode (see episode.Restart)
	interp *interp
}

// newBox takes a sandbox from the warm pool, or creates one.
func (i *instance) newBox(ctx context.Context) (*box, error) {
	b, p, spec, err := i.sandboxes()
	if err != nil {
		return nil, err
	}
	var sb sandbox.Sandbox
	if p != nil {
		sb, err = p.Acquire(ctx, spec)
	} else {
		sb, err = b.Create(ctx, spec)
	}
	if err != nil {
		return nil, sbopen.Fault(nil, fmt.Errorf("creating the sandbox: %w", err))
	}
	return &box{sb: sb}, nil
}

// close closes the sandbox, which ends every process in it, then reaps
// the interpreter and releases the snapshot. (The sandbox goes first: on
// bwrap, a sandbox whose entered process was just killed from outside
// takes a second or two to close; one closed with it inside does not.)
func (b *box) close(ctx context.Context) error {
	err := b.sb.Close(ctx)
	b.interp.kill()
	b.interp = nil
	if b.snap != nil {
		err = errors.Join(err, b.snap.Release(ctx))
		b.snap = nil
	}
	return err
}

// episode is one problem's episode.
type episode struct {
	d       *instance // the Manager's code interpreter
	box     *box
	task    *gym.Task
	problem problem
	opts    options
	final   *string // the message that ended the episode
	ran     bool    // the agent's code has run in the sandbox
}

// begin starts the interpreter in session mode.
func (e *episode) begin(ctx context.Context) error {
	if e.opts.mode != ModeSession {
		return nil
	}
	it, err := startInterp(ctx, e.box.sb)
	if err != nil {
		return sbopen.Fault(nil, err)
	}
	e.box.interp = it
	return nil
}

// writeFiles writes the task's files (data.files) into the working
// directory of the code, by the sandbox's own python3, as the cells will
// read them.
func (e *episode) writeFiles(ctx context.Context) error {
	if len(e.problem.files) == 0 {
		return nil
	}
	in, err := json.Marshal(e.problem.files)
	if err != nil {
		return err
	}
	const write = "import json, os, sys\n" +
		"for name, text in json.load(sys.stdin).items():\n" +
		"    os.makedirs(os.path.dirname(name) or '.', exist_ok=True)\n" +
		"    open(name, 'w').write(text)\n"
	r, err := e.box.sb.Exec(ctx, sandbox.ExecRequest{
		Cmd: []string{"python3", "-c", write}, Stdin: bytes.NewReader(in), Env: pyEnv, Timeout: 10 * time.Second,
	})
	if err != nil {
		return e.fault(err)
	}
	if r.ExitCode != 0 {
		return gym.InfraFault("task_files", fmt.Errorf("writing the task's files: exit %d: %s", r.ExitCode, bytes.TrimSpace(r.Stderr)))
	}
	return nil
}

// Tools implements toolcall.Episode.
func (e *episode) Tools() []toolcall.Tool {
	state := "Each call runs in a fresh Python process: nothing is kept between calls, so define everything a call uses in it."
	if e.opts.mode == ModeSession {
		state = "Calls share one Python interpreter: variables, functions and imports persist between calls " +
			"(a call that times out restarts it, and its state is lost)."
	}
	desc := fmt.Sprintf("Run Python 3 code and return what it printed (stdout and stderr, tracebacks included). "+
		"The value of a final expression is printed too, as in a notebook. %s "+
		"Limits: %s per call, %s of memory, no network; output over %d KiB is cut in the middle. "+
		"The standard library is available (fractions, math, itertools).",
		state, e.opts.timeout, sizeString(e.memory()), MaxOutput>>10)
	return []toolcall.Tool{{
		Name:        ToolCode,
		Description: desc,
		Parameters: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","minLength":1,` +
			`"description":"Python source to run; print what you want to see."}},"required":["code"]}`),
	}}
}

func (e *episode) memory() int64 { return e.d.spec.Limits.MemoryBytes }

// Opening implements toolcall.Episode.
func (e *episode) Opening() string {
	return e.problem.text + "\n\n" +
		"You may run Python with the code_interpreter tool. " +
		"When you know the answer, reply with a message that gives it as \\boxed{...} (an exact value: " +
		"an integer, or a fraction in lowest terms such as \\boxed{3/4}); that message ends the episode."
}

// stepMargin is what a call leaves of the step's deadline, so that a slow
// cell is its result ("timed out"), not a failed step.
const stepMargin = 5 * time.Second

// Call implements toolcall.Episode: code_interpreter runs the code.
func (e *episode) Call(ctx context.Context, name string, args json.RawMessage) (toolcall.Result, error) {
	if name != ToolCode {
		return toolcall.Result{}, toolcall.Errorf("Error: unknown tool %q. The tool is %s.", name, ToolCode)
	}
	var a struct {
		Code *string `json:"code"`
	}
	if err := json.Unmarshal(args, &a); err != nil || a.Code == nil {
		return toolcall.Result{}, toolcall.Errorf(`Error: %s takes {"code": string}: the Python source to run.`, ToolCode)
	}
	code := *a.Code
	switch {
	case strings.TrimSpace(code) == "":
		return toolcall.Result{}, toolcall.Errorf(`Error: "code" is empty: send the Python source to run.`)
	case len(code) > MaxCodeBytes:
		return toolcall.Result{}, toolcall.Errorf(`Error: "code" is %d bytes; at most %d are accepted.`, len(code), MaxCodeBytes)
	}
	timeout := e.opts.timeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - stepMargin; left < timeout {
			timeout = max(left, 100*time.Millisecond)
		}
	}
	ran := e.ran
	e.ran = true
	var res toolcall.Result
	var err error
	if e.opts.mode == ModeSession {
		res, err = e.runSession(ctx, code, timeout)
	} else {
		res, err = e.runOnce(ctx, code, timeout)
	}
	if err != nil && ran {
		err = e.blame(err)
	}
	return res, err
}

// blame labels a failure of the interpreter after the agent's code has run
// in the sandbox: one the agent broke in a live sandbox (sbopen.AgentBroke:
// its code removed python3, say) is answered as the call's error; a
// sandbox that died, and a deadline, stay as they are.
func (e *episode) blame(err error) error {
	if !sbopen.AgentBroke(e.box.sb, err) {
		return err
	}
	var fe *gym.FaultError
	if errors.As(err, &fe) {
		err = fe.Err
	}
	return toolcall.Errorf("Error: the Python interpreter is not available (code that ran before in this sandbox may have broken it): %v", err)
}

// runOnce runs the code in a fresh python3 process.
func (e *episode) runOnce(ctx context.Context, code string, timeout time.Duration) (toolcall.Result, error) {
	r, err := e.box.sb.Exec(ctx, sandbox.ExecRequest{
		Cmd: argv("once"), Stdin: strings.NewReader(code), Env: pyEnv, Timeout: timeout, MaxOutput: MaxOutput,
	})
	if err != nil {
		return toolcall.Result{}, e.fault(err)
	}
	out := append(r.Stdout, r.Stderr...)
	var note string
	switch {
	case r.TimedOut:
		note = fmt.Sprintf("[timed out after %s: the process was killed]", timeout.Round(time.Millisecond))
	case r.ExitCode == 127 && len(r.Stdout) == 0 && strings.Contains(string(r.Stderr), "python3"):
		// The driver never ran (a cell's stderr goes to stdout).
		return toolcall.Result{}, gym.InfraFault("no_python", fmt.Errorf("the sandbox has no python3: %s", strings.TrimSpace(string(r.Stderr))))
	case r.ExitCode > 128:
		note = e.killedNote("the process", r.ExitCode-128)
	case r.ExitCode > 1: // 1 is a cell that raised: its traceback says so
		note = fmt.Sprintf("[the process exited with code %d]", r.ExitCode)
	}
	return toolcall.Result{Content: render(out, note)}, nil
}

// runSession runs the code in the episode's interpreter, restarting it
// when the cell ended it.
func (e *episode) runSession(ctx context.Context, code string, timeout time.Duration) (toolcall.Result, error) {
	b := e.box
	if b.interp == nil || b.interp.proc == nil {
		if err := e.begin(ctx); err != nil {
			return toolcall.Result{}, err
		}
	}
	out, how, exit, err := b.interp.run(ctx, code, timeout)
	if err != nil {
		b.interp.kill()
		b.interp = nil
		return toolcall.Result{}, e.fault(err)
	}
	var note string
	switch how {
	case cellTimedOut:
		note = fmt.Sprintf("[timed out after %s: the interpreter was killed and restarted; "+
			"its state (variables, functions, imports) is lost]", timeout.Round(time.Millisecond))
	case cellExited:
		if exit > 128 {
			note = e.killedNote("the interpreter", exit-128)
		} else {
			note = fmt.Sprintf("[the interpreter exited with code %d]", exit)
		}
		note = strings.TrimSuffix(note, "]") + "; it was restarted and its state (variables, functions, imports) is lost]"
	}
	if how != cellDone {
		b.interp = nil
		if err := e.begin(ctx); err != nil {
			return toolcall.Result{}, err
		}
	}
	return toolcall.Result{Content: render(out.Bytes(), note)}, nil
}

func (e *episode) killedNote(who string, sig int) string {
	if sig == 9 {
		return fmt.Sprintf("[%s was killed (signal 9): it may have run out of memory; the limit is %s]", who, sizeString(e.memory()))
	}
	return fmt.Sprintf("[%s was killed by signal %d]", who, sig)
}

// render is a call's result: the output (valid UTF-8), then a note on its
// own line; "(no output)" when both are empty.
func render(out []byte, note string) string {
	s := string(out)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if note != "" {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += note
	}
	if s == "" {
		return "(no output)"
	}
	return s
}

// fault labels an error of the episode's sandbox (sbopen.Fault).
func (e *episode) fault(err error) error { return sbopen.Fault(e.box.sb, err) }

// reminder answers a message that holds no \boxed{} answer.
const reminder = `That message has no final answer. When you have it, reply with a message that gives it as \boxed{...}; ` +
	`to run Python, call code_interpreter.`

// Say implements toolcall.Episode: a message that holds \boxed{...} (or,
// with text_action "final", any message) is the final answer and ends the
// episode; another is answered by a reminder.
func (e *episode) Say(_ context.Context, message string) (string, bool, error) {
	if _, ok := ExtractBoxed(message); ok || e.opts.textFinal {
		e.final = &message
		return "", true, nil
	}
	return reminder, false, nil
}

// Verify implements toolcall.Episode: 1 when the final message's last
// \boxed{} equals the reference after normalisation (Match), else 0. The
// info says what was read and why it matched or not.
func (e *episode) Verify(context.Context) (float64, gym.Info, error) {
	want := Normalize(e.problem.answer).String()
	if e.final == nil {
		return 0, gym.Info{"match": false, "expected": want, "reason": "the episode ended without a final message"}, nil
	}
	boxed, ok := ExtractBoxed(*e.final)
	if !ok {
		return 0, gym.Info{"match": false, "expected": want, "reason": `no \boxed{...} in the final message`}, nil
	}
	v := Match(boxed, e.problem.answer)
	info := gym.Info{"match": v.Match, "answer": v.Answer, "got": v.Got, "expected": v.Expected, "reason": v.Reason}
	if v.Match {
		return 1, info, nil
	}
	return 0, info, nil
}

// Close implements toolcall.Episode: the sandbox is closed, with every
// process in it.
func (e *episode) Close(ctx context.Context) error {
	if e.box == nil {
		return nil
	}
	b := e.box
	e.box = nil
	return b.close(ctx)
}

// Restart starts the next episode of the same Env in this episode's
// sandbox, and ends this one (an Env that resets calls it in place of
// Close and Domain.Start; see the package doc, Sandboxes). The sandbox is
// returned to the state it had before the first cell ran: the first
// restart takes a fresh sandbox and snapshots it (a sandbox.Snapshotter),
// later ones restore that snapshot, which is much faster than a new
// sandbox. On an error everything is released, as after a failed Start.
func (e *episode) Restart(ctx context.Context, task *gym.Task, _ int64, opts gym.Options) (toolcall.Episode, error) {
	b := e.box
	e.box = nil
	release := func() {
		if b != nil {
			b.close(context.WithoutCancel(ctx))
			b = nil
		}
	}
	prob, err := problemOf(task)
	if err != nil {
		release()
		return nil, gym.InfraFault("bad_task", err)
	}
	o, err := parseOptions(opts, prob.mode)
	if err != nil {
		release()
		return nil, gym.AgentFault("bad_option", fmt.Errorf("%s: %w", KindName, err))
	}
	if b != nil {
		if b.snap == nil {
			release()
		} else {
			// Restore ends every process in the sandbox, the interpreter
			// too, which is then reaped.
			err := b.sb.(sandbox.Snapshotter).Restore(ctx, b.snap)
			b.interp.kill()
			b.interp = nil
			if err != nil {
				release()
				if ctx.Err() != nil {
					return nil, err
				}
			}
		}
	}
	if b == nil {
		if b, err = e.d.newBox(ctx); err != nil {
			return nil, err
		}
		if b.snap, err = sandbox.TrySnapshot(ctx, b.sb); err != nil {
			release()
			return nil, sbopen.Fault(nil, fmt.Errorf("snapshotting the sandbox: %w", err))
		}
	}
	ep := &episode{d: e.d, box: b, task: task, problem: prob, opts: o}
	if err := ep.writeFiles(ctx); err != nil {
		release()
		return nil, err
	}
	if err := ep.begin(ctx); err != nil {
		release()
		return nil, err
	}
	return ep, nil
}
