package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/diskbench"
)

func newSweepCmd() *cobra.Command {
	var (
		c          commonFlags
		timeBudget time.Duration
		workloads  string
	)
	cmd := &cobra.Command{
		Use:   "sweep --dir DIR",
		Short: "All workloads within one time and byte budget (the bookie agent's run)",
		Long: `Runs the default plan — journal at 1, 2, 4 writers × 4k, 64k; entry log at
1 MiB; random reads of 4k and 1m at depth 1 and 16 — within --time-budget
and --max-bytes. Each point gets an equal slice of the time left; points that
no longer fit are skipped and listed as warnings.`,
		Example: "  diskbench sweep --dir /mnt/ssd0/tmp --time-budget 60s --svg sweep.svg",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.validateDirOutput(); err != nil {
				return err
			}
			if timeBudget <= 0 {
				return fmt.Errorf("%w: --time-budget must be positive", diskbench.ErrInvalidOptions)
			}
			o, bar, err := c.options(cmd)
			defer c.closeOutputs()
			if err != nil {
				return err
			}
			plan := diskbench.DefaultPlan(c.dir)
			plan.Options = o // Duration 0: derived from the time budget
			plan.TimeBudget = timeBudget
			var ws []diskbench.Workload
			for _, w := range strings.Split(workloads, ",") {
				if w = strings.TrimSpace(w); w == "" {
					continue
				}
				wl, ok := diskbench.ParseWorkload(w)
				if !ok {
					return fmt.Errorf("%w: --workloads %q (want journal, entrylog, randread)", diskbench.ErrInvalidOptions, w)
				}
				ws = append(ws, wl)
			}
			plan.Only(ws...)
			rep, err := diskbench.Sweep(cmd.Context(), plan)
			return c.report(cmd, bar, rep, err)
		},
	}
	c.addFlags(cmd.Flags(), 0)
	cmd.Flags().Lookup("duration").Usage = "measured time of each point (default: derived from --time-budget)"
	cmd.Flags().DurationVar(&timeBudget, "time-budget", diskbench.DefaultTimeBudget, "wall-time budget of the whole sweep")
	cmd.Flags().StringVar(&workloads, "workloads", "journal,entrylog,randread", "workloads to run")
	return cmd
}
