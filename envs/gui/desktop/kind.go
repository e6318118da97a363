package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/envs/gui/internal/confine"
	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// KindName is the kind this package registers.
const KindName = "desktop-v1"

// Settings keys Configure reads (gym.Settings; `nextstate serve --set`).
const (
	SettingDisplays = "desktop.displays" // display numbers to use, "100-199" (default DefaultDisplays)
	SettingDir      = "desktop.dir"      // state directory (default $TMPDIR/nextstate-desktops)
	SettingOwner    = "desktop.owner"    // owner id of this server's displays (default: a lease on the process)
	SettingSandbox  = "desktop.sandbox"  // "auto" (default), "bwrap" or "none"
	SettingXvfb     = "desktop.xvfb"     // the Xvfb binary (default: Xvfb on PATH)
)

// DefaultDisplays is the display range used when none is set.
const DefaultDisplays = "100-999"

// Defaults of a task that sets none.
const (
	DefaultWidth    = 1280
	DefaultHeight   = 720
	DefaultMaxSteps = 50
	MaxSide         = 4096 // the widest and tallest screen a task may ask for
)

// markerEnv labels every process of a display (Xvfb, setup, app,
// evaluator, and what they start) with "<owner>/<display>", so that what
// escaped its process group is still found and ended.
const markerEnv = "NEXTSTATE_DESKTOP"

// defaultPath is the PATH of the processes a session starts.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func init() {
	gym.Register(&Kind{})
}

// Kind is desktop-v1. It implements gym.Configurer (Configure reaps what
// dead servers left and sets up one Manager's displays; its Instance's
// Shutdown ends every display of that Manager's owner) and
// gym.OracleKind. A Kind holds nothing: every Manager of the process
// configures the registered one.
type Kind struct{}

var (
	_ gym.Configurer = (*Kind)(nil)
	_ gym.OracleKind = (*Kind)(nil)
)

// instance is desktop-v1 configured by one Manager (gym.Instance): its
// settings, its owner's displays and the Envs it made.
type instance struct {
	alloc    *allocator
	base     string // the state directory
	owner    string
	ownerDir string
	xvfb     string
	sandbox  string   // confine.Bwrap or confine.None
	hide     []string // host paths the apps' sandbox masks ("sandbox.hide")
	wg       sync.WaitGroup

	mu sync.Mutex
	// live are the Envs not yet closed, for Shutdown.
	live map[*Env]bool
}

// Spec implements gym.Kind.
func (k *Kind) Spec() gym.Spec {
	return gym.Spec{
		Name:              KindName,
		Description:       description,
		JudgePrompt:       "gui",
		ActionSchema:      gui.ActionSchema(),
		ObservationSchema: gym.PartsSchema(1, 2, gym.PartText, gym.PartImage),
		Limits: gym.Limits{MaxSteps: DefaultMaxSteps, StepTimeout: gym.Duration(60 * time.Second),
			EpisodeTimeout: gym.Duration(30 * time.Minute)},
		Tasks: BuiltinTasks(),
	}
}

const description = `An X11 desktop on its own Xvfb display, in the OSWorld manner: the task's setup commands run, its app ` +
	`opens (xterm, xedit, ...; there is no window manager, so keyboard input goes to the window under the pointer), and the agent ` +
	`acts with the "computer" tool (or gui_action parts): click, double_click, right_click, move, drag, type, key, scroll, wait, done. ` +
	`Observations are PNG screenshots (the reset's with the instruction as text). Coordinates are screenshot pixels, or a 0..999 grid ` +
	`with reset option {"coords":"grid"}. A mistake (a malformed action, a point off the screen, an unknown key) is answered with a ` +
	`text part saying what was wrong and info "error"; the episode goes on. done ends the episode; the task's evaluator command then ` +
	`scores it from the files and windows the apps left (reward in [0,1]).`

// Configure implements gym.Configurer: it reads the settings, makes the
// owner's state directory, and ends the displays and processes of owners
// whose process has died (a crashed server's). Each Manager gets an
// Instance of its own, with its own owner (unless the settings name one:
// Managers, as servers, must not share an explicit owner).
func (k *Kind) Configure(ctx context.Context, s gym.Settings) (gym.Instance, error) {
	rs := s[SettingDisplays]
	if rs == "" {
		rs = DefaultDisplays
	}
	r, err := parseDisplayRange(rs)
	if err != nil {
		return nil, err
	}
	xvfb := s[SettingXvfb]
	if xvfb == "" {
		xvfb = "Xvfb"
	}
	if xvfb, err = exec.LookPath(xvfb); err != nil {
		return nil, fmt.Errorf("desktop-v1 needs Xvfb (Debian: apt-get install xvfb), or set %s: %w", SettingXvfb, err)
	}
	hide := sbopen.Hide(s)
	mode, err := confine.Mode(s[SettingSandbox], "desktop apps", hide)
	if err != nil {
		return nil, fmt.Errorf("settings %s, %s: %w", SettingSandbox, sbopen.SettingHide, err)
	}
	owner := s[SettingOwner]
	if owner == "" {
		owner = sandbox.NewOwnerID()
	}
	if !sandbox.ValidOwner(owner) {
		return nil, fmt.Errorf("setting %s=%q: want 1 to 64 ASCII letters, digits and '-'", SettingOwner, owner)
	}
	base := s[SettingDir]
	if base == "" {
		base = filepath.Join(os.TempDir(), "nextstate-desktops")
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("desktop-v1 state directory: %w", err)
	}
	reapDead(base)
	ownerDir := filepath.Join(base, owner)
	if err := os.MkdirAll(ownerDir, 0o700); err != nil {
		return nil, fmt.Errorf("desktop-v1 state directory: %w", err)
	}
	return &instance{alloc: newAllocator(r), base: base, owner: owner, ownerDir: ownerDir, xvfb: xvfb, sandbox: mode, hide: hide,
		live: map[*Env]bool{}}, nil
}

// Shutdown implements gym.Instance: it closes the Envs still open, ends
// every process labelled with the instance's owner, and removes the
// owner's state directory (and the base directory once empty).
func (i *instance) Shutdown(ctx context.Context) error {
	i.mu.Lock()
	envs := make([]*Env, 0, len(i.live))
	for e := range i.live {
		envs = append(envs, e)
	}
	i.mu.Unlock()
	for _, e := range envs {
		e.Close(ctx)
	}
	killMarked(i.owner + "/")
	killPidFiles(i.ownerDir)
	os.RemoveAll(i.ownerDir)
	os.Remove(i.base) // only if empty: other servers may use it
	done := make(chan struct{})
	go func() { i.wg.Wait(); close(done) }() // ends with the processes above
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("desktop-v1 shutdown: processes did not end: %w", ctx.Err())
	}
}

// New implements gym.Kind. A Manager asks its Instance instead: the
// registered Kind has no displays.
func (k *Kind) New(context.Context) (gym.Env, error) {
	return nil, gym.InfraFault("configure", errors.New("desktop-v1 is not configured: the manager did not call Configure"))
}

// New implements gym.Instance.
func (i *instance) New(context.Context) (gym.Env, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	e := &Env{inst: i}
	i.live[e] = true
	return e, nil
}

func (i *instance) forget(e *Env) {
	i.mu.Lock()
	delete(i.live, e)
	i.mu.Unlock()
}

// Oracle implements gym.OracleKind: a task's oracle is the action list in
// its verifier data ("oracle"), played as it is.
func (k *Kind) Oracle(task *gym.Task) (gym.Oracle, error) {
	v, err := parseVerifier(task)
	if err != nil {
		return nil, err
	}
	if len(v.Oracle) == 0 {
		return nil, fmt.Errorf("task %s: %w", task.ID, gym.ErrNoOracle)
	}
	actions := make([]gym.Action, len(v.Oracle))
	for i := range v.Oracle {
		g := v.Oracle[i]
		actions[i] = gym.Action{Parts: []gym.Part{{Type: gym.PartGUIAction, GUIAction: &g}}}
	}
	return gym.ScriptOracle(actions), nil
}

// reapDead ends the displays and processes of owners (directories of
// base) whose process has died, and removes their directories. Owners
// this host cannot judge (another host's, say) are left alone.
func reapDead(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		alive, known := sandbox.OwnerAlive(e.Name())
		if !known || alive {
			continue
		}
		slog.Info("desktop-v1: reaping the displays of a dead owner", "owner", e.Name())
		killMarked(e.Name() + "/")
		killPidFiles(filepath.Join(base, e.Name()))
		os.RemoveAll(filepath.Join(base, e.Name()))
	}
}

// killPidFiles kills the process groups the pid files under an owner's
// directory name (<display>/xvfb.pid), where the process is still the one
// that was recorded.
func killPidFiles(ownerDir string) {
	files, _ := filepath.Glob(filepath.Join(ownerDir, "*", "*.pid"))
	for _, f := range files {
		if pid, ok := readPidFile(f); ok {
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// killMarked kills every process whose environment carries markerEnv
// with a value starting with prefix, and returns how many it found.
func killMarked(prefix string) int {
	pids := markedProcs(prefix)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// markedProcs lists the processes whose environment carries markerEnv
// with a value starting with prefix (this process excluded).
func markedProcs(prefix string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(markerEnv + "=" + prefix)
	self := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if strings.HasPrefix(kv, string(want)) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// parseVerifier reads a task's verifier data.
func parseVerifier(task *gym.Task) (VerifierData, error) {
	var v VerifierData
	if len(task.Verifier) == 0 {
		return v, fmt.Errorf("task %s has no verifier data: desktop-v1 tasks need {\"evaluator\": \"<shell command>\"}", task.ID)
	}
	if err := strictUnmarshal(task.Verifier, &v); err != nil {
		return v, fmt.Errorf("task %s: desktop-v1 verifier data: %w", task.ID, err)
	}
	if strings.TrimSpace(v.Evaluator) == "" {
		return v, fmt.Errorf("task %s: desktop-v1 verifier data has no evaluator command", task.ID)
	}
	for i, g := range v.Oracle {
		if err := gui.Check(g); err != nil {
			return v, fmt.Errorf("task %s: oracle action %d: %w", task.ID, i+1, err)
		}
	}
	return v, nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
