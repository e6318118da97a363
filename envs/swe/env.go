package swe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/envs/internal/shelltool"
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

	box    shelltool.Box // the agent's sandbox and shell
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
	e.submitted, e.diff, e.diffErr = false, "", ""
	e.task, e.in = task, in
	if err := e.box.Reset(ctx, task, e.build); err != nil {
		return gym.Observation{}, nil, err
	}
	e.editor = NewEditor(e.box.SB)
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

// build makes the agent's sandbox (the box snapshots it): the instance's
// image, the Go toolchain and module cache read-only for Go, the
// repository copied in.
func (e *Env) build(ctx context.Context) (sandbox.Sandbox, error) {
	in := e.in
	repo, err := e.harness.Prepare(ctx, in)
	if err != nil {
		return nil, gym.InfraFault("bad_task", err)
	}
	e.repo = repo
	spec, err := e.harness.AgentSpec(in, repo)
	if err != nil {
		return nil, gym.InfraFault("bad_task", fmt.Errorf("instance %s: %w", in.InstanceID, err))
	}
	spec.Labels = sandbox.MergeLabels(spec.Labels, map[string]string{"swe.instance": labelValue(in.InstanceID), "swe.role": "agent"})
	sb, err := e.harness.backend.Create(ctx, spec)
	if err != nil {
		return nil, sbopen.Fault(nil, fmt.Errorf("creating the sandbox: %w", err))
	}
	if err := copyRepo(ctx, sb, repo); err != nil {
		return sb, sbopen.Fault(nil, err)
	}
	// A failed seed makes the agent's first build slow, not the episode
	// fail.
	if seed, err := e.harness.Seed(ctx, in, repo); err != nil {
		if ctx.Err() != nil {
			return sb, ctx.Err()
		}
		slog.Warn("swe: no build cache seed for the agent", "instance", in.InstanceID, "err", err)
	} else if seed != "" {
		if err := copySeed(ctx, sb, seed); err != nil {
			return sb, sbopen.Fault(nil, err)
		}
	}
	return sb, nil
}

// Step implements gym.Env: each tool call (or text command) runs in order
// and is answered by one part, a tool_result for a tool call and a text
// part for a text command (shelltool.Step). submit terminates the
// episode (the diff is taken then); calls after it are not run.
func (e *Env) Step(ctx context.Context, a gym.Action) (gym.Transition, error) {
	if e.box.SB == nil || e.box.Shell == nil {
		return gym.Transition{}, gym.InfraFault("no_sandbox", errors.New("swe-v1: step before a successful reset"))
	}
	return shelltool.Step(ctx, toolset, a, false, decode, e.run)
}

// run runs one decoded call. An *EditError is the agent's mistake; other
// errors are the sandbox's (or ctx's).
func (e *Env) run(ctx context.Context, c call, info gym.Info) (string, error) {
	switch c.Name {
	case ToolExec:
		return e.box.Exec(ctx, c.Command, c.Timeout, info)
	case ToolEditor:
		info["command"] = c.Edit.Command
		out, err := e.editor.Run(ctx, c.Edit)
		var ee *EditError
		if err != nil && !errors.As(err, &ee) {
			return "", e.box.ToolFault("the editor", err)
		}
		return out, err
	case ToolSubmit:
		if err := e.takeDiff(ctx); err != nil {
			return "", err
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
// infrastructure's (nothing inside can end it: sandbox.KeeperLoop); its
// errors come labelled (Box.Fault).
func (e *Env) takeDiff(ctx context.Context) error {
	sb := e.box.SB
	if k, ok := sb.(sandbox.Killer); ok {
		if err := k.KillAll(ctx); err != nil {
			return e.box.Fault(err)
		}
	}
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"bash", "-c", diffScript, "diff", e.repo.Commit},
		Dir: Workdir, Timeout: 5 * time.Minute, MaxOutput: 64 << 20})
	if err != nil {
		if !sbopen.AgentBroke(sb, err) {
			return e.box.Fault(err)
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
			return 0, nil, err
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

// Close implements gym.Env.
func (e *Env) Close(ctx context.Context) error { return e.box.Close(ctx) }
