package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/envs/internal/shelltool"
	"github.com/nextstate-rl/nextstate/envs/internal/tools"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/pool"
)

// Env is one terminal-v1 environment: a sandbox, the persistent shell in
// it, and the task whose tests judge the episode.
type Env struct {
	inst        *instance // the Manager's terminal-v1
	backend     sandbox.Backend
	pool        *pool.Pool // nil: create sandboxes directly
	backendName string
	baseImage   string
	runner      string // the tests_runner setting

	// The current task.
	task    *gym.Task
	files   fs.FS // the task's folder, nil for a task without files
	tests   *VerifierData
	df      *Dockerfile // the task's Dockerfile, nil when it has none
	build   taskBuild   // where the image is built from (the compose file's main service)
	data    TaskData
	workdir string

	box shelltool.Box // the agent's sandbox and shell

	textFinal bool // a text-only action ends the episode
	typed     bool // shell_send_keys ran this episode: Verify lets the terminal settle

	closing sync.WaitGroup // releases in the background (background); Close waits
}

// Reset implements gym.Env. It brings the sandbox to the task's initial
// state: a Restore of the snapshot taken after the first build when the
// sandbox is a sandbox.Snapshotter and the task is the same, else a new
// sandbox. The observation is the task's instruction; info "tools" holds
// the tool schemas in the OpenAI tools shape.
//
// Options: "text_action": "shell" (default: a text part is a command) or
// "final" (a text-only action ends the episode, as a chat model's final
// answer does).
func (e *Env) Reset(ctx context.Context, task *gym.Task, _ int64, opts gym.Options) (gym.Observation, gym.Info, error) {
	e.textFinal, e.typed = false, false
	if v, ok := opts["text_action"]; ok {
		switch v {
		case "final":
			e.textFinal = true
		case "shell", "":
		default:
			return gym.Observation{}, nil, gym.AgentFault("bad_option",
				fmt.Errorf(`terminal-v1: reset option "text_action" is %v; want "shell" or "final"`, v))
		}
	}
	files, err := taskFS(task)
	if err != nil {
		return gym.Observation{}, nil, gym.InfraFault("bad_task", err)
	}
	var df *Dockerfile
	bld := taskBuild{Context: ".", Dockerfile: "Dockerfile"}
	if files != nil {
		if bld, err = readTaskBuild(files); err != nil {
			return gym.Observation{}, nil, gym.InfraFault("bad_task", fmt.Errorf("task %s: %w", task.ID, err))
		}
		if len(bld.Unsupported) > 0 {
			return gym.Observation{}, nil, gym.InfraFault("unsupported_task", fmt.Errorf("task %s: its docker-compose file asks for what nextstate does not do: %s",
				task.ID, strings.Join(bld.Unsupported, "; ")))
		}
		if b, err := fs.ReadFile(files, bld.Dockerfile); err == nil {
			if df, err = ParseDockerfile(b); err != nil {
				return gym.Observation{}, nil, gym.InfraFault("bad_task", fmt.Errorf("task %s: %s: %w", task.ID, bld.Dockerfile, err))
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return gym.Observation{}, nil, gym.InfraFault("bad_task", err)
		}
	}
	tests, err := testsOf(task, files)
	if err != nil {
		return gym.Observation{}, nil, gym.InfraFault("bad_task", fmt.Errorf("task %s: %w", task.ID, err))
	}
	var data TaskData
	if len(task.Data) > 0 {
		if err := json.Unmarshal(task.Data, &data); err != nil {
			return gym.Observation{}, nil, gym.InfraFault("bad_task", fmt.Errorf("task %s: terminal-v1 data: %w", task.ID, err))
		}
	}
	e.task, e.files, e.tests, e.df, e.data, e.build = task, files, tests, df, data, bld
	if err := e.box.Reset(ctx, task, e.makeSandbox); err != nil {
		return gym.Observation{}, nil, err
	}
	instr := task.Instruction
	if instr == "" {
		instr = "You are in a shell. There is no task: explore, then call submit."
	}
	info := gym.Info{
		gym.InfoTools: OpenAITools(),
		"workdir":     e.workdir,
		"sandbox":     e.backendName,
	}
	return gym.TextObservation(instr), info, nil
}

// makeSandbox creates the task's sandbox in its initial state (prepare)
// for the box, which snapshots it.
func (e *Env) makeSandbox(ctx context.Context) (sandbox.Sandbox, error) {
	sb, workdir, err := e.prepare(ctx)
	if err == nil {
		e.workdir = workdir
	}
	return sb, err
}

// prepare creates a sandbox of the current task in its initial state: from
// the task's image where the backend builds images (sandbox.ImageBuilder:
// docker), else with its Dockerfile's steps applied in the sandbox (bwrap).
// It returns the sandbox (also with an error, once it exists: the
// caller closes it) and its working directory. The agent's sandbox is one;
// the verifier's is another, made the same way after the agent's last
// action.
func (e *Env) prepare(ctx context.Context) (sandbox.Sandbox, string, error) {
	task, files, df, data := e.task, e.files, e.df, e.data
	// No per-task label: tasks with the same workdir and environment
	// share warm sandboxes.
	spec := sandbox.Spec{Network: data.Network}
	if df != nil {
		spec.Workdir = df.WorkingDir()
		spec.Env = df.Env
	}
	var setup []DockerStep
	ib, builds := e.backend.(sandbox.ImageBuilder)
	taskImage := builds && df != nil
	switch {
	case taskImage:
		img, err := e.inst.image(ctx, ib, task, files, e.build, e.baseImage)
		if err != nil {
			return nil, "", gym.InfraFault("task_build", fmt.Errorf("task %s: building its image: %w", task.ID, err))
		}
		spec.Image = img
	case builds:
		spec.Image = e.baseImage
	case df != nil:
		setup = df.Steps
	}
	var sb sandbox.Sandbox
	var err error
	// Task images are one spec each: warming every task's would keep two
	// containers per task; they are made on demand (and reset by Restore).
	if e.pool != nil && !taskImage {
		sb, err = e.pool.Acquire(ctx, spec)
	} else {
		sb, err = e.backend.Create(ctx, spec)
	}
	if err != nil {
		return nil, "", sbopen.Fault(nil, fmt.Errorf("creating the sandbox: %w", err))
	}
	workdir := spec.Workdir
	if workdir == "" {
		workdir = pwd(ctx, sb)
	}
	var cfs fs.FS
	if files != nil {
		if cfs, err = e.build.contextFS(files); err != nil {
			return sb, "", gym.InfraFault("task_build", fmt.Errorf("task %s: build context %s: %w", task.ID, e.build.Context, err))
		}
	}
	if err := applySetup(ctx, sb, cfs, setup); err != nil {
		if errors.Is(err, sandbox.ErrGone) || errors.Is(err, context.DeadlineExceeded) {
			return sb, "", sbopen.Fault(nil, err)
		}
		return sb, "", gym.InfraFault("task_build", fmt.Errorf("task %s: %w", task.ID, err))
	}
	return sb, workdir, nil
}

// pwd asks a sandbox for its working directory.
func pwd(ctx context.Context, sb sandbox.Sandbox) string {
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"pwd"}, Timeout: 30 * time.Second})
	if err != nil || r.ExitCode != 0 {
		return ""
	}
	return strings.TrimSpace(string(r.Stdout))
}

// Step implements gym.Env: each tool call (or text command) runs in order
// and is answered by one part, a tool_result for a tool call and a text
// part for a text command (shelltool.Step). submit, or a final text
// with text_action "final", terminates the episode; calls after it are not
// run.
func (e *Env) Step(ctx context.Context, a gym.Action) (gym.Transition, error) {
	if e.box.SB == nil || e.box.Shell == nil {
		return gym.Transition{}, gym.InfraFault("no_sandbox", errors.New("terminal-v1: step before a successful reset"))
	}
	return shelltool.Step(ctx, toolset, a, e.textFinal, decode, e.run)
}

// run runs one decoded call. Errors are the sandbox's (or ctx's); a
// *tools.ToolError is the agent's to handle.
func (e *Env) run(ctx context.Context, c call, info gym.Info) (string, error) {
	switch c.Name {
	case ToolExec:
		return e.box.Exec(ctx, c.Command, c.Timeout, info)
	case ToolSendKeys:
		e.typed = true
		if err := e.box.Shell.SendKeys(ctx, c.Keys...); err != nil {
			return "", e.box.ToolFault("the terminal", err)
		}
		scr, err := e.settle(ctx, c.Wait)
		if err != nil {
			return "", e.box.ToolFault("the terminal", err)
		}
		return scr, nil
	case ToolView:
		scr, err := e.box.Shell.Screen(ctx)
		if err != nil {
			return "", e.box.ToolFault("the terminal", err)
		}
		return trimScreen(scr), nil
	case ToolWrite:
		p := c.Path
		if !path.IsAbs(p) {
			p = path.Join(e.workdir, p)
		}
		if err := writeFile(ctx, e.box.SB, p, []byte(c.Content)); err != nil {
			if errors.Is(err, errWrite) {
				return "", &tools.ToolError{Message: err.Error()}
			}
			return "", e.box.ToolFault("write_file", err)
		}
		return fmt.Sprintf("wrote %d bytes to %s", len(c.Content), p), nil
	case ToolSubmit:
		return "submitted: the task's tests will decide the outcome", nil
	}
	return "", fmt.Errorf("terminal-v1: no handler for tool %q", c.Name)
}

// settle waits for the screen to stop changing (or wait, when the agent
// said how long) and returns it.
func (e *Env) settle(ctx context.Context, wait time.Duration) (string, error) {
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
		}
		scr, err := e.box.Shell.Screen(ctx)
		return trimScreen(scr), err
	}
	const quiet, most = 150 * time.Millisecond, 3 * time.Second
	deadline := time.Now().Add(most)
	prev, err := e.box.Shell.Screen(ctx)
	if err != nil {
		return "", err
	}
	still := time.Now()
	tick := time.NewTicker(30 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
		}
		scr, err := e.box.Shell.Screen(ctx)
		if err != nil {
			return "", err
		}
		if scr != prev {
			prev, still = scr, time.Now()
			continue
		}
		if time.Since(still) >= quiet {
			break
		}
	}
	return trimScreen(prev), nil
}

// MaxTypedSettle bounds how long Verify waits, at the end of an episode
// whose agent typed into the terminal, for what it typed to be processed
// (settleTyped).
const MaxTypedSettle = 30 * time.Second

// settleTyped waits, before the agent's processes are ended, until what
// the agent typed into the terminal has been processed: the terminal's
// shell holds the foreground again (the commands typed have finished, and
// input typed ahead of them has been read) and the screen has not changed
// for a moment. A program left running in the foreground (an editor, a
// REPL, a server) is waited for up to MaxTypedSettle, and named in the
// info. Terminal-Bench leaves such processes running while the tests run;
// here nothing of the agent's runs then, so this wait is what lets a
// command typed with a short wait finish, as it would have there.
func (e *Env) settleTyped(ctx context.Context) gym.Info {
	tw, ok := e.box.Shell.(sandbox.TerminalWatcher)
	if !e.typed || !ok {
		return nil
	}
	const quiet, poll = 300 * time.Millisecond, 50 * time.Millisecond
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, MaxTypedSettle)
	defer cancel()
	var prev, program string
	var still time.Time
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		idle, prog, err := tw.TerminalForeground(ctx)
		if err != nil {
			if ctx.Err() == nil {
				// A terminal the agent broke has nothing left to settle.
				return gym.Info{"error": err.Error()}
			}
			break
		}
		scr, err := e.box.Shell.Screen(ctx)
		if err != nil {
			if ctx.Err() == nil {
				return gym.Info{"error": err.Error()}
			}
			break
		}
		program = prog
		now := time.Now()
		if !idle || scr != prev || still.IsZero() {
			prev, still = scr, now
		} else if now.Sub(still) >= quiet {
			return gym.Info{"settled_ms": now.Sub(start).Milliseconds()}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
			continue
		}
		break
	}
	info := gym.Info{"busy": true, "waited_ms": time.Since(start).Milliseconds()}
	if program != "" {
		info["foreground"] = program
	}
	return info
}

// trimScreen drops trailing blank lines and spaces of a captured screen.
func trimScreen(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// background runs f, a release of something the step no longer needs
// (a verifier's sandbox, a dead shell), in a goroutine Close waits for.
func (e *Env) background(f func()) {
	e.closing.Add(1)
	go func() {
		defer e.closing.Done()
		f()
	}()
}

// Close implements gym.Env. The sandbox goes first: it ends every
// process, the shell's too. It returns once what background released is
// released as well.
func (e *Env) Close(ctx context.Context) error {
	defer e.closing.Wait()
	return e.box.Close(ctx)
}
