package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The terminal of a Shell (its tmux window) has this size.
const (
	TerminalWidth  = 160
	TerminalHeight = 48
)

// Shell timing. A command that outlives its timeout is sent SIGINT, then
// SIGKILL after InterruptGrace; if the shell still does not come back (a
// builtin loop such as `while :; do :; done` runs in the shell itself), the
// shell is restarted, which loses its working directory and variables.
const (
	InterruptGrace = 2 * time.Second
	// controlTimeout bounds one tmux command (send-keys, capture-pane).
	controlTimeout = 10 * time.Second
)

// NewShell starts a persistent shell in sb, built on sb.Start; every
// backend gets the same Shell.
//
// It is two things. Run types commands into a persistent
// `bash --noprofile --norc -i` over pipes (interactive, so that an
// interrupt abandons the rest of a command line as Ctrl-C does, but with no
// prompts): each command is sent followed by an end marker that carries
// `$?`, and its output (stdout and stderr merged,
// capped at DefaultMaxOutput with TruncationMarker) is read up to the
// marker, so a round trip costs about a millisecond. cd, exported
// variables and functions persist between Runs. Commands read /dev/null as
// stdin: a command that waits for input gets end-of-file instead of
// hanging. Interactive programs (editors, pagers, REPLs, anything that
// needs a terminal) run instead in the shell's terminal: a tmux session
// started in the sandbox in the same working directory, driven with
// SendKeys and read with Screen. The terminal runs its own login bash, so
// a cd in Run does not move it. tmux commands go through a second
// persistent control bash, so each costs about a millisecond too, not a
// new exec. Screen drops the blank rows below the last written one. When
// the sandbox has no tmux, Run still works and SendKeys and Screen return
// an error.
//
// A Shell is used by one goroutine at a time; Close may be called from
// another one, and ends a Run in progress.
func NewShell(ctx context.Context, sb Sandbox) (Shell, error) {
	s := &shell{sb: sb, tmux: "nextstate-" + RandomID(6)}
	m, err := s.startMain(ctx)
	if err != nil {
		return nil, err
	}
	s.main.Store(m)
	c, err := startProc(ctx, sb, StartRequest{Cmd: []string{"bash", "--noprofile", "--norc"}, Env: map[string]string{"SHELL": "/bin/bash"}})
	if err != nil {
		m.close()
		return nil, fmt.Errorf("sandbox: shell control: %w", err)
	}
	s.ctl.Store(c)
	cmd := fmt.Sprintf("tmux -L %s -f /dev/null new-session -d -s main -x %d -y %d -c %s && tmux -L %s set-option -g status off",
		s.tmux, TerminalWidth, TerminalHeight, shellQuote(s.dir), s.tmux)
	if out, rc, err := s.control(ctx, cmd); err != nil {
		s.Close()
		return nil, err
	} else if rc != 0 {
		s.tmuxErr = fmt.Errorf("sandbox: no terminal in this sandbox: tmux exited %d: %s", rc, strings.TrimSpace(out))
	}
	return s, nil
}

type shell struct {
	sb      Sandbox
	mu      sync.Mutex // serializes Run, SendKeys, Screen and the restart of main
	main    atomic.Pointer[proc]
	ctl     atomic.Pointer[proc]
	pid     int    // the main bash's pid inside the sandbox
	dir     string // the main bash's first working directory
	tmux    string // the tmux socket name
	tmuxErr error
	closed  atomic.Bool
}

func (s *shell) startMain(ctx context.Context) (*proc, error) {
	p, err := startProc(ctx, s.sb, StartRequest{
		Cmd: []string{"bash", "--noprofile", "--norc", "--noediting", "-i"},
		Env: map[string]string{"PAGER": "cat", "GIT_PAGER": "cat", "SHELL": "/bin/bash", "PS1": "", "PS2": ""},
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: shell: %w", err)
	}
	buf := NewCappedBuffer(4096)
	rc, st, err := p.exchange(ctx, startScript, buf, nil)
	if err == nil && st != stDone {
		err = fmt.Errorf("sandbox: shell did not start (rc %d): %s", rc, buf)
	}
	if err != nil {
		p.close()
		return nil, err
	}
	// The last line; bash may have said before it that it has no job
	// control without a terminal.
	out := strings.TrimSpace(buf.String())
	_, out, _ = strings.Cut(out, "__NEXTSTATE_START__ ")
	pidStr, dir, _ := strings.Cut(out, " ")
	if s.pid, err = strconv.Atoi(pidStr); err != nil {
		p.close()
		return nil, fmt.Errorf("sandbox: shell start: unexpected %q", buf)
	}
	if s.dir == "" {
		s.dir = dir
	}
	return p, nil
}

// Run implements Shell.
func (s *shell) Run(ctx context.Context, command string, timeout time.Duration) (ExecResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ExecResult{}, ErrClosed
	}
	start := time.Now()
	buf := NewCappedBuffer(DefaultMaxOutput)
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	res := func(rc int) ExecResult {
		return ExecResult{Stdout: ttyNoise.ReplaceAll(buf.Bytes(), nil), ExitCode: rc, Truncated: buf.Truncated(), Elapsed: time.Since(start)}
	}
	rc, st, err := s.main.Load().exchange(ctx, "eval "+ansiQuote(command)+" </dev/null", buf, timer)
	switch {
	case err != nil:
		return res(rc), err
	case st == stDone:
		return res(rc), nil
	case st == stExited:
		// The command ended the shell (exit, exec): report that, and
		// start a fresh shell for the next Run.
		m := s.main.Load()
		code, _ := m.p.Wait()
		m.close()
		if s.closed.Load() {
			return res(code), ErrClosed
		}
		if err := s.restart(ctx); err != nil {
			return res(code), fmt.Errorf("sandbox: shell exited and did not restart: %w", err)
		}
		fmt.Fprintf(buf, "\n[shell exited with %d and was restarted]\n", code)
		return res(code), nil
	}
	// Timed out, or ctx ended: stop the command so the shell is usable.
	r := res(0)
	r.ExitCode, r.TimedOut = s.interrupt(buf), st == stTimeout
	r.Stdout, r.Truncated, r.Elapsed = ttyNoise.ReplaceAll(buf.Bytes(), nil), buf.Truncated(), time.Since(start)
	if st == stCanceled {
		return r, ctx.Err()
	}
	return r, nil
}

// interrupt stops the foreground command of the main shell: SIGINT to
// every process below the shell, then SIGKILL, then a new shell. It returns
// the command's exit status.
func (s *shell) interrupt(buf *CappedBuffer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*InterruptGrace+controlTimeout)
	defer cancel()
	for _, sig := range []string{"INT", "KILL"} {
		_, err := s.sb.Exec(ctx, ExecRequest{
			Cmd:     []string{"bash", "-c", killTreeScript, "nextstate-kill", strconv.Itoa(s.pid), sig, strconv.FormatBool(sig == "INT")},
			Timeout: controlTimeout,
		})
		if err != nil {
			break
		}
		t := time.NewTimer(InterruptGrace)
		rc, st, err := s.main.Load().exchange(ctx, "", buf, t.C)
		t.Stop()
		if err == nil && st == stDone {
			return rc
		}
		if err != nil || st != stTimeout {
			break
		}
	}
	s.main.Load().close()
	if err := s.restart(ctx); err != nil {
		fmt.Fprintf(buf, "\n[the command did not stop; the shell could not restart: %v]\n", err)
		return -1
	}
	fmt.Fprintf(buf, "\n[the command did not stop; the shell was restarted]\n")
	return 137
}

// startScript makes the interactive main bash quiet (no prompts, no
// history expansion) and reports its pid and working directory.
const startScript = `PS1= PS2= PS0= PS4='+ '; unset PROMPT_COMMAND MAILCHECK; set +H +o history
printf '__NEXTSTATE_START__ %d %s\n' "$$" "$PWD"`

// ttyNoise is what an interactive bash without a terminal says when a job
// it waited for was killed by a signal.
var ttyNoise = regexp.MustCompile(`(?m)^bash: \[\d+: \d+ \(\d+\)\] tcsetattr: Inappropriate ioctl for device\n`)

// killTreeScript signals every process below pid $1 with signal $2, and
// $1 itself when $3 is true, reading parents from /proc (no procps
// needed). The main bash is interactive, so SIGINT makes it abandon the
// rest of the command line, as Ctrl-C in a terminal does; the end marker
// on the next line then reports 130.
const killTreeScript = `root=$1 sig=$2 self=$3
declare -A kids
for f in /proc/[0-9]*/stat; do
  IFS= read -r line < "$f" 2>/dev/null || continue
  p=${f#/proc/}; p=${p%/stat}
  rest=${line##*) }; rest=${rest#* }; pp=${rest%% *}
  kids[$pp]+=" $p"
done
all=() queue=($root)
while ((${#queue[@]})); do
  p=${queue[0]}; queue=("${queue[@]:1}")
  for c in ${kids[$p]}; do all+=($c); queue+=($c); done
done
[ "$self" = true ] && all=($root "${all[@]}")  # the shell first: it must know of the interrupt when its child dies
((${#all[@]})) && kill -s "$sig" "${all[@]}" 2>/dev/null
exit 0`

// SendKeys implements Shell.
func (s *shell) SendKeys(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = shellQuote(k)
	}
	_, err := s.tmuxCmd(ctx, "send-keys -t main -- "+strings.Join(q, " "))
	return err
}

// Screen implements Shell.
func (s *shell) Screen(ctx context.Context) (string, error) {
	scr, err := s.tmuxCmd(ctx, "capture-pane -p -t main")
	if err != nil {
		return "", err
	}
	// The blank rows below the cursor carry nothing.
	return strings.TrimRight(scr, "\n") + "\n", nil
}

// foregroundScript prints the terminal's shell's pid, its process group,
// the terminal's foreground process group (fields 5 and 8 of
// /proc/PID/stat, counted after the parenthesised name, which may hold
// spaces) and the foreground group leader's name.
const foregroundScript = `p=$(tmux -L %s display-message -p -t main '#{pane_pid}') || exit 1
s=$(cat /proc/$p/stat) || exit 1
set -- ${s##*) }
printf '%%s %%s %%s ' "$p" "$3" "$6"
cat /proc/$6/comm 2>/dev/null || echo '?'`

// TerminalForeground implements TerminalWatcher.
func (s *shell) TerminalForeground(ctx context.Context) (bool, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false, "", ErrClosed
	}
	if s.tmuxErr != nil {
		return false, "", s.tmuxErr
	}
	out, rc, err := s.control(ctx, "( "+fmt.Sprintf(foregroundScript, s.tmux)+" ) 2>&1")
	if err != nil {
		return false, "", err
	}
	f := strings.Fields(out)
	if rc != 0 || len(f) < 4 {
		return false, "", fmt.Errorf("sandbox: reading the terminal's foreground: exit %d: %s", rc, strings.TrimSpace(out))
	}
	shellGroup, foreground := f[1], f[2]
	if foreground == shellGroup {
		return true, "", nil
	}
	return false, strings.Join(f[3:], " "), nil
}

func (s *shell) tmuxCmd(ctx context.Context, args string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return "", ErrClosed
	}
	if s.tmuxErr != nil {
		return "", s.tmuxErr
	}
	out, rc, err := s.control(ctx, "tmux -L "+s.tmux+" "+args)
	if err != nil {
		return "", err
	}
	if rc != 0 {
		return "", fmt.Errorf("sandbox: tmux %s: exit %d: %s", strings.Fields(args)[0], rc, strings.TrimSpace(out))
	}
	return out, nil
}

// control runs one command in the control bash.
func (s *shell) control(ctx context.Context, cmd string) (string, int, error) {
	t := time.NewTimer(controlTimeout)
	defer t.Stop()
	buf := NewCappedBuffer(1 << 20)
	rc, st, err := s.ctl.Load().exchange(ctx, cmd+" </dev/null", buf, t.C)
	if err != nil {
		return "", rc, err
	}
	switch st {
	case stDone:
		return buf.String(), rc, nil
	case stCanceled:
		return "", rc, ctx.Err()
	default:
		// The control shell is stuck or gone: it is no use any more.
		s.ctl.Swap(deadProc(fmt.Errorf("sandbox: shell control: %s", st))).close()
		return "", rc, fmt.Errorf("sandbox: shell control: %s", st)
	}
}

// Close implements Shell.
func (s *shell) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	// Stop the tmux server first: it left the shells' process group.
	if c := s.ctl.Load(); c != nil {
		if c.mu.TryLock() {
			t := time.NewTimer(InterruptGrace)
			ctx, cancel := context.WithTimeout(context.Background(), InterruptGrace)
			_, _, _ = c.exchangeLocked(ctx, "tmux -L "+s.tmux+" kill-server </dev/null 2>&1", NewCappedBuffer(1024), t.C)
			cancel()
			t.Stop()
			c.mu.Unlock()
		}
		c.close()
	}
	if m := s.main.Load(); m != nil {
		m.close() // ends a Run in progress
	}
	return nil
}

// restart replaces the main bash with a fresh one. A Run that restarts
// the shell while Close runs finds closed set and closes what it started.
func (s *shell) restart(ctx context.Context) error {
	m, err := s.startMain(ctx)
	if err != nil {
		s.main.Store(deadProc(err))
		return err
	}
	s.main.Store(m)
	if s.closed.Load() {
		m.close()
		return ErrClosed
	}
	return nil
}

// status says how an exchange ended.
type status int

const (
	stDone     status = iota // the end marker came
	stTimeout                // the timer fired
	stCanceled               // ctx ended
	stExited                 // the process's output ended
)

func (st status) String() string {
	return [...]string{"done", "timed out", "canceled", "exited"}[st]
}

// proc is a long-lived bash whose output is read by an owned goroutine and
// scanned for end markers.
type proc struct {
	p      Process
	mu     sync.Mutex    // one exchange at a time
	out    chan []byte   // chunks of output; closed at end of output
	quit   chan struct{} // closed by close: stop the reader
	wg     sync.WaitGroup
	rest   []byte // output read past the last marker
	marker string // the end marker of the last script sent
	once   sync.Once
	dead   error // for a placeholder proc that never ran
	ended  bool  // out was closed
}

func startProc(ctx context.Context, sb Sandbox, req StartRequest) (*proc, error) {
	p, err := sb.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	pr := &proc{p: p, out: make(chan []byte, 8), quit: make(chan struct{})}
	pr.wg.Add(1)
	go pr.read()
	return pr, nil
}

// deadProc stands in for a process that could not be restarted.
func deadProc(err error) *proc {
	pr := &proc{out: make(chan []byte), quit: make(chan struct{}), dead: err}
	close(pr.out)
	return pr
}

func (pr *proc) read() {
	defer pr.wg.Done()
	defer close(pr.out)
	r := pr.p.Stdout()
	for {
		b := make([]byte, 32<<10)
		n, err := r.Read(b)
		if n > 0 {
			select {
			case pr.out <- b[:n]:
			case <-pr.quit:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// close kills the process and waits for the reader. Idempotent.
func (pr *proc) close() {
	pr.once.Do(func() {
		close(pr.quit)
		if pr.p != nil {
			_ = pr.p.Kill()
			_, _ = pr.p.Wait()
		}
		pr.wg.Wait()
	})
}

// exchange sends script (empty: send nothing, keep reading the last one)
// followed by a fresh end marker, copies output into buf up to the marker,
// and returns the status the marker carried.
func (pr *proc) exchange(ctx context.Context, script string, buf io.Writer, timer <-chan time.Time) (int, status, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.exchangeLocked(ctx, script, buf, timer)
}

func (pr *proc) exchangeLocked(ctx context.Context, script string, buf io.Writer, timer <-chan time.Time) (int, status, error) {
	if pr.dead != nil {
		return -1, stExited, pr.dead
	}
	if script != "" {
		// A new marker per exchange: output cannot fake it, and a late
		// marker of an interrupted command is not taken for this one.
		pr.marker = "__NEXTSTATE_END_" + RandomID(8) + "__:"
		line := script + "\nprintf '" + pr.marker + "%d\\n' \"$?\"\n"
		if _, err := io.WriteString(pr.p.Stdin(), line); err != nil {
			if pr.ended {
				return -1, stExited, nil
			}
			// The process is gone; what it printed last is still read
			// below, up to the end of its output.
		}
	}
	sc := markerScan{marker: []byte(pr.marker)}
	if len(pr.rest) > 0 {
		data := pr.rest
		pr.rest = nil
		if rc, found := sc.feed(data, buf, &pr.rest); found {
			return rc, stDone, nil
		}
	}
	for {
		select {
		case b, ok := <-pr.out:
			if !ok {
				pr.ended = true
				sc.flush(buf)
				return -1, stExited, nil
			}
			if rc, found := sc.feed(b, buf, &pr.rest); found {
				return rc, stDone, nil
			}
		case <-timer:
			pr.rest = sc.carry
			return -1, stTimeout, nil
		case <-ctx.Done():
			pr.rest = sc.carry
			return -1, stCanceled, nil
		}
	}
}

// markerScan finds "<marker><digits>\n" in a stream that arrives in
// chunks, passing everything before it on.
type markerScan struct {
	marker []byte
	carry  []byte // bytes that may be the start of the marker line
}

// feed scans b; before the marker goes to w. When the marker line is
// complete it returns its number, and what follows it in *rest.
func (sc *markerScan) feed(b []byte, w io.Writer, rest *[]byte) (int, bool) {
	data := b
	if len(sc.carry) > 0 {
		data = append(sc.carry, b...)
		sc.carry = nil
	}
	i := bytes.Index(data, sc.marker)
	if i < 0 {
		keep := min(len(sc.marker)-1, len(data))
		// Keep a tail that could be the start of the marker.
		for keep > 0 && !bytes.HasPrefix(sc.marker, data[len(data)-keep:]) {
			keep--
		}
		w.Write(data[:len(data)-keep])
		sc.carry = append([]byte(nil), data[len(data)-keep:]...)
		return 0, false
	}
	w.Write(data[:i])
	after := data[i+len(sc.marker):]
	nl := bytes.IndexByte(after, '\n')
	if nl < 0 {
		sc.carry = append([]byte(nil), data[i:]...)
		return 0, false
	}
	rc, err := strconv.Atoi(string(after[:nl]))
	if err != nil {
		rc = -1
	}
	*rest = append((*rest)[:0], after[nl+1:]...)
	return rc, true
}

func (sc *markerScan) flush(w io.Writer) {
	w.Write(sc.carry)
	sc.carry = nil
}

// ansiQuote quotes s as a bash $'...' string, which survives any bytes
// (but NUL) and never leaves bash waiting for a closing quote.
func ansiQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
