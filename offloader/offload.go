package offloader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// LedgerSelection says which ledgers of a topic an offload takes: Ledger
// alone (>= 0), else every closed ledger but the current one, up to
// UntilLedger (>= 0), the committed ones too with Trim (their BookKeeper
// copy is to be deleted).
type LedgerSelection struct {
	Ledger      int64
	UntilLedger int64
	Trim        bool
}

// OffloadJob is one managed ledger's share of an offload.
type OffloadJob struct {
	ML      string
	Ledgers []int64
}

// OffloadSelection is what an offload of a topic will work on.
type OffloadSelection struct {
	Topic string
	Jobs  []OffloadJob
	// BytesToCopy is the size of the selected ledgers not offloaded yet.
	BytesToCopy int64
}

// cliBrokerFallback is what the topic guard assumes of the broker's own
// offload thresholds when there is no admin API to read them.
var cliBrokerFallback = policy.BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: -1, Source: "not read: no --admin-url"}

// SelectOffload reads the topic's managed ledgers (mledger.TopicLedgers),
// refuses it when the broker offloads it itself (TopicGuard: its
// offloader would delete the committed objects), and selects the ledgers
// of each managed ledger as sel says.
func SelectOffload(ctx context.Context, p *Peers, topic string, sel LedgerSelection) (*OffloadSelection, error) {
	snaps, ledgers, err := p.ML.TopicLedgers(ctx, topic)
	if err != nil {
		return nil, err
	}
	guard := NewTopicGuard(p.ZK, p.ML, p.Admin, p.cfg.MLChroot, cliBrokerFallback, p.log)
	for _, snap := range snaps {
		if err := guard.Check(ctx, snap.Name); err != nil {
			return nil, fmt.Errorf("%s: %w", snap.Name, err)
		}
	}
	if sel.Ledger >= 0 && len(snaps) > 1 {
		return nil, fmt.Errorf("ledger %d: %s has %d partitions; name the partition (%s-partition-N)", sel.Ledger, topic, len(snaps), topic)
	}
	out := &OffloadSelection{Topic: topic}
	for _, snap := range snaps {
		ids := []int64{sel.Ledger}
		if sel.Ledger < 0 {
			ids = pipeline.Candidates(snap.Info, sel.UntilLedger, sel.Trim)
		}
		for _, l := range ledgers {
			if l.ML == snap.Name && !l.Complete && slices.Contains(ids, l.ID) {
				out.BytesToCopy += l.Size
			}
		}
		out.Jobs = append(out.Jobs, OffloadJob{ML: snap.Name, Ledgers: ids})
	}
	return out, nil
}

// OffloadOptions configure Offload.
type OffloadOptions struct {
	Pipeline pipeline.Options
	// DryRun plans and writes nothing.
	DryRun bool
	// LeaseRoot is where the topic leases live (the service's
	// leases.root); LeaseID the holder written (default
	// CLILeaseID(host, pid)).
	LeaseRoot, LeaseID string
	Observer           pipeline.Observer
	Failpoints         pipeline.Failpoints
	// Registerer receives the pipeline's and the upload's metrics (the
	// peers' are given to OpenPeers). Default none.
	Registerer prometheus.Registerer
}

// OffloadReport is the outcome of an offload (its JSON form is offloader
// offload's -o json).
type OffloadReport struct {
	Topic          string          `json:"topic"`
	DryRun         bool            `json:"dryRun"`
	ManagedLedgers []OffloadedML   `json:"managedLedgers"`
	Totals         OffloadedTotals `json:"totals"`
}

// OffloadedML is one managed ledger's part: its plan (dry run), or its
// ledgers' results and the topic's reload.
type OffloadedML struct {
	Name    string            `json:"name"`
	Plan    []PlannedLedger   `json:"plan,omitempty"`
	Ledgers []OffloadedLedger `json:"ledgers,omitempty"`
	Reload  *ReloadReport     `json:"reload,omitempty"`
	Error   string            `json:"error,omitempty"`
}

// PlannedLedger is what a run would do to a ledger.
type PlannedLedger struct {
	LedgerID int64  `json:"ledgerId"`
	State    string `json:"state"`
	Entries  int64  `json:"entries"`
	Bytes    int64  `json:"bytes"`
	Action   string `json:"action"`
	Reason   string `json:"reason,omitempty"`
}

// ReloadReport is the topic's reload after the commit.
type ReloadReport struct {
	Done     bool   `json:"done"`
	Unloaded bool   `json:"unloaded"`
	Note     string `json:"note,omitempty"`
}

// OffloadedLedger is one ledger's result.
type OffloadedLedger struct {
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
	Trim        *TrimReport            `json:"trim,omitempty"`
	Superseded  []string               `json:"superseded,omitempty"`
	Leftovers   []string               `json:"leftovers,omitempty"`
	Seconds     float64                `json:"seconds"`
	Steps       map[string]float64     `json:"stepSeconds,omitempty"`
	CopyCost    *CopyCost              `json:"copyCost,omitempty"`
	Error       string                 `json:"error,omitempty"`
}

// CopyCost is what a ledger's copy step cost and where its time went. The
// waits come from the pipeline; the process figures (CPU from
// /proc/self/stat, system calls from /proc/self/io, Go allocations, GCs)
// from a caller that measures the copy step (offloader offload, which
// copies one ledger at a time).
type CopyCost struct {
	CPUSeconds     float64 `json:"cpuSeconds"`
	UserSeconds    float64 `json:"userSeconds"`
	SystemSeconds  float64 `json:"systemSeconds"`
	CPUError       string  `json:"cpuError,omitempty"`
	PageFaults     uint64  `json:"pageFaults"`
	ReadCalls      uint64  `json:"readCalls"`
	WriteCalls     uint64  `json:"writeCalls"`
	IOError        string  `json:"ioError,omitempty"`
	AllocBytes     uint64  `json:"allocBytes"`
	Allocs         uint64  `json:"allocs"`
	GCCycles       uint32  `json:"gcCycles"`
	GCPauseSeconds float64 `json:"gcPauseSeconds"`
	// Where the copy step's time went.
	CopyTimes
	Profiles []string `json:"profiles,omitempty"`
}

// CopyTimes says where a copy step's time went (pipeline.CopyStats, in
// seconds): waiting for the bookies, handing entries to the encoder, and
// the finish, split into waiting for the last parts, the store's
// completion and the index PUT.
type CopyTimes struct {
	ReadWaitSeconds       float64 `json:"readWaitSeconds"`
	AddSeconds            float64 `json:"addSeconds"`
	FinishSeconds         float64 `json:"finishSeconds"`
	FinishPartsSeconds    float64 `json:"finishPartsSeconds"`
	FinishCompleteSeconds float64 `json:"finishCompleteSeconds"`
	FinishIndexSeconds    float64 `json:"finishIndexSeconds"`
}

// TrimReport is a ledger's BookKeeper deletion.
type TrimReport struct {
	Marked     bool       `json:"bookkeeperDeletedMarked"`
	Deleted    bool       `json:"bookkeeperLedgerDeleted"`
	FreedBytes int64      `json:"freedBytes"`
	NotBefore  *time.Time `json:"notBefore,omitempty"`
	Note       string     `json:"note,omitempty"`
}

// OffloadedTotals sum the ledgers.
type OffloadedTotals struct {
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

// NewOffloadPipeline is the pipeline an offload runs on these peers.
func NewOffloadPipeline(p *Peers, o OffloadOptions) (*pipeline.Pipeline, error) {
	d := p.PipelineDeps()
	d.Observer, d.Failpoints, d.Registerer = o.Observer, o.Failpoints, o.Registerer
	return pipeline.New(d, o.Pipeline)
}

// Offload runs the selected ledgers through pl (NewOffloadPipeline), one
// managed ledger after the other, each under its topic lease as the
// service's replicas take it (RunLeased: every write fenced; the lease of
// a killed run of this command on this host taken over), or plans them
// (DryRun). The report holds every ledger, those of the managed ledgers
// not started when ctx ended too (failed with its error); the error, the
// first failure (the report's Totals count them all), or ctx's error.
func Offload(ctx context.Context, p *Peers, pl *pipeline.Pipeline, sel *OffloadSelection, o OffloadOptions) (*OffloadReport, error) {
	rep := &OffloadReport{Topic: sel.Topic, DryRun: o.DryRun, ManagedLedgers: []OffloadedML{}}
	start := time.Now()
	var failed error
	var leases *TopicLeases
	if !o.DryRun {
		id := o.LeaseID
		if id == "" {
			host, _ := os.Hostname()
			id = CLILeaseID(host, os.Getpid())
		}
		leases = NewTopicLeases(p.ZK, o.LeaseRoot, id, p.log)
		defer leases.Close()
	}
	for ji, j := range sel.Jobs {
		if ctx.Err() != nil && o.DryRun {
			return nil, ctx.Err()
		}
		if ctx.Err() != nil {
			// Stopped: the managed ledgers not started are reported, each
			// ledger failed with the cancellation, not left out.
			for _, j := range sel.Jobs[ji:] {
				md := OffloadedML{Name: j.ML}
				for _, id := range j.Ledgers {
					t := mledger.LedgerRef{ML: j.ML, LedgerID: id}
					lr := &pipeline.LedgerResult{LedgerRef: t, Outcome: pipeline.OutcomeFailed,
						Err: &pipeline.StepError{LedgerRef: t, Step: pipeline.StepSelect, Err: ctx.Err()}}
					md.Ledgers = append(md.Ledgers, offloadedLedger(lr))
					rep.Totals.add(lr)
				}
				rep.ManagedLedgers = append(rep.ManagedLedgers, md)
			}
			if failed == nil {
				failed = ctx.Err()
			}
			break
		}
		md := OffloadedML{Name: j.ML}
		if o.DryRun {
			plan, err := pl.Plan(ctx, j.ML, j.Ledgers)
			if err != nil {
				return nil, err
			}
			for _, it := range plan {
				md.Plan = append(md.Plan, PlannedLedger{LedgerID: it.LedgerID, State: it.State.String(), Entries: it.Entries,
					Bytes: it.Bytes, Action: string(it.Action), Reason: it.Reason})
			}
			rep.ManagedLedgers = append(rep.ManagedLedgers, md)
			continue
		}
		if len(j.Ledgers) == 0 {
			rep.ManagedLedgers = append(rep.ManagedLedgers, md)
			continue
		}
		tr, err := runLeasedCLI(ctx, leases, pl, j.ML, j.Ledgers)
		if err != nil && failed == nil {
			failed = err
		}
		md.Reload = &ReloadReport{Done: tr.Reload.Done, Unloaded: tr.Reload.Unloaded, Note: tr.Reload.Note}
		for _, lr := range tr.Ledgers {
			md.Ledgers = append(md.Ledgers, offloadedLedger(lr))
			rep.Totals.add(lr)
		}
		rep.ManagedLedgers = append(rep.ManagedLedgers, md)
	}
	rep.Totals.Seconds = time.Since(start).Seconds()
	if rep.Totals.Seconds > 0 {
		rep.Totals.MBPerSec = float64(rep.Totals.Bytes) / 1e6 / rep.Totals.Seconds
	}
	if failed != nil {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		return rep, fmt.Errorf("%d of %d ledgers failed; first: %w", rep.Totals.Failed, rep.Totals.Ledgers, firstErr(failed))
	}
	return rep, nil
}

// runLeasedCLI runs the pipeline on ledgers ids of ml under the topic's
// lease (RunLeased), taking over the lease of a killed run of offloader
// offload on this host. A topic leased by someone else fails every ledger
// with the holder named.
func runLeasedCLI(ctx context.Context, leases *TopicLeases, p *pipeline.Pipeline, ml string, ids []int64) (*pipeline.TopicResult, error) {
	tr, holder, err := RunLeased(ctx, leases, p, ml, ids, deadLocalRun)
	if tr != nil {
		return tr, err
	}
	if err == nil {
		err = fmt.Errorf("%w: %s is leased by %s (the offload service works on it); try again later", ErrTopicLeased, ml, holder)
	}
	tr = &pipeline.TopicResult{ML: ml}
	for _, id := range ids {
		t := mledger.LedgerRef{ML: ml, LedgerID: id}
		tr.Ledgers = append(tr.Ledgers, &pipeline.LedgerResult{LedgerRef: t, Outcome: pipeline.OutcomeFailed,
			Err: &pipeline.StepError{LedgerRef: t, Step: pipeline.StepSelect, Err: err}})
	}
	return tr, err
}

// ErrTopicLeased: another holder has the topic's lease.
var ErrTopicLeased = errors.New("topic leased elsewhere")

// CLILeaseID is the default holder id of offloader offload's leases.
func CLILeaseID(host string, pid int) string { return fmt.Sprintf("offload-cli@%s:%d", host, pid) }

// deadLocalRun says whether holder is the default lease id of a run of
// offloader offload on this host whose process is gone.
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

// firstErr is the first error of a join.
func firstErr(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		return j.Unwrap()[0]
	}
	return err
}

func offloadedLedger(lr *pipeline.LedgerResult) OffloadedLedger {
	d := OffloadedLedger{LedgerID: lr.LedgerID, Outcome: string(lr.Outcome), Before: lr.Before.String(), Entries: lr.Entries,
		Bytes: lr.Bytes, ObjectBytes: lr.ObjectBytes, Blocks: lr.Blocks, DataKey: lr.DataKey, IndexKey: lr.IndexKey,
		Leftovers: lr.Leftovers, Steps: map[string]float64{}}
	if c := lr.Copy; c != (pipeline.CopyStats{}) {
		d.CopyCost = &CopyCost{CopyTimes: CopyTimes{ReadWaitSeconds: c.ReadWait.Seconds(), AddSeconds: c.Add.Seconds(), FinishSeconds: c.Finish.Seconds(),
			FinishPartsSeconds: c.FinishSplit.LastParts.Seconds(), FinishCompleteSeconds: c.FinishSplit.Complete.Seconds(), FinishIndexSeconds: c.FinishSplit.Index.Seconds()}}
	}
	if lr.UUID != uuid.Nil {
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
		td := &TrimReport{Marked: tr.Marked, Deleted: tr.Deleted, FreedBytes: tr.FreedBytes, Note: tr.Note}
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

func (t *OffloadedTotals) add(lr *pipeline.LedgerResult) {
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
