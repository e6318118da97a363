package code

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nextstate-rl/nextstate/sandbox"
)

// pyEnv is the environment of every Python process.
var pyEnv = map[string]string{
	"PYTHONUNBUFFERED":        "1",
	"PYTHONIOENCODING":        "utf-8",
	"PYTHONDONTWRITEBYTECODE": "1",
	"MPLBACKEND":              "Agg",
}

// argv runs the driver in a mode ("once" or "session").
func argv(mode string) []string { return []string{"python3", "-u", "-c", driver, mode} }

// startTimeout bounds an interpreter's start.
const startTimeout = 30 * time.Second

// readyLine is what the driver writes once it reads cells.
var readyLine = []byte("\x1eready\n")

// interp is a persistent Python interpreter in a sandbox, running the
// driver in session mode. Its methods are called from one goroutine at a
// time (the episode's).
type interp struct {
	proc    sandbox.Process
	pending []byte // output that followed the last cell's end (a background thread's)
	cells   int
}

// startInterp starts the driver and waits until it is ready.
func startInterp(ctx context.Context, sb sandbox.Sandbox) (*interp, error) {
	proc, err := sb.Start(ctx, sandbox.StartRequest{Cmd: argv("session"), Env: pyEnv})
	if err != nil {
		return nil, fmt.Errorf("starting the Python interpreter: %w", err)
	}
	it := &interp{proc: proc}
	out := sandbox.NewCappedBuffer(4 << 10)
	var after []byte
	err = it.await(ctx, startTimeout, func() error {
		var err error
		after, err = scan(proc.Stdout(), nil, readyLine, out)
		return err
	})
	if err != nil {
		it.kill()
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = "no output"
		}
		return nil, fmt.Errorf("starting the Python interpreter: %w (it wrote: %s)", err, msg)
	}
	it.pending = after
	return it, nil
}

// outcome is how a cell ended.
type outcome int

const (
	cellDone     outcome = iota // the driver reported the cell's end
	cellTimedOut                // killed at the timeout
	cellExited                  // the interpreter ended during the cell
)

// run sends one cell and reads its output, at most MaxOutput bytes of it
// (head and tail, with sandbox.TruncationMarker between), until the
// driver's end marker. At the timeout the interpreter is killed
// (cellTimedOut); if it ends by itself (os._exit, killed for memory) the
// result is cellExited with its exit code. Either way it is dead and must
// not be used again. An error is ctx's or the sandbox's.
func (it *interp) run(ctx context.Context, code string, timeout time.Duration) (out *sandbox.CappedBuffer, how outcome, exit int, err error) {
	out = sandbox.NewCappedBuffer(MaxOutput)
	out.Write(it.pending)
	it.pending = nil
	it.cells++
	nonce := make([]byte, 8)
	rand.Read(nonce)
	tag := hex.EncodeToString(nonce)
	marker := []byte("\n\x1e" + tag)
	var rest []byte
	proc := it.proc
	err = it.await(ctx, timeout, func() error {
		if _, err := io.WriteString(proc.Stdin(), tag+" "+strconv.Itoa(len(code))+"\n"+code); err != nil {
			return err
		}
		after, err := scan(proc.Stdout(), nil, marker, out)
		if err != nil {
			return err
		}
		// The rest of the marker's line is the status; what follows it is
		// a background thread's output, kept for the next cell.
		rest, err = scan(proc.Stdout(), after, []byte("\n"), io.Discard)
		return err
	})
	var te *timeoutError
	switch {
	case err == nil:
		it.pending = rest
		return out, cellDone, 0, nil
	case errors.As(err, &te):
		return out, cellTimedOut, 0, nil
	case ctx.Err() != nil:
		return out, 0, 0, ctx.Err()
	}
	// The output ended: the interpreter is gone.
	code2, werr := proc.Wait()
	it.proc = nil
	if werr != nil {
		return out, 0, 0, werr
	}
	return out, cellExited, code2, nil
}

type timeoutError struct{ after time.Duration }

func (e *timeoutError) Error() string { return fmt.Sprintf("timed out after %v", e.after) }

// await runs read in a goroutine it owns and waits for it, for timeout
// and for ctx: when either ends first, the interpreter is killed (which
// ends read's pending I/O), read is waited for, and the error is a
// *timeoutError or ctx's.
func (it *interp) await(ctx context.Context, timeout time.Duration, read func() error) error {
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { done <- read() })
	defer wg.Wait()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		it.kill()
		return &timeoutError{timeout}
	case <-ctx.Done():
		it.kill()
		return ctx.Err()
	}
}

// kill ends the interpreter and its process group, and reaps it.
func (it *interp) kill() {
	if it == nil || it.proc == nil {
		return
	}
	_ = it.proc.Kill()
	_, _ = it.proc.Wait()
	it.proc = nil
}

// scan reads r, writing to out everything before marker, and returns what
// followed marker in the last read. pending is read first. When r ends
// before marker, everything read is written to out and the read error
// (io.EOF) is returned.
func scan(r io.Reader, pending, marker []byte, out io.Writer) ([]byte, error) {
	buf := make([]byte, 32<<10)
	window := append([]byte(nil), pending...)
	for {
		if i := bytes.Index(window, marker); i >= 0 {
			out.Write(window[:i])
			return window[i+len(marker):], nil
		}
		// Keep what could be the start of a marker split between reads.
		if keep := len(marker) - 1; len(window) > keep {
			out.Write(window[:len(window)-keep])
			window = append(window[:0:0], window[len(window)-keep:]...)
		}
		n, err := r.Read(buf)
		window = append(window, buf[:n]...)
		if err != nil {
			if i := bytes.Index(window, marker); i >= 0 {
				out.Write(window[:i])
				return window[i+len(marker):], nil
			}
			out.Write(window)
			return nil, err
		}
	}
}
