package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/envs/toolcall/bfcl"
)

type benchBFCLFlags struct {
	data, answers    string
	asJSON, failures bool
}

func newBenchBFCL() *cobra.Command {
	var f benchBFCLFlags
	c := &cobra.Command{
		Use:   "bfcl",
		Short: "Score BFCL answers per category with BFCL's checkers",
		Long: `Load a BFCL data folder (BFCL_v4_<category>.json files and possible_answer/) and
score a file of model answers with BFCL's AST checker, printing the accuracy of
each category, overall, and the failure reasons counted. Answers of multi_turn_base
cases are not read (play them with nextstate run: they are bfcl-multiturn-v1
tasks); the other multi-turn and agentic categories are listed as skipped.

--answers is JSON Lines, one {"id": ..., "result": ...} per case: the result as
BFCL writes it (a list of {"function name": arguments}, the arguments an object or
a JSON string), as OpenAI tool calls ([{"function": {"name", "arguments"}}]), or as a
JSON string of either; any other string is a message with no calls. Answers for ids
the data lacks are counted and listed, and cases without an answer count as wrong.
A category with no answer at all is "not scored": listed with the reason and left
out of the overall accuracy and the category mean.

Without --answers it scores the ground truth's own answers (each parameter's first
acceptable value; for multi-turn cases, the ground truth's calls played through
BFCL's multi-turn checker on the Go classes), a self-check of the checkers and the
data, and reports their speed in cases/s. live_relevance has no ground truth in BFCL's data
(any call passes), so the self-check reports it as not scored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchBFCL(cmd.OutOrStdout(), f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.data, "data", "", "BFCL data folder: BFCL_v4_<category>.json files and possible_answer/ (required)")
	fl.StringVar(&f.answers, "answers", "", "JSON Lines of model answers {\"id\", \"result\"}; empty: score the ground truth's own answers")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	fl.BoolVar(&f.failures, "failures", false, "list every failed case with its reason")
	return c
}

func runBenchBFCL(out io.Writer, f benchBFCLFlags) error {
	if f.data == "" {
		return errors.New("--data is required: the BFCL data folder (BFCL_v4_<category>.json files and possible_answer/)")
	}
	ds, err := bfcl.Load(f.data)
	if err != nil {
		return err
	}
	var rep *bfcl.Report
	if f.answers == "" {
		rep = bfcl.SelfCheck(ds)
		rep.Source = "ground truth (first acceptable values)"
	} else {
		fh, err := os.Open(f.answers)
		if err != nil {
			return fmt.Errorf("--answers: %w", err)
		}
		answers, err := bfcl.ReadAnswers(fh)
		fh.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f.answers, err)
		}
		rep = bfcl.Score(ds, answers, f.answers)
	}
	rep.Data = f.data
	if f.asJSON {
		if !f.failures {
			for i := range rep.Categories {
				rep.Categories[i].Failures = nil
			}
		}
		return printJSON(out, rep)
	}
	return rep.WriteText(out, f.failures)
}
