package terminal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox/pool"
)

// KindName is the kind this package registers.
const KindName = "terminal-v1"

// DefaultMaxSteps bounds an episode of a task that sets no step limit.
const DefaultMaxSteps = 200

// Settings keys Configure reads (gym.Settings; `nextstate serve --sandbox`,
// `--docker-host`, `--base-image`, `--set`).
const (
	SettingSandbox    = "sandbox"      // "bwrap" (default) or "docker"
	SettingDocker     = "docker.hosts" // comma-separated engine addresses
	SettingBaseImage  = "base_image"   // replaces a FROM image that is not present
	SettingOwner      = "sandbox.owner"
	SettingSandboxDir = "sandbox.dir"   // where bwrap keeps its workspaces
	SettingPool       = "terminal.pool" // warm sandboxes kept per sandbox spec; 0 turns the pool off
	// SettingTestsRunner is how the tests run: RunnerAuto (default),
	// RunnerScript or RunnerPytest.
	SettingTestsRunner = "terminal.tests_runner"
)

// DefaultPoolSize is the warm pool's size per sandbox spec.
const DefaultPoolSize = 2

// DefaultBaseImage is the image a missing FROM image is replaced with.
const DefaultBaseImage = "nextstate/base"

func init() {
	gym.Register(&Kind{})
}

// Kind is terminal-v1. It implements gym.Configurer: Configure opens a
// sandbox backend for one Manager, which the Manager's envs of the kind
// share; its Instance's Shutdown closes it. A Kind holds nothing: every
// Manager of the process configures the registered one.
type Kind struct{}

var _ gym.Configurer = (*Kind)(nil)

// instance is terminal-v1 configured by one Manager (gym.Instance): its
// backend, warm pool and settings.
type instance struct {
	sbopen.Sandboxes
	base   string // the base image
	runner string // the tests_runner setting
	// images caches built task images by task directory and Dockerfile.
	images sync.Map
}

// Spec implements gym.Kind.
func (k *Kind) Spec() gym.Spec {
	return gym.Spec{
		Name:        KindName,
		Description: description,
		JudgePrompt: "terminal",
		ActionSchema: gym.PartsSchema(1, MaxCallsPerStep,
			gym.PartToolCall, gym.PartText),
		ObservationSchema: gym.PartsSchema(0, MaxCallsPerStep, gym.PartText, gym.PartToolResult),
		Limits: gym.Limits{MaxSteps: DefaultMaxSteps, StepTimeout: gym.Duration(minStepTimeout),
			EpisodeTimeout: gym.Duration(DefaultAgentTimeout + DefaultTestTimeout + time.Minute)},
		Tasks: SmokeTasks(),
	}
}

// MaxCallsPerStep bounds the parts of one action (parallel tool calls).
const MaxCallsPerStep = 32

const description = `Shell tasks in a sandbox (bubblewrap or Docker), in the Terminal-Bench task format. ` +
	`Act with tool calls in the OpenAI function shape (parallel calls allowed, each answered by a tool_result in order): ` +
	`shell_exec {command, timeout?} runs a command in a persistent bash (cd and exports persist) and returns its output and exit code; ` +
	`shell_send_keys {keys, wait?} types keys (literal text or tmux key names such as Enter, C-c) into the terminal and returns its screen; ` +
	`shell_view {} returns the screen; write_file {path, content} writes a file; submit {} ends the episode. ` +
	`A plain text part is run as a shell_exec command (with reset option {"text_action":"final"} a text-only action ends the episode instead). ` +
	`The reset info's "tools" holds the tool schemas in the OpenAI tools shape. ` +
	`When the episode ends, the task's hidden tests run and the reward is the fraction that pass.`

// Configure implements gym.Configurer: it opens the sandbox backend named
// by Settings["sandbox"] ("bwrap" by default; register backends by
// importing their packages), with Settings["docker.hosts"] (comma
// separated) and Settings["base_image"], and a warm pool over it (see
// package envs/internal/sbopen for the sandbox settings), for the Manager
// whose settings s are. Each Manager gets its own; the Instance's
// Shutdown closes the pool, then the backend.
func (k *Kind) Configure(ctx context.Context, s gym.Settings) (gym.Instance, error) {
	base := s[SettingBaseImage]
	if base == "" {
		base = DefaultBaseImage
	}
	runner := s[SettingTestsRunner]
	switch runner {
	case "":
		runner = RunnerAuto
	case RunnerAuto, RunnerScript, RunnerPytest:
	default:
		return nil, fmt.Errorf("setting %s=%q: want %s (the default), %s or %s", SettingTestsRunner, runner, RunnerAuto, RunnerScript, RunnerPytest)
	}
	size := DefaultPoolSize
	if v, ok := s[SettingPool]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("setting %s=%q: want a number of sandboxes (0 turns the pool off)", SettingPool, v)
		}
		size = n
	}
	b, err := sbopen.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	i := &instance{Sandboxes: sbopen.Sandboxes{Backend: b, Name: sbopen.Name(s)}, base: base, runner: runner}
	if size > 0 {
		i.Pool = pool.New(b, pool.Options{Size: size})
	}
	return i, nil
}

// Shutdown implements gym.Instance: it closes the pool, then the backend.
func (i *instance) Shutdown(ctx context.Context) error {
	i.images.Clear()
	return i.Close(ctx)
}

// New implements gym.Kind. A Manager asks its Instance instead: the
// registered Kind has no sandbox backend.
func (k *Kind) New(context.Context) (gym.Env, error) {
	return nil, gym.InfraFault("configure", errors.New("terminal-v1 has no sandbox backend: the manager did not configure it"))
}

// New implements gym.Instance.
func (i *instance) New(context.Context) (gym.Env, error) {
	return &Env{inst: i, backend: i.Backend, pool: i.Pool, backendName: i.Name, baseImage: i.base, runner: i.runner}, nil
}
