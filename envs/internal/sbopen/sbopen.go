// Package sbopen opens the sandbox backend of an env kind from a Manager's
// gym.Settings. Kinds that run sandboxes (terminal-v1, swe-v1,
// code-interpreter-v1) open one from their gym.Configurer's Configure and
// keep it, with the warm pool over it, in the gym.Instance it returns,
// whose Shutdown closes both:
//
//	func (k *Kind) Configure(ctx context.Context, s gym.Settings) (gym.Instance, error) {
//		... read and check the kind's own settings first ...
//		b, err := sbopen.Open(ctx, s)
//		if err != nil {
//			return nil, err
//		}
//		inst := &instance{Sandboxes: sbopen.Sandboxes{Backend: b, Name: sbopen.Name(s)}}
//		inst.Pool = pool.New(b, pool.Options{Size: size}) // or none
//		return inst, nil
//	}
//
//	func (i *instance) Shutdown(ctx context.Context) error { return i.Close(ctx) }
//
// The settings it reads (`nextstate serve --sandbox`, `--docker-host`,
// `--set`):
//
//   - "sandbox": the backend, "bwrap" (the default) or "docker"; any name
//     registered with sandbox.Register, once its package is imported;
//   - "docker.hosts": docker engine addresses, comma separated (unix://,
//     tcp://, ssh://); empty is the environment's default engine;
//   - "sandbox.owner": the owner label of every sandbox (see package
//     sandbox, Owners and reaping); empty is a lease on this process;
//   - "sandbox.dir": where bwrap keeps its sandboxes' state directories;
//   - "sandbox.hide": host paths no sandbox may see, in the form of PATH
//     (filepath.SplitList): serve sets it to the served task folders and
//     its store; see sandbox.Options.Hide.
//
// Each Manager's instance of a kind opens a backend of its own, with its
// own settings, and closes it at its own Shutdown; nothing is shared
// between the Managers of a process (tests start several). A backend
// opened with no owner takes a fresh lease (sandbox.NewOwnerID), so two
// backends of one process never reap each other's sandboxes; an explicit
// "sandbox.owner" is reaped by every backend opened with it, so Managers
// must not share one, as processes must not.
package sbopen

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/pool"
)

// The settings keys Open reads.
const (
	SettingSandbox = "sandbox"       // "bwrap" (default) or "docker"
	SettingDocker  = "docker.hosts"  // comma-separated engine addresses
	SettingOwner   = "sandbox.owner" // the owner label; empty is a lease on this process
	SettingDir     = "sandbox.dir"   // where bwrap keeps its workspaces
	SettingHide    = "sandbox.hide"  // host paths no sandbox may see, a PATH-style list
)

// DefaultBackend is the backend of settings that name none.
const DefaultBackend = "bwrap"

// Name returns the backend the settings name, DefaultBackend when none.
func Name(s gym.Settings) string {
	if n := strings.TrimSpace(s[SettingSandbox]); n != "" {
		return n
	}
	return DefaultBackend
}

// Options returns the sandbox.Options the settings give: the docker hosts
// (blank entries dropped), the owner and the directory.
func Options(s gym.Settings) sandbox.Options {
	var hosts []string
	for _, h := range strings.Split(s[SettingDocker], ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return sandbox.Options{Owner: s[SettingOwner], Hosts: hosts, Dir: s[SettingDir], Hide: Hide(s)}
}

// Hide returns the host paths of the "sandbox.hide" setting, blank entries
// dropped.
func Hide(s gym.Settings) []string {
	var out []string
	for _, p := range filepath.SplitList(s[SettingHide]) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Open opens the backend the settings name, with their Options. An empty
// owner takes the backend's default, a lease on this process: what a
// crashed earlier server left is reaped when the backend opens. A backend
// whose tool or daemon is missing fails with an error wrapping
// sandbox.ErrUnavailable.
func Open(ctx context.Context, s gym.Settings) (sandbox.Backend, error) {
	name := Name(s)
	b, err := sandbox.Open(ctx, name, Options(s))
	if err != nil {
		return nil, fmt.Errorf("opening the %s sandbox: %w", name, err)
	}
	return b, nil
}

// Sandboxes are the sandbox backend of one Manager's instance of a kind
// and the warm pool over it. The instance opens them in its Configure and
// closes them at its Shutdown.
type Sandboxes struct {
	Backend sandbox.Backend
	Name    string     // the backend's name, as the settings give it
	Pool    *pool.Pool // nil: sandboxes are created on demand
}

// Close closes the pool, then the backend, which closes every sandbox it
// made; both errors are returned.
func (sb *Sandboxes) Close(ctx context.Context) error {
	var perr error
	if sb.Pool != nil {
		perr = sb.Pool.Close(ctx)
	}
	return errors.Join(perr, sb.Backend.Close(ctx))
}
