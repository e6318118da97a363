package service

import (
	"fmt"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/trainer"
)

// Version is one published weight version: immutable once published.
type Version struct {
	Version int `json:"version"`
	// Step is the number of optimizer steps its weights had taken.
	Step int `json:"step"`
	// Checksum is the SHA-256 of its weights (trainer.Model.Checksum).
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

func (p *published) close() {
	p.engine.Close()
	p.model.Close()
}

// versions holds the published versions: the newest keep of them, and any
// older one while a lease on it is held.
type versions struct {
	mu   sync.Mutex
	all  []*published // in version order
	keep int
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
	var drop []*published
	for i, q := range vs.all {
		if i < len(vs.all)-vs.keep && !q.retired {
			q.retired = true
			if q.leases == 0 {
				drop = append(drop, q)
			}
		}
	}
	vs.prune()
	vs.mu.Unlock()
	for _, q := range drop {
		q.close()
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
		p.close()
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

// closeAll closes every version, leased or not (the service is closing).
func (vs *versions) closeAll() {
	vs.mu.Lock()
	all := vs.all
	vs.all = nil
	vs.mu.Unlock()
	for _, q := range all {
		q.close()
	}
}
