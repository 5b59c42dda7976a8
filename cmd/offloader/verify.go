package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
)

func init() { addCommand(newVerifyCmd) }

type verifyOptions struct {
	env    envOptions
	ledger int64
	sample bool
}

func newVerifyCmd(g *globalOptions) *cobra.Command {
	o := &verifyOptions{ledger: -1}
	o.env.needBK, o.env.needBlob = true, true
	cmd := &cobra.Command{
		Use:   "verify --store FILE TOPIC [--ledger N] [--sample]",
		Short: "Check a topic's offloaded ledgers: objects against BookKeeper entry by entry, or against their index",
		Long: strings.TrimSpace(`
Check every ledger of a topic that has an offload attempt recorded (every
partition of a partitioned topic), reading the objects from --store:

  - while the BookKeeper copy exists: object sizes, metadata, index and
    every block header, then every entry read from the objects compared
    with the same entry read from the bookies (CRC-32C and length);
    --sample compares only three windows of about one block each, as the
    offload's own verify step does for large ledgers;
  - once the BookKeeper copy is deleted: the data object decoded in full
    against its index (every block header, record and padding; entry count
    and total length as the index metadata says).

Nothing is written. Exit status 1 when any ledger fails.`),
		Example: `  offloader verify --zk zk1:2181 --store s3.yaml persistent://public/default/orders
  offloader verify --zk zk1:2181 --store s3.yaml orders --ledger 4711 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, g, args[0]) },
	}
	f := cmd.Flags()
	o.env.addFlags(f, false)
	f.Int64Var(&o.ledger, "ledger", -1, "only this ledger `id`")
	f.BoolVar(&o.sample, "sample", false, "compare three windows of entries instead of all")
	return cmd
}

func (o *verifyOptions) run(cmd *cobra.Command, g *globalOptions, topic string) error {
	ctx := cmd.Context()
	e, err := openEnv(cmd, g, &o.env)
	if err != nil {
		return err
	}
	defer e.close()
	sel := offloader.VerifySelection{Ledger: o.ledger, Sample: o.sample}
	ledgers, total, err := offloader.VerifyLedgers(ctx, e.peers, topic, sel)
	if err != nil {
		return err
	}
	bar := newOffloadProgress(cmd.ErrOrStderr(), !g.json(), total)
	rep, err := offloader.VerifyTopic(ctx, e.peers, topic, ledgers, sel, bar)
	bar.finish()
	if rep == nil {
		return err
	}
	if perr := printResult(cmd.OutOrStdout(), g, rep, func(w io.Writer) error { printVerify(w, rep); return nil }); perr != nil {
		return perr
	}
	return err
}

func printVerify(w io.Writer, doc *offloader.VerifyReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MANAGED LEDGER\tLEDGER\tSTATE\tCHECKED\tENTRIES\tBYTES\tTIME\tRESULT")
	for _, l := range doc.Ledgers {
		res := "ok"
		if !l.OK {
			res = "FAILED: " + l.Error
		}
		level := "-"
		var n, b int64
		if r := l.Report; r != nil {
			level, n, b = r.Level, r.Entries, r.Bytes
			switch r.Level {
			case pipeline.LevelFull, pipeline.LevelSampled:
				level += " vs bookkeeper"
			case pipeline.LevelObjects:
				level = "objects vs index"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%.1fs\t%s\n", l.ManagedLedger, l.LedgerID, l.State, level, n, units.HumanBytes(b), l.Seconds, res)
	}
	tw.Flush()
}
