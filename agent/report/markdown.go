package report

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/nextstate-rl/nextstate/gym"
)

// Markdown writes report.md: the run's configuration, the summary, pass@k,
// the env-kind and split breakdowns, the per-task table, the failure
// taxonomy and the list of trials with links to their trajectory files.
func (r *Report) Markdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	s := &r.Summary

	p("# Benchmark report\n\n")
	if r.Run != nil && len(r.Run.Keys) > 0 {
		p("| Run | |\n|---|---|\n")
		for _, k := range r.Run.Keys {
			p("| %s | %s |\n", mdText(k), mdText(r.Run.Get(k)))
		}
		p("\n")
	}

	p("## Summary\n\n| | |\n|---|---|\n")
	p("| Trials | %d (%d tasks)", s.Trials, s.Tasks)
	if s.Superseded > 0 {
		p("; rows superseded by a retry: %d", s.Superseded)
	}
	p(" |\n")
	p("| Scored trials | %d (infrastructure failures excluded: %d) |\n", s.Scored, s.InfraErrors)
	p("| Passed / failed / agent errors | %d / %d / %d |\n", s.Passed, s.Failed, s.AgentErrors)
	if s.ScoredTasks == 0 {
		p("| Scores | none: no task has a scored trial |\n")
	} else {
		p("| Samples per task | %s |\n", span(s.MinSamples, s.MaxSamples))
		p("| pass@1 | %s (95%% CI %s) |\n", f3(s.PassAt1), s.PassAt1CI)
		for _, k := range s.Ks {
			if k > 1 {
				p("| pass@%d | %s |\n", k, f3(s.PassAtK[k]))
			}
		}
		p("| Mean reward | %s (95%% CI %s) |\n", f3(s.MeanReward), s.MeanRewardCI)
	}
	if s.ProcessRewardTrials > 0 {
		p("| Mean process reward | %s (%d trials judged) |\n", f3(s.MeanProcessReward), s.ProcessRewardTrials)
	}
	p("| Tokens | %d prompt, %d completion |\n", s.PromptTokens, s.CompletionTokens)
	p("| Trial time | %s summed over trials", duration(s.Duration))
	if s.Trials > 0 {
		p(", %s per trial", duration(s.Duration/time.Duration(s.Trials)))
	}
	p(" |\n\n")
	if s.ScoredTasks > 0 {
		p("pass@k is the unbiased estimator 1 − C(n−c, k)/C(n, k) per task, averaged over the %d scored tasks; "+
			"pass@1 and the mean reward average per-task values. Intervals are %d-resample percentile bootstraps "+
			"over tasks (seed %d). Infrastructure failures are not scored.\n\n",
			s.ScoredTasks, BootstrapResamples, BootstrapSeed)
		p("## pass@k\n\n| k | pass@k |\n|---:|---:|\n")
		for _, k := range s.Ks {
			p("| %d | %s |\n", k, f3(s.PassAtK[k]))
		}
		p("\n")
	}

	groupTable := func(title, col string, gs []GroupStats) {
		p("## %s\n\n| %s | Tasks | Trials | Scored | Passed | pass@1 | Mean reward | Infra failures |\n", title, col)
		p("|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, g := range gs {
			p("| %s | %d | %d | %d | %d | %s | %s | %d |\n", mdText(g.Name), g.Tasks, g.Trials, g.Scored, g.Passed,
				orDash(g.ScoredTasks, g.PassAt1), orDash(g.ScoredTasks, g.MeanReward), g.Infra)
		}
		p("\n")
	}
	if len(r.ByEnv) > 0 {
		groupTable("By env kind", "Env", r.ByEnv)
	}
	if r.hasSplits() {
		groupTable("By split", "Split", r.BySplit)
	}

	if len(r.Tasks) > 0 {
		splits := r.hasSplits()
		p("## Tasks\n\n| Task | Env |")
		if splits {
			p(" Split |")
		}
		p(" Trials | Infra | Scored | Passed | Pass rate | Mean reward | Mean steps | Failures |\n|---|---|")
		if splits {
			p("---|")
		}
		p("---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, ts := range r.Tasks {
			p("| %s | %s |", mdText(ts.Task), mdText(ts.Env))
			if splits {
				p(" %s |", mdText(splitName(ts.Split)))
			}
			p(" %d | %d | %d | %d | %s | %s | %s | %s |\n", ts.Trials, ts.Infra, ts.Scored, ts.Passed,
				orDash(ts.Scored, ts.PassRate), orDash(ts.Scored, ts.MeanReward), steps(ts.Scored, ts.MeanSteps),
				mdText(reasonList(ts.Failures)))
		}
		p("\n")
	}

	if len(r.Failures) > 0 {
		p("## Failures\n\nTrials that did not pass, by whose fault and why. Infrastructure failures are excluded " +
			"from every score; the agent's count against it.\n\n")
		p("| Fault | Reason | Trials | Examples | Message |\n|---|---|---:|---|---|\n")
		for _, c := range r.Failures {
			p("| %s | %s | %d | %s | %s |\n", c.Fault, mdText(c.Reason), c.Count,
				mdText(strings.Join(c.Examples, ", ")), mdText(clip(c.Message, 160)))
		}
		p("\n")
	}

	if len(r.Trials) > 0 {
		p("## Trials\n\n| Trial | Status | Reward | Steps | Failure | Trajectory |\n|---|---|---:|---:|---|---|\n")
		for i := range r.Trials {
			t := &r.Trials[i]
			fail := ""
			if fault, reason, ok := t.FailureClass(); ok {
				fail = string(fault) + ": " + reason
			}
			link := ""
			if t.Trajectory != "" {
				link = "[json](" + relURL(t.Trajectory) + ")"
			}
			p("| %s | %s | %s | %d | %s | %s |\n", mdText(t.TrialID), t.Status, g3(t.Reward), t.Steps, mdText(fail), link)
		}
		p("\n")
	}
	p("A viewer of every step (the response, the action, the next state, rewards and judge votes) is in [%s](%s).\n",
		HTMLFile, HTMLFile)
	return bw.Flush()
}

// splitName is the split a task without one belongs to, as in gym.Suite.
func splitName(s string) string {
	if s == "" {
		return "train"
	}
	return s
}

func (r *Report) hasSplits() bool {
	for i := range r.Trials {
		if r.Trials[i].Split != "" {
			return true
		}
	}
	return false
}

// mdText escapes text for a Markdown table cell: ASCII punctuation that
// Markdown or HTML would act on is backslash-escaped, line breaks become
// spaces.
func mdText(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '~', '&':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// relURL percent-encodes a relative slash path for a link, segment by segment.
func relURL(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func reasonList(rs []ReasonCount) string {
	parts := make([]string, 0, len(rs))
	for _, rc := range rs {
		s := rc.Reason
		if rc.Fault == gym.FaultInfra {
			s = "infra:" + s
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", s, rc.Count))
	}
	return strings.Join(parts, ", ")
}

func f3(x float64) string { return fmt.Sprintf("%.3f", x) }

// g3 prints a reward compactly: 1, 0.5, 0.333.
func g3(x float64) string {
	s := fmt.Sprintf("%.3f", x)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func orDash(n int, x float64) string {
	if n == 0 {
		return "–"
	}
	return f3(x)
}

func steps(n int, x float64) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", x)
}

func span(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

func duration(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// clip cuts s to at most n runes, marking the cut.
func clip(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n]) + "…"
}
