// Command nextstate is the one binary of the nextstate gym. Its commands:
//
//	serve        serve envs to agents over WebSocket and HTTP (and, with
//	             --proxy-upstream, the learning proxy beside them)
//	serve-model  serve a local Qwen3 model over an OpenAI-compatible API
//	serve-trainer  serve the training API (forward_backward, optim_step,
//	             weight versions, sample) and the newest version's OpenAI API
//	sft          supervised fine-tuning on demonstrations (a warm start),
//	             or a model made from scratch with a pruned tokenizer
//	train        train a policy by RL on the gym's envs: serve it, play
//	             episodes, judge them, update it, all at once; resumable.
//	             With --proxy: learn from live conversations as they come
//	train-report rewrite train runs' reports and compare them
//	envs         list the env kinds compiled in
//	tasks        list built-in tasks and suites; validate terminal task folders
//	export       write trajectories out of the store
//	bench        measure the server (ws), sandboxes, the model, BFCL
//	             scoring and the GUI kinds
//	demo         play every built-in task with its oracle, over a server of
//	             its own, and report
//	run          benchmark a model, or the tasks' oracles, on a suite
//	swe          build Go SWE instances from releases; evaluate predictions
//	proxy        an OpenAI-compatible proxy that learns from conversations
//	users        simulated users: their chat corpus, sessions against the
//	             proxy, the comparison of live runs
//	image        build sandbox images on Docker engines, with no registry
//	version      print the version and the protocol's (wire.Version)
//
// `nextstate help COMMAND` says more. Env kinds and sandbox backends are
// compiled in by the blank imports below.
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
	_ "github.com/nextstate-rl/nextstate/envs/toolcall/telecom"
	_ "github.com/nextstate-rl/nextstate/gym/testenvs"
	"github.com/nextstate-rl/nextstate/server"
	"github.com/nextstate-rl/nextstate/wire"
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
	root.AddCommand(newServe(), newServeModel(), newServeTrainer(), newTrain(), newTrainReport(), newSFT(), newEnvs(), newTasks(), newExport(), newBench(), newDemo(), newRun(), newSWE(), newProxy(), newUsers(), newImage(), newVersion())
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
				return printJSON(cmd.OutOrStdout(), map[string]string{"version": server.Version, "protocol": wire.Version})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "nextstate %s (protocol %s)\n", server.Version, wire.Version)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
