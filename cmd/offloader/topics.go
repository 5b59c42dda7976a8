package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger/status"
)

func init() { addCommand(newTopicsCmd) }

type topicsOptions struct {
	namespace   string
	topics      []string
	chroot      string
	summary     bool
	concurrency int
}

func newTopicsCmd(g *globalOptions) *cobra.Command {
	o := &topicsOptions{}
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "List Pulsar managed ledgers with their ledgers, sizes, ages and offload state",
		Long: strings.TrimSpace(`
List the managed ledgers (persistent topics and their partitions) stored
under /managed-ledgers in ZooKeeper, and each one's BookKeeper ledgers:
entries, size, age (since the ledger was closed) and offload state:

  open                  the last ledger; being written, never offloaded
  bookkeeper            closed, data only in BookKeeper
  offloading            an offload attempt is recorded but not complete
  offloaded             in the object store; BookKeeper copy still present
  offloaded-bk-deleted  in the object store; BookKeeper ledger deleted

Compressed metadata (managedLedgerInfoCompressionType) is read too. The
--zk root suffix names the BookKeeper ledgers root and is not used here;
give --ml-chroot when Pulsar's metadataStoreUrl has a chroot. Nothing is
written. Managed ledgers that cannot be read are listed with their error
and make the command exit 1 after printing the rest.`),
		Example: `  offloader topics --zk 127.0.0.1:2181
  offloader topics --zk zk1:2181,zk2:2181 --namespace public/default --summary
  offloader topics --zk 127.0.0.1:2181 --topic persistent://public/default/orders -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.namespace, "namespace", "", "only this `namespace` (tenant/ns, or tenant/cluster/ns for v1)")
	f.StringSliceVar(&o.topics, "topic", nil, "only these `topics` (repeatable; a partitioned topic means all its partitions)")
	f.StringVar(&o.chroot, "ml-chroot", "", "`path` prefix of Pulsar's metadata store in ZooKeeper (chroot of metadataStoreUrl)")
	f.BoolVar(&o.summary, "summary", false, "one row per managed ledger instead of one per ledger")
	f.IntVar(&o.concurrency, "concurrency", 8, "managed ledgers read in parallel")
	return cmd
}

func (o *topicsOptions) run(ctx context.Context, g *globalOptions, cmd *cobra.Command) error {
	if o.concurrency < 1 {
		return fmt.Errorf("--concurrency %d: want at least 1", o.concurrency)
	}
	if o.namespace != "" && len(o.topics) > 0 {
		return errors.New("--namespace and --topic are exclusive")
	}
	log := g.logger(cmd.ErrOrStderr())
	conn, _, err := g.connectZK(ctx, log)
	if err != nil {
		return err
	}
	defer conn.Close()
	store := mledger.New(conn, &mledger.Options{Chroot: o.chroot, ListConcurrency: o.concurrency, Logger: log})

	var progress *topicsProgress
	doc, err := status.Read(ctx, store, status.Selector{Namespace: o.namespace, Topics: o.topics}, status.ReadOptions{
		Chroot: o.chroot,
		Progress: func(done, total int) {
			if progress == nil {
				progress = newTopicsProgress(cmd.ErrOrStderr(), !g.json(), total)
			}
			progress.update(done)
		},
	})
	if progress != nil {
		progress.done()
	}
	if errors.Is(err, status.ErrBadSelector) {
		return fmt.Errorf("--topic: %w", err)
	}
	if err != nil {
		return conn.Failed(err)
	}
	if err := printResult(cmd.OutOrStdout(), g, doc, func(w io.Writer) error { return printTopics(w, doc, o.summary) }); err != nil {
		return err
	}
	if n := len(doc.Errors); n > 0 {
		return fmt.Errorf("%d of %d managed ledgers could not be read", n, len(doc.Errors)+len(doc.ManagedLedgers))
	}
	return nil
}

func printTopics(w io.Writer, doc status.Report, summary bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if summary {
		fmt.Fprintln(tw, "TOPIC\tLEDGERS\tENTRIES\tSIZE\tOFFLOADED\tOLDEST\tCODEC\t")
		for _, m := range doc.ManagedLedgers {
			sum := m.Summary()
			oldest := "-"
			if sum.OldestAgeSeconds != nil {
				oldest = topicsAge(*sum.OldestAgeSeconds)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", m.TopicOrName(), sum.Ledgers, sum.Entries,
				topicsBytes(sum.Bytes), topicsBytes(sum.OffloadedBytes), oldest, m.Codec)
		}
	} else {
		fmt.Fprintln(tw, "TOPIC\tLEDGER\tENTRIES\tSIZE\tAGE\tSTATE\tATTEMPT\t")
		for _, m := range doc.ManagedLedgers {
			if len(m.Ledgers) == 0 {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t(no ledgers)\t\t\n", m.TopicOrName())
			}
			for _, l := range m.Ledgers {
				age := "-"
				if l.AgeSeconds != nil {
					age = topicsAge(*l.AgeSeconds)
				}
				attempt := ""
				if l.Offload != nil {
					attempt = l.Offload.UUID
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", m.TopicOrName(), l.LedgerID, l.Entries,
					topicsBytes(l.Size), age, l.State, attempt)
			}
		}
	}
	for _, e := range doc.Errors {
		fmt.Fprintf(tw, "%s\t\t\t\t\terror: %s\t\t\n", e.Name, e.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	t := doc.Totals
	_, err := fmt.Fprintf(w, "\n%d managed ledgers, %d ledgers, %d entries, %s; offloaded %s, only in BookKeeper %s\n",
		t.ManagedLedgers, t.Ledgers, t.Entries, topicsBytes(t.Bytes), topicsBytes(t.OffloadedBytes()), topicsBytes(t.BookKeeperOnlyBytes()))
	return err
}

func topicsBytes(n int64) string { return units.HumanBytes(n) }

func topicsAge(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < 0:
		return "-" + topicsAge(-sec)
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// topicsProgress prints "read N/M managed ledgers" to a terminal stderr.
type topicsProgress struct {
	line  *cli.Line
	total int
	start time.Time
}

func newTopicsProgress(w io.Writer, want bool, total int) *topicsProgress {
	return &topicsProgress{line: cli.NewLine(w, want && total > 0), total: total, start: time.Now()}
}

func (p *topicsProgress) update(done int) {
	if now := time.Now(); p.line.Due(now) || (p.line.On() && done >= p.total) {
		p.line.Draw(p.text(done, now))
	}
}

func (p *topicsProgress) text(done int, now time.Time) string {
	rate := cli.Rate(float64(done), max(now.Sub(p.start), time.Millisecond))
	return fmt.Sprintf("read %d/%d managed ledgers (%.0f/s, ETA %s)", done, p.total, rate, cli.ETA(float64(p.total-done), rate))
}

func (p *topicsProgress) done() { p.line.Clear() }
