package web

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui"
	"github.com/nextstate-rl/nextstate/envs/gui/browser"
	"github.com/nextstate-rl/nextstate/envs/gui/internal/confine"
	"github.com/nextstate-rl/nextstate/envs/gui/web/webtasks"
	"github.com/nextstate-rl/nextstate/envs/internal/sbopen"
	"github.com/nextstate-rl/nextstate/gym"
)

// KindName is the kind this package registers.
const KindName = "web-v1"

// Settings keys Configure reads (gym.Settings; `nextstate serve --set`).
const (
	SettingSessionsPerBrowser = "web.sessions_per_browser" // pages per browser process; default 4
	SettingMaxBrowsers        = "web.max_browsers"         // browser processes at most; default 8
	SettingMiniWoBDir         = "web.miniwob_dir"          // a MiniWoB++ html/ folder served instead of the built-in pages
	SettingChromium           = "web.chromium"             // the browser binary; default browser.DefaultExecPath
	SettingEpisodeMS          = "web.episode_ms"           // overrides every page's core.EPISODE_MAX_TIME
	SettingSandbox            = "web.sandbox"              // the browser's sandbox: "auto" (default), "bwrap" or "none"
)

// Defaults of the kind's limits.
const (
	DefaultMaxSteps    = 50
	DefaultStepTimeout = 30 * time.Second
	// DefaultEpisodeTimeout bounds an episode from the gym's side; the
	// page's own clock (core.EPISODE_MAX_TIME) usually ends it first.
	DefaultEpisodeTimeout = 15 * time.Minute
	// MaxEpisodeMS caps the episode_ms option and setting.
	MaxEpisodeMS = 10 * 60 * 1000
)

func init() {
	gym.Register(&Kind{})
	gym.RegisterSuiteFormat("miniwob", IsMiniWoBDir, LoadMiniWoB)
}

// Kind is web-v1. It implements gym.Configurer (Configure reads one
// Manager's settings; the browser pool and the page server are its
// Instance's, started at the Manager's first session and closed at its
// Shutdown) and gym.OracleKind (the built-in tasks' scripted solutions).
// A Kind holds nothing: every Manager of the process configures the
// registered one.
type Kind struct{}

var (
	_ gym.Configurer = (*Kind)(nil)
	_ gym.OracleKind = (*Kind)(nil)
)

// instance is web-v1 configured by one Manager (gym.Instance): its
// settings, and its browser pool and page server once a session needed
// them.
type instance struct {
	cfg config

	mu   sync.Mutex
	pool *browser.Pool
	srv  *server
	shut bool // Shutdown has run
}

// config is what Configure read.
type config struct {
	sessionsPerBrowser, maxBrowsers int
	miniwobDir, chromium            string
	episodeMS                       int
	sandbox                         string // confine.Bwrap or confine.None
	hide                            string // "sandbox.hide", a PATH-style list of host paths the sandbox masks
}

// Spec implements gym.Kind.
func (k *Kind) Spec() gym.Spec {
	return gym.Spec{
		Name:              KindName,
		Description:       description,
		JudgePrompt:       "gui",
		ActionSchema:      gui.ActionSchema(),
		ObservationSchema: gym.PartsSchema(2, 4, gym.PartImage, gym.PartText),
		Limits: gym.Limits{MaxSteps: DefaultMaxSteps, StepTimeout: gym.Duration(DefaultStepTimeout),
			EpisodeTimeout: gym.Duration(DefaultEpisodeTimeout)},
		Tasks: BuiltinTasks(),
	}
}

const description = `Web pages in headless Chromium with MiniWoB++'s reward contract (the built-in pages, or the real MiniWoB++ suite). ` +
	`Act with one action per step, a gui_action part or a call of the "computer" tool: click, double_click, right_click, move {x, y}; ` +
	`drag {x, y, to_x, to_y}; type {text}; key {key} (Enter, ctrl+a, shift+Tab, ...); scroll {x, y, dx, dy}; wait {ms}; ` +
	`click_element {ref} (a ref from the element list); done. Coordinates are the screenshot's pixels (reset option "coords": "grid" for a 0..999 grid). ` +
	`The observation is a PNG screenshot, the page's instruction, and with reset option "elements": true the visible elements with refs and boxes. ` +
	`The episode ends when the page says so; the reward is the page's raw reward (1 success, -1 failure or time out; "reward": "discounted" for the time-discounted one). ` +
	`A mistake (a malformed action, a point off the screen, an unknown ref) is the observation's "error", not the end of the episode.`

// BuiltinTasks are the built-in pages (package webtasks) as tasks: ids
// "web-<name>", Data {"page": "miniwob/<name>.html", "width", "height"}.
func BuiltinTasks() []gym.Task {
	var out []gym.Task
	for _, t := range webtasks.Tasks() {
		out = append(out, gym.Task{
			ID:  "web-" + t.Name,
			Env: KindName,
			Instruction: "Web task " + t.Name + ": " + t.Description +
				". The episode's own instruction, with the details, is the page's (the observation's text).",
			Limits: gym.Limits{MaxSteps: t.MaxSteps},
			Data:   TaskData{Page: t.Page(), Width: t.Width, Height: t.Height}.json(),
			Labels: map[string]string{"suite": "webtasks"},
		})
	}
	return out
}

// Configure implements gym.Configurer: it reads the settings (see the
// package doc) and checks the browser is there; the pool starts at the
// Manager's first session. Each Manager gets an Instance of its own, with
// its own settings, browsers and page server.
func (k *Kind) Configure(_ context.Context, s gym.Settings) (gym.Instance, error) {
	c := config{sessionsPerBrowser: browser.DefaultSessionsPerBrowser, maxBrowsers: browser.DefaultMaxBrowsers,
		chromium: browser.DefaultExecPath}
	var err error
	if c.sessionsPerBrowser, err = positive(s, SettingSessionsPerBrowser, c.sessionsPerBrowser, 1000); err != nil {
		return nil, err
	}
	if c.maxBrowsers, err = positive(s, SettingMaxBrowsers, c.maxBrowsers, 1000); err != nil {
		return nil, err
	}
	if c.episodeMS, err = positive(s, SettingEpisodeMS, 0, MaxEpisodeMS); err != nil {
		return nil, err
	}
	if v := strings.TrimSpace(s[SettingChromium]); v != "" {
		c.chromium = v
	}
	if err := browser.Available(c.chromium); err != nil {
		return nil, fmt.Errorf("web-v1 needs a browser (setting %s): %w", SettingChromium, err)
	}
	hide := sbopen.Hide(s)
	if c.sandbox, err = confine.Mode(strings.TrimSpace(s[SettingSandbox]), "browsers", hide); err != nil {
		return nil, fmt.Errorf("settings %s, %s: %w", SettingSandbox, sbopen.SettingHide, err)
	}
	c.hide = strings.Join(hide, string(filepath.ListSeparator))
	if v := strings.TrimSpace(s[SettingMiniWoBDir]); v != "" {
		dir, err := filepath.Abs(v)
		if err != nil {
			return nil, fmt.Errorf("setting %s=%q: %w", SettingMiniWoBDir, v, err)
		}
		if !IsMiniWoBDir(dir) {
			return nil, fmt.Errorf("setting %s=%q: not a MiniWoB++ html folder: want miniwob/*.html and core/core.js in it", SettingMiniWoBDir, v)
		}
		c.miniwobDir = dir
	}
	return &instance{cfg: c}, nil
}

// positive reads an integer setting in 1..max (0 allowed only as the
// default when unset).
func positive(s gym.Settings, key string, def, maxV int) (int, error) {
	v, ok := s[key]
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > maxV {
		return 0, fmt.Errorf("setting %s=%q: want a whole number from 1 to %d", key, v, maxV)
	}
	return n, nil
}

// Shutdown implements gym.Instance: it closes the browsers and the page
// server.
func (i *instance) Shutdown(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	pool, srv := i.pool, i.srv
	i.pool, i.srv, i.shut = nil, nil, true
	var errs []error
	if pool != nil {
		errs = append(errs, pool.Close(ctx))
	}
	if srv != nil {
		errs = append(errs, srv.close(ctx))
	}
	return errors.Join(errs...)
}

// New implements gym.Kind. A Manager asks its Instance instead: the
// registered Kind has no settings.
func (k *Kind) New(context.Context) (gym.Env, error) {
	return nil, gym.InfraFault("configure", errors.New("web-v1 is not configured: the manager did not call Configure"))
}

// New implements gym.Instance. The browser page opens at the first reset.
func (i *instance) New(context.Context) (gym.Env, error) {
	return &Env{inst: i, cfg: i.cfg}, nil
}

// resources starts the pool and the page server at the first session.
func (i *instance) resources() (*browser.Pool, *server, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.shut {
		return nil, nil, gym.InfraFault("configure", errors.New("web-v1 was shut down"))
	}
	if i.pool == nil {
		pool, err := browser.NewPool(browser.Options{ExecPath: i.cfg.chromium,
			SessionsPerBrowser: i.cfg.sessionsPerBrowser, MaxBrowsers: i.cfg.maxBrowsers,
			Sandbox: i.cfg.sandbox, Hide: filepath.SplitList(i.cfg.hide)})
		if err != nil {
			return nil, nil, gym.InfraFault("browser_start", err)
		}
		srv, err := newServer()
		if err != nil {
			pool.Close(context.Background())
			return nil, nil, gym.InfraFault("page_server", err)
		}
		i.pool, i.srv = pool, srv
	}
	return i.pool, i.srv, nil
}

// Stats returns the browser pool's counts (zero before the first session).
func (i *instance) Stats() browser.Stats {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.pool == nil {
		return browser.Stats{}
	}
	return i.pool.Stats()
}

// Oracle implements gym.OracleKind for the built-in tasks: a scripted
// policy (webtasks.NewOracle) that reads the instruction and the element
// list, so it wants the reset option {"elements": true}
// (gym.OracleOptions). Tasks of a MiniWoB++ folder have none.
func (k *Kind) Oracle(task *gym.Task) (gym.Oracle, error) {
	d, err := taskData(task)
	if err != nil {
		return nil, err
	}
	name, ok := strings.CutSuffix(strings.TrimPrefix(d.Page, "miniwob/"), ".html")
	if task.Dir != "" || !ok {
		return nil, fmt.Errorf("%w: %s is not a built-in web task", gym.ErrNoOracle, task.ID)
	}
	if _, known := webtasks.Lookup(name); !known {
		return nil, fmt.Errorf("%w: %s is not a built-in web task", gym.ErrNoOracle, task.ID)
	}
	policy, ok := webtasks.NewOracle(name)
	if !ok {
		return nil, fmt.Errorf("%w: web task %s", gym.ErrNoOracle, name)
	}
	return &oracle{policy: policy}, nil
}

type oracle struct {
	policy func(instruction string, els []gui.Element) (gym.GUIAction, error)
}

// ResetOptions implements gym.OracleOptions.
func (o *oracle) ResetOptions() gym.Options { return gym.Options{"elements": true} }

// Next implements gym.Oracle.
func (o *oracle) Next(obs gym.Observation, info gym.Info) (gym.Action, bool, error) {
	instr, _ := info[infoInstruction].(string)
	if instr == "" {
		for _, p := range obs.Parts {
			if p.Type == gym.PartText {
				instr = p.Text
				break
			}
		}
	}
	els := gui.ElementsFrom(info)
	if els == nil {
		return gym.Action{}, false, errors.New("web-v1 oracle: the observation has no element list (reset with {\"elements\": true})")
	}
	g, err := o.policy(instr, els)
	if err != nil {
		return gym.Action{}, false, fmt.Errorf("web-v1 oracle: %w", err)
	}
	return gym.Action{Parts: []gym.Part{{Type: gym.PartGUIAction, GUIAction: &g}}}, false, nil
}

// IsMiniWoBDir reports whether dir is laid out as MiniWoB++'s html/
// folder: task pages in miniwob/*.html and the shared core/core.js.
func IsMiniWoBDir(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "core", "core.js")); err != nil || fi.IsDir() {
		return false
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "miniwob", "*.html"))
	return len(pages) > 0
}

// LoadMiniWoB reads a MiniWoB++ html/ folder as a suite: one task per
// miniwob/<name>.html, id "miniwob-<name>", Dir the folder, Data the page
// and MiniWoB++'s 160x210 viewport. Registered as the "miniwob" suite
// format, so `nextstate serve --tasks DIR` serves them.
func LoadMiniWoB(dir string) ([]gym.Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	pages, err := filepath.Glob(filepath.Join(abs, "miniwob", "*.html"))
	if err != nil {
		return nil, err
	}
	var out []gym.Task
	for _, p := range pages {
		name := strings.TrimSuffix(filepath.Base(p), ".html")
		out = append(out, gym.Task{
			ID:          "miniwob-" + name,
			Env:         KindName,
			Instruction: "MiniWoB++ task " + name + ". The episode's own instruction is the page's (the observation's text).",
			Data:        TaskData{Page: "miniwob/" + name + ".html", Width: DefaultWidth, Height: DefaultHeight}.json(),
			Dir:         abs,
			Labels:      map[string]string{"suite": "miniwob"},
		})
	}
	return out, nil
}
