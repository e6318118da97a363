package tau2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/nextstate-rl/nextstate/gym"
)

// A DomainFormat is a tau2 domain this binary runs, as its package
// registers it (RegisterDomain): the domain's name as tau2's tasks give it
// (user_scenario.instructions.domain: "retail"), the files a folder of it
// holds, and the loader of such a folder.
type DomainFormat struct {
	Name  string
	Files []string
	Load  func(dir string) ([]gym.Task, error)
}

var (
	domainsMu sync.RWMutex
	domains   = map[string]DomainFormat{}
)

// RegisterDomain registers a tau2 domain and, with gym.RegisterSuiteFormat,
// its folder format "tau2-<name>" (see IsDomainDir). It panics on an empty
// name or a duplicate, as gym's registries do.
func RegisterDomain(d DomainFormat) {
	if d.Name == "" || d.Load == nil {
		panic("tau2: RegisterDomain needs a name and a load func")
	}
	domainsMu.Lock()
	if _, dup := domains[d.Name]; dup {
		domainsMu.Unlock()
		panic("tau2: domain " + d.Name + " is registered twice")
	}
	domains[d.Name] = d
	domainsMu.Unlock()
	gym.RegisterSuiteFormat("tau2-"+d.Name, func(dir string) bool { return IsDomainDir(dir, d) }, d.Load)
}

// IsDomainDir reports whether dir is a folder of domain d: it holds d's
// files, and its tasks are d's (or do not name their domain).
func IsDomainDir(dir string, d DomainFormat) bool {
	name, ok := DomainOf(dir)
	return ok && (name == d.Name || name == "") && missing(dir, d.Files) == nil
}

// Domains lists the registered tau2 domains, sorted.
func Domains() []DomainFormat {
	domainsMu.RLock()
	defer domainsMu.RUnlock()
	out := make([]DomainFormat, 0, len(domains))
	for _, d := range domains {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func init() {
	// Any other folder of tau2 tasks is claimed here, so that it fails with
	// what is wrong instead of being read as task files of nextstate's own
	// format.
	gym.RegisterSuiteFormat("tau2", func(dir string) bool {
		if _, ok := DomainOf(dir); !ok {
			return false
		}
		for _, d := range Domains() {
			if IsDomainDir(dir, d) {
				return false
			}
		}
		return true
	}, loadOther)
}

// loadOther explains why no registered domain loads a folder of tau2
// tasks: its domain is not supported, or it lacks files.
func loadOther(dir string) ([]gym.Task, error) {
	name, _ := DomainOf(dir)
	var names, wants []string
	for _, d := range Domains() {
		names = append(names, d.Name)
		wants = append(wants, d.Name+": "+strings.Join(d.Files, ", "))
		if d.Name == name {
			return nil, fmt.Errorf("a tau2 %s folder holds %s; this one lacks %s", name, strings.Join(d.Files, ", "), strings.Join(missing(dir, d.Files), ", "))
		}
	}
	if name == "" {
		return nil, fmt.Errorf("the tau2 tasks here do not name their domain, and the folder is not one of the supported domains' (%s)", strings.Join(wants, "; "))
	}
	return nil, fmt.Errorf("tau2 domain %q is not supported: the supported tau2 domains are %s", name, strings.Join(names, " and "))
}

func missing(dir string, files []string) []string {
	var out []string
	for _, f := range files {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || !fi.Mode().IsRegular() {
			out = append(out, f)
		}
	}
	return out
}

// tasksFiles are the names of a tau2 folder's tasks file, by preference.
var tasksFiles = []string{"tasks.json", "tasks_full.json", "tasks_small.json"}

// TasksFile is the tasks file of a tau2 folder: tasks.json, else
// tasks_full.json, else tasks_small.json; "" when it has none.
func TasksFile(dir string) string {
	for _, f := range tasksFiles {
		if fi, err := os.Stat(filepath.Join(dir, f)); err == nil && fi.Mode().IsRegular() {
			return f
		}
	}
	return ""
}

// tau2Folders are the domain folders of tau2-bench's data
// (data/tau2/domains), by which a folder whose tasks do not name their
// domain (mock's) is known.
var tau2Folders = []string{"airline", "banking_knowledge", "mock", "retail", "telecom"}

// DomainOf reports whether dir holds tau2 tasks (a tasks file, see
// TasksFile, whose first task has an id and a user_scenario) and the
// domain they name in their instructions ("retail"), else the folder's
// name if it is one of tau2-bench's domain folders, else "".
func DomainOf(dir string) (name string, ok bool) {
	tf := TasksFile(dir)
	if tf == "" {
		return "", false
	}
	f, err := os.Open(filepath.Join(dir, tf))
	if err != nil {
		return "", false
	}
	defer f.Close()
	// Read the first task only: the file may be large.
	dec := json.NewDecoder(f)
	if t, err := dec.Token(); err != nil || t != json.Delim('[') || !dec.More() {
		return "", false
	}
	var first struct {
		ID           json.RawMessage `json:"id"`
		UserScenario *struct {
			Instructions json.RawMessage `json:"instructions"`
		} `json:"user_scenario"`
	}
	if err := dec.Decode(&first); err != nil || first.ID == nil || first.UserScenario == nil {
		return "", false
	}
	var in struct {
		Domain string `json:"domain"`
	}
	if b := bytes.TrimSpace(first.UserScenario.Instructions); len(b) > 0 && b[0] == '{' {
		json.Unmarshal(b, &in)
	}
	if in.Domain == "" && slices.Contains(tau2Folders, filepath.Base(dir)) {
		in.Domain = filepath.Base(dir)
	}
	return in.Domain, true
}
