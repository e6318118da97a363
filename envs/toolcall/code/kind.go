package code

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
	"github.com/nextstate-rl/nextstate/sandbox/pool"
)

// KindName is the kind this package registers.
const KindName = "code-interpreter-v1"

// Settings keys Configure reads, besides the sandbox ones of package
// envs/internal/sbopen ("sandbox", "docker.hosts", "sandbox.owner",
// "sandbox.dir").
const (
	SettingBaseImage = "base_image"  // the docker image; default DefaultBaseImage
	SettingMemory    = "code.memory" // the sandbox's memory limit: bytes, or 512MiB, 2GiB
	SettingPool      = "code.pool"   // warm sandboxes kept; 0 turns the pool off
)

// Defaults and bounds.
const (
	DefaultBaseImage = "nextstate/base"
	DefaultMemory    = 512 << 20
	MinMemory        = 64 << 20
	MaxMemory        = 64 << 30
	DefaultPoolSize  = 2

	DefaultTimeout = 10 * time.Second // per call; reset option "timeout"
	MinTimeout     = time.Second
	MaxTimeout     = 60 * time.Second
	MaxOutput      = 16 << 10 // bytes of output a call returns (head and tail, with a marker between)
	MaxCodeBytes   = 64 << 10 // bytes of source a call may send

	DefaultMaxSteps = 32
)

// The tool's name.
const ToolCode = "code_interpreter"

// Reset option values.
const (
	ModeStateless = "stateless" // each call a fresh python3 process (default)
	ModeSession   = "session"   // one persistent interpreter per episode

	TextBoxed = "boxed" // a message ends the episode when it holds \boxed{...} (default)
	TextFinal = "final" // every message ends the episode
)

//go:embed driver.py
var driver string

func init() {
	gym.Register(toolcall.NewKind(toolcall.Config{
		Name:        KindName,
		Description: description,
		Limits: gym.Limits{MaxSteps: DefaultMaxSteps, StepTimeout: gym.Duration(2*MaxTimeout + 30*time.Second),
			EpisodeTimeout: gym.Duration(30 * time.Minute)},
		Tasks: SmokeTasks(),
	}, NewDomain()))
}

const description = `Math problems solved with a Python code interpreter (the ReTool setting). ` +
	`Act with tool calls in the OpenAI function shape: code_interpreter {code} runs Python 3 in a sandbox ` +
	`(no network; time, memory and output caps) and returns what it printed, tracebacks included; ` +
	`the value of a final expression is printed, as in a notebook. ` +
	`Reset option "mode": "stateless" (default: each call a fresh process) or "session" (variables persist between calls); ` +
	`"timeout": seconds per call (default 10, 1 to 60). ` +
	`The final answer is a text message holding \boxed{...} (the last one counts), which ends the episode; ` +
	`the reward is 1 when it equals the reference after normalisation (exact numbers, fractions, simple expressions), else 0.`

// Domain is the code interpreter's toolcall.Domain. It implements
// toolcall.Configurer (each Manager's sandbox backend and warm pool are
// the Instance its Configure returns) and gym.OracleKind. A Domain holds
// nothing: every Manager of the process configures the registered one,
// and its own episodes fail, saying the manager did not configure it.
type Domain struct{}

var _ toolcall.Configurer = (*Domain)(nil)

// NewDomain returns an unconfigured Domain; the package registers one.
// Tests that drive a Domain directly make their own.
func NewDomain() *Domain { return &Domain{} }

// instance is the code interpreter configured by one Manager
// (toolcall.Instance): its sandbox backend, warm pool and sandbox spec.
// The zero instance has no backend.
type instance struct {
	sbopen.Sandboxes
	spec sandbox.Spec
}

// Configure implements toolcall.Configurer: it opens the sandbox backend
// the settings name (package envs/internal/sbopen) and a warm pool over
// it, for the Manager whose settings s are. Each Manager gets its own;
// the Instance's Shutdown closes the pool, then the backend.
func (d *Domain) Configure(ctx context.Context, s gym.Settings) (toolcall.Instance, error) {
	mem, err := parseBytes(SettingMemory, s[SettingMemory], DefaultMemory, MinMemory, MaxMemory)
	if err != nil {
		return nil, err
	}
	size := DefaultPoolSize
	if v, ok := s[SettingPool]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > 64 {
			return nil, fmt.Errorf("setting %s=%q: want a number of sandboxes from 0 (no pool) to 64", SettingPool, v)
		}
		size = n
	}
	image := strings.TrimSpace(s[SettingBaseImage])
	if image == "" {
		image = DefaultBaseImage
	}
	b, err := sbopen.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	spec := sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: mem}}
	if b.Name() == "docker" {
		spec.Image = image
	} // bwrap: the host's root, read-only, has python3
	i := &instance{Sandboxes: sbopen.Sandboxes{Backend: b, Name: b.Name()}, spec: spec}
	if size > 0 {
		i.Pool = pool.New(b, pool.Options{Size: size, Specs: []sandbox.Spec{spec}})
	}
	return i, nil
}

// Shutdown implements toolcall.Instance: it closes the pool, then the
// backend.
func (i *instance) Shutdown(ctx context.Context) error { return i.Close(ctx) }

// parseBytes reads a size: a number of bytes, or a number with a suffix
// K, M, G (or KiB, MiB, GiB; all binary).
func parseBytes(key, v string, def, lo, hi int64) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return def, nil
	}
	num, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(v, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > hi/mult || n*mult < lo || n*mult > hi {
		return 0, fmt.Errorf("setting %s=%q: want a size from %s to %s, in bytes or with a suffix (512MiB, 2GiB)",
			key, v, sizeString(lo), sizeString(hi))
	}
	return n * mult, nil
}

func sizeString(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// options are an episode's reset options.
type options struct {
	mode      string
	timeout   time.Duration
	textFinal bool
}

// parseOptions reads the reset options; mode is the task's ("" for the
// default).
func parseOptions(opts gym.Options, mode string) (options, error) {
	o := options{mode: ModeStateless, timeout: DefaultTimeout}
	if mode != "" {
		o.mode = mode
	}
	if v, ok := opts["mode"]; ok {
		switch v {
		case ModeStateless, ModeSession:
			o.mode = v.(string)
		default:
			return o, fmt.Errorf(`reset option "mode" is %v; want %q (each call a fresh process) or %q (a persistent interpreter)`,
				v, ModeStateless, ModeSession)
		}
	}
	if v, ok := opts["timeout"]; ok {
		f, isNum := number(v)
		if !isNum || f < MinTimeout.Seconds() || f > MaxTimeout.Seconds() {
			return o, fmt.Errorf(`reset option "timeout" is %v; want seconds per call from %v to %v`,
				v, MinTimeout.Seconds(), MaxTimeout.Seconds())
		}
		o.timeout = time.Duration(f * float64(time.Second))
	}
	if v, ok := opts["text_action"]; ok {
		switch v {
		case TextBoxed:
		case TextFinal:
			o.textFinal = true
		default:
			return o, fmt.Errorf(`reset option "text_action" is %v; want %q (a message with \boxed{} ends the episode) or %q (every message does)`,
				v, TextBoxed, TextFinal)
		}
	}
	return o, nil
}

// number reads a JSON number (float64 over the wire; Go callers may pass
// ints).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Start implements toolcall.Domain as an instance with no sandbox backend
// does: a Manager's envs start their episodes in the Instance its
// Configure returned.
func (d *Domain) Start(ctx context.Context, task *gym.Task, seed int64, opts gym.Options) (toolcall.Episode, error) {
	return (&instance{}).Start(ctx, task, seed, opts)
}

// Start implements toolcall.Domain: an episode in a sandbox of its own
// (from the warm pool when there is one), with a persistent interpreter
// started in it in session mode.
func (i *instance) Start(ctx context.Context, task *gym.Task, _ int64, opts gym.Options) (toolcall.Episode, error) {
	prob, err := problemOf(task)
	if err != nil {
		return nil, gym.InfraFault("bad_task", err)
	}
	o, err := parseOptions(opts, prob.mode)
	if err != nil {
		return nil, gym.AgentFault("bad_option", fmt.Errorf("%s: %w", KindName, err))
	}
	b, err := i.newBox(ctx)
	if err != nil {
		return nil, err
	}
	ep := &episode{d: i, box: b, task: task, problem: prob, opts: o}
	if err := ep.writeFiles(ctx); err != nil {
		b.close(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := ep.begin(ctx); err != nil {
		b.close(context.WithoutCancel(ctx))
		return nil, err
	}
	return ep, nil
}

// problemOf reads a task's problem and reference answer.
func problemOf(task *gym.Task) (problem, error) {
	var p problem
	if len(task.Data) > 0 {
		var data TaskData
		if err := strictUnmarshal(task.Data, &data); err != nil {
			return p, fmt.Errorf("task %s: %s data: %w (want {\"problem\": \"...\"})", task.ID, KindName, err)
		}
		p.text = data.Problem
		switch data.Mode {
		case "", ModeStateless, ModeSession:
			p.mode = data.Mode
		default:
			return p, fmt.Errorf("task %s: data.mode is %q; want %q or %q", task.ID, data.Mode, ModeStateless, ModeSession)
		}
		for name := range data.Files {
			if !filepath.IsLocal(name) || strings.ContainsRune(name, '\\') {
				return p, fmt.Errorf("task %s: data.files: %q is not a relative path inside the working directory (want a name such as data.txt or in/a.csv)", task.ID, name)
			}
		}
		p.files = data.Files
	}
	if strings.TrimSpace(p.text) == "" {
		p.text = task.Instruction
	}
	if strings.TrimSpace(p.text) == "" {
		return p, fmt.Errorf("task %s: no problem: set data.problem or the instruction", task.ID)
	}
	var v VerifierData
	if len(task.Verifier) == 0 {
		return p, fmt.Errorf("task %s: no reference answer: set verifier.answer", task.ID)
	}
	if err := strictUnmarshal(task.Verifier, &v); err != nil {
		return p, fmt.Errorf("task %s: %s verifier: %w (want {\"answer\": \"...\", \"solution\": \"python source\"})", task.ID, KindName, err)
	}
	if strings.TrimSpace(v.Answer) == "" {
		return p, fmt.Errorf("task %s: no reference answer: set verifier.answer", task.ID)
	}
	p.answer, p.solution = v.Answer, v.Solution
	return p, nil
}

type problem struct {
	text, answer, solution, mode string
	files                        map[string]string
}

// sandboxes returns the backend, pool and spec, or an error when the
// manager did not configure the kind.
func (i *instance) sandboxes() (sandbox.Backend, *pool.Pool, sandbox.Spec, error) {
	if i.Backend == nil {
		return nil, nil, sandbox.Spec{}, gym.InfraFault("configure", errors.New(KindName+" has no sandbox backend: the manager did not configure it"))
	}
	return i.Backend, i.Pool, i.spec, nil
}

// Oracle implements gym.OracleKind: see NewOracle.
func (d *Domain) Oracle(task *gym.Task) (gym.Oracle, error) { return NewOracle(task) }

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
