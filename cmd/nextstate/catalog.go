package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nextstate-rl/nextstate/gym"
)

func newEnvs() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "envs",
		Short: "List the env kinds compiled into this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			type row struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Tasks       int    `json:"tasks"`
			}
			var rows []row
			for _, n := range gym.Kinds() {
				s, _ := gym.Lookup(n)
				rows = append(rows, row{n, s.Description, len(s.Tasks)})
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KIND\tTASKS\tDESCRIPTION")
			for _, r := range rows {
				fmt.Fprintf(w, "%s\t%d\t%s\n", r.Name, r.Tasks, r.Description)
			}
			return w.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newTasks() *cobra.Command {
	c := &cobra.Command{Use: "tasks", Short: "Work with tasks and suites"}
	var asJSON bool
	var env, split string
	var paths []string
	list := &cobra.Command{
		Use:   "list [SUITE_PATH...]",
		Short: "List built-in tasks and those of suite files or directories",
		Long: `List tasks: the built-in tasks of every env kind, and those loaded from each
SUITE_PATH (a .json/.yaml/.jsonl file or a directory; see docs/formats.md).
Loading validates every task, so this doubles as a check of task files.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cat := gym.NewCatalog()
			for _, p := range append(paths, args...) {
				s, err := gym.LoadSuite(p)
				if err != nil {
					return err
				}
				if err := cat.AddSuite(s); err != nil {
					return err
				}
			}
			if env != "" {
				if _, err := gym.Lookup(env); err != nil {
					return err
				}
			}
			tasks := cat.List(env, split)
			if asJSON {
				pub := make([]gym.Task, len(tasks))
				for i, t := range tasks {
					pub[i] = t.Public()
				}
				return printJSON(cmd.OutOrStdout(), pub)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TASK\tENV\tSPLIT\tMAX STEPS\tINSTRUCTION")
			for _, t := range tasks {
				sp := t.Split
				if sp == "" {
					sp = "train"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", t.ID, t.Env, sp, t.Limits.MaxSteps, clip(t.Instruction, 60))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "%d tasks\n", len(tasks))
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON (verifier inputs removed)")
	list.Flags().StringVar(&env, "env", "", "only this env kind")
	list.Flags().StringVar(&split, "split", "", "only this split (train, test, ...)")
	list.Flags().StringSliceVar(&paths, "tasks", nil, "suite files or directories (also as arguments)")
	c.AddCommand(list, newTasksValidate())
	return c
}

// clip shortens s to n runes on one line, for tables.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
