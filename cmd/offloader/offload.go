package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/copytrace"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
)

func init() { addCommand(newOffloadCmd) }

type offloadOptions struct {
	env          envOptions
	ledger       int64
	untilLedger  int64
	dryRun       bool
	deleteBK     bool
	deletionLag  time.Duration
	noReloadTrim bool
	driver       string
	blockSize    units.Size
	parts        int
	fullVerify   units.Size
	leaseRoot    string
	leaseID      string
	profileDir   string
	timeline     timelineOptions
}

func newOffloadCmd(g *globalOptions) *cobra.Command {
	o := &offloadOptions{ledger: -1, untilLedger: -1, blockSize: units.Size(pipeline.DefaultBlockSize),
		fullVerify: units.Size(pipeline.DefaultFullVerifyBytes)}
	o.env.needBK, o.env.needBlob = true, true
	cmd := &cobra.Command{
		Use:   "offload --store FILE [--admin-url URL] TOPIC [--ledger N | --until-ledger N] [--dry-run] [--delete-bookkeeper [--deletion-lag D]]",
		Short: "Copy a topic's closed ledgers to the object store and switch brokers over to it",
		Long: strings.TrimSpace(`
Offload the closed ledgers of a topic (every partition of a partitioned
topic) to the object store given by --store, in the object format of
Pulsar's tiered storage, and mark them offloaded in the managed-ledger
metadata, so stock brokers read them from the object store.

TOPIC is written as Pulsar users write it: persistent://tenant/ns/topic,
tenant/ns/topic, or a short name in public/default. Every closed ledger but
the topic's current (last) one is taken, or only --ledger N, or those up to
--until-ledger N. The ledgers go through the steps of the pipeline together
(one metadata write per step for all of them, so the broker writing the same
metadata at its ledger rollovers is disturbed once, not once per ledger):

  select   closed in BookKeeper, not the last ledger, has entries
  prepare  record the attempts' UUIDs and the store location (before any upload)
  copy     stream the entries from the bookies into a multipart upload, one
           ledger after the other
  verify   object sizes, index, block headers and the entries against the bookies
  commit   mark the ledgers offloaded (compare-and-set; nothing else changes)
  trim     with --delete-bookkeeper, once --deletion-lag has passed since the
           commit: mark bookkeeperDeleted (with a zero lag in the commit's write)
  reload   unload the topic (--admin-url) and check that the broker now reads
           the ledgers from the object store
  trim     then delete the marked ledgers from BookKeeper (compare-and-delete)

Each managed ledger is written under the same per-topic lease as the offload
service's replicas take (--lease-root, the service's leases.root), so this
command and the service never write one topic at once: a topic leased by a
replica fails here with the holder named (run again later), and every write
is fenced by the lease (a run whose ZooKeeper session is lost cannot write).
The lease of a killed run of this command on the same host (default
--lease-id, its process gone) is taken over at once instead of waiting for
ZooKeeper to expire its session.

It is safe to stop (or kill) at any moment and to run again: the next run
continues from what the metadata records. Without --admin-url a broker that
has the topic loaded keeps reading the ledgers from BookKeeper until its next
ledger rollover; --delete-bookkeeper then needs --trim-without-reload.

A topic the broker offloads by itself is refused before anything is written:
an offload threshold >= 0 in the namespace's policies, or (with --admin-url)
in the topic's policies or the broker's configuration, or an unfinished
offload attempt that tierkeeper did not record. Running both offloaders on a
topic loses data: the broker's offloader deletes the objects of the attempt
its in-memory view holds, even after tierkeeper committed it. Without
--admin-url the broker's own thresholds cannot be read and are assumed off.

--dry-run prints what would be done and writes nothing. Results go to
stdout (-o json for machines); a progress bar (bytes, rate, ETA per ledger
and overall) goes to stderr when it is a terminal. The admin token is read
from --admin-token-file or $` + adminTokenEnv + `. Exit status 1 when any
ledger failed.`),
		Example: `  offloader offload --zk zk1:2181 --store configs/blob-s3.yaml --admin-url http://broker:8080 persistent://public/default/orders
  offloader offload --zk zk1:2181 --store s3.yaml orders --until-ledger 4711 --dry-run
  offloader offload --zk zk1:2181 --store cos.yaml --admin-url https://broker:8443 --admin-ca-file ca.pem \
      --delete-bookkeeper --deletion-lag 1h tenant/ns/clicks`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, g, args[0]) },
	}
	f := cmd.Flags()
	o.env.addFlags(f, true)
	f.Int64Var(&o.ledger, "ledger", -1, "only this ledger `id`")
	f.Int64Var(&o.untilLedger, "until-ledger", -1, "only ledgers with ids up to this `id`")
	f.BoolVar(&o.dryRun, "dry-run", false, "print what would be done; write nothing")
	f.BoolVar(&o.deleteBK, "delete-bookkeeper", false, "delete the BookKeeper copy once the deletion lag has passed since the commit")
	f.DurationVar(&o.deletionLag, "deletion-lag", 0, "with --delete-bookkeeper: keep the BookKeeper copy this long after the commit")
	f.BoolVar(&o.noReloadTrim, "trim-without-reload", false, "allow --delete-bookkeeper without --admin-url (only when no broker has the topic loaded)")
	f.StringVar(&o.driver, "driver", "", "driver name recorded for brokers: aws-s3 (default), S3, aliyun-oss")
	f.Var(&o.blockSize, "block-size", "data block (= multipart part) size, at least 5MiB")
	f.IntVar(&o.parts, "parts-in-flight", 2, "parts uploading at once (memory about (parts+1) x block size)")
	f.StringVar(&o.leaseRoot, "lease-root", offloader.DefaultLeaseRoot, "znode `path` of the per-topic leases (the service's leases.root)")
	f.StringVar(&o.leaseID, "lease-id", "", "holder `name` written in the leases (default offload-cli@<host>:<pid>)")
	f.StringVar(&o.profileDir, "profile-dir", "", "write CPU, block, mutex and allocation profiles (pprof) of every ledger's copy step into this `directory` (diagnostics: blocking and mutex events are all sampled, which slows the copy)")
	f.StringVar(&o.timeline.path, "timeline", "", "write a JSON timeline of every ledger's copy step to this `file` (diagnostics, docs/offload.md): sampled every --timeline-interval, the bytes read from the bookies and uploaded, parts uploading, the copy's waits (for the bookies, in Add for a free block, finishing), the CPU time of this process and of --timeline-procs, the machine's CPU time and PSI")
	f.DurationVar(&o.timeline.interval, "timeline-interval", copytrace.DefaultInterval, "with --timeline: time between two samples")
	f.StringSliceVar(&o.timeline.procs, "timeline-procs", nil, "with --timeline: also sample the CPU time of these processes on this host, as `name=pid`,... (e.g. the bookies and the store)")
	f.Var(&o.fullVerify, "full-verify-max", "ledgers up to this size are compared with BookKeeper entry by entry in full; larger ones in three sampled windows")
	return cmd
}

func (o *offloadOptions) validate() error {
	switch {
	case o.ledger >= 0 && o.untilLedger >= 0:
		return errors.New("--ledger and --until-ledger are exclusive")
	case o.deletionLag < 0:
		return fmt.Errorf("--deletion-lag %s: must not be negative", o.deletionLag)
	case !strings.HasPrefix(o.leaseRoot, "/") || strings.HasSuffix(o.leaseRoot, "/"):
		return fmt.Errorf("--lease-root %q: want an absolute znode path without a trailing /", o.leaseRoot)
	case strings.Contains(o.leaseID, "/"):
		return fmt.Errorf("--lease-id %q: want a name without /", o.leaseID)
	case o.deletionLag > 0 && !o.deleteBK:
		return errors.New("--deletion-lag needs --delete-bookkeeper")
	case o.noReloadTrim && !o.deleteBK:
		return errors.New("--trim-without-reload needs --delete-bookkeeper")
	case o.deleteBK && o.env.admin.url == "" && !o.noReloadTrim:
		return errors.New("--delete-bookkeeper needs --admin-url, to be sure the broker no longer reads the ledgers from BookKeeper " +
			"before they are deleted (or --trim-without-reload when no broker has the topic loaded)")
	case o.parts < 1:
		return fmt.Errorf("--parts-in-flight %d: want at least 1", o.parts)
	case o.timeline.path == "" && (len(o.timeline.procs) > 0 || o.timeline.interval != copytrace.DefaultInterval):
		return errors.New("--timeline-procs and --timeline-interval need --timeline")
	case o.timeline.interval <= 0:
		return fmt.Errorf("--timeline-interval %s: want more than zero", o.timeline.interval)
	}
	return nil
}

func (o *offloadOptions) run(cmd *cobra.Command, g *globalOptions, topic string) error {
	if err := o.validate(); err != nil {
		return err
	}
	procs, err := parseProcs(o.timeline.procs)
	if err != nil {
		return err
	}
	var reg *prometheus.Registry
	if o.timeline.path != "" {
		reg = prometheus.NewRegistry()
		o.env.registerer = reg
	}
	ctx := cmd.Context()
	e, err := openEnv(cmd, g, &o.env)
	if err != nil {
		return err
	}
	defer e.close()
	drv, err := e.peers.Driver(o.driver)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	fps, err := pipeline.FailpointsFromEnv()
	if err != nil {
		return err
	}
	sel, err := offloader.SelectOffload(ctx, e.peers, topic, offloader.LedgerSelection{Ledger: o.ledger, UntilLedger: o.untilLedger, Trim: o.deleteBK})
	if err != nil {
		return err
	}
	bar := newOffloadProgress(cmd.ErrOrStderr(), !g.json(), sel.BytesToCopy)
	var obs pipeline.Observer = bar
	var tl *timelineObserver
	if reg != nil {
		tl = newTimelineObserver(bar, reg, o.timeline.interval, procs, o.parts, int(o.blockSize.Bytes()))
		obs = tl
	}
	cost := newCostObserver(obs, o.profileDir, e.log)
	oo := offloader.OffloadOptions{DryRun: o.dryRun, LeaseRoot: o.leaseRoot, LeaseID: o.leaseID, Observer: cost, Failpoints: fps,
		Pipeline: pipeline.Options{Driver: drv, BlockSize: int(o.blockSize.Bytes()), PartsInFlight: o.parts, FullVerifyBytes: o.fullVerify.Bytes(),
			Trim: o.deleteBK, DeletionLag: o.deletionLag, TrimWithoutReload: o.noReloadTrim}}
	if reg != nil {
		oo.Registerer = reg
	}
	p, err := offloader.NewOffloadPipeline(e.peers, oo)
	if err != nil {
		return err
	}
	limitMemory(p.Options(), e.log)
	rep, err := offloader.Offload(ctx, e.peers, p, sel, oo)
	bar.finish()
	if tl != nil {
		if werr := tl.write(o.timeline.path); werr != nil {
			return errors.Join(err, werr)
		}
	}
	if rep == nil {
		return err
	}
	cost.fill(rep)
	if perr := printResult(cmd.OutOrStdout(), g, rep, func(w io.Writer) error { printOffload(w, rep); return nil }); perr != nil {
		return perr
	}
	return err
}

// limitMemory sets the Go memory limit (unless GOMEMLIMIT does) so that the
// garbage of the streamed entries is collected before the process grows
// past (PartsInFlight + 2) × block size + 64 MiB: the pipeline's own
// buffers (Options.MemoryBound) plus room for the rest of the heap; the
// binary, stacks and runtime take the remaining ~24 MiB of the bound.
func limitMemory(o pipeline.Options, log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := int64(o.PartsInFlight+2)*int64(o.BlockSize) + 40<<20
	limit = max(limit, o.MemoryBound()+24<<20)
	debug.SetMemoryLimit(limit)
	log.Debug("go memory limit", "bytes", limit)
}

func printOffload(w io.Writer, doc *offloader.OffloadReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if doc.DryRun {
		fmt.Fprintln(tw, "MANAGED LEDGER\tLEDGER\tSTATE\tENTRIES\tSIZE\tACTION\tREASON")
		for _, m := range doc.ManagedLedgers {
			if len(m.Plan) == 0 {
				fmt.Fprintf(tw, "%s\t-\t\t\t\tnone\tno closed ledger to offload\n", m.Name)
			}
			for _, p := range m.Plan {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\n", m.Name, p.LedgerID, p.State, p.Entries, units.HumanBytes(p.Bytes), p.Action, p.Reason)
			}
		}
		tw.Flush()
		fmt.Fprintln(w, "dry run: nothing was written")
		return
	}
	fmt.Fprintln(tw, "MANAGED LEDGER\tLEDGER\tOUTCOME\tSIZE\tOBJECT\tBLOCKS\tVERIFIED\tTIME\tRATE\tTRIM\tNOTE")
	for _, m := range doc.ManagedLedgers {
		if len(m.Ledgers) == 0 {
			fmt.Fprintf(tw, "%s\t-\tnone\t\t\t\t\t\t\t\tno closed ledger to offload\n", m.Name)
		}
		for _, l := range m.Ledgers {
			ver, rate, trim := "-", "-", "-"
			if l.Verify != nil {
				ver = fmt.Sprintf("%s %d", l.Verify.Level, l.Verify.Entries)
			}
			if cp := l.Steps["copy"]; cp > 0 {
				rate = units.DecimalRate(float64(l.Bytes) / cp)
			}
			if l.Trim != nil {
				switch {
				case l.Trim.FreedBytes > 0:
					trim = "deleted " + units.HumanBytes(l.Trim.FreedBytes)
				case l.Trim.Deleted:
					trim = "deleted before"
				case l.Trim.NotBefore != nil:
					trim = "after " + l.Trim.NotBefore.Local().Format(time.DateTime)
				case l.Trim.Marked:
					trim = "marked"
				}
			}
			note := l.Error
			if note == "" && len(l.Leftovers) > 0 {
				note = fmt.Sprintf("left for the sweeper: %s", strings.Join(l.Leftovers, ", "))
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%s\t%.1fs\t%s\t%s\t%s\n", m.Name, l.LedgerID, l.Outcome, units.HumanBytes(l.Bytes),
				units.HumanBytes(l.ObjectBytes), l.Blocks, ver, l.Seconds, rate, trim, note)
		}
	}
	tw.Flush()
	for _, m := range doc.ManagedLedgers {
		if m.Reload != nil && m.Reload.Note != "" && len(m.Ledgers) > 0 {
			fmt.Fprintf(w, "%s: %s\n", m.Name, m.Reload.Note)
		} else if m.Reload != nil && m.Reload.Unloaded {
			fmt.Fprintf(w, "%s: topic unloaded; the broker now reads these ledgers from the object store\n", m.Name)
		}
	}
	t := doc.Totals
	fmt.Fprintf(w, "%d ledgers offloaded (%s, %s stored) in %.1fs, %s; %d already offloaded; %d failed; BookKeeper: %d ledgers deleted, %s freed\n",
		t.Offloaded, units.HumanBytes(t.Bytes), units.HumanBytes(t.ObjectBytes), t.Seconds, units.DecimalRate(float64(t.Bytes)/max(t.Seconds, 1e-9)),
		t.AlreadyDone, t.Failed, t.BKDeleted, units.HumanBytes(t.BKBytesFreed))
}
