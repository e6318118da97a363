package swe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// Env is one swe-v1 environment: the agent's sandbox with the repository
// at its base commit, the shell and editor in it, and the instance whose
// hidden tests judge the episode.
type Env struct {
	harness *Harness

	task *gym.Task
	in   *Instance
	repo *Repo

	sb     sandbox.Sandbox
	snap   sandbox.Snapshot // the initial state, when sb can snapshot
	built  string           // the key of what sb was built for
	shell  sandbox.Shell
	editor *Editor

	submitted bool
	diff      string
	diffErr   string
}

var _ gym.Verifier = (*Env)(nil)

// Reset implements gym.Env: a sandbox with the repository at its base
// commit (a Restore of the first one's snapshot when the task is the same
// and the sandbox can snapshot), a persistent shell in it, and an empty
// undo history. The observation is the instruction (the problem
// statement); info "tools" holds the tool schemas in the OpenAI tools
// shape, "workdir" the repository, "language" go or python.
func (e *Env) Reset(ctx context.Context, task *gym.Task, _ int64, _ gym.Options) (gym.Observation, gym.Info, error) {
	in, err := InstanceOf(task)
	if err != nil {
		return gym.Observation{}, nil, gym.InfraFault("bad_task", err)
	}
	old := e.shell
	e.shell = nil
	defer func() {
		if old != nil {
			old.Close()
		}
	}()
	e.submitted, e.diff, e.diffErr = false, "", ""
	key := task.ID + "\x00" + task.Dir + "\x00" + string(task.Data)
	if e.sb != nil && e.built == key && e.snap != nil {
		if err := e.sb.(sandbox.Snapshotter).Restore(ctx, e.snap); err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return gym.Observation{}, nil, err
			}
			e.dropSandbox(ctx)
		}
	} else {
		e.dropSandbox(ctx)
	}
	e.task, e.in = task, in
	if e.sb == nil {
		if err := e.build(ctx, in); err != nil {
			e.dropSandbox(ctx)
			return gym.Observation{}, nil, err
		}
		e.built = key
	}
	sh, err := sandbox.NewShell(ctx, e.sb)
	if err != nil {
		e.dropSandbox(ctx)
		return gym.Observation{}, nil, sandboxFault(err)
	}
	e.shell = sh
	e.editor = NewEditor(e.sb)
	instr := task.Instruction
	if instr == "" {
		instr = Instruction(in)
	}
	info := gym.Info{
		gym.InfoTools: OpenAITools(),
		"workdir":     Workdir,
		"language":    e.repo.Language,
		"instance_id": in.InstanceID,
		"sandbox":     e.harness.opts.Backend,
	}
	return gym.TextObservation(instr), info, nil
}

// build makes the agent's sandbox: the instance's image, the Go toolchain
// and module cache read-only for Go, the repository copied in; then a
// snapshot of it when the sandbox can.
func (e *Env) build(ctx context.Context, in *Instance) error {
	repo, err := e.harness.Prepare(ctx, in)
	if err != nil {
		return gym.InfraFault("bad_task", err)
	}
	e.repo = repo
	spec, err := e.harness.AgentSpec(in, repo)
	if err != nil {
		return gym.InfraFault("bad_task", fmt.Errorf("instance %s: %w", in.InstanceID, err))
	}
	spec.Labels = sandbox.MergeLabels(spec.Labels, map[string]string{"swe.instance": labelValue(in.InstanceID), "swe.role": "agent"})
	sb, err := e.harness.backend.Create(ctx, spec)
	if err != nil {
		return sandboxFault(fmt.Errorf("creating the sandbox: %w", err))
	}
	e.sb = sb
	if err := copyRepo(ctx, sb, repo); err != nil {
		return sandboxFault(err)
	}
	// A failed seed makes the agent's first build slow, not the episode
	// fail.
	if seed, err := e.harness.Seed(ctx, in, repo); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		slog.Warn("swe: no build cache seed for the agent", "instance", in.InstanceID, "err", err)
	} else if seed != "" {
		if err := copySeed(ctx, sb, seed); err != nil {
			return sandboxFault(err)
		}
	}
	snap, err := sandbox.TrySnapshot(ctx, sb)
	if err != nil {
		return sandboxFault(fmt.Errorf("snapshotting the initial state: %w", err))
	}
	e.snap = snap
	return nil
}

// Step implements gym.Env: each tool call (or text command) runs in order
// and is answered by one part, a tool_result for a tool call and a text
// part for a text command. submit terminates the episode (the diff is
// taken then); calls after it are not run.
func (e *Env) Step(ctx context.Context, a gym.Action) (gym.Transition, error) {
	if e.sb == nil || e.shell == nil {
		return gym.Transition{}, gym.InfraFault("no_sandbox", errors.New("swe-v1: step before a successful reset"))
	}
	calls := parseAction(a)
	var tr gym.Transition
	tr.Observation.Parts = []gym.Part{}
	infos := make([]gym.Info, 0, len(calls))
	for _, c := range calls {
		info := gym.Info{"tool": c.Name}
		var content string
		isErr := false
		switch {
		case tr.Terminated:
			content, isErr = "not run: submit ended the episode", true
		case c.Err != "":
			content, isErr = c.Err, true
			info["error"] = "bad_call"
		default:
			out, err := e.run(ctx, c, info)
			var ee *EditError
			switch {
			case errors.As(err, &ee):
				content, isErr = ee.Msg, true
				info["error"] = "tool_failed"
			case err != nil:
				return gym.Transition{}, err
			default:
				content = out
			}
			if c.Name == ToolSubmit {
				tr.Terminated = true
			}
		}
		infos = append(infos, info)
		if c.Text {
			tr.Observation.Parts = append(tr.Observation.Parts, gym.TextPart(content))
			continue
		}
		tr.Observation.Parts = append(tr.Observation.Parts, gym.Part{Type: gym.PartToolResult, ToolResult: &gym.ToolResult{
			CallID: c.ID, Name: c.Name, Content: content, IsError: isErr}})
	}
	if len(calls) == 0 {
		tr.Observation.Parts = append(tr.Observation.Parts, gym.TextPart(
			"nothing to do: the action has no tool call or command (tools: "+toolNames()+")"))
	}
	tr.Info = gym.Info{"calls": infos}
	return tr, nil
}

// run runs one valid call. An *EditError is the agent's mistake; other
// errors are the sandbox's (or ctx's).
func (e *Env) run(ctx context.Context, c call, info gym.Info) (string, error) {
	start := time.Now()
	defer func() { info["elapsed_ms"] = time.Since(start).Milliseconds() }()
	switch c.Name {
	case ToolExec:
		timeout := c.Timeout
		if dl, ok := ctx.Deadline(); ok {
			if left := time.Until(dl) - 3*sandbox.InterruptGrace - time.Second; left < timeout {
				timeout = max(left, 100*time.Millisecond)
			}
		}
		r, err := e.shell.Run(ctx, c.Command, timeout)
		if err != nil {
			return "", e.toolFault("the shell", err)
		}
		info["exit_code"] = r.ExitCode
		if r.TimedOut {
			info["timed_out"] = true
		}
		return formatExec(r, timeout), nil
	case ToolEditor:
		info["command"] = c.Edit.Command
		out, err := e.editor.Run(ctx, c.Edit)
		var ee *EditError
		if err != nil && !errors.As(err, &ee) {
			return "", e.toolFault("the editor", err)
		}
		return out, err
	case ToolSubmit:
		if err := e.takeDiff(ctx); err != nil {
			return "", e.fault(err)
		}
		info["diff_bytes"] = len(e.diff)
		files := DiffFiles(e.diff)
		info["files"] = files
		if e.diffErr != "" {
			return "submitted, but the diff could not be taken: " + e.diffErr, nil
		}
		return fmt.Sprintf("submitted: a diff of %d files (%s); the hidden tests will decide the outcome",
			len(files), strings.Join(files, ", ")), nil
	}
	return "", fmt.Errorf("swe-v1: no handler for tool %q", c.Name)
}

// diffScript stages everything (new files too; .git/info/exclude keeps
// caches out) and prints the diff against the base commit $1.
const diffScript = `git add -A >/dev/null && git diff --cached --binary --no-color --no-ext-diff "$1"`

// takeDiff ends every process of the agent's sandbox (sandbox.Killer:
// nothing the agent started changes the repository once it has
// submitted), then takes the agent's diff against the base commit. A
// repository the agent broke (.git removed), or tools it broke (git, bash)
// in a sandbox that still runs, leave the diff empty with the reason in
// diffErr: that is the agent's doing. Only a sandbox that died is the
// infrastructure's (nothing inside can end it: sandbox.KeeperLoop).
func (e *Env) takeDiff(ctx context.Context) error {
	if k, ok := e.sb.(sandbox.Killer); ok {
		if err := k.KillAll(ctx); err != nil {
			return err
		}
	}
	r, err := e.sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"bash", "-c", diffScript, "diff", e.repo.Commit},
		Dir: Workdir, Timeout: 5 * time.Minute, MaxOutput: 64 << 20})
	if err != nil {
		if !sbopen.AgentBroke(e.sb, err) {
			return e.fault(err)
		}
		e.submitted = true
		e.diff, e.diffErr = "", fmt.Sprintf("the diff could not be taken in the agent's sandbox: %v", err)
		return nil
	}
	e.submitted = true
	switch {
	case r.ExitCode != 0:
		e.diff, e.diffErr = "", fmt.Sprintf("git diff exited %d: %s", r.ExitCode, truncate(strings.TrimSpace(string(r.Stderr)), 2048))
	case r.Truncated:
		e.diff, e.diffErr = "", "the diff is larger than 64 MiB"
	default:
		e.diff = string(r.Stdout)
	}
	return nil
}

// Verify implements gym.Verifier: the diff taken at submit is evaluated by
// the harness in a fresh sandbox (see Harness.Evaluate). The reward is 1
// when the instance is resolved, else 0; the info holds the Result
// (per-test results, both fractions, the reason, the compiler's message)
// and the diff.
func (e *Env) Verify(ctx context.Context) (float64, gym.Info, error) {
	if e.in == nil {
		return 0, nil, errors.New("swe-v1: verify before a reset")
	}
	if !e.submitted {
		if err := e.takeDiff(ctx); err != nil {
			return 0, nil, sandboxFault(err)
		}
	}
	res, err := e.harness.Evaluate(ctx, e.in, e.diff)
	if err != nil {
		return 0, nil, gym.InfraFault("evaluation", err)
	}
	info := res.Info()
	info["model_patch"] = truncate(e.diff, 256<<10)
	if e.diffErr != "" {
		info["diff_error"] = e.diffErr
	}
	return res.Reward, info, nil
}

// Info is the result as gym.Info (its JSON fields).
func (r Result) Info() gym.Info {
	info := gym.Info{
		"instance_id":           r.InstanceID,
		"resolved":              r.Resolved,
		"tests":                 r.Tests,
		"fail_to_pass":          r.FailToPass,
		"pass_to_pass":          r.PassToPass,
		"fail_to_pass_fraction": r.FailToPass.Fraction,
		"pass_to_pass_fraction": r.PassToPass.Fraction,
		"language":              r.Language,
		"timings":               r.Timings,
		"backend":               r.Backend,
	}
	for k, v := range map[string]string{"error": r.Error, "message": r.Message, "build_output": r.BuildOutput,
		"output": r.Output, "applied_with": r.AppliedWith, "image": r.Image, "test_command": r.TestCommand} {
		if v != "" {
			info[k] = v
		}
	}
	if r.Error != "" {
		info["fault"] = string(gym.FaultAgent)
	}
	if len(r.DroppedFiles) > 0 {
		info["dropped_files"] = r.DroppedFiles
	}
	return info
}

// formatExec renders a command's result: its output, then its exit code.
func formatExec(r sandbox.ExecResult, timeout time.Duration) string {
	var b strings.Builder
	b.Write(r.Stdout)
	b.Write(r.Stderr)
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	if r.TimedOut {
		fmt.Fprintf(&b, "[timed out after %s: the command was interrupted]\n", timeout.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "[exit code %d]", r.ExitCode)
	return b.String()
}

// fault labels an error of the sandbox: one that is no longer valid died.
func (e *Env) fault(err error) error {
	if !errors.Is(err, sandbox.ErrGone) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		if v, ok := e.sb.(sandbox.Validator); ok && !v.IsValid() {
			err = fmt.Errorf("%w (%w)", sandbox.ErrGone, err)
		}
	}
	return sandboxFault(err)
}

// toolFault labels an error of a tool: one the agent broke in a live
// sandbox (sbopen.AgentBroke: its shell, the programs the editor runs) is
// answered as the call's error (an *EditError) while the episode goes on;
// a sandbox that died is the infrastructure's.
func (e *Env) toolFault(what string, err error) error {
	if sbopen.AgentBroke(e.sb, err) {
		return &EditError{Msg: what + " is not available: " + err.Error()}
	}
	return e.fault(err)
}

// sandboxFault labels a sandbox error: one that died or was closed is the
// infrastructure's; a deadline or cancellation passes through for the
// session to label.
func sandboxFault(err error) error {
	var fe *gym.FaultError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &fe):
		return err
	case errors.Is(err, sandbox.ErrGone):
		return gym.InfraFault("sandbox_died", err)
	case errors.Is(err, sandbox.ErrClosed):
		return gym.InfraFault("sandbox_closed", err)
	}
	return gym.InfraFault("sandbox", err)
}

// dropSandbox closes the sandbox and its shell and releases its snapshot.
func (e *Env) dropSandbox(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if e.snap != nil {
		e.snap.Release(ctx)
		e.snap = nil
	}
	if e.sb != nil {
		e.sb.Close(ctx)
		e.sb = nil
	}
	if e.shell != nil {
		e.shell.Close()
		e.shell = nil
	}
	e.built = ""
}

// Close implements gym.Env.
func (e *Env) Close(ctx context.Context) error {
	var err error
	if e.snap != nil {
		err = e.snap.Release(ctx)
		e.snap = nil
	}
	if e.sb != nil {
		err = errors.Join(err, e.sb.Close(ctx))
		e.sb = nil
	}
	if e.shell != nil {
		e.shell.Close()
		e.shell = nil
	}
	return err
}
