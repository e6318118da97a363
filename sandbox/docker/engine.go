package docker

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// DefaultHost is the engine used when neither Options.Hosts nor
// $DOCKER_HOST names one.
const DefaultHost = "unix:///var/run/docker.sock"

// NewClient returns an API client for one engine address: unix:///path,
// tcp://host:port (TLS from $DOCKER_CERT_PATH and $DOCKER_TLS_VERIFY, as the
// docker CLI reads them) or ssh://[user@]host[:port], which runs
// `ssh ... docker system dial-stdio` on the remote host for each connection,
// as the docker CLI does (the remote user must be allowed to use its
// engine). "" means $DOCKER_HOST or DefaultHost. The client negotiates the
// API version on first use (Debian 12's docker.io speaks API 1.41; the
// client supports 1.40 and newer). It does not dial: the first call does.
func NewClient(host string) (*client.Client, error) {
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	if host == "" {
		host = DefaultHost
	}
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if strings.HasPrefix(host, "ssh://") {
		d, err := newSSHDialer(host)
		if err != nil {
			return nil, err
		}
		// The host part is a placeholder: every connection goes through ssh.
		opts = append(opts, client.WithHost("http://docker.example.invalid"), client.WithDialContext(d.dial))
	} else {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker host %q: %w", host, err)
	}
	return cli, nil
}

// sshDialer connects to a remote engine through `ssh HOST docker system
// dial-stdio`, one ssh process per connection.
type sshDialer struct {
	args []string // ssh arguments up to and including the host
}

func newSSHDialer(host string) (*sshDialer, error) {
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("docker host %q: %w", host, err)
	}
	if u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("docker host %q: want ssh://[user@]host[:port]", host)
	}
	args := []string{"-o", "ConnectTimeout=30", "-o", "BatchMode=yes"}
	if u.User != nil && u.User.Username() != "" {
		args = append(args, "-l", u.User.Username())
	}
	if p := u.Port(); p != "" {
		args = append(args, "-p", p)
	}
	return &sshDialer{args: append(args, "--", u.Hostname())}, nil
}

// dial starts ssh; ctx bounds the start only, the connection lives until
// closed.
func (d *sshDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	args := append(append([]string{}, d.args...), "docker", "system", "dial-stdio")
	cmd := exec.Command("ssh", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr capturedStderr
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("docker over ssh: %w", err)
	}
	c := &cmdConn{cmd: cmd, stdin: stdin, stdout: stdout, stderr: &stderr, done: make(chan struct{})}
	go c.wait() // owned by c: Close waits for it
	return c, nil
}

// cmdConn is a net.Conn over a child process's stdin and stdout.
type cmdConn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *capturedStderr
	done   chan struct{}
	once   sync.Once
	err    error
}

func (c *cmdConn) wait() {
	c.err = c.cmd.Wait()
	close(c.done)
}

func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if err == io.EOF {
		select {
		case <-c.done:
			if c.err != nil {
				return n, fmt.Errorf("docker over ssh: %w: %s", c.err, c.stderr.String())
			}
		default:
		}
	}
	return n, err
}

func (c *cmdConn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// CloseWrite ends the process's stdin, as hijacked exec streams need.
func (c *cmdConn) CloseWrite() error { return c.stdin.Close() }

func (c *cmdConn) Close() error {
	c.once.Do(func() {
		_ = c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr  { return cmdAddr{} }
func (c *cmdConn) RemoteAddr() net.Addr { return cmdAddr{} }

// Deadlines are not supported on a pipe to a process; they are ignored, as
// the docker CLI's command connection ignores them. Callers bound their
// waits with contexts.
func (c *cmdConn) SetDeadline(time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }

type cmdAddr struct{}

func (cmdAddr) Network() string { return "ssh" }
func (cmdAddr) String() string  { return "ssh" }

// capturedStderr keeps the first 4 KiB of ssh's stderr for error messages.
type capturedStderr struct {
	mu  sync.Mutex
	buf []byte
}

func (s *capturedStderr) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if room := 4096 - len(s.buf); room > 0 {
		s.buf = append(s.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (s *capturedStderr) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(string(s.buf))
}
