package main

import "github.com/spf13/cobra"

func newSWE() *cobra.Command {
	c := &cobra.Command{
		Use:   "swe",
		Short: "SWE-bench-format instances: build Go instances from releases, evaluate predictions",
		Long: `Work with SWE-bench-format instances (package envs/swe): build Go instances offline
from two tagged releases of a module (build-go), and evaluate model patches in fresh
sandboxes by the instances' FAIL_TO_PASS and PASS_TO_PASS tests (eval).`,
		Args: cobra.NoArgs,
	}
	c.AddCommand(newSWEEval(), newSWEBuildGo())
	return c
}
