package shelltool

import (
	"context"
	"errors"
	"fmt"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/envs/internal/tools"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// Box is a shell env's sandbox across its episodes: the sandbox, the
// snapshot of the initial state it was built in, which task that was, and
// the episode's persistent shell. The zero Box is empty. A Box is used by
// one goroutine at a time (its env's).
type Box struct {
	SB    sandbox.Sandbox
	Shell sandbox.Shell

	snap  sandbox.Snapshot // the initial state, when SB can snapshot
	built string           // the key of what SB was built for
}

// Reset brings the box to the initial state of task: a Restore of the
// snapshot when SB was built for the same task (its ID, folder and data)
// and could snapshot
// (a Restore that fails other than by ctx drops the sandbox), else a new
// sandbox from build, snapshotted where it can be (sandbox.TrySnapshot).
// build returns the sandbox also with an error once it exists; Reset
// closes it then. Last, a fresh persistent shell starts; the episode's
// old one died with the Restore or the sandbox, and is let go of after.
// On an error the box is empty, but for a ctx error of the Restore.
func (b *Box) Reset(ctx context.Context, task *gym.Task, build func(context.Context) (sandbox.Sandbox, error)) error {
	key := task.ID + "\x00" + task.Dir + "\x00" + string(task.Data)
	// The old shell dies with the restore (or the sandbox) below; its
	// object is released after, so the restore does not wait on the
	// shell's processes being reaped.
	old := b.Shell
	b.Shell = nil
	defer func() {
		if old != nil {
			old.Close()
		}
	}()
	if b.SB != nil && b.built == key && b.snap != nil {
		if err := b.SB.(sandbox.Snapshotter).Restore(ctx, b.snap); err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			b.Drop(ctx) // build anew below
		}
	} else {
		b.Drop(ctx)
	}
	if b.SB == nil {
		if err := b.build(ctx, build); err != nil {
			b.Drop(ctx)
			return err
		}
		b.built = key
	}
	sh, err := sandbox.NewShell(ctx, b.SB)
	if err != nil {
		b.Drop(ctx)
		return sbopen.Fault(nil, err)
	}
	b.Shell = sh
	return nil
}

func (b *Box) build(ctx context.Context, build func(context.Context) (sandbox.Sandbox, error)) error {
	sb, err := build(ctx)
	if sb != nil {
		b.SB = sb
	}
	if err != nil {
		return err
	}
	if b.snap, err = sandbox.TrySnapshot(ctx, sb); err != nil {
		return sbopen.Fault(nil, fmt.Errorf("snapshotting the initial state: %w", err))
	}
	return nil
}

// Fault labels an error of the box's sandbox (sbopen.Fault).
func (b *Box) Fault(err error) error { return sbopen.Fault(b.SB, err) }

// ToolFault labels an error of a tool (what: "the shell", "the editor"):
// one the agent broke in a live sandbox (sbopen.AgentBroke) is a
// *tools.ToolError, answered as the call's error while the episode goes
// on; a sandbox that died is the infrastructure's (Fault).
func (b *Box) ToolFault(what string, err error) error {
	if sbopen.AgentBroke(b.SB, err) {
		return &tools.ToolError{Message: what + " is not available: " + err.Error()}
	}
	return b.Fault(err)
}

// Drop closes the sandbox (which ends every process in it, the shell's
// too), then the shell, and releases the snapshot, whatever ctx's state.
func (b *Box) Drop(ctx context.Context) { b.Close(context.WithoutCancel(ctx)) }

// Close empties the box as Drop does, with ctx, and returns the errors of
// releasing the snapshot and closing the sandbox.
func (b *Box) Close(ctx context.Context) error {
	var err error
	if b.snap != nil {
		err = b.snap.Release(ctx)
		b.snap = nil
	}
	if b.SB != nil {
		err = errors.Join(err, b.SB.Close(ctx))
		b.SB = nil
	}
	if b.Shell != nil {
		b.Shell.Close()
		b.Shell = nil
	}
	b.built = ""
	return err
}
