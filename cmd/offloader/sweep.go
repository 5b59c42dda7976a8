package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
)

func init() { addCommand(newSweepCmd) }

type sweepOptions struct {
	config configOption
	dryRun bool
}

func newSweepCmd(g *globalOptions) *cobra.Command {
	o := &sweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep --config FILE [--dry-run]",
		Short: "Remove orphaned offload objects and incomplete multipart uploads from the store (once)",
		Long: strings.TrimSpace(`
Sweep the configured store once, as the service does every sweeper.interval:
objects that no managed ledger references (the ledger is gone, or it records
another attempt) and incomplete multipart uploads are removed once older
than sweeper.grace. An object or upload whose attempt a managed ledger
records (prepared or complete) is never touched, nor is any key that is not
an offload object. The store is listed first and the managed ledgers read
after, so an attempt prepared meanwhile is always seen. If any managed
ledger cannot be read, nothing is deleted; nor when no managed ledger is
found at all while there is something to remove (a wrong zookeeper.servers
or zookeeper.ml_chroot would make every object look orphaned): the sweep
then fails. The bucket must belong to this Pulsar cluster alone. --dry-run
(or sweeper.dry_run) only counts.`),
		Example: `  offloader sweep --config /etc/tierkeeper/offloader.yaml --dry-run
  offloader sweep --config configs/offloader.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, cmd) },
	}
	o.config.addFlag(cmd.Flags())
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "count what would be removed, remove nothing")
	return cmd
}

func (o *sweepOptions) run(ctx context.Context, g *globalOptions, cmd *cobra.Command) error {
	cfg, err := o.config.load()
	if err != nil {
		return err
	}
	res, serr := offloader.Sweep(ctx, cfg, o.dryRun, g.logger(cmd.ErrOrStderr()))
	out := cmd.OutOrStdout()
	if g.json() {
		if err := writeJSON(out, res); err != nil {
			return err
		}
		return serr
	}
	verb := "removed"
	if res.DryRun {
		verb = "would remove"
	}
	for _, it := range res.Items {
		what := it.Key
		if it.UploadID != "" {
			what += " (upload " + it.UploadID + ")"
		}
		status := verb
		if it.Error != "" {
			status = "FAILED: " + it.Error
		}
		fmt.Fprintf(out, "%-12s %s  %s\n", it.Reason, what, status)
	}
	fmt.Fprintf(out, "%d objects and %d incomplete uploads listed; %s %s (%s); kept %s; %d errors\n",
		res.Objects, res.Uploads, verb, counts(res.Removed), units.HumanBytes(res.RemovedBytes), counts(res.Kept), res.Errors)
	return serr
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "nothing"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
