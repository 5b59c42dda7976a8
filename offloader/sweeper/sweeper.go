// Package sweeper removes what offload attempts leave behind in the object
// store: objects no managed ledger references, objects of failed or
// superseded attempts, and incomplete multipart uploads.
//
// # Safety
//
// A sweep lists the store first and reads the references (every ledger's
// recorded attempt UUID, prepared or complete, from a fresh scan of the
// managed ledgers) second. An attempt's objects are only written after its
// UUID is recorded (prepare, docs/design.md invariant 4), so any object the
// listing saw belongs to an attempt that the later scan sees, unless the
// attempt was really replaced or its ledger is gone. Hence:
//
//   - an object or upload whose (UUID, ledger) a managed ledger records is
//     never touched, whatever its age;
//   - a key that is not an offload object ("<uuid>-ledger-<id>[-index]")
//     is never touched;
//   - anything else is deleted only when older than Options.Grace;
//   - when the scan could not read every managed ledger, nothing is deleted
//     (the missing one might reference anything): the sweep reports and
//     keeps all;
//   - when the scan found no managed ledger at all, nothing is deleted
//     either (ErrNoManagedLedgers): every object would look orphaned, and a
//     wrong ZooKeeper address or chroot gives exactly that view.
//
// The bucket must be this Pulsar cluster's alone: objects of another
// cluster's managed ledgers look unreferenced here.
package sweeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
)

// ErrIncompleteRefs is returned (with a Result that deleted nothing) when
// the references could not be read completely.
var ErrIncompleteRefs = errors.New("sweeper: managed ledgers not all readable; nothing deleted")

// ErrNoManagedLedgers (which is also ErrIncompleteRefs) is returned, with
// a Result that deleted nothing, when the scan found no managed ledger at
// all while the store holds offload objects or uploads it would remove:
// every object would look orphaned, and an empty view is far likelier a
// wrong ZooKeeper address or chroot than a cluster whose topics are all
// gone.
var ErrNoManagedLedgers = fmt.Errorf("%w: no managed ledger found (is this the Pulsar cluster's ZooKeeper and managed-ledger chroot?)", ErrIncompleteRefs)

// Refs returns the managed ledgers to take references from. It must read
// them after it is called (not a cached view older than the listing);
// unreadable names a managed ledger that could not be read.
type Refs func(ctx context.Context) (topics []policy.Topic, unreadable []string, err error)

// Options configure Sweep.
type Options struct {
	// Grace is the least age (LastModified / Initiated) of an unreferenced
	// object or upload before it is removed. Default 24h.
	Grace time.Duration
	// DryRun counts what would be removed and removes nothing.
	DryRun bool
	// Now is the clock. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Registerer receives tierkeeper_offloader_sweeper_* metrics.
	Registerer prometheus.Registerer
}

// Reasons an object or upload is removed or kept.
const (
	ReasonReferenced = "referenced"  // a managed ledger records its attempt
	ReasonForeign    = "foreign"     // not an offload object key
	ReasonYoung      = "young"       // unreferenced but within the grace period
	ReasonSuperseded = "superseded"  // its ledger records another attempt
	ReasonOrphan     = "orphan"      // no managed ledger lists its ledger
	ReasonIncomplete = "incomplete"  // an unfinished multipart upload
	ReasonUnknown    = "refs-unread" // kept: references incomplete
)

// Item is one object or upload the sweep decided about.
type Item struct {
	Key      string    `json:"key"`
	UploadID string    `json:"uploadId,omitempty"`
	Size     int64     `json:"size,omitempty"`
	Modified time.Time `json:"modified"`
	Reason   string    `json:"reason"`
	// Deleted is set when removed (never in a dry run).
	Deleted bool   `json:"deleted"`
	Error   string `json:"error,omitempty"`
}

// Result counts a sweep's decisions.
type Result struct {
	DryRun bool `json:"dryRun"`
	// Objects and Uploads are what the listings returned.
	Objects int `json:"objects"`
	Uploads int `json:"uploads"`
	// Kept and Removed count by reason; Removed holds what a dry run
	// would remove.
	Kept         map[string]int `json:"kept"`
	Removed      map[string]int `json:"removed"`
	RemovedBytes int64          `json:"removedBytes"`
	// Items lists every removal (or would-be removal) and every error.
	Items  []Item `json:"items"`
	Errors int    `json:"errors"`
}

// Sweeper sweeps one store.
type Sweeper struct {
	store blob.Store
	refs  Refs
	o     Options
	log   *slog.Logger

	deleted *prometheus.CounterVec
	kept    *prometheus.GaugeVec
	runs    *prometheus.CounterVec
}

// New returns a Sweeper of store.
func New(store blob.Store, refs Refs, o Options) *Sweeper {
	if o.Grace <= 0 {
		o.Grace = 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	f := metrics.New(o.Registerer, "offloader")
	removeReasons := metrics.Label{Name: "reason", Values: []string{ReasonSuperseded, ReasonOrphan, ReasonIncomplete}}
	return &Sweeper{
		store: store, refs: refs, o: o, log: o.Logger.With("component", "sweeper"),
		deleted: f.CounterVec("sweeper_deleted_total", "Objects and incomplete uploads the sweeper removed, by reason.", removeReasons),
		kept: f.GaugeVec("sweeper_kept", "Objects and uploads the last sweep kept, by reason.",
			metrics.Label{Name: "reason", Values: []string{ReasonReferenced, ReasonForeign, ReasonYoung, ReasonUnknown}}),
		runs: f.CounterVec("sweeper_runs_total", "Sweeps by result (ok, refs-incomplete, error).",
			metrics.Label{Name: "result", Values: []string{"ok", "refs-incomplete", "error"}}),
	}
}

type ref struct {
	attempt  uuid.UUID
	complete bool
}

// Sweep runs one sweep.
func (s *Sweeper) Sweep(ctx context.Context) (Result, error) {
	res, err := s.sweep(ctx)
	switch {
	case errors.Is(err, ErrIncompleteRefs):
		s.runs.WithLabelValues("refs-incomplete").Inc()
	case err != nil:
		s.runs.WithLabelValues("error").Inc()
	default:
		s.runs.WithLabelValues("ok").Inc()
	}
	for _, r := range []string{ReasonReferenced, ReasonForeign, ReasonYoung, ReasonUnknown} {
		s.kept.WithLabelValues(r).Set(float64(res.Kept[r]))
	}
	return res, err
}

func (s *Sweeper) sweep(ctx context.Context) (Result, error) {
	res := Result{DryRun: s.o.DryRun, Kept: map[string]int{}, Removed: map[string]int{}, Items: []Item{}}
	// 1. List first.
	var objs []blob.Attrs
	if err := s.store.Iter(ctx, "", func(a blob.Attrs) error {
		objs = append(objs, a)
		return nil
	}); err != nil {
		return res, fmt.Errorf("sweeper: list %s: %w", s.store.Name(), err)
	}
	var uploads []blob.Upload
	ml, canList := s.store.(blob.MultipartLister)
	if canList {
		u, err := ml.ListMultipart(ctx, "")
		if err != nil {
			return res, fmt.Errorf("sweeper: list multipart uploads of %s: %w", s.store.Name(), err)
		}
		uploads = u
	}
	res.Objects, res.Uploads = len(objs), len(uploads)
	// 2. Then read the references.
	topics, unreadable, err := s.refs(ctx)
	if err != nil {
		return res, fmt.Errorf("sweeper: read managed ledgers: %w", err)
	}
	refs := map[int64]ref{}
	known := map[int64]bool{}
	for _, t := range topics {
		for _, l := range t.Ledgers {
			known[l.ID] = true
			if l.Attempt != uuid.Nil {
				refs[l.ID] = ref{attempt: l.Attempt, complete: !l.OffloadedAt.IsZero()}
			}
		}
	}
	incomplete := len(unreadable) > 0
	// No managed ledger at all: removals are held back (ErrNoManagedLedgers).
	noRefs := len(topics) == 0 && !incomplete
	held := 0
	hold := func() bool {
		if noRefs {
			held++
			res.Kept[ReasonUnknown]++
		}
		return noRefs
	}
	now := s.o.Now()
	decide := func(key string, modified time.Time) string {
		id, ledger, _, err := format.ParseKey(key)
		if err != nil {
			return ReasonForeign
		}
		if r, ok := refs[ledger]; ok && r.attempt == id {
			return ReasonReferenced
		}
		if incomplete {
			return ReasonUnknown
		}
		if now.Sub(modified) < s.o.Grace {
			return ReasonYoung
		}
		if known[ledger] {
			return ReasonSuperseded
		}
		return ReasonOrphan
	}
	for _, a := range objs {
		reason := decide(a.Key, a.LastModified)
		switch reason {
		case ReasonReferenced, ReasonForeign, ReasonYoung, ReasonUnknown:
			res.Kept[reason]++
			continue
		}
		if hold() {
			continue
		}
		it := Item{Key: a.Key, Size: a.Size, Modified: a.LastModified, Reason: reason}
		res.Removed[reason]++
		res.RemovedBytes += a.Size
		if !s.o.DryRun {
			if err := s.store.Delete(ctx, a.Key); err != nil {
				it.Error = err.Error()
				res.Errors++
				s.log.Warn("delete failed", "key", a.Key, "reason", reason, "err", err)
				if ctx.Err() != nil {
					res.Items = append(res.Items, it)
					return res, ctx.Err()
				}
			} else {
				it.Deleted = true
				s.deleted.WithLabelValues(reason).Inc()
				s.log.Info("deleted", "key", a.Key, "reason", reason, "bytes", a.Size)
			}
		}
		res.Items = append(res.Items, it)
	}
	for _, u := range uploads {
		reason := decide(u.Key, u.Initiated)
		if reason == ReasonSuperseded || reason == ReasonOrphan {
			reason = ReasonIncomplete
		} else if reason == ReasonReferenced {
			// A recorded attempt's upload may be running: keep it, unless
			// the attempt is complete (its object exists; the upload is a
			// left-over duplicate) and it is past the grace period.
			_, ledger, _, _ := format.ParseKey(u.Key)
			if refs[ledger].complete && now.Sub(u.Initiated) >= s.o.Grace {
				reason = ReasonIncomplete
			}
		}
		if reason != ReasonIncomplete {
			res.Kept[reason]++
			continue
		}
		if hold() {
			continue
		}
		it := Item{Key: u.Key, UploadID: u.UploadID, Modified: u.Initiated, Reason: reason}
		res.Removed[reason]++
		if !s.o.DryRun {
			if err := ml.AbortMultipart(ctx, u.Key, u.UploadID); err != nil && !errors.Is(err, blob.ErrNotFound) {
				it.Error = err.Error()
				res.Errors++
				s.log.Warn("abort failed", "key", u.Key, "upload", u.UploadID, "err", err)
			} else {
				it.Deleted = true
				s.deleted.WithLabelValues(reason).Inc()
				s.log.Info("aborted incomplete upload", "key", u.Key, "upload", u.UploadID, "initiated", u.Initiated)
			}
		}
		res.Items = append(res.Items, it)
	}
	if incomplete {
		return res, fmt.Errorf("%w (%d unreadable, e.g. %s)", ErrIncompleteRefs, len(unreadable), unreadable[0])
	}
	if held > 0 {
		s.log.Warn("no managed ledger found: nothing deleted", "held", held)
		return res, fmt.Errorf("%w; %d objects and uploads would have been removed as unreferenced", ErrNoManagedLedgers, held)
	}
	return res, nil
}
