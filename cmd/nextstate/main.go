// Command nextstate is the one binary of the nextstate gym: it serves
// environments to agents (serve) and a model (serve-model), lists env kinds
// and tasks and validates task folders (envs, tasks), builds sandbox images
// (image), writes trajectories out (export), measures the server, the
// sandboxes and the model (bench), shows the whole loop on built-in envs
// (demo), and benchmarks models or oracles on suites (run). Env kinds and
// sandbox backends are compiled in by the blank imports below.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	_ "github.com/nextstate-rl/nextstate/envs/gui/desktop"
	_ "github.com/nextstate-rl/nextstate/envs/gui/web"
	_ "github.com/nextstate-rl/nextstate/envs/swe"
	_ "github.com/nextstate-rl/nextstate/envs/terminal"
	_ "github.com/nextstate-rl/nextstate/envs/toolcall/bfcl"
	_ "github.com/nextstate-rl/nextstate/envs/toolcall/code"
	_ "github.com/nextstate-rl/nextstate/envs/toolcall/retail"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs"
	"github.com/nextstate-rl/nextstate/server"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "nextstate:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "nextstate",
		Short:         "An environment gym for training and benchmarking LLM agents",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServe(), newServeModel(), newEnvs(), newTasks(), newExport(), newBench(), newDemo(), newRun(), newSWE(), newProxy(), newImage(), newVersion())
	return root
}

func newVersion() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]string{"version": server.Version, "protocol": "nextstate.v1"})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "nextstate %s (protocol nextstate.v1)\n", server.Version)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
