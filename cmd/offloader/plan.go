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
	"github.com/tierkeeper/tierkeeper/offloader/policy"
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

type planJSON struct {
	At             time.Time          `json:"at"`
	Candidates     []candidateJSON    `json:"candidates"`
	Topics         []planTopicJSON    `json:"topics"`
	Totals         planTotalsJSON     `json:"totals"`
	RuleTopics     map[string]int     `json:"ruleTopics"`
	UnusedRules    []string           `json:"unusedRules"`
	UnusedIncludes []string           `json:"unusedIncludes"`
	BookieUsage    map[string]float64 `json:"bookieUsage,omitempty"`
	Pressured      map[string]float64 `json:"pressuredBookies,omitempty"`
	ReadErrors     map[string]string  `json:"readErrors,omitempty"`
	PressureErrors []string           `json:"pressureErrors,omitempty"`
	PolicyErrors   []string           `json:"policyErrors,omitempty"`
	BrokerErrors   []string           `json:"brokerErrors,omitempty"`
	LedgerErrors   []string           `json:"ledgerErrors,omitempty"`
	ScanSeconds    float64            `json:"scanSeconds"`
}

type candidateJSON struct {
	Order       int        `json:"order"`
	Action      string     `json:"action"`
	Topic       string     `json:"topic"`
	ML          string     `json:"managedLedger"`
	LedgerID    int64      `json:"ledgerId"`
	Entries     int64      `json:"entries"`
	Bytes       int64      `json:"bytes"`
	Rule        string     `json:"rule"`
	Trigger     string     `json:"trigger"`
	Reason      string     `json:"reason"`
	ClosedAt    time.Time  `json:"closedAt"`
	OffloadedAt *time.Time `json:"offloadedAt,omitempty"`
	BlockSize   int64      `json:"blockSize,omitempty"`
	Verify      string     `json:"verify,omitempty"`
	DeletionLag string     `json:"deletionLag"`
}

type planTopicJSON struct {
	Topic           string     `json:"topic"`
	Rule            string     `json:"rule,omitempty"`
	Excluded        bool       `json:"excluded,omitempty"`
	ExcludedWhy     string     `json:"excludedWhy,omitempty"`
	Refused         string     `json:"refused,omitempty"`
	Held            string     `json:"held,omitempty"`
	BKBytes         int64      `json:"bookkeeperBytes"`
	OffloadedBytes  int64      `json:"offloadedBytes"`
	EligibleBytes   int64      `json:"eligibleBytes"`
	EligibleLedgers int        `json:"eligibleLedgers"`
	OldestEligible  *time.Time `json:"oldestEligible,omitempty"`
	TrimBytes       int64      `json:"trimBytes"`
}

type planTotalsJSON struct {
	OffloadLedgers int   `json:"offloadLedgers"`
	OffloadBytes   int64 `json:"offloadBytes"`
	TrimLedgers    int   `json:"trimLedgers"`
	TrimBytes      int64 `json:"trimBytes"`
	Topics         int   `json:"topics"`
	Excluded       int   `json:"excludedTopics"`
	Refused        int   `json:"refusedTopics"`
	Held           int   `json:"heldTopics"`
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
	doc := buildPlanDoc(res)
	return printResult(cmd.OutOrStdout(), g, doc, func(w io.Writer) error { return printPlan(w, doc, o.limit) })
}

func buildPlanDoc(res *offloader.PlanResult) planJSON {
	r := res.Result
	doc := planJSON{At: res.At.UTC(), Candidates: []candidateJSON{}, Topics: []planTopicJSON{}, RuleTopics: r.RuleTopics,
		UnusedRules: r.UnusedRules, UnusedIncludes: r.UnusedIncludes, BookieUsage: res.BookieUsage, Pressured: r.PressuredBookies, ReadErrors: res.ReadErrors,
		PressureErrors: res.Report.PressureErrors, PolicyErrors: res.Report.PolicyErrors, BrokerErrors: res.Report.BrokerErrors, LedgerErrors: res.Report.LedgerErrors,
		ScanSeconds: res.Scan.Took.Seconds()}
	if doc.UnusedRules == nil {
		doc.UnusedRules = []string{}
	}
	if doc.UnusedIncludes == nil {
		doc.UnusedIncludes = []string{}
	}
	for i, c := range r.Candidates {
		cj := candidateJSON{Order: i + 1, Action: c.Action.String(), Topic: c.Topic, ML: c.ML, LedgerID: c.LedgerID,
			Entries: c.Entries, Bytes: c.Size, Rule: c.Rule, Trigger: string(c.Trigger), Reason: c.Reason,
			ClosedAt: c.ClosedAt.UTC(), BlockSize: c.Settings.BlockSize, Verify: c.Settings.Verify,
			DeletionLag: c.Settings.DeletionLag.String()}
		if !c.OffloadedAt.IsZero() {
			t := c.OffloadedAt.UTC()
			cj.OffloadedAt = &t
		}
		doc.Candidates = append(doc.Candidates, cj)
		if c.Action == policy.ActionTrim {
			doc.Totals.TrimLedgers++
			doc.Totals.TrimBytes += c.Size
		} else {
			doc.Totals.OffloadLedgers++
			doc.Totals.OffloadBytes += c.Size
		}
	}
	for _, t := range r.Topics {
		tj := planTopicJSON{Topic: t.Topic, Rule: t.Rule, Excluded: t.Excluded, ExcludedWhy: t.ExcludedWhy, Refused: t.Refused, Held: t.Held,
			BKBytes: t.BKBytes, OffloadedBytes: t.OffloadedBytes,
			EligibleBytes: t.EligibleBytes, EligibleLedgers: t.EligibleLedgers, TrimBytes: t.TrimBytes}
		if !t.OldestEligible.IsZero() {
			o := t.OldestEligible.UTC()
			tj.OldestEligible = &o
		}
		doc.Topics = append(doc.Topics, tj)
		doc.Totals.Topics++
		if t.Excluded {
			doc.Totals.Excluded++
		}
		if t.Refused != "" {
			doc.Totals.Refused++
		}
		if t.Held != "" {
			doc.Totals.Held++
		}
	}
	return doc
}

func printPlan(w io.Writer, doc planJSON, limit int) error {
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
	for _, r := range doc.UnusedRules {
		fmt.Fprintf(w, "warning: rule %q matches no topic\n", r)
	}
	for _, p := range doc.UnusedIncludes {
		fmt.Fprintf(w, "warning: policy.include %q matches no topic\n", p)
	}
	for _, e := range doc.PressureErrors {
		fmt.Fprintf(w, "warning: pressure: %s\n", e)
	}
	for _, e := range doc.PolicyErrors {
		fmt.Fprintf(w, "warning: namespace policies: %s\n", e)
	}
	for _, e := range doc.BrokerErrors {
		fmt.Fprintf(w, "warning: %s (every topic is left to the broker meanwhile)\n", e)
	}
	for _, e := range doc.LedgerErrors {
		fmt.Fprintf(w, "warning: ledger metadata: %s\n", e)
	}
	ml := make([]string, 0, len(doc.ReadErrors))
	for n := range doc.ReadErrors {
		ml = append(ml, n)
	}
	sort.Strings(ml)
	for _, n := range ml {
		fmt.Fprintf(w, "warning: managed ledger %s not read: %s\n", n, doc.ReadErrors[n])
	}
	return nil
}
