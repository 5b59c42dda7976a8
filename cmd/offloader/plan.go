package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
)

func init() { addCommand(newPlanCmd) }

type planOptions struct {
	config configOption
	limit  int
}

func newPlanCmd(g *globalOptions) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan --config FILE",
		Short: "Dry run of the policy: what the service would offload or trim next, why, and how many bytes",
		Long: strings.TrimSpace(`
Read every managed ledger once (and, when configured, the bookies' disk usage
and Pulsar's namespace offload policies), apply the config's policy and print
what the service would do next, in its work order: each ledger with the
action (offload, or trim of the BookKeeper copy), the rule that chose it, the
trigger and the reason, and its size; then the totals per topic, the topics
left to the broker's own offloader (an offload threshold >= 0 in the broker's
configuration, the namespace's or the topic's offload policies, or an
unfinished attempt tierkeeper did not record: running both offloaders on a
topic loses data) and those waiting for scheduler.min_reload_interval, with
the reason for each; and warnings
(rules that match no topic, managed ledgers that cannot be read, bookies
whose usage cannot be read). Nothing is written anywhere.`),
		Example: `  offloader plan --config /etc/tierkeeper/offloader.yaml
  offloader plan --config configs/offloader.yaml --limit 0 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, cmd) },
	}
	f := cmd.Flags()
	o.config.addFlag(f)
	f.IntVar(&o.limit, "limit", 50, "show at most this many candidates in text output (0: all)")
	return cmd
}

func (o *planOptions) run(ctx context.Context, g *globalOptions, cmd *cobra.Command) error {
	if o.limit < 0 {
		return fmt.Errorf("--limit %d: want 0 (all) or more", o.limit)
	}
	cfg, err := o.config.load()
	if err != nil {
		return err
	}
	res, err := offloader.Plan(ctx, cfg, offloader.PlanOptions{Logger: g.logger(cmd.ErrOrStderr())})
	if err != nil {
		return err
	}
	doc := res.Doc()
	return printResult(cmd.OutOrStdout(), g, doc, func(w io.Writer) error { return printPlan(w, doc, o.limit) })
}

func printPlan(w io.Writer, doc offloader.PlanReport, limit int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tACTION\tTOPIC\tLEDGER\tSIZE\tAGE\tRULE\tTRIGGER\tWHY")
	for i, c := range doc.Candidates {
		if limit > 0 && i >= limit {
			break
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", c.Order, c.Action, c.Topic, c.LedgerID,
			units.HumanBytes(c.Bytes), doc.At.Sub(c.ClosedAt).Round(time.Second), c.Rule, c.Trigger, c.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if limit > 0 && len(doc.Candidates) > limit {
		fmt.Fprintf(w, "... %d more (--limit 0 shows all)\n", len(doc.Candidates)-limit)
	}
	t := doc.Totals
	fmt.Fprintf(w, "\nnext: offload %d ledgers (%s), trim %d BookKeeper copies (%s); %d topics, %d excluded, %d left to the broker's offloader, %d waiting for the reload bound; scan took %.1fs\n",
		t.OffloadLedgers, units.HumanBytes(t.OffloadBytes), t.TrimLedgers, units.HumanBytes(t.TrimBytes), t.Topics, t.Excluded, t.Refused, t.Held, doc.ScanSeconds)
	for _, tp := range doc.Topics {
		switch {
		case tp.Refused != "":
			fmt.Fprintf(w, "refused: %s: %s\n", tp.Topic, tp.Refused)
		case tp.Held != "":
			fmt.Fprintf(w, "waits: %s: %s\n", tp.Topic, tp.Held)
		}
	}
	names := make([]string, 0, len(doc.RuleTopics))
	for n := range doc.RuleTopics {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, doc.RuleTopics[n]))
	}
	fmt.Fprintf(w, "topics per rule: %s\n", strings.Join(parts, ", "))
	if len(doc.Pressured) > 0 {
		var ps []string
		for b, u := range doc.Pressured {
			ps = append(ps, fmt.Sprintf("%s %.0f%%", b, u*100))
		}
		sort.Strings(ps)
		fmt.Fprintf(w, "bookies under pressure: %s\n", strings.Join(ps, ", "))
	}
	printWarnings(w, doc.Warnings)
	return nil
}
