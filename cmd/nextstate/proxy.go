package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/proxy"
	"github.com/nextstate-rl/nextstate/store"
)

// defaultProxyDataDir is the proxy's own store: a store directory is
// locked by the process that writes it, so the proxy cannot share serve's.
func defaultProxyDataDir() string { return filepath.Join(defaultDataDir(), "proxy") }

func newProxy() *cobra.Command {
	var upstream, listen, dataDir, allowUsers, allowFile, readyFile string
	var token, tokenFile, usersFile, upstreamKeyEnv string
	var judgeURL, judgeModel, judgeKeyEnv string
	var votes, workers, queue int
	var sessionRate, userRate float64
	var judgeTimeout time.Duration
	c := &cobra.Command{
		Use:   "proxy",
		Short: "An OpenAI-compatible proxy that learns from live conversations",
		Long: `Forward /v1/chat/completions and /v1/models to the policy's server (--upstream), streaming
answers back as they come, and turn each main turn of a session into a training sample once
its next state (the user's next message or the next tool result) arrives and the judge
(--judge-url) has voted on it. Sessions come from the X-Session-Id, X-Turn-Type (main|side),
X-Session-Done and X-User-Id headers, or session_id, turn_type, session_done and user in the
body. Samples go to the store in --data (its own: a store is locked by the process that
writes it); "nextstate export --format samples --data DIR" reads them, also while the proxy
runs. Turns whose next state the judge flags (unsafe, or against the agent's instructions)
are quarantined: see "nextstate proxy quarantine".

A session is bound to the user of its first request; a request of another user in it is
refused (403), so that only the user's own next message trains the user's turn. Users are
who the request says (X-User-Id, user) behind --token, a bearer token for a front end that
authenticates them; with --users-file each user has a token of their own and the token says
who is speaking. Without a token the proxy listens only on loopback addresses. See the
proxy package's doc.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			allow, err := readAllow(allowUsers, allowFile)
			if err != nil {
				return err
			}
			tok, err := readToken(token, tokenFile)
			if err != nil {
				return err
			}
			users, err := readUsers(usersFile)
			if err != nil {
				return err
			}
			if err := proxy.CheckListen(listen, tok != "" || len(users) > 0); err != nil {
				return err
			}
			cfg := proxy.Config{Upstream: upstream, AllowUsers: allow, Token: tok, Users: users,
				SessionRate: sessionRate, UserRate: userRate, Workers: workers, Queue: queue}
			if upstreamKeyEnv != "" {
				if cfg.UpstreamKey = os.Getenv(upstreamKeyEnv); cfg.UpstreamKey == "" {
					return fmt.Errorf("--upstream-api-key-env %s: the variable is empty or unset", upstreamKeyEnv)
				}
			}
			if judgeURL != "" {
				j := judgeFlags{url: judgeURL, model: judgeModel, apiKeyEnv: judgeKeyEnv, votes: votes, timeout: judgeTimeout}
				if cfg.Judge, err = newJudge(j); err != nil {
					return err
				}
			} else {
				slog.Warn("proxy: no --judge-url: requests are forwarded, nothing is trained on")
			}
			st, err := store.Open(dataDir, store.Options{})
			if err != nil {
				return err
			}
			defer st.Close()
			if cfg.Quarantine, err = proxy.OpenQuarantine(dataDir); err != nil {
				return err
			}
			cfg.Store = st
			p, err := proxy.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serveProxy(ctx, p, listen, readyFile)
		},
	}
	fl := c.Flags()
	fl.StringVar(&upstream, "upstream", "", "the policy's OpenAI-compatible server, e.g. http://localhost:8000 (required)")
	fl.StringVar(&listen, "listen", "127.0.0.1:8090", "address to listen on (one not on loopback needs --token, --token-file or --users-file)")
	fl.StringVar(&token, "token", "", "bearer token clients must send (or $NEXTSTATE_TOKEN); its requests name their user (X-User-Id, user)")
	fl.StringVar(&tokenFile, "token-file", "", "file holding the bearer token")
	fl.StringVar(&usersFile, "users-file", "", `file of per-user bearer tokens, "TOKEN USER" a line (# comments): the token says who is speaking`)
	fl.StringVar(&upstreamKeyEnv, "upstream-api-key-env", "", "environment variable holding the upstream's API key (else a client's Authorization goes upstream when the proxy has no token)")
	fl.StringVar(&dataDir, "data", defaultProxyDataDir(), "the proxy's store directory (samples.db, quarantine/)")
	fl.StringVar(&readyFile, "ready-file", "", "write the listening address here once ready")
	fl.StringVar(&allowUsers, "allow-users", "", "comma-separated users whose feedback trains (default: everyone)")
	fl.StringVar(&allowFile, "allow-users-file", "", "file of users whose feedback trains, one a line (# comments)")
	fl.Float64Var(&sessionRate, "session-rate", 0, "trained turns per minute per session (0: no limit)")
	fl.Float64Var(&userRate, "user-rate", 0, "trained turns per minute per user (0: no limit)")
	fl.StringVar(&judgeURL, "judge-url", "", "the judge's OpenAI-compatible base URL, e.g. http://localhost:8001/v1")
	fl.StringVar(&judgeModel, "judge-model", "", "the judge model's name")
	fl.StringVar(&judgeKeyEnv, "judge-api-key-env", "", "environment variable holding the judge's API key")
	fl.IntVar(&votes, "judge-votes", 3, "votes per turn (majority; a tie is 0)")
	fl.DurationVar(&judgeTimeout, "judge-timeout", 2*time.Minute, "bound of each judge call")
	fl.IntVar(&workers, "judge-workers", 4, "turns judged at once")
	fl.IntVar(&queue, "judge-queue", 256, "turns waiting for the judge, past which they are dropped")
	c.MarkFlagRequired("upstream")
	c.AddCommand(newProxyQuarantine())
	return c
}

func serveProxy(ctx context.Context, p *proxy.Proxy, listen, readyFile string) error {
	ln, err := p.Listen(listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if err := writeReadyFile(readyFile, ln.Addr().String()); err != nil {
		srv.Close()
		return err
	}
	slog.Info("proxy: listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if cerr := p.Close(sctx); cerr != nil {
		err = errors.Join(err, fmt.Errorf("proxy: judging the queued turns: %w", cerr))
	}
	return err
}

func readAllow(list, file string) ([]string, error) {
	var out []string
	for u := range strings.SplitSeq(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	if file == "" {
		return out, nil
	}
	err := eachLine("--allow-users-file", file, "a user", func(_ int, u string) error {
		out = append(out, u)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readUsers reads a --users-file: "TOKEN USER" a line, # comments and
// blank lines skipped; a token may appear once, a user on several lines.
func readUsers(file string) (map[string]string, error) {
	if file == "" {
		return nil, nil
	}
	users := map[string]string{}
	err := eachLine("--users-file", file, `"TOKEN USER"`, func(n int, line string) error {
		f := strings.Fields(line)
		if len(f) != 2 {
			return fmt.Errorf("--users-file %s:%d: want \"TOKEN USER\", two words (a token, a user id), got %d", file, n, len(f))
		}
		if _, dup := users[f[0]]; dup {
			return fmt.Errorf("--users-file %s:%d: that token is given twice; each user needs a token of their own", file, n)
		}
		users[f[0]] = f[1]
		return nil
	})
	if err != nil {
		return nil, err
	}
	return users, nil
}

// eachLine calls f with each line of the file a flag names, trimmed, and
// its number, skipping blank lines and # comments; a file with no line is
// an error that says what a line is (want).
func eachLine(flag, file, want string, f func(n int, line string) error) error {
	fh, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	lines := 0
	for n := 1; sc.Scan(); n++ {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			lines++
			if err := f(n, line); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	if lines == 0 {
		return fmt.Errorf("%s %s names no user; give %s a line, or leave the flag out", flag, file, want)
	}
	return nil
}

func newProxyQuarantine() *cobra.Command {
	var dataDir string
	c := &cobra.Command{
		Use:   "quarantine list | release ID | drop ID",
		Short: "List, release or drop the turns the judge flagged",
		Long: `Turns whose next state the judge flagged (it tried to make the agent unsafe or to
contradict its instructions) are kept in DATA/quarantine, not trained on. "list" prints them;
"release ID" stores one as a training sample (with its judge's vote and hint) and removes it;
"drop ID" deletes it. release writes the store, so run it while the proxy is stopped.`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && args[0] == "list":
			case len(args) == 2 && (args[0] == "release" || args[0] == "drop"):
			default:
				return fmt.Errorf("want: quarantine list, quarantine release ID or quarantine drop ID; got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := proxy.OpenQuarantine(dataDir)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch args[0] {
			case "list":
				list, err := q.List()
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSESSION\tSTEP\tVOTE\tREASON\tNEXT STATE")
				for _, e := range list {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%+d\t%s\t%s\n", e.ID, e.Turn.Session, e.Turn.Step, e.Judgement.Vote,
						oneLine(e.Reason, 60), oneLine(e.NextState.Content, 60))
				}
				return tw.Flush()
			case "drop":
				if err := q.Drop(args[1]); err != nil {
					return err
				}
				fmt.Fprintf(out, "dropped %s\n", args[1])
				return nil
			default:
				if _, err := q.Get(args[1]); err != nil {
					return err
				}
				st, err := store.Open(dataDir, store.Options{})
				if err != nil {
					return fmt.Errorf("%w (release writes the store: stop the proxy first)", err)
				}
				off, err := q.Release(cmd.Context(), st, args[1])
				if cerr := st.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "released %s as sample %d\n", args[1], off)
				return nil
			}
		},
	}
	c.Flags().StringVar(&dataDir, "data", defaultProxyDataDir(), "the proxy's store directory")
	return c
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
