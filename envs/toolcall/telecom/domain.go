package telecom

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
const KindName = "tau2-telecom-v1"

// DefaultMaxSteps bounds an episode (agent actions): tau2 allows 200
// messages, the agent's and the user's, the user's tool calls included.
const DefaultMaxSteps = 100

func init() {
	gym.Register(toolcall.NewKind(toolcall.Config{
		Name:        KindName,
		Description: description,
		Limits:      gym.Limits{MaxSteps: DefaultMaxSteps, StepTimeout: gym.Duration(5 * time.Minute)},
		Tasks:       SmokeTasks(),
	}, NewDomain()))
	tau2.RegisterDomain(format)
}

const description = `tau2-bench's telecom domain: a tech-support agent of a mobile carrier helps a user whose phone has no service, ` +
	`slow or no mobile data, or cannot send MMS, and with overdue bills, under the carrier's policy, with tools in the OpenAI function shape ` +
	`against a mock database. Dual control: the user has a simulated phone with tools of its own. With a simulated user (reset option ` +
	`"user": "simulated") an LLM plays the user and does on the phone what the agent asks; in solo mode the agent gets the phone's tools too ` +
	`and works on the task's ticket. The reward is tau2's: the task's assertions on the final state of the phone and the line ` +
	`(ENV_ASSERTION), times the ACTION and DB checks where the task asks for them.`

// Domain is the telecom toolcall.Domain. It caches each data folder's
// parsed databases and policies (files, the same for every Manager of the
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

// source is a data folder's databases and policies.
type source struct {
	db       *DB
	user     *UserDB
	policies map[string]string // by policyKey
	stamp    string            // the files' sizes and times when read
}

// Policies (reset option "policy"): tau2's telecom domain has the
// manual, its telecom-workflow domain the workflow.
const (
	PolicyManual   = "manual"
	PolicyWorkflow = "workflow"
)

func policyKey(policy, mode string) string { return policy + "/" + mode }

// policyFiles are the tech-support policy of each policy and mode (tau2
// gives a solo agent the manual as it is).
var policyFiles = map[string]string{
	policyKey(PolicyManual, tau2.ModeSimulated): FileManual, policyKey(PolicyManual, tau2.ModeSolo): FileManual,
	policyKey(PolicyWorkflow, tau2.ModeSimulated): FileWorkflow, policyKey(PolicyWorkflow, tau2.ModeSolo): FileWorkflowSolo,
}

// source returns the folder's parsed data, reading it again when a file
// changed.
func (d *Domain) source(dir, builtin string) (*source, error) {
	key, stamp := "builtin:"+builtin, ""
	if builtin == "" {
		key, stamp = dir, tau2.Stamp(dir, FileDB, FileUserDB, FileMainPolicy, FileMainPolicySolo, FileManual, FileWorkflow, FileWorkflowSolo)
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
	s = &source{policies: map[string]string{}, stamp: stamp}
	b, err := read(FileDB)
	if err != nil {
		return nil, err
	}
	if s.db, err = ParseDB(b); err != nil {
		return nil, fmt.Errorf("%s: %w", FileDB, err)
	}
	if b, err = read(FileUserDB); err != nil {
		return nil, err
	}
	if s.user, err = ParseUserDB(b); err != nil {
		return nil, fmt.Errorf("%s: %w", FileUserDB, err)
	}
	mains := map[string]string{}
	for mode, f := range map[string]string{tau2.ModeSimulated: FileMainPolicy, tau2.ModeSolo: FileMainPolicySolo} {
		if b, err = read(f); err != nil {
			return nil, err
		}
		mains[mode] = string(b)
	}
	for k, f := range policyFiles {
		b, err := read(f)
		if err != nil {
			continue // the workflow files are optional; Start says so when asked for them
		}
		mode := k[strings.IndexByte(k, '/')+1:]
		// As tau2's environment joins them.
		s.policies[k] = "<main_policy>\n" + mains[mode] + "\n</main_policy>\n<tech_support_policy>\n" + string(b) + "\n</tech_support_policy>"
	}
	d.mu.Lock()
	d.sources[key] = s
	d.mu.Unlock()
	return s, nil
}

// Start begins an episode of a telecom task (toolcall.Domain), with no
// user simulator: see StartWithUser.
func (d *Domain) Start(ctx context.Context, task *gym.Task, seed int64, opts gym.Options) (toolcall.Episode, error) {
	return d.StartWithUser(ctx, task, seed, opts, nil)
}

// StartWithUser begins an episode of a telecom task with the user
// simulator ucfg (nil: none; tau2.UserStarter). Options: "user": "solo" or
// "simulated" (default: simulated when there is a user simulator, else
// solo); "policy": "manual" (the default, tau2's telecom) or "workflow"
// (tau2's telecom-workflow).
func (d *Domain) StartWithUser(ctx context.Context, task *gym.Task, seed int64, opts gym.Options, ucfg *tau2.UserConfig) (toolcall.Episode, error) {
	data, err := TaskDataOf(task)
	if err != nil {
		return nil, gym.InfraFault("bad_task", err)
	}
	crit, err := CriteriaOf(task)
	if err != nil {
		return nil, gym.InfraFault("bad_task", err)
	}
	src, err := d.source(task.Dir, data.Builtin)
	if err != nil {
		return nil, gym.InfraFault("bad_task", fmt.Errorf("task %q: %w", task.ID, err))
	}
	mode, err := tau2.UserMode(KindName, ucfg, opts)
	if err != nil {
		return nil, err
	}
	policy := PolicyManual
	if v, ok := opts["policy"]; ok {
		if v != PolicyManual && v != PolicyWorkflow {
			return nil, gym.AgentFault("bad_option", fmt.Errorf(`%s: reset option "policy" is %v; want "manual" or "workflow"`, KindName, v))
		}
		policy = v.(string)
	}
	text, ok := src.policies[policyKey(policy, mode)]
	if !ok {
		return nil, gym.AgentFault("bad_option", fmt.Errorf(`%s: reset option "policy": %q needs %s in the task's folder, which has none`,
			KindName, policy, policyFiles[policyKey(policy, mode)]))
	}
	ep := &Episode{Conversation: tau2.Conversation{Mode: mode}, crit: crit}
	if ep.init, err = initialWorld(src, data); err != nil {
		return nil, gym.InfraFault("bad_task", fmt.Errorf("task %q: %w", task.ID, err))
	}
	ep.w = ep.init.clone()
	if mode == tau2.ModeSolo {
		ep.tools = soloTools
		ep.opening = soloOpening + "\n<policy>\n" + text + "\n</policy>\n\n" + soloInstruction(data)
		return ep, nil
	}
	ep.tools = agentTools
	if err := ep.Start(ctx, ucfg, KindName, data.UserScenario, seed, &tau2.UserTools{Tools: userTools, Run: ep.runUserTool}); err != nil {
		return nil, err
	}
	ep.opening = agentOpening + "\n<policy>\n" + text + "\n</policy>\n\n" + ep.Greeting()
	return ep, nil
}

// initialWorld is the world at a task's initial state: the folder's
// databases, synced, then the initialization actions, each followed by a
// sync, as tau2's environment sets its state.
func initialWorld(src *source, data *TaskData) (*world, error) {
	w := newWorld(src.db, src.user)
	if err := w.sync(); err != nil {
		return nil, err
	}
	if len(data.InitialState) == 0 {
		return w, nil
	}
	is, err := parseInitialState(data.InitialState)
	if err != nil {
		return nil, err
	}
	for i, a := range is.InitializationActions {
		if _, err := w.call(a.EnvType, a.FuncName, a.Arguments); err != nil {
			return nil, fmt.Errorf("initial_state.initialization_actions[%d] (%s): %w", i, a.FuncName, err)
		}
	}
	return w, nil
}

const agentOpening = `<instructions>
You are a customer service and technical support agent of a mobile phone carrier. Help the user as the <policy> below says.
In each turn, either send the user a message or make a tool call, not both. Always follow the policy.
The user has their phone with them: what is to be checked or done on the phone, ask the user to do, one thing at a time.
</instructions>`

const soloOpening = `<instructions>
You are a customer service and technical support agent of a mobile phone carrier. Solve the <ticket> below as the <policy> says.
There is no user to talk to: you have the carrier's tools and the tools of the user's phone, and you use both yourself.
Make the tool calls that solve the ticket, one at a time. When it is solved, call done; a message (text instead of a tool call) also ends the episode.
</instructions>`

// soloInstruction is a task's instruction in solo mode: its ticket, or
// the user's scenario when it has none.
func soloInstruction(d *TaskData) string {
	if d.Ticket != nil && strings.TrimSpace(*d.Ticket) != "" {
		return "<ticket>\n" + *d.Ticket + "\n</ticket>"
	}
	return "<ticket>\nThe user's situation, as they would tell it:\n" + d.UserScenario.String() + "\n</ticket>"
}

// Oracle implements gym.OracleKind: the task's gold actions as tool calls,
// the user's too (in solo mode, the oracle's reset options, the agent has
// the phone's tools), one per step, then a closing message, which ends
// the episode; a task whose gold actions end with a transfer to a human
// ends there (tau2.Oracle).
func (d *Domain) Oracle(task *gym.Task) (gym.Oracle, error) {
	crit, err := CriteriaOf(task)
	if err != nil {
		return nil, err
	}
	return tau2.Oracle(task, crit)
}

// Configure implements toolcall.Configurer: it reads the tau2.* settings
// (see the package doc) of one Manager, whose envs start their episodes
// with that user simulator (tau2.WithUser).
func (d *Domain) Configure(_ context.Context, s gym.Settings) (toolcall.Instance, error) {
	return tau2.ConfigureUser(d, s)
}

// Episode is one telecom episode: its world (the agent's database and the
// user's phone), the calls, and the conversation with the user (simulated,
// or none in solo mode), whose Say is the episode's (toolcall.Episode).
type Episode struct {
	tau2.Conversation
	crit    *tau2.Criteria
	tools   []toolcall.Tool
	opening string
	init    *world // at the task's initial state: the gold replay starts here
	w       *world
	calls   []tau2.Call // the agent's and the user's calls that reached a tool, in order
	userLog []gym.Info  // the simulated user's calls and results
	agentN  int         // the agent's calls among calls
}

// Tools implements toolcall.Episode.
func (e *Episode) Tools() []toolcall.Tool { return e.tools }

// Opening implements toolcall.Episode: the agent's instructions, the
// policy, and the ticket (solo) or the user's first message (simulated).
func (e *Episode) Opening() string { return e.opening }

// Call implements toolcall.Episode: it runs one of the agent's tools (in
// solo mode, the phone's too) on the episode's world.
// transfer_to_human_agents and done end the episode.
func (e *Episode) Call(_ context.Context, name string, args json.RawMessage) (toolcall.Result, error) {
	if name == ToolDone {
		e.Ended = "agent_done"
		return toolcall.Result{Content: tau2.StopToken, End: true}, nil
	}
	side := sideAgent
	if f, ok := userFuncs[name]; ok && f.tool && e.Mode == tau2.ModeSolo {
		side = sideUser
	}
	e.calls = append(e.calls, tau2.Call{Name: name, Args: args})
	e.agentN++
	out, err := e.w.call(side, name, args)
	if err != nil {
		return toolcall.Result{}, err
	}
	content, _ := out.(string)
	if name == ToolTransfer {
		e.Ended = "transfer"
		return toolcall.Result{Content: content, End: true}, nil
	}
	return toolcall.Result{Content: content}, nil
}

// runUserTool runs a tool call of the simulated user on the phone: a call
// the phone's schemas reject, or one that fails, gives the user its error
// to read, as tau2 does.
func (e *Episode) runUserTool(_ context.Context, name, args string) (string, error) {
	ts, err := userToolset()
	if err != nil {
		return "", err
	}
	log := gym.Info{"tool": name, "arguments": args}
	e.userLog = append(e.userLog, log)
	raw, cerr := ts.Check(gym.FunctionCall{Name: name, Arguments: args})
	if cerr != nil {
		log["error"] = cerr.Message
		return cerr.Message, nil
	}
	e.calls = append(e.calls, tau2.Call{Name: name, Args: raw})
	out, err := e.w.call(sideUser, name, raw)
	if msg, ok := toolcall.IsToolError(err); ok {
		log["error"] = msg
		return msg, nil
	}
	if err != nil {
		return "", gym.InfraFault("tool_failed", err)
	}
	content, _ := out.(string)
	log["result"] = content
	return content, nil
}

var (
	phoneOnce sync.Once
	phoneSet  *toolcall.Toolset
	phoneErr  error
)

// userToolset checks the simulated user's calls against the phone's tools.
func userToolset() (*toolcall.Toolset, error) {
	phoneOnce.Do(func() { phoneSet, phoneErr = toolcall.NewToolset(userTools) })
	return phoneSet, phoneErr
}

// Close implements toolcall.Episode.
func (e *Episode) Close(context.Context) error { return nil }
