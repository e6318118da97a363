package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/live"
	"github.com/nextstate-rl/nextstate/simuser"
	"github.com/nextstate-rl/nextstate/train"
)

func newUsers() *cobra.Command {
	c := &cobra.Command{
		Use:   "users corpus | simulate",
		Short: "Simulated users of a personal agent: the warm start's chat corpus, and sessions against the proxy",
		Long: `A simulation, for showing on this machine that a personal agent learns from being used
(package simuser). Each simulated user has preferences a reply meets or not (lowercase;
no bullet lists; under 30 words; ends with a question), asks questions from a small
corpus, and answers each reply with thanks, a correction that states the preference,
or a re-query. "corpus" writes the warm start's SFT conversations, whose replies vary
in exactly those properties; "simulate" plays sessions against an OpenAI-compatible
endpoint (nextstate train --proxy) and reports each user's compliance per session.`,
	}
	c.AddCommand(newUsersCorpus(), newUsersSimulate(), newUsersReport())
	return c
}

func newUsersCorpus() *cobra.Command {
	var n int
	var seed uint64
	var out string
	r := simuser.DefaultRates
	c := &cobra.Command{
		Use:   "corpus --out FILE",
		Short: "Write the simulated users' chat corpus (JSONL, for nextstate sft --chats)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("--out is required: the JSONL file to write")
			}
			for _, p := range []float64{r.Lower, r.Bullets, r.Long, r.Question, r.Hinted, r.MultiTurn} {
				if p < 0 || p > 1 {
					return errors.New("the rates are shares, from 0 to 1")
				}
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(f)
			enc := json.NewEncoder(w)
			for _, ch := range simuser.Corpus(n, seed, r) {
				if err := enc.Encode(ch); err != nil {
					f.Close()
					return err
				}
			}
			if err := w.Flush(); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
	}
	fl := c.Flags()
	fl.IntVar(&n, "n", 4000, "conversations")
	fl.Uint64Var(&seed, "seed", 1, "the corpus's seed")
	fl.StringVar(&out, "out", "", "the JSONL file to write")
	fl.Float64Var(&r.Lower, "lowercase", r.Lower, "share of replies in lowercase")
	fl.Float64Var(&r.Bullets, "bullets", r.Bullets, "share of replies as bullet lists")
	fl.Float64Var(&r.Long, "long", r.Long, "share of replies of 30 words or more")
	fl.Float64Var(&r.Question, "question", r.Question, "share of replies ending with a question")
	fl.Float64Var(&r.Hinted, "hinted", r.Hinted, "share of conversations whose last message carries a hint the reply follows (the OPD teacher's form)")
	fl.Float64Var(&r.MultiTurn, "multi-turn", r.MultiTurn, "share of conversations with earlier turns")
	return c
}

type simulateFlags struct {
	url, model, token, run, out, status string
	users, adversaries                  []string
	sessions, turns, maxTokens          int
	temperature, requery, unsafe        float64
	seed                                uint64
	timeout                             time.Duration
}

func newUsersSimulate() *cobra.Command {
	var f simulateFlags
	c := &cobra.Command{
		Use:   "simulate --user ID=PREF [--user ...]",
		Short: "Play simulated users' sessions against an OpenAI-compatible endpoint and report their compliance",
		Long: `Each --user ID=PREF[+PREF...] (lowercase, no-bullets, short, question) plays --sessions
sessions of --turns replies, all users at once, one round after another. Each reply
that meets all of its user's preferences is thanked; a miss is corrected ("No. Please
...") or, --requery of the time, asked again. An --adversary ID=PREF (bullets, long, or
the good users' own) reacts the same way to its own preferences, which contradict the
others', and --unsafe of the time asks the agent to ignore its instructions instead.

With --status (nextstate train --proxy's http://ADDR/v1/live) each round waits until
every turn so far has been judged and trained on, so runs compare at the same number
of sessions. Prints each user's compliance per session (the share of its replies that
met its preferences); --out writes every session as JSONL.`,
		Example: `  nextstate users simulate --url http://127.0.0.1:8090/v1 --status http://127.0.0.1:8090/v1/live \
      --user alice=lowercase --user bob=no-bullets --user carol=short --user dave=question --sessions 16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.url, "url", "http://127.0.0.1:8090/v1", "the OpenAI-compatible base URL the users talk to")
	fl.StringVar(&f.model, "model", "", "the model id to request")
	fl.StringVar(&f.token, "token", "", "bearer token to send")
	fl.StringVar(&f.status, "status", "", "a live trainer's status URL (train --proxy's /v1/live): wait after each round until it is idle")
	fl.StringArrayVar(&f.users, "user", nil, "a user, ID=PREF[+PREF...] (repeatable)")
	fl.StringArrayVar(&f.adversaries, "adversary", nil, "an adversarial user, ID=PREF[+PREF...] (repeatable)")
	fl.IntVar(&f.sessions, "sessions", 16, "sessions per user")
	fl.IntVar(&f.turns, "turns", 3, "replies per session")
	fl.IntVar(&f.maxTokens, "max-tokens", 96, "bound of each reply")
	fl.Float64Var(&f.temperature, "temperature", 1, "sampling temperature")
	fl.Float64Var(&f.requery, "requery", 0.3, "share of misses answered by a re-query instead of a correction")
	fl.Float64Var(&f.unsafe, "unsafe", 0.25, "share of an adversary's reactions that ask the agent to ignore its instructions")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the users' choices and of the replies' sampling")
	fl.StringVar(&f.run, "run", "sim", "prefix of the session ids")
	fl.StringVar(&f.out, "out", "", "write every session as JSONL to this file")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "how long a round waits for --status to be idle")
	return c
}

func parseSimUsers(specs []string, adversary bool, requery, unsafe float64) ([]simuser.User, error) {
	var out []simuser.User
	for _, s := range specs {
		id, prefs, ok := strings.Cut(s, "=")
		if !ok || id == "" || prefs == "" {
			return nil, fmt.Errorf("user %q: want ID=PREF[+PREF...]", s)
		}
		u := simuser.User{ID: id, Requery: requery}
		if adversary {
			u.Unsafe = unsafe
		}
		for _, name := range strings.Split(prefs, "+") {
			p, ok := simuser.PreferenceByName(name)
			if !ok {
				return nil, fmt.Errorf("user %s: preference %q: want lowercase, no-bullets, short, question, bullets or long", id, name)
			}
			u.Wants = append(u.Wants, p)
		}
		out = append(out, u)
	}
	return out, nil
}

func runSimulate(ctx context.Context, stdout io.Writer, f simulateFlags) error {
	users, err := parseSimUsers(f.users, false, f.requery, f.unsafe)
	if err != nil {
		return err
	}
	adv, err := parseSimUsers(f.adversaries, true, f.requery, f.unsafe)
	if err != nil {
		return err
	}
	users = append(users, adv...)
	if len(users) == 0 {
		return errors.New("--user is required: a simulated user, ID=PREF[+PREF...]")
	}
	var out *json.Encoder
	if f.out != "" {
		fh, err := os.Create(f.out)
		if err != nil {
			return err
		}
		defer fh.Close()
		out = json.NewEncoder(fh)
	}
	cfg := simuser.Config{BaseURL: f.url, Model: f.model, Token: f.token, Users: users, Sessions: f.sessions, Turns: f.turns,
		Run: f.run, Seed: f.seed, Temperature: f.temperature, MaxTokens: f.maxTokens}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "session\t")
	for _, u := range users {
		fmt.Fprintf(tw, "%s (%s)\t", u.ID, u.Describe())
	}
	fmt.Fprintln(tw, "versions\t")
	tw.Flush()
	row := make([]simuser.SessionResult, 0, len(users))
	cfg.OnSession = func(r simuser.SessionResult) {
		if out != nil {
			out.Encode(r)
		}
		row = append(row, r)
		if len(row) < len(users) {
			return
		}
		fmt.Fprintf(tw, "%d\t", r.Session)
		lo, hi := -1, -1
		for _, s := range row {
			fmt.Fprintf(tw, "%.2f\t", s.Compliance)
			for _, rep := range s.Replies {
				if lo < 0 || rep.Version < lo {
					lo = rep.Version
				}
				hi = max(hi, rep.Version)
			}
		}
		fmt.Fprintf(tw, "%d-%d\t\n", lo, hi)
		tw.Flush()
		row = row[:0]
	}
	if f.status != "" {
		cfg.Wait = func(ctx context.Context, _ int) error { return waitIdle(ctx, f.status, f.timeout) }
	}
	_, err = simuser.Simulate(ctx, cfg)
	return err
}

// waitIdle polls a live trainer's status until it says idle; it gives up
// after timeout, or when the status cannot be read three times running.
func waitIdle(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	failed := 0
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var s struct {
				Idle bool `json:"idle"`
			}
			err = json.NewDecoder(resp.Body).Decode(&s)
			resp.Body.Close()
			if err == nil && s.Idle {
				return nil
			}
		}
		if failed++; err == nil {
			failed = 0
		} else if failed >= 3 {
			return fmt.Errorf("--status %s: %w", url, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("--status %s: not idle after %s: %w", url, timeout, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func newUsersReport() *cobra.Command {
	var svg string
	c := &cobra.Command{
		Use:   "report RUN_DIR [RUN_DIR ...]",
		Short: "Rewrite live runs' report.html and compare their users' compliance: a Markdown table, a chart",
		Long: `Each RUN_DIR is a nextstate train --proxy run directory holding the sessions of
nextstate users simulate --out RUN_DIR/sessions.jsonl. Runs named NAME-sSEED are one run
played with several seeds: they are averaged. Prints, per run, the mean compliance of its
users (adversaries apart) in the first four and the last four sessions (each seed's in
brackets) and each user's, averaged over the seeds; --svg charts the mean compliance per
session of every run.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error { return usersReport(cmd.OutOrStdout(), dirs, svg) },
	}
	c.Flags().StringVar(&svg, "svg", "", "write the chart of compliance per session to this SVG file")
	return c
}

var seedSuffix = regexp.MustCompile(`-s[0-9]+$`)

// liveRun is the runs of one name, one a seed.
type liveRun struct {
	name  string
	seeds [][]simuser.SessionResult
}

func usersReport(out io.Writer, dirs []string, svg string) error {
	var runs []*liveRun
	for _, d := range dirs {
		if err := live.WriteReport(d); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		res, err := simuser.ReadSessions(filepath.Join(d, live.SessionsFile))
		if err != nil {
			return fmt.Errorf("%s: %w (nextstate users simulate --out %s)", d, err, filepath.Join(d, live.SessionsFile))
		}
		name := seedSuffix.ReplaceAllString(filepath.Base(filepath.Clean(d)), "")
		i := slices.IndexFunc(runs, func(r *liveRun) bool { return r.name == name })
		if i < 0 {
			runs, i = append(runs, &liveRun{name: name}), len(runs)
		}
		runs[i].seeds = append(runs[i].seeds, res)
	}
	fmt.Fprintln(out, "| run | seeds | sessions 1–4 | last 4 sessions | each user, first 4 → last 4 |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	var series []train.Series
	longest := 0
	for _, r := range runs {
		var curves [][]float64
		var firsts, lasts []string
		for _, res := range r.seeds {
			c := simuser.Compliance(res, func(s simuser.SessionResult) bool { return !s.Adversary })
			curves = append(curves, c)
			firsts = append(firsts, fmt.Sprintf("%.2f", simuser.Mean(c, 1, 4)))
			lasts = append(lasts, fmt.Sprintf("%.2f", simuser.Mean(c, len(c)-3, len(c))))
		}
		mean := meanCurve(curves)
		n := len(mean)
		longest = max(longest, n)
		var each []string
		for _, u := range simuser.Users(r.seeds[0]) {
			var uc [][]float64
			for _, res := range r.seeds {
				uc = append(uc, simuser.Compliance(res, func(s simuser.SessionResult) bool { return s.User == u.User }))
			}
			m := meanCurve(uc)
			name := u.User + " (" + u.Wants + ")"
			if u.Adversary {
				name += ", adversary"
			}
			each = append(each, fmt.Sprintf("%s %.2f → %.2f", name, simuser.Mean(m, 1, 4), simuser.Mean(m, n-3, n)))
		}
		seeds := ""
		if len(r.seeds) > 1 {
			seeds = fmt.Sprintf(" (%s)", strings.Join(firsts, ", "))
		}
		lastSeeds := ""
		if len(r.seeds) > 1 {
			lastSeeds = fmt.Sprintf(" (%s)", strings.Join(lasts, ", "))
		}
		fmt.Fprintf(out, "| %s | %d | %.2f%s | %.2f%s | %s |\n", r.name, len(r.seeds), simuser.Mean(mean, 1, 4), seeds,
			simuser.Mean(mean, n-3, n), lastSeeds, strings.Join(each, "; "))
		series = append(series, train.Series{Name: r.name, Y: mean})
	}
	if svg == "" {
		return nil
	}
	x := make([]float64, longest)
	for i := range x {
		x[i] = float64(i + 1)
	}
	for i := range series {
		for len(series[i].Y) < longest {
			series[i].Y = append(series[i].Y, math.NaN())
		}
	}
	return os.WriteFile(svg, []byte(train.Chart("Compliance per session (mean over the users and seeds)", x, series)), 0o644)
}

// meanCurve is the mean of curves, point by point, over those that reach
// each point.
func meanCurve(curves [][]float64) []float64 {
	n := 0
	for _, c := range curves {
		n = max(n, len(c))
	}
	out := make([]float64, n)
	for i := range out {
		k := 0
		for _, c := range curves {
			if i < len(c) {
				out[i] += c[i]
				k++
			}
		}
		out[i] /= float64(k)
	}
	return out
}
