package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/envs/swe"
	"github.com/nextstate-rl/nextstate/sandbox"
	_ "github.com/nextstate-rl/nextstate/sandbox/bwrap"
	_ "github.com/nextstate-rl/nextstate/sandbox/docker"
)

type sweEvalFlags struct {
	instances, predictions string
	ids                    []string
	parallel               int
	sandbox                string
	dockerHosts            []string
	opts                   swe.EvalOptions
	out                    string
	timeout                time.Duration
	asJSON, quiet          bool
}

func newSWEEval() *cobra.Command {
	var f sweEvalFlags
	c := &cobra.Command{
		Use:          "eval --instances FILE --predictions FILE",
		Short:        "Evaluate predicted patches against SWE-bench instances, in parallel",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		Long: `Evaluate patches the way SWE-bench's harness does: for each instance, a fresh
sandbox with the repository at its base commit and no network; the prediction's changes
to files the test patch touches are discarded; the rest is applied (git apply, else
patch --fuzz=3), then the test patch; then the FAIL_TO_PASS and PASS_TO_PASS tests run
with per-test results (go test -json; pytest -rA). An instance is resolved when every
one of them passes. An instance without a prediction counts as unresolved.

--instances is a JSON or JSON Lines file of instances (envs/swe's format: SWE-bench's
fields plus source, language, image). --predictions is SWE-bench's predictions file
(JSON Lines, a JSON list, or an object keyed by instance id, of {instance_id,
model_name_or_path, model_patch}), or "gold" (each instance's own patch) or "empty".

Prints each instance as it finishes (to stderr), then a table (instance, resolved,
FAIL_TO_PASS and PASS_TO_PASS passed of total, why not, seconds) and the resolved
count; --json prints the report instead, and --out writes it to a file too. Exits
non-zero when an evaluation failed for a reason that is not the patch's.

  nextstate swe eval --instances instances.jsonl --predictions preds.jsonl --parallel 8
  nextstate swe eval --instances instances.jsonl --predictions gold --sandbox docker`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runSWEEval(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.instances, "instances", "", "instances file (JSON or JSON Lines)")
	fl.StringVar(&f.predictions, "predictions", "", `predictions file (SWE-bench's format), or "gold" or "empty"`)
	fl.StringArrayVar(&f.ids, "instance-id", nil, "evaluate only this instance (repeatable)")
	fl.IntVarP(&f.parallel, "parallel", "j", 4, "instances evaluated at once")
	fl.StringVar(&f.sandbox, "sandbox", "bwrap", "sandbox backend: bwrap or docker")
	fl.StringArrayVar(&f.dockerHosts, "docker-host", nil, "docker engine (repeatable: unix://, tcp://, ssh://)")
	fl.StringVar(&f.opts.Image, "image", "", "sandbox image for every instance (docker: an image; bwrap: a rootfs directory)")
	fl.StringVar(&f.opts.GoModCache, "gomodcache", "", "Go module cache mounted read-only (default "+swe.DefaultGoModCache()+")")
	fl.StringVar(&f.opts.GoRoot, "go-root", "", "Go toolchain mounted read-only (default: go env GOROOT)")
	fl.StringVar(&f.opts.WorkDir, "workdir", "", "prepared repositories and the evaluation build cache (default "+swe.DefaultWorkDir()+")")
	fl.StringVar(&f.opts.GoCache, "eval-gocache", "", `the evaluations' shared Go build cache, or "off" for a fresh one each (default WORKDIR/gocache-eval)`)
	fl.DurationVar(&f.opts.TestTimeout, "test-timeout", swe.DefaultTestTimeout, "bound on each instance's test run")
	fl.DurationVar(&f.timeout, "timeout", 6*time.Hour, "deadline of the whole run")
	fl.StringVar(&f.out, "out", "", "also write the JSON report to this file")
	fl.BoolVar(&f.asJSON, "json", false, "print the JSON report instead of the table")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "do not print each instance as it finishes")
	return c
}

func runSWEEval(ctx context.Context, out, errOut io.Writer, f sweEvalFlags) error {
	if f.instances == "" || f.predictions == "" {
		return fmt.Errorf("swe eval: --instances and --predictions are required")
	}
	if f.parallel < 1 {
		return fmt.Errorf("swe eval: --parallel %d: want at least 1", f.parallel)
	}
	ins, err := swe.LoadInstances(f.instances)
	if err != nil {
		return err
	}
	if len(f.ids) > 0 {
		want := map[string]bool{}
		for _, id := range f.ids {
			want[id] = true
		}
		var keep []swe.Instance
		for _, in := range ins {
			if want[in.InstanceID] {
				keep = append(keep, in)
				delete(want, in.InstanceID)
			}
		}
		if len(want) > 0 {
			return fmt.Errorf("swe eval: --instance-id %s: not in %s", strings.Join(sweKeys(want), ", "), f.instances)
		}
		ins = keep
	}
	var preds []swe.Prediction
	switch f.predictions {
	case "gold", "empty":
		for _, in := range ins {
			p := swe.Prediction{InstanceID: in.InstanceID, ModelNameOrPath: f.predictions}
			if f.predictions == "gold" {
				p.ModelPatch = in.Patch
			}
			preds = append(preds, p)
		}
	default:
		if preds, err = swe.LoadPredictions(f.predictions); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	b, err := sandbox.Open(ctx, f.sandbox, sandbox.Options{Hosts: f.dockerHosts})
	if err != nil {
		return fmt.Errorf("swe eval: opening the %s sandbox: %w", f.sandbox, err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer ccancel()
		b.Close(cctx)
	}()
	f.opts.Backend = f.sandbox
	h := swe.NewHarness(b, f.opts)
	n := 0
	rep := h.EvaluateAll(ctx, ins, preds, f.parallel, func(r swe.Result) {
		n++
		if f.quiet {
			return
		}
		word := "unresolved"
		if r.Resolved {
			word = "resolved"
		}
		if r.Error != "" {
			word += " (" + r.Error + ")"
		}
		fmt.Fprintf(errOut, "[%d/%d] %s: %s, %.1f s\n", n, len(ins), r.InstanceID, word, float64(r.Timings.TotalMs)/1000)
	})
	if f.out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(f.out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if f.asJSON {
		if err := printJSON(out, rep); err != nil {
			return err
		}
	} else if err := rep.WriteTable(out); err != nil {
		return err
	}
	if rep.Errors > 0 {
		return fmt.Errorf("swe eval: %d of %d evaluations failed for reasons that are not the patches' (see %q)", rep.Errors, len(ins), swe.ErrorInfra)
	}
	return nil
}

func sweKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
