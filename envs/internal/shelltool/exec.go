package shelltool

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/tools"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// Exec is a kind's shell_exec: Description says where its commands run;
// Default is the timeout of a call that sets none, Max the most a call may
// set (more is cut to it).
type Exec struct {
	Description  string
	Default, Max time.Duration
}

// tool declares shell_exec; the timeout parameter's description gives the
// limits. The timeout may come as a number or a string of one or a
// duration ("90s").
func (x Exec) tool() tools.Tool {
	return tools.Tool{Name: ToolExec, Description: x.Description,
		Parameters: Object(map[string]any{
			"command": map[string]any{"type": "string", "description": "The bash command line to run."},
			"timeout": map[string]any{"type": "number", "description": fmt.Sprintf(
				"Seconds to wait before interrupting it (default %d, at most %d).",
				int(x.Default.Seconds()), int(x.Max.Seconds()))},
		}, "command"),
		Coerce: tools.Seconds("timeout"),
	}
}

// dropNulls is a Coerce that takes a parameter whose value is null as
// absent, as the shell tools always have; NewTools runs it first for
// each tool.
func dropNulls(args map[string]any) {
	for k, v := range args {
		if v == nil {
			delete(args, k)
		}
	}
}

// ExecArgs decodes a shell_exec call: its command (not blank) and its
// timeout, the kind's default when the call sets none, at most its Max.
func (t *Tools) ExecArgs(c Call) (command string, timeout time.Duration, err error) {
	var a struct {
		Command string   `json:"command"`
		Timeout *float64 `json:"timeout"`
	}
	if err := t.Unmarshal(c, &a); err != nil {
		return "", 0, err
	}
	if strings.TrimSpace(a.Command) == "" {
		return "", 0, t.BadArguments(c.Name, `"command" is empty`)
	}
	timeout, err = t.Seconds(c, "timeout", a.Timeout, t.exec.Default, t.exec.Max)
	return a.Command, timeout, err
}

// Exec runs command in the box's shell and returns what FormatExec makes
// of it. The timeout is cut to end at least 3 × InterruptGrace + 1 s
// before ctx's deadline, so that a slow command is the agent's
// observation ("timed out"), not a failed step. info gets "exit_code",
// and "timed_out" and "truncated" when so. A shell the agent broke is a
// *tools.ToolError (ToolFault).
func (b *Box) Exec(ctx context.Context, command string, timeout time.Duration, info gym.Info) (string, error) {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - 3*sandbox.InterruptGrace - time.Second; left < timeout {
			timeout = max(left, 100*time.Millisecond)
		}
	}
	r, err := b.Shell.Run(ctx, command, timeout)
	if err != nil {
		return "", b.ToolFault("the shell", err)
	}
	info["exit_code"] = r.ExitCode
	if r.TimedOut {
		info["timed_out"] = true
	}
	if r.Truncated {
		info["truncated"] = true
	}
	return FormatExec(r, timeout), nil
}

// FormatExec renders a command's result: its output (stdout, then
// stderr), then a line with the exit code, and a note before it when the
// command timed out.
func FormatExec(r sandbox.ExecResult, timeout time.Duration) string {
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
