package terminal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nextstate-rl/nextstate/gym"
)

// FormatName is the task directory format this package registers with
// gym.RegisterTaskFormat.
const FormatName = "terminal-bench"

// Default timeouts of a Terminal-Bench task that sets none (Terminal-Bench's
// own defaults).
const (
	DefaultAgentTimeout = 360 * time.Second
	DefaultTestTimeout  = 60 * time.Second
)

// TaskFile is a Terminal-Bench task.yaml. Fields nextstate does not use are
// kept in Extra, so a task folder loads unchanged and nothing of it is lost.
type TaskFile struct {
	Instruction string `json:"instruction,omitempty"`
	// Descriptions is the older form of the instruction: a list of
	// {key, description}; the one keyed "base" is the instruction.
	Descriptions []struct {
		Key         string `json:"key"`
		Description string `json:"description"`
	} `json:"descriptions,omitempty"`
	MaxAgentTimeoutSec float64  `json:"max_agent_timeout_sec,omitempty"`
	MaxTestTimeoutSec  float64  `json:"max_test_timeout_sec,omitempty"`
	ParserName         string   `json:"parser_name,omitempty"`
	Difficulty         string   `json:"difficulty,omitempty"`
	Category           string   `json:"category,omitempty"`
	Tags               []string `json:"tags,omitempty"`
	// Extra holds every other field (author_name, run_tests_in_same_shell,
	// ...), as read.
	Extra map[string]json.RawMessage `json:"-"`
}

// knownFields are the task.yaml fields TaskFile decodes.
var knownFields = map[string]bool{
	"instruction": true, "descriptions": true, "max_agent_timeout_sec": true, "max_test_timeout_sec": true,
	"parser_name": true, "difficulty": true, "category": true, "tags": true,
}

// ParseTaskFile reads a task.yaml.
func ParseTaskFile(b []byte) (*TaskFile, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("task.yaml is not YAML: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(j, &all); err != nil {
		return nil, fmt.Errorf("task.yaml: want a mapping of fields: %w", err)
	}
	var tf TaskFile
	if err := json.Unmarshal(j, &tf); err != nil {
		return nil, fmt.Errorf("task.yaml: %w", err)
	}
	for k, v := range all {
		if !knownFields[k] {
			if tf.Extra == nil {
				tf.Extra = map[string]json.RawMessage{}
			}
			tf.Extra[k] = v
		}
	}
	if tf.Instruction == "" {
		for _, d := range tf.Descriptions {
			if d.Key == "base" || d.Key == "" {
				tf.Instruction = d.Description
				break
			}
		}
	}
	if strings.TrimSpace(tf.Instruction) == "" {
		return nil, errors.New("task.yaml has no instruction (nor a descriptions entry keyed base)")
	}
	if tf.MaxAgentTimeoutSec < 0 || tf.MaxTestTimeoutSec < 0 || math.IsNaN(tf.MaxAgentTimeoutSec) || math.IsNaN(tf.MaxTestTimeoutSec) {
		return nil, errors.New("task.yaml: timeouts must not be negative")
	}
	if p := tf.ParserName; p != "" && p != "pytest" {
		return nil, fmt.Errorf("task.yaml: parser_name %q is not supported (only pytest)", p)
	}
	return &tf, nil
}

// AgentTimeout is max_agent_timeout_sec, or the default.
func (tf *TaskFile) AgentTimeout() time.Duration {
	if tf.MaxAgentTimeoutSec > 0 {
		return time.Duration(tf.MaxAgentTimeoutSec * float64(time.Second))
	}
	return DefaultAgentTimeout
}

// TestTimeout is max_test_timeout_sec, or the default.
func (tf *TaskFile) TestTimeout() time.Duration {
	if tf.MaxTestTimeoutSec > 0 {
		return time.Duration(tf.MaxTestTimeoutSec * float64(time.Second))
	}
	return DefaultTestTimeout
}

// TaskData is a terminal-v1 task's Data: what the env reads at reset.
// Everything else it needs it reads from the task's directory.
type TaskData struct {
	// Builtin names one of this package's embedded smoke tasks, for tasks
	// with no directory (Task.Dir is not sent over the wire).
	Builtin string `json:"builtin,omitempty"`
	// Workdir is the sandbox's working directory: the Dockerfile's last
	// WORKDIR, or DefaultWorkdir. Informational; the Dockerfile is what
	// counts.
	Workdir string `json:"workdir,omitempty"`
	// Image is the Dockerfile's FROM image.
	Image string `json:"image,omitempty"`
	// Dockerfile is the Dockerfile the compose file's main service builds,
	// relative to the task folder, when it is not the folder's own
	// "Dockerfile". Informational: the compose file is what counts.
	Dockerfile string `json:"dockerfile,omitempty"`
	// Unsupported lists what the task's compose file asks for that
	// nextstate does not do (other services, build args); a task with any
	// is refused at reset.
	Unsupported []string `json:"unsupported,omitempty"`
	// Network asks for network access in the sandbox (default none).
	Network bool `json:"network,omitempty"`
	// Difficulty, Category and Tags are copied from task.yaml.
	Difficulty string   `json:"difficulty,omitempty"`
	Category   string   `json:"category,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	// TaskYAML is every other field of task.yaml, as read.
	TaskYAML map[string]json.RawMessage `json:"task_yaml,omitempty"`
}

// VerifierData is a terminal-v1 task's Verifier: the hidden test run.
type VerifierData struct {
	// Parser reads the test run's output: "pytest".
	Parser string `json:"parser"`
	// TestTimeout bounds the test run (max_test_timeout_sec).
	TestTimeout gym.Duration `json:"test_timeout"`
	// RunTests is the script run to test: "run-tests.sh" in the task dir.
	RunTests string `json:"run_tests"`
	// Tests lists the files of tests/, copied into the sandbox only when
	// the episode is over.
	Tests []string `json:"tests"`
}

// Limit on the step deadline of a terminal task: a step includes the
// verifier's test run and a reset may build an image.
const minStepTimeout = 10 * time.Minute

// LoadTask reads a Terminal-Bench task folder: task.yaml, Dockerfile,
// run-tests.sh, tests/, and solution.sh or solution.yaml. The task's id is
// the folder's name, its env "terminal-v1", its limits come from the
// timeouts (episode_timeout = max_agent_timeout_sec, plus the test run).
func LoadTask(dir string) (gym.Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return gym.Task{}, err
	}
	t, err := loadTaskFS(os.DirFS(abs), filepath.Base(abs))
	if err != nil {
		return gym.Task{}, fmt.Errorf("%s: %w", dir, err)
	}
	t.Dir = abs
	return t, nil
}

// loadTaskFS reads a task folder from fsys (rooted at the folder).
func loadTaskFS(fsys fs.FS, id string) (gym.Task, error) {
	b, err := fs.ReadFile(fsys, "task.yaml")
	if err != nil {
		return gym.Task{}, err
	}
	tf, err := ParseTaskFile(b)
	if err != nil {
		return gym.Task{}, err
	}
	data := TaskData{Difficulty: tf.Difficulty, Category: tf.Category, Tags: tf.Tags, TaskYAML: tf.Extra}
	bld, err := readTaskBuild(fsys)
	if err != nil {
		return gym.Task{}, err
	}
	if bld.Dockerfile != "Dockerfile" {
		data.Dockerfile = bld.Dockerfile
	}
	data.Unsupported = bld.Unsupported
	if df, err := fs.ReadFile(fsys, bld.Dockerfile); err == nil {
		d, err := ParseDockerfile(df)
		if err != nil {
			return gym.Task{}, err
		}
		data.Workdir, data.Image = d.WorkingDir(), d.From
	} else if !errors.Is(err, fs.ErrNotExist) {
		return gym.Task{}, err
	}
	if v, ok := tf.Extra["network"]; ok && string(v) == "true" {
		data.Network = true
	}
	if _, err := readSolution(fsys); err != nil && !errors.Is(err, errNoSolution) {
		return gym.Task{}, err
	}
	var ver *VerifierData
	if _, err := fs.Stat(fsys, "run-tests.sh"); err == nil {
		tests, err := listFiles(fsys, "tests")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return gym.Task{}, err
		}
		ver = &VerifierData{Parser: "pytest", TestTimeout: gym.Duration(tf.TestTimeout()), RunTests: "run-tests.sh", Tests: tests}
	} else if _, err := fs.Stat(fsys, "tests"); err == nil {
		return gym.Task{}, errors.New("tests/ but no run-tests.sh: nextstate runs the tests through run-tests.sh")
	}
	t := gym.Task{
		ID: id, Env: KindName, Instruction: strings.TrimSpace(tf.Instruction),
		Limits: limitsFor(tf),
	}
	if t.Data, err = json.Marshal(data); err != nil {
		return gym.Task{}, err
	}
	if ver != nil {
		if t.Verifier, err = json.Marshal(ver); err != nil {
			return gym.Task{}, err
		}
	}
	return t, nil
}

// limitsFor maps the timeouts: the episode may last the agent's timeout
// plus the test run; a step (which may hold the test run, or a reset that
// builds) gets at least minStepTimeout.
func limitsFor(tf *TaskFile) gym.Limits {
	return gym.Limits{
		MaxSteps:       DefaultMaxSteps,
		StepTimeout:    gym.Duration(max(minStepTimeout, tf.TestTimeout()+time.Minute)),
		EpisodeTimeout: gym.Duration(tf.AgentTimeout() + tf.TestTimeout() + time.Minute),
	}
}

// listFiles lists the regular files under dir in fsys, slash-separated and
// relative to fsys, sorted.
func listFiles(fsys fs.FS, dir string) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// LoadSuite reads a directory of Terminal-Bench task folders (or one task
// folder) into a suite named after the directory. It is gym.LoadSuite with
// this package's format registered, which importing the package does.
func LoadSuite(dir string) (*gym.Suite, error) { return gym.LoadSuite(dir) }

// IsTaskDir reports whether dir is a Terminal-Bench task folder: a
// task.yaml without an "env" field (a gym task file has one) beside a
// Dockerfile, docker-compose.yaml or run-tests.sh.
func IsTaskDir(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "task.yaml"))
	if err != nil {
		return false
	}
	marker := false
	for _, n := range []string{"Dockerfile", "docker-compose.yaml", "docker-compose.yml", "run-tests.sh"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			marker = true
			break
		}
	}
	if !marker {
		return false
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return true // LoadTask says what is wrong with it
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(j, &top) != nil {
		return true
	}
	_, hasEnv := top["env"]
	return !hasEnv
}

// SolutionStep is one step of a task's oracle solution. Command runs in the
// agent's shell; Block waits for it to finish (shell_exec), otherwise its
// text is typed as keystrokes (shell_send_keys, with Enter when
// AppendEnter) and MinTimeout is waited before the next step.
type SolutionStep struct {
	Command     string  `json:"command"`
	MinTimeout  float64 `json:"min_timeout_sec,omitempty"`
	Block       bool    `json:"block,omitempty"`
	AppendEnter bool    `json:"append_enter,omitempty"`
}

// Solution is a task's oracle: solution.sh (Script) or solution.yaml
// (Steps).
type Solution struct {
	Script string
	Steps  []SolutionStep
}

var errNoSolution = errors.New("the task has no solution.sh or solution.yaml")

func readSolution(fsys fs.FS) (*Solution, error) {
	if b, err := fs.ReadFile(fsys, "solution.sh"); err == nil {
		return &Solution{Script: string(b)}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	b, err := fs.ReadFile(fsys, "solution.yaml")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoSolution
	}
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("solution.yaml is not YAML: %w", err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(j, &raw); err != nil {
		return nil, errors.New("solution.yaml: want a list of commands")
	}
	s := &Solution{}
	for i, r := range raw {
		var st SolutionStep
		var cmd string
		if json.Unmarshal(r, &cmd) == nil {
			st = SolutionStep{Command: cmd, Block: true, AppendEnter: true}
		} else if err := json.Unmarshal(r, &st); err != nil {
			return nil, fmt.Errorf("solution.yaml item %d: want a command string or {command, min_timeout_sec, block, append_enter}", i+1)
		}
		s.Steps = append(s.Steps, st)
	}
	return s, nil
}

// LoadSolution returns a task's oracle solution, from its directory or, for
// a built-in smoke task, from the embedded copy.
func LoadSolution(t *gym.Task) (*Solution, error) {
	fsys, err := taskFS(t)
	if err != nil {
		return nil, err
	}
	if fsys == nil {
		return nil, errNoSolution
	}
	return readSolution(fsys)
}

// taskFS returns the file tree of a task: its directory, the embedded smoke
// task it names, or nil for a task without files.
func taskFS(t *gym.Task) (fs.FS, error) {
	if t.Dir != "" {
		return os.DirFS(t.Dir), nil
	}
	var d TaskData
	if len(t.Data) > 0 {
		if err := json.Unmarshal(t.Data, &d); err != nil {
			return nil, fmt.Errorf("terminal-v1 task data: %w", err)
		}
	}
	if d.Builtin == "" {
		return nil, nil
	}
	sub, err := fs.Sub(smokeFS, path.Join("tasks", d.Builtin))
	if err != nil {
		return nil, err
	}
	if _, err := fs.Stat(sub, "task.yaml"); err != nil {
		return nil, fmt.Errorf("no built-in terminal task %q", d.Builtin)
	}
	return sub, nil
}

func init() {
	gym.RegisterTaskFormat(FormatName, IsTaskDir, LoadTask)
}
