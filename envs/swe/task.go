package swe

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nextstate-rl/nextstate/gym"
)

// TaskData is a swe-v1 task's public part (gym.Task.Data): what the agent
// may see.
type TaskData struct {
	InstanceID       string `json:"instance_id"`
	Repo             string `json:"repo,omitempty"`
	BaseCommit       string `json:"base_commit"`
	ProblemStatement string `json:"problem_statement"`
	Version          string `json:"version,omitempty"`
	Source           string `json:"source,omitempty"`
	Language         string `json:"language,omitempty"`
	Image            string `json:"image,omitempty"`
	Module           string `json:"module,omitempty"`
	Old              string `json:"old,omitempty"`
}

// VerifierData is a swe-v1 task's hidden part (gym.Task.Verifier): the
// gold patch and the tests, never sent to the agent nor put in its
// sandbox.
type VerifierData struct {
	Patch      string   `json:"patch"`
	TestPatch  string   `json:"test_patch"`
	FailToPass TestList `json:"FAIL_TO_PASS"`
	PassToPass TestList `json:"PASS_TO_PASS"`
	New        string   `json:"new,omitempty"`
}

// Task makes a swe-v1 task of an instance: the id is the instance id, the
// instruction the problem statement with where the repository is, split
// "test".
func (in *Instance) Task() (gym.Task, error) {
	if err := in.Validate(); err != nil {
		return gym.Task{}, err
	}
	data, err := json.Marshal(TaskData{
		InstanceID: in.InstanceID, Repo: in.Repo, BaseCommit: in.BaseCommit, ProblemStatement: in.ProblemStatement,
		Version: in.Version, Source: in.Source, Language: in.Language, Image: in.Image, Module: in.Module, Old: in.Old,
	})
	if err != nil {
		return gym.Task{}, err
	}
	ver, err := json.Marshal(VerifierData{Patch: in.Patch, TestPatch: in.TestPatch, FailToPass: in.FailToPass,
		PassToPass: in.PassToPass, New: in.New})
	if err != nil {
		return gym.Task{}, err
	}
	return gym.Task{ID: in.InstanceID, Env: KindName, Split: "test", Instruction: Instruction(in),
		Data: data, Verifier: ver}, nil
}

// Instruction is what the agent is told at reset: the problem statement,
// and where the repository is.
func Instruction(in *Instance) string {
	repo := in.Repo
	if repo == "" {
		repo = "a repository"
	}
	return fmt.Sprintf("The repository %s is checked out in %s at its base commit. Resolve the issue below by "+
		"editing the repository's non-test files, so that the project's tests for it pass. Hidden tests judge the "+
		"result; changes to test files are not kept. There is no network. Call submit when you are done.\n\n"+
		"<issue>\n%s\n</issue>", repo, Workdir, strings.TrimSpace(in.ProblemStatement))
}

// TasksFromInstances makes a task of each instance.
func TasksFromInstances(ins []Instance) ([]gym.Task, error) {
	out := make([]gym.Task, 0, len(ins))
	for i := range ins {
		t, err := ins[i].Task()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// InstanceOf reads an instance back from a swe-v1 task (its Data and
// Verifier). A relative Source is taken from the task's Dir.
func InstanceOf(t *gym.Task) (*Instance, error) {
	var d TaskData
	if len(t.Data) == 0 {
		return nil, fmt.Errorf("task %s: no data: a swe-v1 task carries an instance (load instances with LoadInstances or an instances.jsonl folder)", t.ID)
	}
	if err := strictUnmarshal(t.Data, &d); err != nil {
		return nil, fmt.Errorf("task %s: swe-v1 data: %w", t.ID, err)
	}
	in := &Instance{InstanceID: d.InstanceID, Repo: d.Repo, BaseCommit: d.BaseCommit, ProblemStatement: d.ProblemStatement,
		Version: d.Version, Source: d.Source, Language: d.Language, Image: d.Image, Module: d.Module, Old: d.Old}
	if in.InstanceID == "" {
		in.InstanceID = t.ID
	}
	if len(t.Verifier) > 0 {
		var v VerifierData
		if err := strictUnmarshal(t.Verifier, &v); err != nil {
			return nil, fmt.Errorf("task %s: swe-v1 verifier: %w", t.ID, err)
		}
		in.Patch, in.TestPatch, in.FailToPass, in.PassToPass, in.New = v.Patch, v.TestPatch, v.FailToPass, v.PassToPass, v.New
	}
	if in.Source != "" && !filepath.IsAbs(in.Source) && t.Dir != "" {
		in.Source = filepath.Join(t.Dir, in.Source)
	}
	return in, nil
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// Instances files a directory may hold to be a swe-v1 suite.
var instanceFiles = []string{"instances.jsonl", "instances.json"}

func init() {
	gym.RegisterSuiteFormat("swe-instances", detectInstances, loadInstancesDir)
}

// detectInstances: a directory holding instances.jsonl (or
// instances.json) is a suite of SWE instances.
func detectInstances(dir string) bool { return instancesFile(dir) != "" }

func instancesFile(dir string) string {
	for _, n := range instanceFiles {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && !fi.IsDir() {
			return filepath.Join(dir, n)
		}
	}
	return ""
}

func loadInstancesDir(dir string) ([]gym.Task, error) {
	ins, err := LoadInstances(instancesFile(dir))
	if err != nil {
		return nil, err
	}
	ts, err := TasksFromInstances(ins)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		ts[i].Dir = dir
	}
	return ts, nil
}
