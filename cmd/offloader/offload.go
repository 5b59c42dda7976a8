package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
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
	}
	return nil
}

// offloadDoc is the --output json document.
type offloadDoc struct {
	Topic          string       `json:"topic"`
	DryRun         bool         `json:"dryRun"`
	ManagedLedgers []mlDoc      `json:"managedLedgers"`
	Totals         offloadTotal `json:"totals"`
}

type mlDoc struct {
	Name    string      `json:"name"`
	Plan    []planDoc   `json:"plan,omitempty"`
	Ledgers []ledgerDoc `json:"ledgers,omitempty"`
	Reload  *reloadDoc  `json:"reload,omitempty"`
	Error   string      `json:"error,omitempty"`
}

type planDoc struct {
	LedgerID int64  `json:"ledgerId"`
	State    string `json:"state"`
	Entries  int64  `json:"entries"`
	Bytes    int64  `json:"bytes"`
	Action   string `json:"action"`
	Reason   string `json:"reason,omitempty"`
}

type reloadDoc struct {
	Done     bool   `json:"done"`
	Unloaded bool   `json:"unloaded"`
	Note     string `json:"note,omitempty"`
}

type ledgerDoc struct {
	LedgerID    int64                  `json:"ledgerId"`
	Outcome     string                 `json:"outcome"`
	Before      string                 `json:"stateBefore"`
	UUID        string                 `json:"uuid,omitempty"`
	Entries     int64                  `json:"entries"`
	Bytes       int64                  `json:"bytes"`
	ObjectBytes int64                  `json:"objectBytes,omitempty"`
	Blocks      int                    `json:"blocks,omitempty"`
	DataKey     string                 `json:"dataKey,omitempty"`
	IndexKey    string                 `json:"indexKey,omitempty"`
	Verify      *pipeline.VerifyReport `json:"verify,omitempty"`
	Trim        *trimDoc               `json:"trim,omitempty"`
	Superseded  []string               `json:"superseded,omitempty"`
	Leftovers   []string               `json:"leftovers,omitempty"`
	Seconds     float64                `json:"seconds"`
	Steps       map[string]float64     `json:"stepSeconds,omitempty"`
	Error       string                 `json:"error,omitempty"`
}

type trimDoc struct {
	Marked     bool       `json:"bookkeeperDeletedMarked"`
	Deleted    bool       `json:"bookkeeperLedgerDeleted"`
	FreedBytes int64      `json:"freedBytes"`
	NotBefore  *time.Time `json:"notBefore,omitempty"`
	Note       string     `json:"note,omitempty"`
}

type offloadTotal struct {
	Ledgers       int     `json:"ledgers"`
	Offloaded     int     `json:"offloaded"`
	Failed        int     `json:"failed"`
	Bytes         int64   `json:"bytes"`
	ObjectBytes   int64   `json:"objectBytes"`
	Seconds       float64 `json:"seconds"`
	MBPerSec      float64 `json:"mbPerSec"`
	BKBytesFreed  int64   `json:"bookkeeperBytesFreed"`
	BKDeleted     int     `json:"bookkeeperLedgersDeleted"`
	AlreadyDone   int     `json:"alreadyOffloaded"`
	VerifiedBytes int64   `json:"verifiedBytes"`
}

func (o *offloadOptions) run(cmd *cobra.Command, g *globalOptions, topic string) error {
	if err := o.validate(); err != nil {
		return err
	}
	ctx, stderr := cmd.Context(), cmd.ErrOrStderr()
	e, err := openEnv(cmd, g, &o.env)
	if err != nil {
		return err
	}
	defer e.close()
	log := e.log
	drv, err := pipeline.DriverForStore(e.storeCfg, o.driver)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	fps, err := pipeline.FailpointsFromEnv()
	if err != nil {
		return err
	}
	names, err := e.ml.TopicManagedLedgers(ctx, topic)
	if err != nil {
		return err
	}
	// A topic the broker offloads itself is not touched: its offloader
	// would delete our committed objects (it cleans up the attempt its
	// in-memory view holds before its own write).
	guard := offloader.NewTopicGuard(e.zk, e.ml, e.admin, o.env.ml.chroot,
		policy.BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: -1, Source: "not read: no --admin-url"}, log)
	for _, ml := range names {
		if err := guard.Check(ctx, ml); err != nil {
			return fmt.Errorf("%s: %w", ml, err)
		}
	}
	// Which ledgers of each managed ledger, and the bytes to copy.
	type work struct {
		ml  string
		ids []int64
	}
	var jobs []work
	var toCopy int64
	for _, ml := range names {
		snap, err := e.ml.Get(ctx, ml)
		if err != nil {
			return err
		}
		var ids []int64
		if o.ledger >= 0 {
			ids = []int64{o.ledger}
		} else {
			ids = pipeline.Candidates(snap.Info, o.untilLedger, o.deleteBK)
		}
		for _, li := range snap.Info.GetLedgerInfo() {
			for _, id := range ids {
				if li.GetLedgerId() == id && !li.GetOffloadContext().GetComplete() {
					toCopy += li.GetSize()
				}
			}
		}
		jobs = append(jobs, work{ml, ids})
	}
	if o.ledger >= 0 && len(names) > 1 {
		return fmt.Errorf("--ledger %d: %s has %d partitions; name the partition (%s-partition-N)", o.ledger, topic, len(names), topic)
	}

	bar := newOffloadProgress(stderr, !g.json(), toCopy)
	deps := pipeline.Deps{ML: e.ml, Ledgers: e.ledgers, Bookies: e.bk, Store: e.store, Logger: log, Observer: bar,
		Failpoints: fps}
	if e.admin != nil {
		deps.Broker = e.admin
	}
	p, err := pipeline.New(deps, pipeline.Options{
		Driver: drv, BlockSize: int(o.blockSize.Bytes()), PartsInFlight: o.parts, FullVerifyBytes: o.fullVerify.Bytes(),
		Trim: o.deleteBK, DeletionLag: o.deletionLag, TrimWithoutReload: o.noReloadTrim,
	})
	if err != nil {
		return err
	}
	limitMemory(p.Options(), log)

	doc := offloadDoc{Topic: topic, DryRun: o.dryRun, ManagedLedgers: []mlDoc{}}
	start := time.Now()
	var failed error
	var leases *offloader.TopicLeases
	if !o.dryRun {
		id := o.leaseID
		if id == "" {
			host, _ := os.Hostname()
			id = cliLeaseID(host, os.Getpid())
		}
		leases = offloader.NewTopicLeases(e.zk, o.leaseRoot, id, log)
		defer leases.Close()
	}
	for _, j := range jobs {
		md := mlDoc{Name: j.ml}
		if o.dryRun {
			plan, err := p.Plan(ctx, j.ml, j.ids)
			if err != nil {
				return err
			}
			for _, it := range plan {
				md.Plan = append(md.Plan, planDoc{LedgerID: it.LedgerID, State: it.State.String(), Entries: it.Entries,
					Bytes: it.Bytes, Action: string(it.Action), Reason: it.Reason})
			}
			doc.ManagedLedgers = append(doc.ManagedLedgers, md)
			continue
		}
		if len(j.ids) == 0 {
			doc.ManagedLedgers = append(doc.ManagedLedgers, md)
			continue
		}
		tr, err := runLeased(ctx, leases, p, j.ml, j.ids)
		if err != nil && failed == nil {
			failed = err
		}
		md.Reload = &reloadDoc{Done: tr.Reload.Done, Unloaded: tr.Reload.Unloaded, Note: tr.Reload.Note}
		for _, lr := range tr.Ledgers {
			md.Ledgers = append(md.Ledgers, toLedgerDoc(lr))
			addTotals(&doc.Totals, lr)
		}
		doc.ManagedLedgers = append(doc.ManagedLedgers, md)
		if ctx.Err() != nil {
			break
		}
	}
	bar.finish()
	doc.Totals.Seconds = time.Since(start).Seconds()
	if doc.Totals.Seconds > 0 {
		doc.Totals.MBPerSec = float64(doc.Totals.Bytes) / 1e6 / doc.Totals.Seconds
	}
	if err := printResult(cmd.OutOrStdout(), g, doc, func(w io.Writer) error { printOffload(w, doc); return nil }); err != nil {
		return err
	}
	if failed != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%d of %d ledgers failed; first: %w", doc.Totals.Failed, doc.Totals.Ledgers, firstErr(failed))
	}
	return nil
}

// runLeased runs the pipeline on ledgers ids of ml under the topic's lease
// (offloader.RunLeased), taking over the lease of a killed run of this
// command on this host. A topic leased by someone else fails every ledger
// with the holder named.
func runLeased(ctx context.Context, leases *offloader.TopicLeases, p *pipeline.Pipeline, ml string, ids []int64) (*pipeline.TopicResult, error) {
	tr, holder, err := offloader.RunLeased(ctx, leases, p, ml, ids, deadLocalRun)
	if tr != nil {
		return tr, err
	}
	if err == nil {
		err = fmt.Errorf("%w: %s is leased by %s (the offload service works on it); try again later", errTopicLeased, ml, holder)
	}
	tr = &pipeline.TopicResult{ML: ml}
	for _, id := range ids {
		t := mledger.LedgerRef{ML: ml, LedgerID: id}
		tr.Ledgers = append(tr.Ledgers, &pipeline.LedgerResult{LedgerRef: t, Outcome: pipeline.OutcomeFailed,
			Err: &pipeline.StepError{LedgerRef: t, Step: pipeline.StepSelect, Err: err}})
	}
	return tr, err
}

// cliLeaseID is the default holder id of this command's leases.
func cliLeaseID(host string, pid int) string { return fmt.Sprintf("offload-cli@%s:%d", host, pid) }

// deadLocalRun says whether holder is the default lease id of a run of
// this command on this host whose process is gone.
func deadLocalRun(holder string) bool {
	host, err := os.Hostname()
	if err != nil {
		return false
	}
	rest, ok := strings.CutPrefix(holder, "offload-cli@"+host+":")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(rest)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// errTopicLeased: another holder has the topic's lease.
var errTopicLeased = errors.New("topic leased elsewhere")

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

// firstErr is the first error of a join.
func firstErr(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		return j.Unwrap()[0]
	}
	return err
}

func toLedgerDoc(lr *pipeline.LedgerResult) ledgerDoc {
	d := ledgerDoc{LedgerID: lr.LedgerID, Outcome: string(lr.Outcome), Before: lr.Before.String(), Entries: lr.Entries,
		Bytes: lr.Bytes, ObjectBytes: lr.ObjectBytes, Blocks: lr.Blocks, DataKey: lr.DataKey, IndexKey: lr.IndexKey,
		Leftovers: lr.Leftovers, Steps: map[string]float64{}}
	if lr.UUID.String() != "00000000-0000-0000-0000-000000000000" {
		d.UUID = lr.UUID.String()
	}
	if lr.Verify.Level != "" {
		v := lr.Verify
		d.Verify = &v
	}
	for _, s := range lr.Superseded {
		d.Superseded = append(d.Superseded, s.String())
	}
	for _, s := range lr.Steps {
		d.Steps[string(s.Step)] += s.Duration.Seconds()
		d.Seconds += s.Duration.Seconds()
	}
	if tr := lr.Trim; tr.Marked || tr.Deleted || tr.Note != "" {
		td := &trimDoc{Marked: tr.Marked, Deleted: tr.Deleted, FreedBytes: tr.FreedBytes, Note: tr.Note}
		if !tr.NotBefore.IsZero() {
			nb := tr.NotBefore.UTC()
			td.NotBefore = &nb
		}
		d.Trim = td
	}
	if lr.Err != nil {
		d.Error = lr.Err.Error()
	}
	return d
}

func addTotals(t *offloadTotal, lr *pipeline.LedgerResult) {
	t.Ledgers++
	switch {
	case lr.Err != nil:
		t.Failed++
	case lr.Outcome == pipeline.OutcomeAlreadyOffloaded:
		t.AlreadyDone++
	default:
		t.Offloaded++
		t.Bytes += lr.Bytes
		t.ObjectBytes += lr.ObjectBytes
	}
	t.VerifiedBytes += lr.Verify.Bytes
	t.BKBytesFreed += lr.Trim.FreedBytes
	if lr.Trim.FreedBytes > 0 {
		t.BKDeleted++
	}
}

func printOffload(w io.Writer, doc offloadDoc) {
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
