package swe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/gym"
)

// KindName is the kind this package registers.
const KindName = "swe-v1"

// DefaultMaxSteps bounds an episode of a task that sets no step limit.
const DefaultMaxSteps = 250

// Settings keys Configure reads, besides the sandbox's (package
// envs/internal/sbopen: sandbox, docker.hosts, sandbox.owner,
// sandbox.dir).
const (
	SettingGoModCache  = "swe.gomodcache"    // the module cache mounted into Go sandboxes
	SettingGoRoot      = "swe.go_root"       // the Go toolchain mounted into Go sandboxes
	SettingWorkDir     = "swe.workdir"       // prepared repositories and the evaluation build cache
	SettingEvalGoCache = "swe.eval_gocache"  // the evaluations' build cache directory, or "off"
	SettingTestTimeout = "swe.test_timeout"  // bound on an evaluation's test run, e.g. "10m"
	SettingImage       = "swe.image"         // an image for every instance, over theirs
	SettingAgentCache  = "swe.agent_gocache" // "seed" (default) or "off": how an agent's Go build cache starts
)

func init() {
	gym.Register(&Kind{})
}

// Kind is swe-v1. It implements gym.Configurer (Configure opens, for one
// Manager, the sandbox backend that the Manager's envs of the kind share
// and the evaluation harness over it; its Instance's Shutdown closes them)
// and gym.OracleKind (the gold patch, applied through the tools). A Kind
// holds nothing: every Manager of the process configures the registered
// one.
type Kind struct{}

// instance is swe-v1 configured by one Manager (gym.Instance): its
// backend and the evaluation harness over it.
type instance struct {
	sbopen.Sandboxes
	harness *Harness
}

var (
	_ gym.Configurer = (*Kind)(nil)
	_ gym.OracleKind = (*Kind)(nil)
)

const description = `SWE-bench-format software engineering tasks: a repository (Go or Python) checked out at its base commit in ` + Workdir +
	` inside a sandbox with no network, and an issue to resolve. Act with tool calls in the OpenAI function shape (parallel calls allowed, ` +
	`each answered by a tool_result in order): shell_exec {command, timeout?} runs a command in a persistent bash; ` +
	`str_replace_based_edit_tool {command: view|create|str_replace|insert|undo_edit, path, ...} views and edits files; ` +
	`submit {} ends the episode. A plain text part is run as a shell_exec command. The reset info's "tools" holds the tool schemas. ` +
	`At the end, the diff of the repository against its base commit is evaluated in a fresh sandbox: changes to the test patch's files ` +
	`are discarded, the hidden test patch is applied, and the reward is 1 when every FAIL_TO_PASS and PASS_TO_PASS test passes, else 0.`

// Spec implements gym.Kind.
func (k *Kind) Spec() gym.Spec {
	return gym.Spec{
		Name:              KindName,
		Description:       description,
		ActionSchema:      gym.PartsSchema(1, MaxCallsPerStep, gym.PartToolCall, gym.PartText),
		ObservationSchema: gym.PartsSchema(0, MaxCallsPerStep, gym.PartText, gym.PartToolResult),
		Limits: gym.Limits{MaxSteps: DefaultMaxSteps, StepTimeout: gym.Duration(MaxCommandTimeout + time.Minute),
			EpisodeTimeout: gym.Duration(2 * time.Hour)},
		JudgePrompt: "swe",
	}
}

// Configure implements gym.Configurer: it opens the sandbox backend the
// settings name (see package envs/internal/sbopen) and the evaluation
// harness, with the swe.* settings (see the package doc), for the Manager
// whose settings s are. Each Manager gets its own; the Instance's
// Shutdown closes the backend, and every sandbox with it.
func (k *Kind) Configure(ctx context.Context, s gym.Settings) (gym.Instance, error) {
	opts, err := optionsFrom(s)
	if err != nil {
		return nil, err
	}
	b, err := sbopen.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	opts.Backend = sbopen.Name(s)
	return &instance{Sandboxes: sbopen.Sandboxes{Backend: b, Name: opts.Backend}, harness: NewHarness(b, opts)}, nil
}

// optionsFrom reads the swe.* settings.
func optionsFrom(s gym.Settings) (EvalOptions, error) {
	var o EvalOptions
	o.GoModCache = strings.TrimSpace(s[SettingGoModCache])
	o.GoRoot = strings.TrimSpace(s[SettingGoRoot])
	o.WorkDir = strings.TrimSpace(s[SettingWorkDir])
	o.GoCache = strings.TrimSpace(s[SettingEvalGoCache])
	o.Image = strings.TrimSpace(s[SettingImage])
	switch o.AgentGoCache = strings.TrimSpace(s[SettingAgentCache]); o.AgentGoCache {
	case "", "seed", "off":
	default:
		return o, fmt.Errorf("setting %s=%q: want seed or off", SettingAgentCache, o.AgentGoCache)
	}
	if v := strings.TrimSpace(s[SettingTestTimeout]); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("setting %s=%q: want a positive duration such as 10m", SettingTestTimeout, v)
		}
		o.TestTimeout = d
	}
	return o, nil
}

// Shutdown implements gym.Instance: it closes the backend, and every
// sandbox with it.
func (i *instance) Shutdown(ctx context.Context) error { return i.Close(ctx) }

// New implements gym.Kind. A Manager asks its Instance instead: the
// registered Kind has no sandbox backend.
func (k *Kind) New(context.Context) (gym.Env, error) {
	return nil, gym.InfraFault("configure", errors.New("swe-v1 has no sandbox backend: the manager did not configure it"))
}

// New implements gym.Instance.
func (i *instance) New(context.Context) (gym.Env, error) { return &Env{harness: i.harness}, nil }

// OraclePatchPath is where the oracle writes the gold patch in the sandbox,
// outside the repository.
const OraclePatchPath = "/tmp/nextstate-oracle/gold.patch"

// Oracle implements gym.OracleKind: it writes the gold patch with the
// editor (create) to OraclePatchPath, applies it with git apply (patch
// --fuzz=3 when git refuses) in one step, and submits in the next.
func (k *Kind) Oracle(t *gym.Task) (gym.Oracle, error) {
	in, err := InstanceOf(t)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Patch) == "" {
		return nil, fmt.Errorf("task %s: %w", t.ID, gym.ErrNoOracle)
	}
	return gym.ScriptOracle(OracleActions(in.Patch)), nil
}

// OracleActions are the actions that apply patch through the tools and
// submit.
func OracleActions(patch string) []gym.Action {
	tc := func(id, name string, args map[string]any) gym.Part {
		b, _ := json.Marshal(args)
		return gym.Part{Type: gym.PartToolCall, ToolCall: &gym.ToolCall{ID: id, Type: "function",
			Function: gym.FunctionCall{Name: name, Arguments: string(b)}}}
	}
	apply := "git apply --whitespace=nowarn " + OraclePatchPath + " || patch --batch -p1 --fuzz=3 -i " + OraclePatchPath
	return []gym.Action{
		{Parts: []gym.Part{
			tc("oracle_1", ToolEditor, map[string]any{"command": EditCreate, "path": OraclePatchPath, "file_text": patch}),
			tc("oracle_2", ToolExec, map[string]any{"command": apply}),
		}},
		{Parts: []gym.Part{tc("oracle_3", ToolSubmit, map[string]any{})}},
	}
}
