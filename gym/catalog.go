package gym

import (
	"fmt"
	"sort"
	"sync"
)

// Catalog indexes tasks by id: the built-in tasks of every registered kind
// and the suites a server was started with. It is safe for concurrent use.
type Catalog struct {
	mu     sync.RWMutex
	tasks  map[string]*Task
	suites []*Suite
}

// NewCatalog returns a catalog of the registered kinds' built-in tasks.
func NewCatalog() *Catalog {
	c := &Catalog{tasks: map[string]*Task{}}
	for _, name := range Kinds() {
		r, _ := lookup(name)
		for i := range r.spec.Tasks {
			t := r.spec.Tasks[i]
			if t.Env == "" {
				t.Env = name
			}
			c.tasks[t.ID] = &t
		}
	}
	return c
}

// AddSuite adds a suite's tasks. A task id already in the catalog is an
// error, and nothing of the suite is added then.
func (c *Catalog) AddSuite(s *Suite) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range s.Tasks {
		if _, dup := c.tasks[s.Tasks[i].ID]; dup {
			return fmt.Errorf("suite %s: task id %q is already in the catalog", s.Name, s.Tasks[i].ID)
		}
	}
	for i := range s.Tasks {
		c.tasks[s.Tasks[i].ID] = &s.Tasks[i]
	}
	c.suites = append(c.suites, s)
	return nil
}

// Get finds a task by id; env, when not empty, must match its kind.
func (c *Catalog) Get(env, id string) (*Task, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tasks[id]
	if !ok || (env != "" && t.Env != env) {
		return nil, false
	}
	return t, true
}

// List returns the tasks of one kind ("" for all) in one split ("" for
// all), sorted by id.
func (c *Catalog) List(env, split string) []Task {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Task
	for _, t := range c.tasks {
		if env != "" && t.Env != env {
			continue
		}
		sp := t.Split
		if sp == "" {
			sp = "train"
		}
		if split != "" && sp != split {
			continue
		}
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Suites returns the suites added so far.
func (c *Catalog) Suites() []*Suite {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]*Suite(nil), c.suites...)
}
