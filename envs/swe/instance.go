package swe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Instance is one SWE-bench instance: a repository at a base commit, an
// issue, the gold fix (Patch), the tests that judge a fix (TestPatch,
// FailToPass, PassToPass). The JSON form is SWE-bench's, with nextstate's
// own fields after it.
type Instance struct {
	InstanceID             string   `json:"instance_id"`
	Repo                   string   `json:"repo"`
	BaseCommit             string   `json:"base_commit"`
	Patch                  string   `json:"patch"`
	TestPatch              string   `json:"test_patch"`
	ProblemStatement       string   `json:"problem_statement"`
	HintsText              string   `json:"hints_text,omitempty"`
	FailToPass             TestList `json:"FAIL_TO_PASS"`
	PassToPass             TestList `json:"PASS_TO_PASS"`
	Version                string   `json:"version,omitempty"`
	EnvironmentSetupCommit string   `json:"environment_setup_commit,omitempty"`
	CreatedAt              string   `json:"created_at,omitempty"`

	// Source is where the repository comes from: a local git repository
	// or a source archive (.tar.gz, .tgz, .zip), relative to the instances
	// file. Empty: a repository named by Repo under the directory the
	// instances are loaded with.
	Source string `json:"source,omitempty"`
	// Language is "go" or "python"; empty means found from the repository.
	Language string `json:"language,omitempty"`
	// Image is the sandbox image; empty means the language's default.
	Image string `json:"image,omitempty"`
	// Module, Old and New name a Go instance built from the module proxy
	// (nextstate swe build-go MODULE OLD NEW).
	Module string `json:"module,omitempty"`
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
}

// TestList is a list of test names. SWE-bench's files carry it either as
// a JSON list or as a string holding one; both are read.
type TestList []string

// UnmarshalJSON reads a list or a string holding a JSON list.
func (l *TestList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if strings.TrimSpace(s) == "" {
			*l = nil
			return nil
		}
		b = []byte(s)
	}
	var out []string
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("test list: want a JSON list of test names (or a string holding one): %w", err)
	}
	*l = out
	return nil
}

// Validate checks the fields every instance needs.
func (in *Instance) Validate() error {
	var missing []string
	if in.InstanceID == "" {
		missing = append(missing, "instance_id")
	}
	if in.BaseCommit == "" {
		missing = append(missing, "base_commit")
	}
	if in.TestPatch == "" {
		missing = append(missing, "test_patch")
	}
	if in.ProblemStatement == "" {
		missing = append(missing, "problem_statement")
	}
	if len(in.FailToPass) == 0 {
		missing = append(missing, "FAIL_TO_PASS")
	}
	if len(missing) > 0 {
		id := in.InstanceID
		if id == "" {
			id = "(no id)"
		}
		return fmt.Errorf("instance %s: missing %s", id, strings.Join(missing, ", "))
	}
	switch in.Language {
	case "", "go", "python":
	default:
		return fmt.Errorf("instance %s: language %q: want go or python", in.InstanceID, in.Language)
	}
	return nil
}

// LoadInstances reads instances from a JSON file (one instance or a list)
// or a JSON Lines file (one per line). Relative Sources are made absolute
// against the file's directory; an instance without a Source whose Repo
// names a directory there ("owner/name") gets it. Ids must be unique.
func LoadInstances(path string) ([]Instance, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Instance
	trimmed := bytes.TrimSpace(b)
	switch {
	case len(trimmed) == 0:
		return nil, fmt.Errorf("%s: no instances", path)
	case trimmed[0] == '[':
		if err := json.Unmarshal(trimmed, &out); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case strings.HasSuffix(path, ".jsonl") || bytes.Count(trimmed, []byte("\n")) > 0 && !json.Valid(trimmed):
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 256<<20)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var in Instance
			if err := json.Unmarshal(line, &in); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			out = append(out, in)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	default:
		var in Instance
		if err := json.Unmarshal(trimmed, &in); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = []Instance{in}
	}
	dir := filepath.Dir(path)
	seen := map[string]bool{}
	for i := range out {
		in := &out[i]
		if err := in.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if seen[in.InstanceID] {
			return nil, fmt.Errorf("%s: instance %s appears twice", path, in.InstanceID)
		}
		seen[in.InstanceID] = true
		if in.Source == "" && in.Repo != "" {
			if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(in.Repo))); err == nil && fi.IsDir() {
				in.Source = in.Repo
			}
		}
		if in.Source != "" && !filepath.IsAbs(in.Source) {
			in.Source = filepath.Join(dir, in.Source)
		}
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no instances")
	}
	return out, nil
}
