package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/gym"
	"github.com/nextstate-rl/nextstate/store"
)

func newExport() *cobra.Command {
	var dataDir, format, out string
	var withVerifier bool
	var f store.Filter
	var types []string
	c := &cobra.Command{
		Use:   "export",
		Short: "Write trajectories out of the store",
		Long: `Write the store's trajectories as JSON Lines: --format jsonl gives one line per
episode (steps with actions, next states, rewards and late rewards); --format events
gives every raw event; --format samples gives every training sample (one per trained
turn, slime's Sample fields, with its "offset"; --after-seq is then an offset). See
docs/formats.md. The store may be in use by a running server.

The trajectories and events are written as an agent may see them: without the
verifier's details (a verified step's info.verifier, the info of the verifier's
reward events), which hold expected answers and hidden tests. An agent trained on
an export that had them could learn the answers instead of the task. Trainers and
analyses that need them pass --with-verifier; such an export must not reach the
agent. Rewards are in both.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, t := range types {
				f.Types = append(f.Types, gym.EventType(t))
			}
			f.Public = !withVerifier
			st, err := store.OpenReadOnly(dataDir)
			if err != nil {
				return err
			}
			defer st.Close()
			w := cmd.OutOrStdout()
			if out != "" && out != "-" {
				fh, err := os.Create(out)
				if err != nil {
					return err
				}
				defer fh.Close()
				w = fh
			}
			bw := bufio.NewWriterSize(w, 1<<16)
			if err := st.Export(cmd.Context(), bw, f, format); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			return bw.Flush()
		},
	}
	fl := c.Flags()
	fl.StringVar(&dataDir, "data", defaultDataDir(), "store directory")
	fl.StringVar(&format, "format", "jsonl", "jsonl (one episode a line), events (one event a line) or samples (one training sample a line)")
	fl.StringVarP(&out, "output", "o", "-", "output file")
	fl.StringVar(&f.Run, "run", "", "only this run")
	fl.StringVar(&f.Env, "env", "", "only this env kind")
	fl.StringVar(&f.Session, "session", "", "only this session")
	fl.StringVar(&f.Task, "task", "", "only this task")
	fl.Int64Var(&f.AfterSeq, "after-seq", 0, "only events after this seq (samples: after this offset)")
	fl.StringSliceVar(&types, "type", nil, "only these event types (events format)")
	fl.BoolVar(&f.ReadBlobs, "inline-blobs", false, "put blob contents back inline")
	fl.BoolVar(&withVerifier, "with-verifier", false, "keep the verifier's details (info.verifier, the verifier's reward info): for trainers, never for agents")
	return c
}
