package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
)

func init() { addCommand(newScrubCmd) }

type scrubOptions struct {
	config            configOption
	all               bool
	deep              bool
	dryRun            bool
	noReoffload       bool
	trimWithoutReload bool
	rate              float64
	verbose           bool
}

func newScrubCmd(g *globalOptions) *cobra.Command {
	o := &scrubOptions{}
	cmd := &cobra.Command{
		Use:   "scrub --config FILE [--deep] [--dry-run] TOPIC...|--all",
		Short: "Check that every offloaded ledger's objects are whole; repair those BookKeeper still has",
		Long: strings.TrimSpace(`
Check the committed (offloaded) ledgers of the named topics, or of every
topic with --all, as the service does every scrub.interval: both objects
exist (a HEAD of the data object, a GET of the index: two requests per
ledger), the index parses and describes the managed ledger's entries and
bytes, the data object is as long as the index says. --deep also compares
every entry with BookKeeper while it still has the ledger (or decodes the
whole data object once it does not).

Verdicts: ok; foreign (another bucket: not checked); repair (objects missing
or wrong, BookKeeper still has the ledger); lost (objects missing or wrong
and the BookKeeper ledger gone: no readable copy, nothing is written);
mismatch (objects wrong, BookKeeper's ledger differs from the managed
ledger: not repaired); trim-leftover (bookkeeperDeleted set but the
BookKeeper ledger still there); unknown (the store or ZooKeeper did not
answer).

Unless --dry-run, under each topic's lease (a topic a service replica holds
is only checked): a ledger to repair gets its offload context cleared by a
compare-and-set naming its attempt, the topic is unloaded (admin.url) so
brokers read BookKeeper again, and the ledger is offloaded again at once
(--no-reoffload: left to the service's policy); an interrupted BookKeeper
deletion is finished after the same object checks as every deletion (needs
admin.url, or --trim-without-reload). A repair never runs while the
BookKeeper copy is missing. --dry-run reads only: no lease, no write, no
deletion.

Exit status 1 when a ledger is lost, mismatched, unchecked or still to
repair. The objects of a repaired attempt are left for the sweeper.`),
		Example: `  offloader scrub --config /etc/tierkeeper/offloader.yaml --all --dry-run
  offloader scrub --config offloader.yaml persistent://public/default/orders --deep
  offloader scrub --config offloader.yaml --all -o json`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), g, cmd, args) },
	}
	o.config.addFlag(cmd.Flags())
	f := cmd.Flags()
	f.BoolVar(&o.all, "all", false, "every topic with an offloaded ledger")
	f.BoolVar(&o.deep, "deep", false, "also compare every entry with BookKeeper (reads whole ledgers)")
	f.BoolVar(&o.dryRun, "dry-run", false, "check and report only: write and delete nothing")
	f.BoolVar(&o.noReoffload, "no-reoffload", false, "leave repaired ledgers on BookKeeper for the service's policy")
	f.BoolVar(&o.trimWithoutReload, "trim-without-reload", false, "finish interrupted BookKeeper deletions without admin.url (only when no broker has the topics loaded)")
	f.Float64Var(&o.rate, "ledgers-per-second", 0, "bound on ledgers checked per second (default scrub.ledgers_per_second)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "list every ledger, not only those that are not ok")
	return cmd
}

func (o *scrubOptions) run(ctx context.Context, g *globalOptions, cmd *cobra.Command, args []string) error {
	switch {
	case o.all && len(args) > 0:
		return errors.New("name topics or give --all, not both")
	case !o.all && len(args) == 0:
		return errors.New("name at least one topic, or give --all")
	case o.rate < 0:
		return fmt.Errorf("--ledgers-per-second %v: want a positive rate", o.rate)
	}
	cfg, err := o.config.load()
	if err != nil {
		return err
	}
	rep, serr := offloader.Scrub(ctx, cfg, offloader.ScrubOptions{Topics: args, All: o.all, Deep: o.deep, DryRun: o.dryRun,
		NoReoffload: o.noReoffload, TrimWithoutReload: o.trimWithoutReload, LedgersPerSecond: o.rate, Verbose: o.verbose},
		g.logger(cmd.ErrOrStderr()))
	if rep == nil {
		return serr
	}
	out := cmd.OutOrStdout()
	if g.json() {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
		return serr
	}
	for _, f := range rep.Findings {
		line := fmt.Sprintf("%-13s %s ledger %d (%s)", f.Verdict, f.ML, f.LedgerID, f.UUID)
		if f.Detail != "" {
			line += ": " + f.Detail
		}
		if f.Action != "" {
			line += " [" + f.Action + "]"
		}
		fmt.Fprintln(out, line)
	}
	for _, e := range rep.Errors {
		fmt.Fprintln(out, "error: "+e)
	}
	mode := ""
	if rep.DryRun {
		mode = " (dry run)"
	}
	fmt.Fprintf(out, "%d topics, %d offloaded ledgers checked in bucket %s%s: %s; %d repaired, %d offloaded again, %d BookKeeper deletions finished; %d requests (%.1f per ledger), %.1f objects/s\n",
		rep.Topics, rep.Ledgers, rep.Bucket, mode, verdictCounts(rep.Verdicts), rep.Repaired, rep.Reoffloaded, rep.Trimmed,
		rep.Requests, rep.RequestsPerLedger, rep.ObjectsPerSecond)
	if n := rep.Verdicts[scrub.VerdictLost]; n > 0 {
		fmt.Fprintf(out, "LOST: %d offloaded ledgers have no readable copy (objects missing or wrong, BookKeeper ledger gone)\n", n)
	}
	return serr
}

func verdictCounts(m map[scrub.Verdict]int) string {
	if len(m) == 0 {
		return "nothing to check"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
