package desktop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nextstate-rl/nextstate/envs/gui/internal/confine"
	"github.com/nextstate-rl/nextstate/gym"
)

// TaskData is a desktop-v1 task's Data: the screen, the setup, the app.
type TaskData struct {
	// Width and Height are the screen's size in pixels (default 1280x720).
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Setup are shell commands (sh -c) run in order in the session's home
	// directory before the app starts; each must exit 0.
	Setup []string `json:"setup,omitempty"`
	// App is the command line (sh -c) of the app to open, such as
	// "xterm -geometry 80x24+0+0". Empty: a bare screen.
	App string `json:"app,omitempty"`
	// SettleMs bounds how long the reset waits for the app's first window
	// and for the screen to stop changing (default 10000).
	SettleMs int `json:"settle_ms,omitempty"`
}

// VerifierData is a desktop-v1 task's Verifier: the evaluator, and the
// oracle's actions. Agents never see it.
type VerifierData struct {
	// Evaluator is a shell command (sh -c) run in the home directory after
	// the episode's last action, with the session's DISPLAY: the last
	// non-empty line of its stdout, when it is a number, is the reward
	// (it must lie in [0,1]); otherwise exit status 0 is reward 1 and
	// any other status reward 0.
	Evaluator string `json:"evaluator"`
	// Timeout bounds the evaluator (default 30s).
	Timeout gym.Duration `json:"timeout,omitempty"`
	// Oracle is a reference solution: actions in screenshot pixels,
	// ending with done.
	Oracle []gym.GUIAction `json:"oracle,omitempty"`
}

// Defaults of the task data and the processes.
const (
	DefaultSettle           = 10 * time.Second
	DefaultEvaluatorTimeout = 30 * time.Second
	setupTimeout            = 60 * time.Second
	outputCap               = 16 << 10 // bytes of a command's output kept
)

// parseData reads and checks a task's data, filling defaults.
func parseData(task *gym.Task) (TaskData, error) {
	var d TaskData
	if len(task.Data) > 0 {
		if err := strictUnmarshal(task.Data, &d); err != nil {
			return d, fmt.Errorf("task %s: desktop-v1 data: %w", task.ID, err)
		}
	}
	if d.Width == 0 {
		d.Width = DefaultWidth
	}
	if d.Height == 0 {
		d.Height = DefaultHeight
	}
	if d.Width < 64 || d.Height < 64 || d.Width > MaxSide || d.Height > MaxSide {
		return d, fmt.Errorf("task %s: screen %dx%d: want width and height in 64..%d", task.ID, d.Width, d.Height, MaxSide)
	}
	if d.SettleMs < 0 {
		return d, fmt.Errorf("task %s: settle_ms %d is negative", task.ID, d.SettleMs)
	}
	return d, nil
}

// proc is one process group a session started.
type proc struct {
	cmd    *exec.Cmd
	out    *tailBuffer   // stdout
	errOut *tailBuffer   // stderr
	done   chan struct{} // closed when the process has exited
	err    error         // its exit status, set before done closes
}

// output is what the process wrote, stdout then stderr.
func (p *proc) output() string {
	o, e := p.out.String(), p.errOut.String()
	if o != "" && e != "" && !strings.HasSuffix(o, "\n") {
		o += "\n"
	}
	return o + e
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends the process group and waits for the leader.
func (p *proc) kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// procs are the processes of a session, for killing them together.
type procs struct {
	mu     sync.Mutex
	live   []*proc
	wg     *sync.WaitGroup // the Kind's
	marker string          // the processes' markerEnv value, "<owner>/<display>/app"
	mode   string          // the Kind's sandbox: confine.Bwrap or confine.None
	hide   []string        // host paths the sandbox masks besides the secrets ("sandbox.hide")
}

// sessionEnv is the environment of a session's processes: a clean one,
// so that the server's secrets never reach an app the agent controls.
func sessionEnv(x *xserver, home, marker string) []string {
	return []string{
		"PATH=" + defaultPath,
		"HOME=" + home,
		"USER=" + userName(),
		"LOGNAME=" + userName(),
		"SHELL=/bin/sh",
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"TMPDIR=" + filepath.Join(home, ".tmp"),
		"DISPLAY=:" + strconv.Itoa(x.num),
		"XAUTHORITY=" + x.authFile,
		"PS1=$ ",
		markerEnv + "=" + marker,
	}
}

func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "user"
}

// start runs command (sh -c) in the home directory, in its own process
// group (and, with the bwrap sandbox, confined: see appSpec).
func (ps *procs) start(x *xserver, home, command string) (*proc, error) {
	argv := []string{"/bin/sh", "-c", command}
	if ps.mode == confine.Bwrap {
		wrap, err := confine.Command(appSpec(ps.hide, home, x.authFile, x.num))
		if err != nil {
			return nil, err
		}
		argv = append(wrap, argv...)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, err
	}
	p := &proc{out: &tailBuffer{max: outputCap}, errOut: &tailBuffer{max: outputCap}, done: make(chan struct{})}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Dir = home
	cmd.Env = sessionEnv(x, home, ps.marker)
	cmd.Stdout, cmd.Stderr = p.out, p.errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second // output pipes held by escaped children
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.cmd = cmd
	ps.wg.Add(1)
	go func() { // owned by the Kind; killAll ends the process
		defer ps.wg.Done()
		p.err = cmd.Wait()
		close(p.done)
	}()
	ps.mu.Lock()
	ps.live = append(ps.live, p)
	ps.mu.Unlock()
	return p, nil
}

// run runs command to its end, or kills it when timeout or ctx ends; a
// command cut off says so in its error.
func (ps *procs) run(ctx context.Context, x *xserver, home, command string, timeout time.Duration) (*proc, error) {
	p, err := ps.start(x, home, command)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p, nil
	case <-t.C:
		p.kill()
		return p, fmt.Errorf("timed out after %s", timeout)
	case <-ctx.Done():
		p.kill()
		return p, ctx.Err()
	}
}

// killAll ends every process group started, then whatever still carries
// the session's marker (daemons that left their group), and waits for
// the groups' leaders.
func (ps *procs) killAll() {
	ps.mu.Lock()
	live := ps.live
	ps.live = nil
	ps.mu.Unlock()
	for _, p := range live {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	killMarked(ps.marker)
	for _, p := range live {
		<-p.done
	}
}

// appSpec is what a session's confined process sees beyond the host's
// system view (package confine): the home directory, writable; the
// display's Xauthority, read-only, and its socket; nothing else of the
// host. It has a network namespace of its own (the X socket is a file
// bound in, so it needs no network) and an IPC namespace of its own, so
// MIT-SHM, which the display does not offer, would not work.
func appSpec(hide []string, home, authFile string, num int) confine.Spec {
	return confine.Spec{Hide: hide, Dirs: []string{home}, Files: []string{authFile},
		Sockets: []string{socketPath(num)}, Dir: home}
}
