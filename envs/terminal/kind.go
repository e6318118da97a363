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
	"github.com/nextstate-rl/nextstate/sandbox"
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
	gym.Register(&Kind{shared: sbopen.Shared{Kind: KindName}})
}

// Kind is terminal-v1. It implements gym.Configurer: Configure opens the
// sandbox backend that every env of the kind shares, Shutdown closes it.
type Kind struct {
	mu      sync.Mutex
	backend sandbox.Backend
	pool    *pool.Pool // nil: no warm pool
	name    string     // the backend's name
	base    string     // the base image
	runner  string     // the tests_runner setting
	// shared opens the backend and counts Configure calls not yet shut
	// down: one Kind serves every Manager of the process (tests start
	// several).
	shared sbopen.Shared
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
// package envs/internal/sbopen for the sandbox settings). The process has
// one Kind: a second Manager's Configure shares what the first opened (its
// settings must name the same backend; the first's other settings hold),
// and the last Shutdown closes it.
func (k *Kind) Configure(ctx context.Context, s gym.Settings) error {
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
		return fmt.Errorf("setting %s=%q: want %s (the default), %s or %s", SettingTestsRunner, runner, RunnerAuto, RunnerScript, RunnerPytest)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	size := DefaultPoolSize
	if v, ok := s[SettingPool]; ok && k.backend == nil {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("setting %s=%q: want a number of sandboxes (0 turns the pool off)", SettingPool, v)
		}
		size = n
	}
	b, first, err := k.shared.Acquire(ctx, s)
	if err != nil || !first {
		return err
	}
	k.backend, k.name, k.base, k.runner = b, sbopen.Name(s), base, runner
	k.pool = nil
	if size > 0 {
		k.pool = pool.New(b, pool.Options{Size: size})
	}
	return nil
}

// Shutdown implements gym.Configurer: the last Shutdown closes the pool,
// then the backend.
func (k *Kind) Shutdown(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.shared.Release(ctx, func(ctx context.Context) error {
		p := k.pool
		k.backend, k.pool = nil, nil
		k.images.Clear()
		if p != nil {
			return p.Close(ctx)
		}
		return nil
	})
}

// New implements gym.Kind.
func (k *Kind) New(ctx context.Context) (gym.Env, error) {
	k.mu.Lock()
	b, p, name, base, runner := k.backend, k.pool, k.name, k.base, k.runner
	k.mu.Unlock()
	if b == nil {
		return nil, gym.InfraFault("configure", errors.New("terminal-v1 has no sandbox backend: the manager did not configure it"))
	}
	return &Env{kind: k, backend: b, pool: p, backendName: name, baseImage: base, runner: runner}, nil
}
