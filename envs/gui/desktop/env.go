package desktop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/gym"
)

// Settling: after an action the step waits until the screen has not
// changed for StepQuiet (at most StepSettle) before its screenshot; a
// reset waits for ResetQuiet once the app's window is up; the evaluator
// starts once the screen has been still for VerifyQuiet (at most
// VerifySettle).
const (
	StepQuiet    = 40 * time.Millisecond
	StepSettle   = 3 * time.Second
	ResetQuiet   = 400 * time.Millisecond
	VerifyQuiet  = 200 * time.Millisecond
	VerifySettle = 3 * time.Second
)

// Env is one desktop-v1 environment: an Xvfb of its own (kept across
// resets while the screen size stays), a connection to it, and the
// processes of the current episode.
type Env struct {
	inst *instance // the Manager's desktop-v1
	x    *xserver
	d    *Display
	ps   *procs
	home string

	task *gym.Task
	data TaskData
	grid bool
	// closed is set by Close; a closed Env refuses resets.
	closeMu sync.Mutex
	closed  bool
}

// Reset implements gym.Env: it ends the previous episode's processes,
// starts (or keeps) the display, empties the home directory, runs the
// task's setup, opens its app and waits for it to settle. The observation
// is the instruction and a screenshot.
//
// Options: "coords": "pixels" (default) or "grid" (actions use a 0..999
// grid over the screenshot).
func (e *Env) Reset(ctx context.Context, task *gym.Task, _ int64, opts gym.Options) (gym.Observation, gym.Info, error) {
	if e.closed {
		return gym.Observation{}, nil, gym.InfraFault("closed", errors.New("desktop-v1: reset of a closed env"))
	}
	grid := false
	for k, v := range opts {
		switch {
		case k == "coords" && (v == "pixels" || v == ""):
		case k == "coords" && v == "grid":
			grid = true
		case k == "coords":
			return gym.Observation{}, nil, gym.AgentFault("bad_option", fmt.Errorf(`desktop-v1: reset option "coords" is %v; want "pixels" or "grid"`, v))
		default:
			return gym.Observation{}, nil, gym.AgentFault("bad_option", fmt.Errorf(`desktop-v1: unknown reset option %q; the one option is "coords" ("pixels" or "grid")`, k))
		}
	}
	data, err := parseData(task)
	if err != nil {
		return gym.Observation{}, nil, gym.InfraFault("bad_task", err)
	}
	if _, err := parseVerifier(task); err != nil {
		return gym.Observation{}, nil, gym.InfraFault("bad_task", err)
	}
	if e.ps != nil {
		e.ps.killAll()
	}
	if e.x != nil && (!e.x.alive() || e.x.width != data.Width || e.x.height != data.Height) {
		e.dropDisplay()
	}
	if e.x == nil {
		if err := e.startDisplay(ctx, data.Width, data.Height); err != nil {
			return gym.Observation{}, nil, err
		}
	}
	if err := e.cleanDisplay(ctx); err != nil {
		return gym.Observation{}, nil, e.fault(err)
	}
	e.task, e.data, e.grid = task, data, grid

	e.home = filepath.Join(e.x.dir, "home")
	if err := os.RemoveAll(e.home); err != nil {
		return gym.Observation{}, nil, gym.InfraFault("home", err)
	}
	if err := os.MkdirAll(filepath.Join(e.home, ".tmp"), 0o700); err != nil {
		return gym.Observation{}, nil, gym.InfraFault("home", err)
	}
	for i, c := range data.Setup {
		p, err := e.ps.run(ctx, e.x, e.home, c, setupTimeout)
		if err == nil && p.err != nil {
			err = p.err
		}
		if err != nil {
			if ctx.Err() != nil {
				return gym.Observation{}, nil, ctx.Err()
			}
			out := ""
			if p != nil {
				out = p.output()
			}
			return gym.Observation{}, nil, gym.InfraFault("task_setup", fmt.Errorf("task %s: setup command %d (%q): %v\n%s", task.ID, i+1, c, err, out))
		}
	}
	if err := e.openApp(ctx, data); err != nil {
		return gym.Observation{}, nil, err
	}
	png, err := e.d.Screenshot(ctx)
	if err != nil {
		return gym.Observation{}, nil, e.fault(err)
	}
	instr := task.Instruction
	if instr == "" {
		instr = "There is no task: look around the desktop, then send done."
	}
	coords := "pixels"
	if grid {
		coords = "grid"
	}
	info := gym.Info{
		"width": data.Width, "height": data.Height, "coords": coords,
		"display": ":" + strconv.Itoa(e.x.num), "sandbox": e.inst.sandbox,
		gym.InfoTools: []map[string]any{gui.Tool()},
	}
	return gym.Observation{Parts: []gym.Part{gym.TextPart(instr), e.image(png)}}, info, nil
}

// startDisplay starts an Xvfb and connects to it.
func (e *Env) startDisplay(ctx context.Context, width, height int) error {
	x, err := startXvfb(ctx, e.inst, width, height)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return gym.InfraFault("display_start", err)
	}
	d, err := Dial(ctx, x.num, x.cookie)
	if err != nil {
		x.close()
		e.inst.alloc.release(x.num)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return gym.InfraFault("display_start", err)
	}
	e.x, e.d = x, d
	e.ps = &procs{wg: &e.inst.wg, marker: e.inst.owner + "/" + strconv.Itoa(x.num) + "/app",
		mode: e.inst.sandbox, hide: e.inst.hide}
	return nil
}

// dropDisplay closes the connection and stops the Xvfb.
func (e *Env) dropDisplay() {
	if e.ps != nil {
		e.ps.killAll()
	}
	if e.d != nil {
		e.d.Close()
		e.d = nil
	}
	if e.x != nil {
		e.x.close()
		e.inst.alloc.release(e.x.num)
		e.x = nil
	}
}

// cleanDisplay brings the display to an episode's first state: no client
// windows (those of an earlier episode's killed processes go), the spare
// keycodes unmapped, the pointer in the middle, no cut buffers.
func (e *Env) cleanDisplay(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		n, err := e.d.Windows(wctx)
		if err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				break // a window that will not go: the screenshot shows it
			}
			return err
		}
		if n == 0 {
			break
		}
		if err := sleep(wctx, 10*time.Millisecond); err != nil {
			break
		}
	}
	if err := e.d.ResetKeymap(ctx); err != nil {
		return err
	}
	if err := e.d.ClearCutBuffers(ctx); err != nil {
		return err
	}
	return e.d.Move(ctx, e.x.width/2, e.x.height/2)
}

// openApp starts the task's app and waits until a window is up and the
// screen has been still for ResetQuiet, at most settle_ms.
func (e *Env) openApp(ctx context.Context, data TaskData) error {
	settle := DefaultSettle
	if data.SettleMs > 0 {
		settle = time.Duration(data.SettleMs) * time.Millisecond
	}
	deadline := time.Now().Add(settle)
	if data.App != "" {
		app, err := e.ps.start(e.x, e.home, data.App)
		if err != nil {
			return gym.InfraFault("app_start", fmt.Errorf("task %s: app %q: %w", e.task.ID, data.App, err))
		}
		for {
			n, err := e.d.Windows(ctx)
			if err != nil {
				return e.fault(err)
			}
			if n > 0 || !time.Now().Before(deadline) {
				break
			}
			if app.exited() && app.err != nil {
				return gym.InfraFault("app_failed", fmt.Errorf("task %s: app %q exited before opening a window (%v):\n%s",
					e.task.ID, data.App, app.err, app.output()))
			}
			if err := sleep(ctx, 10*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return e.fault(e.d.Settle(ctx, ResetQuiet, max(time.Until(deadline), ResetQuiet)))
}

// Step implements gym.Env: it parses the action, maps grid coordinates,
// applies it, waits for the screen to settle and returns a screenshot.
// done terminates the episode. The agent's mistakes are observations: a
// text part saying what was wrong, the screenshot, and info "error" (a
// short reason such as bad_action, bad_key, no_elements).
func (e *Env) Step(ctx context.Context, a gym.Action) (gym.Transition, error) {
	if e.d == nil {
		return gym.Transition{}, gym.InfraFault("no_display", errors.New("desktop-v1: step before a successful reset"))
	}
	if !e.x.alive() {
		return gym.Transition{}, gym.InfraFault("display_died", fmt.Errorf("Xvfb :%d exited (%v)", e.x.num, e.x.exitErr))
	}
	g, err := gui.ParseAction(a)
	if err != nil {
		return e.mistake(ctx, err)
	}
	w, h := e.d.Size()
	if e.grid {
		g = gui.ToPixels(g, w, h)
	}
	if err := gui.InBounds(g, w, h); err != nil {
		return e.mistake(ctx, err)
	}
	var tr gym.Transition
	tr.Info = gym.Info{"action": g.Action}
	switch g.Action {
	case "done":
		tr.Terminated = true
	case "wait":
		if err := sleep(ctx, time.Duration(g.Ms)*time.Millisecond); err != nil {
			return gym.Transition{}, err
		}
	case "click_element":
		return e.mistake(ctx, gym.AgentFault("no_elements", errors.New(
			"click_element is not available on a desktop: there is no element list; click at x, y on the screenshot instead")))
	default:
		if err := gui.Apply(ctx, e.d, g); err != nil {
			var fe *gym.FaultError
			if errors.As(err, &fe) && fe.Fault == gym.FaultAgent {
				return e.mistake(ctx, err)
			}
			return gym.Transition{}, e.fault(err)
		}
		if err := e.d.Settle(ctx, StepQuiet, StepSettle); err != nil {
			return gym.Transition{}, e.fault(err)
		}
	}
	png, err := e.d.Screenshot(ctx)
	if err != nil {
		return gym.Transition{}, e.fault(err)
	}
	tr.Observation = gym.Observation{Parts: []gym.Part{e.image(png)}}
	return tr, nil
}

// mistake answers an agent's error: what was wrong, and the screen.
func (e *Env) mistake(ctx context.Context, err error) (gym.Transition, error) {
	reason, msg := "bad_action", err.Error()
	var fe *gym.FaultError
	if errors.As(err, &fe) {
		reason, msg = fe.Reason, fe.Err.Error()
	}
	png, serr := e.d.Screenshot(ctx)
	if serr != nil {
		return gym.Transition{}, e.fault(serr)
	}
	return gym.Transition{
		Observation: gym.Observation{Parts: []gym.Part{gym.TextPart("error: " + msg), e.image(png)}},
		Info:        gym.Info{"error": reason},
	}, nil
}

func (e *Env) image(png []byte) gym.Part {
	w, h := e.d.Size()
	return gym.Part{Type: gym.PartImage, Image: &gym.Blob{MIME: "image/png", Data: png, Size: int64(len(png)), Width: w, Height: h}}
}

// fault labels an error of the display: a display that died is the
// infrastructure's fault; ctx's errors pass through for the session to
// label.
func (e *Env) fault(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		if e.x != nil && !e.x.alive() {
			return gym.InfraFault("display_died", fmt.Errorf("Xvfb :%d exited: %w", e.x.num, err))
		}
		return err
	case errors.Is(err, ErrDisplayGone) || e.x != nil && !e.x.alive():
		return gym.InfraFault("display_died", err)
	}
	var fe *gym.FaultError
	if errors.As(err, &fe) {
		return err
	}
	return gym.InfraFault("display", err)
}

// Verify implements gym.Verifier: it runs the task's evaluator in the
// home directory, with the session's display, after the last action, once
// the screen has been still for VerifyQuiet. The
// reward is the last non-empty line of its stdout when that is a number
// in [0,1]; otherwise exit status 0 scores 1 and other statuses below
// 126 score 0. An evaluator that cannot run (status 126 or 127, the
// shell's "not executable" and "not found"), times out, is killed by a
// signal (or exits 128 and above, as shells report that) or prints a
// number outside [0,1] is an error: the verdict is unknown.
func (e *Env) Verify(ctx context.Context) (float64, gym.Info, error) {
	v, err := parseVerifier(e.task)
	if err != nil {
		return 0, nil, err
	}
	timeout := DefaultEvaluatorTimeout
	if v.Timeout > 0 {
		timeout = time.Duration(v.Timeout)
	}
	// What the last actions started (a command typed with Enter, a file
	// being saved) shows on the screen: let it finish drawing first.
	if err := e.d.Settle(ctx, VerifyQuiet, VerifySettle); err != nil {
		return 0, nil, e.fault(err)
	}
	p, err := e.ps.run(ctx, e.x, e.home, v.Evaluator, timeout)
	if err != nil {
		return 0, nil, fmt.Errorf("evaluator: %w", err)
	}
	info := gym.Info{"evaluator_output": p.output()}
	score, err := scoreOf(p, p.out.String())
	if err != nil {
		return 0, info, err
	}
	info["exit_code"] = p.cmd.ProcessState.ExitCode()
	return score, info, nil
}

// scoreOf reads an evaluator's verdict (see Verify).
func scoreOf(p *proc, out string) (float64, error) {
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 0, fmt.Errorf("evaluator killed by %v", ws.Signal())
	}
	switch code := p.cmd.ProcessState.ExitCode(); {
	case code == 126 || code == 127:
		return 0, fmt.Errorf("evaluator could not run (exit status %d: a command not found or not executable):\n%s", code, p.output())
	case code >= 128:
		return 0, fmt.Errorf("evaluator killed by signal %d (exit status %d)", code-128, code)
	case code != 0:
		return 0, nil
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	f, err := strconv.ParseFloat(last, 64)
	if err != nil {
		return 1, nil // no number: exit status 0 passed
	}
	if math.IsNaN(f) || f < 0 || f > 1 {
		return 0, fmt.Errorf("evaluator printed the score %s: want a number in [0,1]", last)
	}
	return f, nil
}

// Close implements gym.Env: it ends the processes, closes the display and
// stops the Xvfb. It is idempotent.
func (e *Env) Close(context.Context) error {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.dropDisplay()
	e.inst.forget(e)
	return nil
}
