// Package sbopen opens the sandbox backend of an env kind from the server's
// gym.Settings, and shares it between the Managers of one process. Kinds
// that run sandboxes (terminal-v1, code-interpreter-v1) hold a Shared and
// call it from their gym.Configurer methods:
//
//	func (k *Kind) Configure(ctx context.Context, s gym.Settings) error {
//		b, first, err := k.shared.Acquire(ctx, s)
//		if err != nil || !first {
//			return err
//		}
//		... build what the kind keeps over b (a warm pool) ...
//	}
//
//	func (k *Kind) Shutdown(ctx context.Context) error {
//		return k.shared.Release(ctx, k.closePool)
//	}
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
// A process has one value of each kind, and tests start several Managers
// in one process: the first Acquire opens the backend, later ones share it
// (their settings must name the same backend; the first one's other
// settings hold), and the last Release closes it.
package sbopen

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
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

// Shared is a backend opened once and shared by reference count. Kind
// names its user in errors ("terminal-v1"). The zero value (with Kind set)
// is ready to use; a Shared is safe for concurrent use and must not be
// copied.
type Shared struct {
	Kind string

	mu   sync.Mutex
	b    sandbox.Backend
	name string
	refs int
}

// Acquire takes a reference on the backend. The first one (no reference
// held) opens it with s, and first is true: the caller then builds what it
// keeps over the backend, and calls Release if that fails. Later ones
// share it; their settings must name the same backend, or Acquire fails
// and takes no reference.
func (sh *Shared) Acquire(ctx context.Context, s gym.Settings) (b sandbox.Backend, first bool, err error) {
	name := Name(s)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.b != nil {
		if sh.name != name {
			return nil, false, fmt.Errorf("%s is already configured with the %s sandbox, not %s", sh.kind(), sh.name, name)
		}
		sh.refs++
		return sh.b, false, nil
	}
	b, err = Open(ctx, s)
	if err != nil {
		return nil, false, err
	}
	sh.b, sh.name, sh.refs = b, name, 1
	return b, true, nil
}

// Release drops a reference. The last one runs before (when not nil: the
// caller closes what it built over the backend) and then closes the
// backend, which closes every sandbox it made; both errors are returned.
// Release without a reference held does nothing.
func (sh *Shared) Release(ctx context.Context, before func(context.Context) error) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.refs == 0 {
		return nil
	}
	sh.refs--
	if sh.refs > 0 {
		return nil
	}
	b := sh.b
	sh.b, sh.name = nil, ""
	var berr error
	if before != nil {
		berr = before(ctx)
	}
	return errors.Join(berr, b.Close(ctx))
}

// Backend returns the open backend and its name; nil and "" when none is
// open.
func (sh *Shared) Backend() (sandbox.Backend, string) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.b, sh.name
}

// Refs is the number of references held.
func (sh *Shared) Refs() int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.refs
}

func (sh *Shared) kind() string {
	if sh.Kind == "" {
		return "the kind"
	}
	return sh.Kind
}
