package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/envs/swe/gobuild"
)

type sweBuildGoFlags struct {
	opts           gobuild.Options
	oldDir, newDir string
	list           string
	builtin        bool // build the shipped list
	showBuiltin    bool // print it
	timeout        time.Duration
	asJSON         bool
	verbose        bool
}

// SWEBuildGoReport is what `nextstate swe build-go --json` prints.
type SWEBuildGoReport struct {
	Instances string            `json:"instances"`
	Results   []*gobuild.Result `json:"results"`
	Errors    []string          `json:"errors,omitempty"`
	Seconds   float64           `json:"seconds"`
}

func newSWEBuildGo() *cobra.Command {
	var f sweBuildGoFlags
	c := &cobra.Command{
		Use:          "build-go [MODULE OLD NEW]",
		Short:        "Build a Go SWE instance from two tagged releases of a module",
		SilenceUsage: true,
		Long: `Build a SWE-bench instance from a Go module's real history, offline afterwards:
download MODULE at OLD and NEW through the Go module proxy, commit OLD into a local
git repository (the base commit), split the OLD->NEW diff into test_patch (every
*_test.go and testdata/ change) and patch (the rest), fetch every dependency into the
module cache, run the tests of the touched packages with no network before and after
the fix, and keep the instance when some test fails before and passes after.

The instance (problem statement synthesized from the release: there is no issue
text offline) is written to --instances; its repository goes under --out. Exits
non-zero, saying why, when the pair yields no valid instance.

  nextstate swe build-go github.com/Masterminds/semver/v3 v3.3.0 v3.3.1
  nextstate swe build-go --old-dir ./v1 --new-dir ./v2        (two local module trees)
  nextstate swe build-go --builtin-list                       (print the shipped list; builds nothing)
  nextstate swe build-go --builtin                            (build every entry of the shipped list)
  nextstate swe build-go --list mylist.jsonl                  ({"module","old","new"} a line)`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSWEBuildGo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.opts.ModCache, "modcache", "", "module cache (GOMODCACHE) for sources and dependencies (default ~/.cache/nextstate/swe/gomod)")
	fl.StringVar(&f.opts.Out, "out", "", "directory of the instance repositories (default ~/.cache/nextstate/swe/instances)")
	fl.StringVar(&f.opts.Instances, "instances", "", `instances file (JSON Lines) to add to; "-" writes none (default OUT/instances.jsonl)`)
	fl.StringVar(&f.opts.BuildCache, "gocache", "", "GOCACHE for builds and tests (default: go's)")
	fl.StringVar(&f.opts.Proxy, "proxy", "", "GOPROXY for downloads (default: go env GOPROXY)")
	fl.DurationVar(&f.opts.TestTimeout, "test-timeout", 5*time.Minute, "limit of each go test run")
	fl.BoolVar(&f.opts.AllPackages, "all-packages", false, "test every package (./...), not only those the diff touches")
	fl.StringVar(&f.oldDir, "old-dir", "", "a local directory holding the OLD module (with --new-dir)")
	fl.StringVar(&f.newDir, "new-dir", "", "a local directory holding the NEW module (with --old-dir)")
	fl.StringVar(&f.list, "list", "", "build every entry of a build list file")
	fl.BoolVar(&f.builtin, "builtin", false, "build every entry of the shipped build list")
	fl.BoolVar(&f.showBuiltin, "builtin-list", false, "print the shipped build list (module, versions, instance id) and build nothing")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Hour, "deadline of the whole run")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log progress to stderr")
	return c
}

func runSWEBuildGo(ctx context.Context, out, errOut io.Writer, f sweBuildGoFlags, args []string) error {
	begin := time.Now()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if f.verbose {
		f.opts.Log = slog.New(slog.NewTextHandler(errOut, nil))
	}
	local := f.oldDir != "" || f.newDir != ""
	listed := f.list != "" || f.builtin
	switch {
	case f.showBuiltin && (listed || local || len(args) > 0):
		return errors.New("--builtin-list only prints the shipped list: it takes no other list, MODULE OLD NEW or --old-dir/--new-dir (--builtin builds the list)")
	case f.showBuiltin:
		return printBuiltinList(out, f.asJSON)
	case listed && (local || len(args) > 0):
		return errors.New("--list and --builtin take no MODULE OLD NEW and no --old-dir/--new-dir")
	case f.list != "" && f.builtin:
		return errors.New("give --list FILE or --builtin, not both")
	case local && (f.oldDir == "" || f.newDir == ""):
		return errors.New("give both --old-dir and --new-dir")
	case local && len(args) != 0 && len(args) != 3:
		return fmt.Errorf("with --old-dir/--new-dir, give no arguments or MODULE OLD NEW (got %d)", len(args))
	case !local && !listed && len(args) != 3:
		return fmt.Errorf("want MODULE OLD NEW (got %d arguments), e.g. build-go github.com/Masterminds/semver/v3 v3.3.0 v3.3.1", len(args))
	}
	rep := SWEBuildGoReport{Instances: f.opts.Instances}
	var err error
	if listed {
		rep.Results, err = gobuild.BuildList(ctx, f.list, f.opts)
	} else {
		spec := gobuild.Spec{OldDir: f.oldDir, NewDir: f.newDir}
		if len(args) == 3 {
			spec.Module, spec.Old, spec.New = args[0], args[1], args[2]
		}
		var res *gobuild.Result
		if res, err = gobuild.Build(ctx, spec, f.opts); res != nil {
			rep.Results = append(rep.Results, res)
		}
	}
	if err != nil {
		for _, e := range unjoin(err) {
			rep.Errors = append(rep.Errors, e.Error())
		}
	}
	if rep.Instances == "" {
		rep.Instances = "~/.cache/nextstate/swe/instances/instances.jsonl"
	}
	rep.Seconds = time.Since(begin).Seconds()
	if f.asJSON {
		if perr := printJSON(out, rep); perr != nil {
			return perr
		}
	} else if len(rep.Results) > 0 {
		printSWEBuildGo(out, rep)
	}
	switch {
	case err == nil:
		return nil
	case listed:
		if !f.asJSON {
			for _, e := range rep.Errors {
				fmt.Fprintln(errOut, "no instance:", e)
			}
		}
		return fmt.Errorf("%d of the list's entries gave no instance", len(rep.Errors))
	}
	return err
}

// printBuiltinList prints the shipped build list: a table, or with asJSON
// the entries as --list reads them ({"module", "old", "new"}), one a line.
func printBuiltinList(out io.Writer, asJSON bool) error {
	specs, err := gobuild.ReadList(gobuild.BuiltinList)
	if err != nil {
		return fmt.Errorf("the shipped build list: %w", err)
	}
	if asJSON {
		enc := json.NewEncoder(out)
		for _, s := range specs {
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODULE\tOLD\tNEW\tINSTANCE")
	for _, s := range specs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Module, s.Old, s.New, gobuild.InstanceID(s.Module, s.New))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%d entries; build them with: nextstate swe build-go --builtin\n", len(specs))
	return err
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func printSWEBuildGo(out io.Writer, rep SWEBuildGoReport) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tF2P\tP2P\tBEFORE\tAFTER\tTOTAL\tREPO")
	for _, r := range rep.Results {
		in := r.Instance
		total := r.Timings.Total.Round(100 * time.Millisecond).String()
		if r.Reused {
			total = "reused"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%v\t%s\t%s\n", in.InstanceID, len(in.FailToPass), len(in.PassToPass),
			r.Timings.Before.Round(100*time.Millisecond), r.Timings.After.Round(100*time.Millisecond), total, in.Source)
	}
	tw.Flush()
	for _, r := range rep.Results {
		if !r.Reused {
			fmt.Fprintf(out, "%s FAIL_TO_PASS: %s\n", r.Instance.InstanceID, strings.Join(r.Instance.FailToPass, " "))
		}
	}
	fmt.Fprintf(out, "instances: %s\n", rep.Instances)
}
