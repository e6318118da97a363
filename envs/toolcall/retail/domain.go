package retail

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/envs/toolcall"
	"github.com/nextstate-rl/nextstate/envs/toolcall/tau2"
	"github.com/nextstate-rl/nextstate/gym"
)

// KindName is the kind this package registers.
const KindName = "tau2-retail-v1"

// DefaultMaxSteps bounds an episode (agent actions): tau2 allows 200
// messages, the agent's and the user's.
const DefaultMaxSteps = 100

func init() {
	gym.Register(toolcall.NewKind(toolcall.Config{
		Name:        KindName,
		Description: description,
		Limits:      gym.Limits{MaxSteps: DefaultMaxSteps, StepTimeout: gym.Duration(3 * time.Minute)},
		Tasks:       SmokeTasks(),
	}, NewDomain()))
	tau2.RegisterDomain(format)
}

const description = `tau2-bench's retail domain: a customer-service agent helps a user with orders ` +
	`(look up users, orders and products; cancel or modify pending orders; return or exchange delivered ones; ` +
	`transfer to a human) under the store's policy, with tools in the OpenAI function shape against a mock database. ` +
	`A text part is a message to the user: with a simulated user (reset option "user": "simulated") it is answered ` +
	`by an LLM playing the task's user scenario; in solo mode the opening gives the scenario and the first message ends the episode. ` +
	`The reward replays the task's gold actions on a fresh database and compares it with the agent's (1 if equal), ` +
	`times tau2's COMMUNICATE and ACTION checks where the task asks for them.`

// Domain is the retail toolcall.Domain. It caches each data folder's
// parsed database and policy (files, the same for every Manager of the
// process), reads the user simulator's settings for each Manager
// (toolcall.Configurer) and gives each task's gold actions as its oracle
// (gym.OracleKind). It is safe for concurrent use.
type Domain struct {
	mu      sync.Mutex
	sources map[string]*source
}

var (
	_ toolcall.Configurer = (*Domain)(nil)
	_ tau2.UserStarter    = (*Domain)(nil)
)

// NewDomain returns a Domain with no user simulator (solo mode only); its
// Configure returns it with one.
func NewDomain() *Domain { return &Domain{sources: map[string]*source{}} }

// source is a data folder's database and policy.
type source struct {
	db     *DB
	policy string
	stamp  string // the files' sizes and times when read
}

// source returns the folder's parsed database and policy, reading them
// again when a file changed.
func (d *Domain) source(dir, builtin string) (*source, error) {
	key, stamp := "builtin:"+builtin, ""
	if builtin == "" {
		key, stamp = dir, tau2.Stamp(dir, FileDB, FilePolicy)
	}
	d.mu.Lock()
	s, ok := d.sources[key]
	d.mu.Unlock()
	if ok && s.stamp == stamp {
		return s, nil
	}
	read := func(name string) ([]byte, error) {
		if builtin != "" {
			return smokeFS.ReadFile("smoke/" + name)
		}
		return os.ReadFile(filepath.Join(dir, name))
	}
	dbb, err := read(FileDB)
	if err != nil {
		return nil, err
	}
	db, err := ParseDB(dbb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FileDB, err)
	}
	pol, err := read(FilePolicy)
	if err != nil {
		return nil, err
	}
	s = &source{db: db, policy: strings.TrimSpace(string(pol)), stamp: stamp}
	d.mu.Lock()
	d.sources[key] = s
	d.mu.Unlock()
	return s, nil
}

// Start begins an episode of a retail task (toolcall.Domain), with no
// user simulator: see StartWithUser.
func (d *Domain) Start(ctx context.Context, task *gym.Task, seed int64, opts gym.Options) (toolcall.Episode, error) {
	return d.StartWithUser(ctx, task, seed, opts, nil)
}

// StartWithUser begins an episode of a retail task with the user simulator
// ucfg (nil: none; tau2.UserStarter). Options: "user": "solo" or
// "simulated" (default: simulated when there is a user simulator, else
// solo); "think": true adds the think tool.
func (d *Domain) StartWithUser(ctx context.Context, task *gym.Task, seed int64, opts gym.Options, ucfg *tau2.UserConfig) (toolcall.Episode, error) {
	data, err := TaskDataOf(task)
	if err != nil {
		return nil, gym.InfraFault("bad_task", err)
	}
	crit, err := CriteriaOf(task)
	if err != nil {
		return nil, gym.InfraFault("bad_task", err)
	}
	var init *initialState
	if len(data.InitialState) > 0 {
		if init, err = parseInitialState(data.InitialState); err != nil {
			return nil, gym.InfraFault("bad_task", fmt.Errorf("task %q: %w", task.ID, err))
		}
	}
	src, err := d.source(task.Dir, data.Builtin)
	if err != nil {
		return nil, gym.InfraFault("bad_task", fmt.Errorf("task %q: %w", task.ID, err))
	}
	mode, err := tau2.UserMode(KindName, ucfg, opts)
	if err != nil {
		return nil, err
	}
	tools := retailTools
	if v, ok := opts["think"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return nil, gym.AgentFault("bad_option", fmt.Errorf(`%s: reset option "think" is %v; want true or false`, KindName, v))
		}
		if b {
			tools = retailThinkTool
		}
	}
	ep := &Episode{Conversation: tau2.Conversation{Mode: mode}, src: src, init: init, crit: crit, tools: tools}
	ep.st, err = ep.fresh()
	if err != nil {
		return nil, gym.InfraFault("bad_task", fmt.Errorf("task %q: %w", task.ID, err))
	}
	if mode == tau2.ModeSolo {
		ep.opening = agentInstructions + "\n<policy>\n" + src.policy + "\n</policy>\n\n" + soloInstruction(data.UserScenario)
		return ep, nil
	}
	if err := ep.Start(ctx, ucfg, KindName, data.UserScenario, seed, nil); err != nil {
		return nil, err
	}
	ep.opening = agentInstructions + "\n<policy>\n" + src.policy + "\n</policy>\n\n" + ep.Greeting()
	return ep, nil
}

const agentInstructions = `<instructions>
You are a customer service agent for an online retail store. Help the user as the <policy> below says.
In each turn, either send the user a message or make a tool call, not both. Always follow the policy.
</instructions>`

// soloInstruction is a task's instruction in solo mode: the user's scenario,
// for the agent to act on without a user to ask.
func soloInstruction(u tau2.UserScenario) string {
	return `There is no live user in this conversation: you are acting for the user described in <user_scenario> below. ` +
		`Take what it says as what the user told you and wants, including their confirmation of the actions it asks for; ` +
		`anything it does not say is unknown. Do what the user wants with the tools, as far as the policy allows. ` +
		`You cannot ask the user anything: your first message (text instead of a tool call) ends the conversation, ` +
		"so send it only when you are done, with what the user should be told.\n\n<user_scenario>\n" + u.String() + "\n</user_scenario>"
}

// Oracle implements gym.OracleKind: the task's gold actions as tool calls,
// one per step, then a closing message with the information the task
// wants communicated; in solo mode (the oracle's reset options), which
// that message ends (tau2.Oracle). A task whose gold actions end with a
// transfer to a human ends there.
func (d *Domain) Oracle(task *gym.Task) (gym.Oracle, error) {
	crit, err := CriteriaOf(task)
	if err != nil {
		return nil, err
	}
	return tau2.Oracle(task, crit)
}

// OracleActions are the actions of a task's oracle (see Domain.Oracle).
func OracleActions(c *tau2.Criteria) []gym.Action { return tau2.OracleActions(c) }

// Configure implements toolcall.Configurer: it reads the tau2.* settings
// (see the package doc) of one Manager, whose envs start their episodes
// with that user simulator (tau2.WithUser).
func (d *Domain) Configure(_ context.Context, s gym.Settings) (toolcall.Instance, error) {
	return tau2.ConfigureUser(d, s)
}

// Episode is one retail episode: its database, the agent's calls, and
// the conversation with the user (simulated, or none in solo mode), whose
// Say is the episode's (toolcall.Episode).
type Episode struct {
	tau2.Conversation
	src     *source
	init    *initialState
	crit    *tau2.Criteria
	tools   []toolcall.Tool
	opening string
	st      *state
	calls   []tau2.Call // the agent's calls that reached a tool
}

// fresh is a new state at the task's initial state.
func (e *Episode) fresh() (*state, error) {
	s := newState(e.src.db)
	if e.init != nil {
		if err := e.init.apply(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Tools implements toolcall.Episode.
func (e *Episode) Tools() []toolcall.Tool { return e.tools }

// Opening implements toolcall.Episode: the agent's instructions, the
// policy, and the scenario (solo) or the user's first message (simulated).
func (e *Episode) Opening() string { return e.opening }

// Call implements toolcall.Episode: it runs one retail tool on the
// episode's database. transfer_to_human_agents ends the episode.
func (e *Episode) Call(_ context.Context, name string, args json.RawMessage) (toolcall.Result, error) {
	run, ok := toolRuns[name]
	if !ok {
		return toolcall.Result{}, fmt.Errorf("retail: no tool %q", name) // the Toolset lets only offered tools through
	}
	e.calls = append(e.calls, tau2.Call{Name: name, Args: args})
	out, err := run(e.st, args)
	if err != nil {
		return toolcall.Result{}, err
	}
	if name == ToolTransfer {
		e.Ended = "transfer"
		return toolcall.Result{Content: out, End: true}, nil
	}
	return toolcall.Result{Content: out}, nil
}

// Close implements toolcall.Episode.
func (e *Episode) Close(context.Context) error { return nil }
