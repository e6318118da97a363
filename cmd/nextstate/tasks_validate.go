package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/envs/terminal"
	"github.com/nextstate-rl/nextstate/gym"
)

type validateFlags struct {
	sandbox, baseImage    string
	testsRunner           string
	dockerHosts, settings []string
	jobs                  int
	timeout               time.Duration
	asJSON                bool
}

// ValidateReport is what `nextstate tasks validate --json` prints.
type ValidateReport struct {
	Sandbox string                `json:"sandbox"`
	Tasks   []terminal.Validation `json:"tasks"`
	Skipped []string              `json:"skipped,omitempty"`
	Valid   int                   `json:"valid"`
	Invalid int                   `json:"invalid"`
	Seconds float64               `json:"seconds"`
}

func newTasksValidate() *cobra.Command {
	var f validateFlags
	c := &cobra.Command{
		Use:          "validate [DIR...]",
		Short:        "Check terminal tasks: doing nothing must fail, the oracle solution must pass",
		SilenceUsage: true,
		Long: `Validate terminal-v1 tasks (Terminal-Bench task folders): for each task, build its
sandbox, submit at once (the tests must fail: reward below 1), reset, play the oracle
solution (solution.sh or solution.yaml) through the env's tools and submit (the tests
must pass: reward 1). Each DIR is a task folder or a directory of them; without DIR
the built-in smoke tasks are validated. Tasks of other kinds are skipped.

Prints a table (task, build, nothing, oracle, time) or, with --json, a report with
every test's result; exits non-zero when a task is invalid.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.sandbox, "sandbox", "bwrap", "sandbox backend: bwrap or docker")
	fl.StringArrayVar(&f.dockerHosts, "docker-host", nil, "docker engine (repeatable: unix://, tcp://, ssh://)")
	fl.StringVar(&f.baseImage, "base-image", "", "image that replaces a task's FROM image when that is not present (default nextstate/base)")
	fl.StringVar(&f.testsRunner, "tests-runner", "", `how the tests run: "auto" (the default: run-tests.sh, but offline, where it only installs its test runner (uv, pytest) from the network, the sandbox's pytest runs its pytest command), "script" (run-tests.sh always) or "pytest" (the sandbox's pytest always; what the script would install is not); the setting `+terminal.SettingTestsRunner)
	fl.StringArrayVar(&f.settings, "set", nil, "a setting for env kinds, name=value (repeatable)")
	fl.IntVarP(&f.jobs, "jobs", "j", 4, "tasks validated at once")
	fl.DurationVar(&f.timeout, "timeout", time.Hour, "deadline of the whole run")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	return c
}

func runValidate(ctx context.Context, out, errOut io.Writer, f validateFlags, dirs []string) error {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rep := ValidateReport{Sandbox: f.sandbox}
	var tasks []gym.Task
	if len(dirs) == 0 {
		tasks = terminal.SmokeTasks()
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		s, err := gym.LoadSuite(d)
		if err != nil {
			return err
		}
		for _, t := range s.Tasks {
			if t.Env != terminal.KindName {
				rep.Skipped = append(rep.Skipped, t.ID+" ("+t.Env+")")
				continue
			}
			if seen[t.ID] {
				return fmt.Errorf("task id %q appears twice", t.ID)
			}
			seen[t.ID] = true
			tasks = append(tasks, t)
		}
	}
	if len(tasks) == 0 {
		return fmt.Errorf("no terminal-v1 tasks in %s", strings.Join(dirs, ", "))
	}
	settings, err := kindSettings(serveFlags{sandbox: f.sandbox, dockerHosts: f.dockerHosts, baseImage: f.baseImage, settings: f.settings})
	if err != nil {
		return err
	}
	if f.testsRunner != "" {
		settings[terminal.SettingTestsRunner] = f.testsRunner
	}
	v := terminal.NewValidator(settings)
	rep.Tasks = make([]terminal.Validation, len(tasks))
	jobs := make(chan int)
	var wg sync.WaitGroup
	var progress sync.Mutex
	for range max(f.jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				rep.Tasks[i] = v.Validate(ctx, &tasks[i])
				if !f.asJSON {
					progress.Lock()
					fmt.Fprintf(errOut, "%s: %s\n", tasks[i].ID, verdictWord(rep.Tasks[i]))
					progress.Unlock()
				}
			}
		}()
	}
	for i := range tasks {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer scancel()
	if err := v.Close(sctx); err != nil {
		fmt.Fprintln(errOut, "nextstate: closing the sandboxes:", err)
	}
	for _, r := range rep.Tasks {
		if r.OK {
			rep.Valid++
		} else {
			rep.Invalid++
		}
	}
	rep.Seconds = time.Since(begin).Seconds()
	if f.asJSON {
		if err := printJSON(out, rep); err != nil {
			return err
		}
	} else {
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TASK\tBUILD\tNOTHING\tORACLE\tTIME\tRESULT")
		for _, r := range rep.Tasks {
			build := fmt.Sprintf("ok %.2fs", time.Duration(r.Build).Seconds())
			if strings.HasPrefix(r.Err, "build: ") || strings.HasPrefix(r.Err, "oracle: ") {
				build = "FAIL"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.2fs\t%s\n", r.Task, build, reward(r.Nothing, r.Err, "nothing"),
				reward(r.Oracle, r.Err, "oracle"), time.Duration(r.Time).Seconds(), verdictWord(r))
		}
		w.Flush()
		fmt.Fprintf(out, "\n%d valid, %d invalid (sandbox %s) in %.1fs\n", rep.Valid, rep.Invalid, f.sandbox, rep.Seconds)
		for _, s := range rep.Skipped {
			fmt.Fprintf(out, "skipped (not terminal-v1): %s\n", s)
		}
	}
	if rep.Invalid > 0 {
		return fmt.Errorf("%d of %d tasks are invalid", rep.Invalid, len(rep.Tasks))
	}
	return nil
}

// reward prints a phase's reward, or "-" when the run stopped before it.
func reward(r float64, err, phase string) string {
	stopped := []string{"build: ", "oracle: ", "nothing: "}
	if phase == "oracle" {
		stopped = append(stopped, "reset: ", "oracle step")
	}
	for _, p := range stopped {
		if strings.HasPrefix(err, p) {
			return "-"
		}
	}
	return fmt.Sprintf("%.2f", r)
}

func verdictWord(r terminal.Validation) string {
	if r.OK {
		return "ok"
	}
	return "INVALID: " + clip(r.Err, 400)
}
