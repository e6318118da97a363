package service

import (
	"fmt"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/trainer"
	"github.com/nextstate-rl/nextstate/trainer/backend"
)

// Version is one published weight version: immutable once published.
type Version struct {
	Version int `json:"version"`
	// Step is the number of optimizer steps its weights had taken.
	Step int `json:"step"`
	// Checksum is the SHA-256 tree hash of its weights
	// (trainer.Model.Checksum).
	Checksum string    `json:"checksum"`
	Created  time.Time `json:"created"`
}

// published is a version's weights and the engine serving them.
type published struct {
	Version
	model   *trainer.Model
	engine  *trainer.Engine
	leases  int
	retired bool
}

// versions holds the published versions: the newest keep of them, version
// 0 (the frozen reference, which the KL term, the OPD teacher and a judge
// of the policy's own family read for the whole run), and any older one
// while a lease on it is held.
//
// A full-weight version's parameter arena is not freed when the version
// goes (retired and unleased, its engine stopped) but kept as the spare,
// one at most, for the next version to be copied into: a fresh arena of a
// large model costs far more than the copy (see trainer.SnapshotInto).
// Nothing else can read a version's weights by then, so no served version
// ever changes.
type versions struct {
	mu     sync.Mutex
	all    []*published // in version order
	keep   int
	spare  backend.Buf // a gone version's parameter arena, or zero
	be     trainer.Backend
	closed bool
}

// Lease is a hold on one version: its engine serves until Release, even
// when newer versions have been published since.
type Lease struct {
	Version Version
	Engine  *trainer.Engine
	vs      *versions
	p       *published
	once    sync.Once
}

// Release lets the version go once it is retired; idempotent.
func (l *Lease) Release() {
	l.once.Do(func() { l.vs.release(l.p) })
}

func (vs *versions) publish(p *published) {
	vs.mu.Lock()
	vs.all = append(vs.all, p)
	drop := vs.retireLocked(vs.keep)
	vs.mu.Unlock()
	vs.close(drop...)
}

// makeRoom is called before a version is made: it retires now the
// versions that publishing it will retire, but never the newest, and
// returns the spare arena for the new version's weights (the zero Buf if
// there is none): the oldest version's own when nobody holds it.
func (vs *versions) makeRoom() backend.Buf {
	vs.mu.Lock()
	drop := vs.retireLocked(max(vs.keep-1, 1))
	vs.mu.Unlock()
	vs.close(drop...)
	vs.mu.Lock()
	defer vs.mu.Unlock()
	spare := vs.spare
	vs.spare = backend.Buf{}
	return spare
}

// retireLocked retires every version but the newest n and version 0 (the
// reference), and returns those of
// them nobody holds, to close (vs.mu held). Retired versions precede the
// others in vs.all.
func (vs *versions) retireLocked(n int) []*published {
	var drop []*published
	for i, q := range vs.all {
		if i < len(vs.all)-n && !q.retired && q.Version.Version != 0 {
			q.retired = true
			if q.leases == 0 {
				drop = append(drop, q)
			}
		}
	}
	vs.prune()
	return drop
}

// close stops the engines of versions that are gone and frees their
// weights, keeping one parameter arena as the spare (vs.mu not held).
func (vs *versions) close(ps ...*published) {
	for _, p := range ps {
		p.engine.Close()
		buf := p.model.Recycle()
		if buf.Nil() {
			continue
		}
		vs.mu.Lock()
		if vs.spare.Nil() && !vs.closed {
			vs.spare, vs.be, buf = buf, p.model.Backend, backend.Buf{}
		}
		vs.mu.Unlock()
		if !buf.Nil() {
			p.model.Backend.Free(buf)
		}
	}
}

// prune forgets retired versions nobody holds (vs.mu held).
func (vs *versions) prune() {
	out := vs.all[:0]
	for _, q := range vs.all {
		if !q.retired || q.leases > 0 {
			out = append(out, q)
		}
	}
	clear(vs.all[len(out):])
	vs.all = out
}

// acquire leases version v, or the newest when v < 0.
func (vs *versions) acquire(v int) (*Lease, error) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if len(vs.all) == 0 {
		return nil, fmt.Errorf("no weight version is published")
	}
	var p *published
	if v < 0 {
		p = vs.all[len(vs.all)-1]
	} else {
		for _, q := range vs.all {
			if q.Version.Version == v && !q.retired {
				p = q
			}
		}
	}
	if p == nil {
		return nil, fmt.Errorf("weight version %d is not served: the versions held are %v (the newest %d are kept)", v, vs.heldLocked(), vs.keep)
	}
	p.leases++
	return &Lease{Version: p.Version, Engine: p.engine, vs: vs, p: p}, nil
}

func (vs *versions) release(p *published) {
	vs.mu.Lock()
	p.leases--
	closeIt := p.retired && p.leases == 0
	if closeIt {
		vs.prune()
	}
	vs.mu.Unlock()
	if closeIt {
		vs.close(p)
	}
}

func (vs *versions) heldLocked() []int {
	var out []int
	for _, q := range vs.all {
		if !q.retired {
			out = append(out, q.Version.Version)
		}
	}
	return out
}

func (vs *versions) list() []Version {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	var out []Version
	for _, q := range vs.all {
		if !q.retired {
			out = append(out, q.Version)
		}
	}
	return out
}

// closeAll closes every version, leased or not, and frees the spare (the
// service is closing).
func (vs *versions) closeAll() {
	vs.mu.Lock()
	all := vs.all
	vs.all, vs.closed = nil, true
	spare := vs.spare
	vs.spare = backend.Buf{}
	vs.mu.Unlock()
	if !spare.Nil() {
		vs.be.Free(spare)
	}
	for _, q := range all {
		q.engine.Close()
		q.model.Close()
	}
}
