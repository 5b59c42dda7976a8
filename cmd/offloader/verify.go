package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
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

type verifyDoc struct {
	Topic   string            `json:"topic"`
	Ledgers []verifyLedgerDoc `json:"ledgers"`
	OK      bool              `json:"ok"`
}

type verifyLedgerDoc struct {
	ManagedLedger string                 `json:"managedLedger"`
	LedgerID      int64                  `json:"ledgerId"`
	State         string                 `json:"state"`
	UUID          string                 `json:"uuid"`
	Report        *pipeline.VerifyReport `json:"report,omitempty"`
	Seconds       float64                `json:"seconds"`
	OK            bool                   `json:"ok"`
	Error         string                 `json:"error,omitempty"`
}

func (o *verifyOptions) run(cmd *cobra.Command, g *globalOptions, topic string) error {
	ctx, stderr := cmd.Context(), cmd.ErrOrStderr()
	e, err := openEnv(cmd, g, &o.env)
	if err != nil {
		return err
	}
	defer e.close()
	// The driver is not recorded by a verify; any valid one will do.
	drv, err := pipeline.DriverForStore(e.storeCfg, "aws-s3")
	if err != nil {
		return err
	}
	snaps, err := e.ml.TopicSnapshots(ctx, topic)
	if err != nil {
		return zkFailed(e.zk, err)
	}
	type job struct {
		t     mledger.LedgerRef
		state mledger.LedgerState
		uuid  string
		size  int64
	}
	var jobs []job
	var total int64
	for _, snap := range snaps {
		ml := snap.Name
		states := mledger.States(snap.Info)
		for i, li := range snap.Info.GetLedgerInfo() {
			id, ok := mledger.AttemptUUID(li.GetOffloadContext())
			if !ok || (o.ledger >= 0 && li.GetLedgerId() != o.ledger) {
				continue
			}
			jobs = append(jobs, job{mledger.LedgerRef{ML: ml, LedgerID: li.GetLedgerId()}, states[i], id.String(), li.GetSize()})
			total += li.GetSize()
		}
	}
	if len(jobs) == 0 {
		if o.ledger >= 0 {
			return fmt.Errorf("ledger %d of %s has no offload attempt to verify", o.ledger, topic)
		}
		return fmt.Errorf("%s has no offloaded ledger to verify", topic)
	}
	bar := newOffloadProgress(stderr, !g.json(), total)
	p, err := pipeline.New(pipeline.Deps{ML: e.ml, Ledgers: e.ledgers, Bookies: e.bk, Store: e.store, Logger: e.log, Observer: bar},
		pipeline.Options{Driver: drv})
	if err != nil {
		return err
	}
	doc := verifyDoc{Topic: topic, OK: true}
	failed := 0
	for _, j := range jobs {
		bar.StepStarted(j.t, pipeline.StepVerify)
		start := time.Now()
		rep, err := p.VerifyLedger(ctx, j.t, pipeline.VerifyOptions{Full: !o.sample})
		d := verifyLedgerDoc{ManagedLedger: j.t.ML, LedgerID: j.t.LedgerID, State: j.state.String(), UUID: j.uuid,
			Report: &rep, Seconds: time.Since(start).Seconds(), OK: err == nil}
		if err != nil {
			d.Error = err.Error()
			failed++
			doc.OK = false
		}
		doc.Ledgers = append(doc.Ledgers, d)
		if ctx.Err() != nil {
			break
		}
	}
	bar.finish()
	if err := printResult(cmd.OutOrStdout(), g, doc, func(w io.Writer) error { printVerify(w, doc); return nil }); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d ledgers failed verification", failed, len(doc.Ledgers))
	}
	return nil
}

func printVerify(w io.Writer, doc verifyDoc) {
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
