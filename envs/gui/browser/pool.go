package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nextstate-rl/nextstate/envs/gui/internal/confine"
	"github.com/nextstate-rl/nextstate/sandbox"
)

// DefaultExecPath is the browser a pool runs unless Options.ExecPath says
// otherwise: Debian's chromium-headless-shell.
const DefaultExecPath = "/usr/bin/chromium-headless-shell"

// Defaults of Options.
const (
	DefaultSessionsPerBrowser = 4
	DefaultMaxBrowsers        = 8
	DefaultStartTimeout       = 30 * time.Second
)

// ErrClosed is returned by a closed Pool.
var ErrClosed = errors.New("browser: the pool is closed")

// Options configure a Pool. Zero fields take the stated defaults.
type Options struct {
	// ExecPath is the browser binary. Default DefaultExecPath.
	ExecPath string
	// SessionsPerBrowser is how many pages share one browser process
	// before another is started. Default 4.
	SessionsPerBrowser int
	// MaxBrowsers caps the browser processes. With every one of them
	// full, a new page goes to the one with the fewest pages. Default 8.
	MaxBrowsers int
	// Flags are extra command-line flags, such as "--lang=en-US".
	Flags []string
	// Dir is the pool directory; each browser's profile directory is
	// Dir/<owner>/b<n>. Default DefaultDir().
	Dir string
	// Owner is the lease the browsers carry (sandbox.NewOwnerID's form);
	// default a new one on this process. Reap, at every NewPool, collects
	// the browsers of owners whose process has ended.
	Owner string
	// StartTimeout bounds a browser's start. Default 30s.
	StartTimeout time.Duration
	// Sandbox confines the browser's processes: "bwrap" (package confine:
	// no capabilities, the host's system directories read-only, its own
	// profile directory and /tmp, nothing else of the host), "none" (the
	// server's user, the host's files), or "auto" and "" (the default:
	// bwrap where it works, else none with a warning).
	Sandbox string
	// Hide are host paths the sandbox masks besides the host's secrets
	// (the "sandbox.hide" setting: task folders, the store).
	Hide []string
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Pool hands out Pages, each in its own browser context (an isolated
// profile: cookies, storage and cache are its own) of a shared browser
// process. Browsers start on demand. A browser that dies is dropped from
// the pool: its pages' next operations fail with a gym.InfraFault
// "browser_crashed", and new pages go to another browser. A Pool is safe
// for concurrent use.
type Pool struct {
	opts  Options
	dir   string // Dir/<owner>
	log   *slog.Logger
	flags []chromedp.ExecAllocatorOption
	exec  string // the binary run: ExecPath, or what its launcher script runs

	mu       sync.Mutex
	browsers []*instance // live or starting
	next     int
	closed   bool
	crashed  int
	all      sync.WaitGroup // one per browser until its cleanup is done
}

// NewPool checks the options, reaps what pools of ended processes left in
// the pool directory (Reap), and returns a pool with no browser started
// yet.
func NewPool(opts Options) (*Pool, error) {
	if opts.ExecPath == "" {
		opts.ExecPath = DefaultExecPath
	}
	if err := Available(opts.ExecPath); err != nil {
		return nil, err
	}
	if opts.SessionsPerBrowser == 0 {
		opts.SessionsPerBrowser = DefaultSessionsPerBrowser
	}
	if opts.MaxBrowsers == 0 {
		opts.MaxBrowsers = DefaultMaxBrowsers
	}
	if opts.SessionsPerBrowser < 0 || opts.MaxBrowsers < 0 {
		return nil, fmt.Errorf("browser: SessionsPerBrowser %d and MaxBrowsers %d must be positive", opts.SessionsPerBrowser, opts.MaxBrowsers)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.Dir == "" {
		opts.Dir = DefaultDir()
	}
	if opts.Owner == "" {
		opts.Owner = sandbox.NewOwnerID()
	}
	if !sandbox.ValidOwner(opts.Owner) {
		return nil, fmt.Errorf("browser: owner %q: want 1 to 64 ASCII letters, digits and '-'", opts.Owner)
	}
	for _, f := range opts.Flags {
		if !strings.HasPrefix(f, "--") {
			return nil, fmt.Errorf("browser: flag %q: want --name or --name=value", f)
		}
		if strings.HasPrefix(f, userDataFlag) || strings.HasPrefix(f, "--remote-debugging") {
			return nil, fmt.Errorf("browser: flag %q is the pool's to set", f)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if k, r, err := Reap(opts.Dir); err != nil {
		log.Warn("browser: reaping the browsers of ended processes", "dir", opts.Dir, "err", err)
	} else if k+r > 0 {
		log.Info("browser: reaped the browsers of ended processes", "killed", k, "dirs", r)
	}
	mode, err := confine.Mode(opts.Sandbox, "browsers", opts.Hide)
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	opts.Sandbox = mode
	p := &Pool{opts: opts, dir: filepath.Join(opts.Dir, opts.Owner), log: log, exec: resolveExec(opts.ExecPath)}
	p.flags = p.allocatorOptions()
	return p, nil
}

// Available reports whether execPath (DefaultExecPath when empty) is an
// executable file; tests skip with its error.
func Available(execPath string) error {
	if execPath == "" {
		execPath = DefaultExecPath
	}
	fi, err := os.Stat(execPath)
	if err != nil {
		return fmt.Errorf("browser: no browser at %s (install Debian's chromium-headless-shell, or set the path): %w", execPath, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("browser: %s is not an executable file", execPath)
	}
	return nil
}

// resolveExec returns the binary that path runs when path is a launcher
// script of one command, `BINARY "$@"` (Debian's
// /usr/bin/chromium-headless-shell is one), else path. A launcher keeps
// running as the browser's parent, so the process the pool started would
// not be the browser: killing it would not stop the browser, and the
// browser would not be killed with the pool's process.
func resolveExec(path string) string {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 4096 {
		return path
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("#!")) {
		return path
	}
	var bin string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "exec" {
			f = f[1:]
		}
		if bin != "" || len(f) != 2 || f[1] != `"$@"` || !filepath.IsAbs(f[0]) {
			return path
		}
		bin = f[0]
	}
	if bin == "" || Available(bin) != nil {
		return path
	}
	f, err := os.Open(bin)
	if err != nil {
		return path
	}
	defer f.Close()
	h := make([]byte, 2)
	if _, err := io.ReadFull(f, h); err != nil || string(h) == "#!" {
		return path
	}
	return bin
}

// Owner is the lease the pool's browsers carry.
func (p *Pool) Owner() string { return p.opts.Owner }

// allocatorOptions are the browser's flags: headless, no GPU, no
// background work, no smooth scrolling or caret blink (a screenshot shows
// a settled page), no network beyond loopback, and --no-sandbox in the
// bwrap sandbox (which confines every process of the browser, and lets
// none make the user namespaces Chromium's own sandbox needs) or as root
// (where Chromium's sandbox cannot work).
func (p *Pool) allocatorOptions() []chromedp.ExecAllocatorOption {
	o := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	o = append(o,
		chromedp.ExecPath(p.exec),
		chromedp.DisableGPU,
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("disable-smooth-scrolling", true),
		chromedp.Flag("disable-renderer-accessibility", true),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
	)
	if os.Getuid() == 0 || p.opts.Sandbox == confine.Bwrap {
		o = append(o, chromedp.NoSandbox)
	}
	for _, f := range p.opts.Flags {
		name, value, ok := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if ok {
			o = append(o, chromedp.Flag(name, value))
		} else {
			o = append(o, chromedp.Flag(name, true))
		}
	}
	return o
}

// Stats says what a pool holds.
type Stats struct {
	Browsers int `json:"browsers"` // live or starting
	Pages    int `json:"pages"`
	Crashed  int `json:"crashed"` // browsers that died since the pool opened
}

// Stats returns the pool's counts.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Browsers: len(p.browsers), Crashed: p.crashed}
	for _, b := range p.browsers {
		s.Pages += b.pages
	}
	return s
}

// PIDs returns the pids of the pool's running browser processes.
func (p *Pool) PIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, b := range p.browsers {
		if b.pid != 0 {
			out = append(out, b.pid)
		}
	}
	return out
}

// acquire picks the browser for a new page and counts the page on it: the
// live browser with the fewest pages below SessionsPerBrowser, else a new
// browser while there are fewer than MaxBrowsers, else the one with the
// fewest pages.
func (p *Pool) acquire() (*instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	var best *instance
	for _, b := range p.browsers {
		if b.dead() {
			continue
		}
		if best == nil || b.pages < best.pages {
			best = b
		}
	}
	if best == nil || best.pages >= p.opts.SessionsPerBrowser && len(p.browsers) < p.opts.MaxBrowsers {
		p.next++
		best = &instance{pool: p, id: p.next, ready: make(chan struct{}), gone: make(chan struct{}),
			closing: make(chan struct{}), dir: filepath.Join(p.dir, "b"+strconv.Itoa(p.next))}
		p.browsers = append(p.browsers, best)
		p.all.Add(1)
		go best.start() // owned by p.all: cleanup marks it Done
	}
	best.pages++
	return best, nil
}

// release uncounts a page of b.
func (p *Pool) release(b *instance) {
	p.mu.Lock()
	b.pages--
	p.mu.Unlock()
}

// drop removes b from the pool, once; crashed says it died on its own.
func (p *Pool) drop(b *instance, crashed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.browsers {
		if x == b {
			p.browsers = append(p.browsers[:i], p.browsers[i+1:]...)
			if crashed {
				p.crashed++
			}
			return
		}
	}
}

// NewPage opens a page of width×height CSS pixels (the screenshot's size)
// in a new browser context, starting a browser if the pool needs one. A
// browser that fails to start is an error labelled gym.InfraFault.
func (p *Pool) NewPage(ctx context.Context, width, height int) (*Page, error) {
	if width <= 0 || height <= 0 || width > 10000 || height > 10000 {
		return nil, fmt.Errorf("browser: viewport %dx%d: want 1..10000 pixels each way", width, height)
	}
	var lastErr error
	for range 2 { // a browser that died as it was picked gets one retry
		b, err := p.acquire()
		if err != nil {
			return nil, err
		}
		pg, err := b.newPage(ctx, width, height)
		if err == nil {
			return pg, nil
		}
		p.release(b)
		if ctx.Err() != nil || !b.dead() {
			return nil, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// Close closes every page and kills every browser process, then removes
// the profile directories. It waits for the processes to be gone, bounded
// by ctx. Close is idempotent.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	bs := append([]*instance(nil), p.browsers...)
	p.mu.Unlock()
	for _, b := range bs {
		b.kill()
	}
	done := make(chan struct{})
	go func() { p.all.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("browser: closing the pool: %w", ctx.Err())
	}
	var err error
	if rerr := removeAll(p.dir); rerr != nil {
		err = fmt.Errorf("browser: removing %s: %w", p.dir, rerr)
	}
	os.Remove(p.opts.Dir) // only when empty: other owners may use it
	return err
}

// instance is one browser process of a pool.
type instance struct {
	pool *Pool
	id   int
	dir  string // profile directory

	ready chan struct{} // closed when started (or failed: err set)
	err   error

	ctx      context.Context // the browser's chromedp context
	cancel   context.CancelFunc
	cancelA  context.CancelFunc // the allocator's
	cdp      *chromedp.Browser
	pid      int
	pages    int           // guarded by pool.mu
	closing  chan struct{} // closed by kill
	killOnce sync.Once
	gone     chan struct{} // closed when the process is gone and cleaned up
	crashed  atomic.Bool   // it died on its own; set before gone closes
}

// start launches the process and waits for its first tab.
func (b *instance) start() {
	p := b.pool
	defer close(b.ready)
	if err := mkdirOwner(b.dir); err != nil {
		b.fail(fmt.Errorf("browser: making the profile directory: %w", err))
		return
	}
	var wrap []string
	if p.opts.Sandbox == confine.Bwrap {
		var err error
		if wrap, err = confine.Command(browserSpec(p.opts.Hide, b.dir)); err != nil {
			b.fail(fmt.Errorf("browser: %w", err))
			return
		}
	}
	opts := append(append([]chromedp.ExecAllocatorOption{}, p.flags...),
		chromedp.UserDataDir(b.dir),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			// Its own process group, killed as one; and killed with us.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if wrap != nil {
				// bwrap runs the browser; the DevTools pipes (fds 3
				// and 4) pass through it.
				cmd.Path = wrap[0]
				cmd.Args = append(wrap[:len(wrap):len(wrap)], cmd.Args...)
			}
		}),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	logf := func(format string, args ...any) { p.log.Debug("browser: " + fmt.Sprintf(format, args...)) }
	errf := func(format string, args ...any) { p.log.Debug("browser: cdp error: " + fmt.Sprintf(format, args...)) }
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithBrowserOption(
		chromedp.WithBrowserLogf(logf), chromedp.WithBrowserErrorf(errf)))
	b.ctx, b.cancel, b.cancelA = bctx, bcancel, acancel
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx) }() // the first Run binds the browser to bctx
	t := time.NewTimer(p.opts.StartTimeout)
	defer t.Stop()
	var err error
	select {
	case err = <-started:
	case <-t.C:
		err = fmt.Errorf("no answer after %s", p.opts.StartTimeout)
	case <-b.closing:
		err = ErrClosed
	}
	c := chromedp.FromContext(bctx)
	if err == nil && (c == nil || c.Browser == nil || c.Browser.Process() == nil) {
		err = errors.New("no browser process")
	}
	if err != nil {
		b.fail(fmt.Errorf("browser: starting %s: %w", p.opts.ExecPath, err))
		return
	}
	b.cdp = c.Browser
	p.mu.Lock()
	b.pid = c.Browser.Process().Pid // PIDs reads it under the lock
	p.mu.Unlock()
	p.log.Debug("browser: started", "pid", b.pid, "dir", b.dir)
	go b.watch() // ends when the process is gone; owned by p.all
}

// browserSpec is what a browser's confined processes see beyond the
// host's system view: their profile directory dir, writable, which is
// also their HOME and working directory; the host's network namespace
// (pages come from a server on the host's loopback; DevTools runs over a
// pipe); a clean environment.
func browserSpec(hide []string, dir string) confine.Spec {
	return confine.Spec{Hide: hide, Dirs: []string{dir}, ShareNet: true, Dir: dir,
		Env: []string{"HOME=" + dir, "PATH=" + browserPath, "TMPDIR=/tmp", "LANG=C.UTF-8"}}
}

// browserPath is the PATH of a confined browser.
const browserPath = "/usr/local/bin:/usr/bin:/bin"

// fail ends a browser that did not start.
func (b *instance) fail(err error) {
	b.err = err
	b.pool.drop(b, false)
	b.cleanup()
}

// watch waits for the connection to the browser to drop; unless the pool
// killed it, the browser crashed.
func (b *instance) watch() {
	select {
	case <-b.cdp.LostConnection:
	case <-b.closing:
	}
	crashed := false
	select {
	case <-b.closing:
	default:
		crashed = true
		b.pool.log.Warn("browser: a browser died", "pid", b.pid, "dir", b.dir)
	}
	b.crashed.Store(crashed)
	b.pool.drop(b, crashed)
	b.cleanup()
}

// kill stops the browser; watch (or start) then cleans up.
func (b *instance) kill() {
	b.killOnce.Do(func() { close(b.closing) })
}

// cleanup kills what is left of the process group and the profile
// directory's processes, and removes the directory.
func (b *instance) cleanup() {
	defer b.pool.all.Done()
	defer close(b.gone)
	// The whole group first: the allocator waits for the browser's output
	// pipe, which its helper processes hold open.
	if b.pid > 0 {
		syscall.Kill(-b.pid, syscall.SIGKILL)
	}
	killDir(b.pool.opts.Dir, b.dir) // a browser that never reported its pid
	if b.cancel != nil {
		b.cancel()  // ends the browser's context (and kills what is left)
		b.cancelA() // waits for the allocator to reap the process
	}
	if err := removeAll(b.dir); err != nil {
		b.pool.log.Warn("browser: removing a profile directory", "dir", b.dir, "err", err)
	}
}

// dead reports whether the browser failed, died or is being killed.
func (b *instance) dead() bool {
	select {
	case <-b.gone:
		return true
	default:
	}
	select {
	case <-b.ready:
		if b.err != nil {
			return true
		}
		select {
		case <-b.cdp.LostConnection:
			return true
		case <-b.closing:
			return true
		default:
		}
	default:
	}
	return false
}

// PID is the browser process's pid (0 before it started).
func (b *instance) PID() int {
	select {
	case <-b.ready:
		return b.pid
	default:
		return 0
	}
}
