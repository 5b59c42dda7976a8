// Package scrub checks that every committed offload is still readable
// from the object store, repairs the ones that are not while BookKeeper
// still holds the ledger, and reports the ones that are lost.
//
// # What is checked
//
// For every ledger whose OffloadContext is complete, with two store
// requests (pipeline.CheckObjects: a HEAD of the data object, a GET of
// the index; a missing object is confirmed by a listing of its key, so a
// missing bucket is not taken for missing objects): both objects exist
// with format version 1, the index parses
// and describes the managed ledger's entries and bytes, the data object
// is as long as the index says. The BookKeeper metadata is read too (a
// ZooKeeper read, no store request). With Options.Deep every entry is
// also compared with BookKeeper while it has the ledger (the pipeline's
// verification), or, once BookKeeper no longer has it, the whole data
// object is decoded against its index.
//
// # Verdicts
//
//	ok             objects whole
//	foreign        the context names a bucket this offloader does not read:
//	               not checked (reported)
//	repair         objects missing or wrong, BookKeeper still has the ledger,
//	               closed and equal to the managed ledger's entries and bytes:
//	               Repair clears the offload context (compare-and-set, the
//	               attempt named), reloads the topic so brokers read
//	               BookKeeper again; the ledger is then offloaded again
//	lost           objects missing or wrong and the BookKeeper ledger is
//	               gone: no copy a broker can read. Nothing is written; the
//	               metric tierkeeper_scrub_lost_ledgers and the alert
//	               TierkeeperScrubLostLedgers say so
//	mismatch       objects missing or wrong, the BookKeeper ledger exists
//	               but is not closed or differs from the managed ledger: no
//	               repair (nothing trustworthy to fall back to), reported
//	trim-leftover  bookkeeperDeleted is set, the objects are whole and the
//	               BookKeeper ledger still exists (a delete that never
//	               happened; the broker skips such ledgers): the pipeline's
//	               trim finishes the delete, after its own checks
//	unknown        the store, ZooKeeper or the bookies did not answer:
//	               nothing is known, nothing is done
//
// A decision is never taken on an old read: Repair checks the ledger
// again, on a fresh read, right before its write, and the write names the
// attempt it clears, so a newer attempt is never touched.
package scrub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/metrics"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Verdict is what a check found about one committed ledger.
type Verdict string

// Verdicts (see the package documentation).
const (
	VerdictOK           Verdict = "ok"
	VerdictForeign      Verdict = "foreign"
	VerdictRepair       Verdict = "repair"
	VerdictLost         Verdict = "lost"
	VerdictMismatch     Verdict = "mismatch"
	VerdictTrimLeftover Verdict = "trim-leftover"
	VerdictUnknown      Verdict = "unknown"
)

// Verdicts lists every verdict (metric labels).
var Verdicts = []Verdict{VerdictOK, VerdictForeign, VerdictRepair, VerdictLost, VerdictMismatch, VerdictTrimLeftover, VerdictUnknown}

// Finding is one committed ledger's check, and what was done about it.
type Finding struct {
	ML       string    `json:"managedLedger"`
	LedgerID int64     `json:"ledgerId"`
	UUID     uuid.UUID `json:"uuid"`
	Bucket   string    `json:"bucket"`
	Entries  int64     `json:"entries"`
	Bytes    int64     `json:"bytes"`
	// BKDeleted is the stored bookkeeperDeleted mark; BKExists whether
	// the BookKeeper ledger exists (unknown with VerdictUnknown).
	BKDeleted bool    `json:"bookkeeperDeleted"`
	BKExists  bool    `json:"bookkeeperExists"`
	Verdict   Verdict `json:"verdict"`
	// Deep: the entries were compared too (Level says how).
	Deep  bool   `json:"deep,omitempty"`
	Level string `json:"level,omitempty"`
	// Detail says what is wrong, in words.
	Detail string `json:"detail,omitempty"`
	// Requests counts the store requests of the check.
	Requests int `json:"requests"`
	// Action is what was done: "" (nothing), "cleared" (context cleared:
	// the repair's write), "reloaded", "reoffloaded", "trimmed", or why
	// nothing was done ("dry-run", "leased by r2", an error).
	Action string `json:"action,omitempty"`
	// Repaired: the context was cleared; the brokers read BookKeeper.
	Repaired bool `json:"repaired,omitempty"`
	// Reload is the note of the reload after a repair.
	Reload string `json:"reload,omitempty"`
}

// NeedsWrite says whether the finding asks for a write (repair or trim).
func (f Finding) NeedsWrite() bool {
	return f.Verdict == VerdictRepair || f.Verdict == VerdictTrimLeftover
}

// Deps are what a Scrubber reads and writes.
type Deps struct {
	// ML reads managed ledgers and writes a repair's compare-and-set.
	// Required.
	ML *mledger.Store
	// Ledgers reads BookKeeper ledger metadata. Required.
	Ledgers pipeline.LedgerStore
	// Store holds the objects. Required; wrap it with the shared
	// blob.Limiter so scrubbing shares the process's bytes/s and
	// requests/s with the offloads.
	Store blob.Store
	// Verifier compares entries with BookKeeper (Options.Deep); its
	// Options.Driver.Bucket is the bucket this offloader reads. Required.
	Verifier *pipeline.Pipeline
	// Broker, when set, is told to reload a topic after a repair. Without
	// it the brokers switch to BookKeeper at their next write to the
	// managed ledger (the repair bumped its version).
	Broker pipeline.Broker
	// Logger: default discard. Registerer: tierkeeper_scrub_* (nil: none).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Options tune a Scrubber.
type Options struct {
	// Deep compares every entry with BookKeeper (or decodes the whole
	// data object once BookKeeper no longer has the ledger).
	Deep bool
	// LedgersPerSecond bounds the ledgers checked per second (0:
	// unbounded; the store's own limiter still applies).
	LedgersPerSecond float64
	// CallTimeout bounds each ledger's check and each repair write and
	// reload. Default 2m (deep checks read whole ledgers: give more).
	CallTimeout time.Duration
}

// Scrubber checks and repairs committed ledgers. Safe for concurrent use.
type Scrubber struct {
	d      Deps
	o      Options
	bucket string
	log    *slog.Logger
	lim    *rate.Limiter

	checked     *prometheus.CounterVec
	requests    prometheus.Counter
	repaired    prometheus.Counter
	lostG       prometheus.Gauge
	pendingG    prometheus.Gauge
	passEnd     prometheus.Gauge
	passSeconds prometheus.Gauge

	mu      sync.Mutex
	lost    map[key]Finding
	pending map[key]Finding
}

type key struct {
	ml string
	id int64
}

// ErrConfig: a required dependency is missing.
var ErrConfig = errors.New("scrub: missing dependency")

// ErrLeased: another replica holds the topic; it was checked, not
// repaired.
var ErrLeased = errors.New("scrub: topic leased by another replica; not repaired")

// New returns a Scrubber.
func New(d Deps, o Options) (*Scrubber, error) {
	if d.ML == nil || d.Ledgers == nil || d.Store == nil || d.Verifier == nil {
		return nil, fmt.Errorf("%w: ML, Ledgers, Store and Verifier are required", ErrConfig)
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Minute
	}
	s := &Scrubber{d: d, o: o, bucket: d.Verifier.Options().Driver.Bucket, log: d.Logger.With("component", "scrub"),
		lost: map[key]Finding{}, pending: map[key]Finding{}}
	if o.LedgersPerSecond > 0 {
		s.lim = rate.NewLimiter(rate.Limit(o.LedgersPerSecond), 1)
	}
	vs := make([]string, len(Verdicts))
	for i, v := range Verdicts {
		vs[i] = string(v)
	}
	f := metrics.New(d.Registerer, "scrub")
	s.checked = f.CounterVec("ledgers_total", "Committed ledgers checked by the scrubber, by verdict.", metrics.Label{Name: "verdict", Values: vs})
	s.requests = f.Counter("requests_total", "Object store requests made by the scrubber's checks.")
	s.repaired = f.Counter("repaired_total", "Committed ledgers whose offload context the scrubber cleared (objects bad, BookKeeper copy present).")
	s.lostG = f.Gauge("lost_ledgers", "Committed ledgers whose objects are missing or wrong and whose BookKeeper copy is gone (as last checked).")
	s.pendingG = f.Gauge("repair_pending_ledgers", "Committed ledgers found needing a repair, a finished trim, or a look (mismatch), not yet done.")
	s.passEnd = f.Gauge("last_pass_end_timestamp_seconds", "When the service's scrubber last finished a pass over every committed ledger (Unix time; 0: never).")
	s.passSeconds = f.Gauge("last_pass_duration_seconds", "Duration of the service scrubber's last complete pass.")
	if err := f.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// Bucket is the bucket the scrubber checks (other buckets are foreign).
func (s *Scrubber) Bucket() string { return s.bucket }

// CheckTopic checks the committed ledgers of managed ledger ml (only
// those of ids, when given). It writes nothing. The error is for the
// managed ledger as a whole (unreadable); each ledger's trouble is in its
// finding.
func (s *Scrubber) CheckTopic(ctx context.Context, ml string, ids []int64) ([]Finding, error) {
	snap, err := s.d.ML.Get(ctx, ml)
	if err != nil {
		return nil, err
	}
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []Finding
	for _, li := range snap.Info.GetLedgerInfo() {
		if !li.GetOffloadContext().GetComplete() || (len(ids) > 0 && !want[li.GetLedgerId()]) {
			continue
		}
		if s.lim != nil {
			if err := s.lim.Wait(ctx); err != nil {
				return out, err
			}
		}
		f := s.check(ctx, ml, li)
		s.note(f)
		out = append(out, f)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// check decides one committed ledger.
func (s *Scrubber) check(ctx context.Context, ml string, li *pipeline.LedgerInfo) Finding {
	ctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
	defer cancel()
	oc := li.GetOffloadContext()
	id, _ := mledger.AttemptUUID(oc)
	f := Finding{ML: ml, LedgerID: li.GetLedgerId(), UUID: id, Bucket: mledger.DriverFromMetadata(oc.GetDriverMetadata()).Bucket,
		Entries: li.GetEntries(), Bytes: li.GetSize(), BKDeleted: oc.GetBookkeeperDeleted()}
	defer func() { s.requests.Add(float64(f.Requests)) }()
	if f.Bucket != s.bucket {
		f.Verdict, f.Detail = VerdictForeign, fmt.Sprintf("objects recorded in bucket %q; this offloader reads %q", f.Bucket, s.bucket)
		return f
	}
	rep, objErr := pipeline.CheckObjects(ctx, s.d.Store, id, f.LedgerID, f.Entries-1, f.Bytes)
	f.Requests += rep.Requests
	if objErr != nil && !errors.Is(objErr, pipeline.ErrVerify) {
		f.Verdict, f.Detail = VerdictUnknown, "store: "+objErr.Error()
		return f
	}
	if errors.Is(objErr, blob.ErrNotFound) {
		// A missing bucket or a store answering "not found" to everything
		// must not look like missing objects: the bucket must list.
		f.Requests++
		if err := s.d.Store.Iter(ctx, rep.DataKey, func(blob.Attrs) error { return nil }); err != nil {
			f.Verdict, f.Detail = VerdictUnknown, fmt.Sprintf("%v; and the bucket does not list (%v): nothing is concluded", objErr, err)
			return f
		}
	}
	md, err := s.d.Ledgers.ReadLedger(ctx, f.LedgerID)
	switch {
	case errors.Is(err, metadata.ErrNoSuchLedger):
	case err != nil:
		f.Verdict, f.Detail = VerdictUnknown, "BookKeeper metadata: "+err.Error()
		return f
	default:
		f.BKExists = true
	}
	if objErr == nil && s.o.Deep {
		f.Deep = true
		vr, err := s.d.Verifier.VerifyLedger(ctx, mledger.LedgerRef{ML: ml, LedgerID: f.LedgerID}, pipeline.VerifyOptions{Full: true})
		f.Level = vr.Level
		// Blocks read back: at least one ranged GET each, plus the index.
		f.Requests += 1 + vr.Blocks
		if err != nil && !errors.Is(err, pipeline.ErrVerify) {
			f.Verdict, f.Detail = VerdictUnknown, "deep check: "+err.Error()
			return f
		}
		objErr = err
	}
	bkMatches := md != nil && md.Closed() && md.LastEntryID == f.Entries-1 && md.Length == f.Bytes
	switch {
	case objErr == nil && f.BKDeleted && f.BKExists:
		f.Verdict, f.Detail = VerdictTrimLeftover, "bookkeeperDeleted is set but the BookKeeper ledger still exists"
	case objErr == nil:
		f.Verdict = VerdictOK
	case !f.BKExists:
		f.Verdict, f.Detail = VerdictLost, objErr.Error()+"; the BookKeeper ledger is gone: no readable copy"
	case !bkMatches:
		f.Verdict = VerdictMismatch
		f.Detail = fmt.Sprintf("%v; BookKeeper has the ledger %s with last entry %d / %d bytes, the managed ledger %d / %d: not repaired",
			objErr, md.State, md.LastEntryID, md.Length, f.Entries-1, f.Bytes)
	default:
		f.Verdict, f.Detail = VerdictRepair, objErr.Error()
	}
	return f
}

// note counts f and keeps the lost and pending sets (metrics, Lost,
// Pending) current.
func (s *Scrubber) note(f Finding) {
	s.checked.WithLabelValues(string(f.Verdict)).Inc()
	k := key{f.ML, f.LedgerID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Verdict == VerdictUnknown {
		return // keep what was known
	}
	_, known := s.lost[k]
	delete(s.lost, k)
	delete(s.pending, k)
	switch f.Verdict {
	case VerdictLost:
		s.lost[k] = f
		lvl := slog.LevelError
		if known {
			lvl = slog.LevelWarn // logged at error when first found
		}
		s.log.Log(context.Background(), lvl, "offloaded ledger lost: objects missing or wrong and no BookKeeper copy", "ml", f.ML, "ledger", f.LedgerID,
			"uuid", f.UUID, "bucket", f.Bucket, "detail", f.Detail)
	case VerdictRepair, VerdictTrimLeftover, VerdictMismatch:
		s.pending[k] = f
		s.log.Warn("offloaded ledger needs attention", "ml", f.ML, "ledger", f.LedgerID, "verdict", f.Verdict, "detail", f.Detail)
	}
	s.lostG.Set(float64(len(s.lost)))
	s.pendingG.Set(float64(len(s.pending)))
}

// forget drops ledgers of ml that a repair or trim dealt with.
func (s *Scrubber) forget(ml string, ids []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.pending, key{ml, id})
		delete(s.lost, key{ml, id})
	}
	s.lostG.Set(float64(len(s.lost)))
	s.pendingG.Set(float64(len(s.pending)))
}

// Lost returns the ledgers last found lost.
func (s *Scrubber) Lost() []Finding { return s.list(s.lost) }

// Pending returns the ledgers last found needing a repair, a finished
// trim, or a look (mismatch), not yet done.
func (s *Scrubber) Pending() []Finding { return s.list(s.pending) }

func (s *Scrubber) list(m map[key]Finding) []Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Finding, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	sortFindings(out)
	return out
}

// Repair checks the given ledgers of ml again and, for those that still
// need it (VerdictRepair), clears their offload context in one
// compare-and-set through mledger (each edit names the attempt it clears,
// so a newer attempt is left alone), then reloads the topic. Run it under
// the topic's lease. Nothing is written for any other verdict; a ledger
// whose BookKeeper copy is gone is never repaired. The returned findings
// are the fresh checks with Action and Repaired set.
func (s *Scrubber) Repair(ctx context.Context, ml string, ids []int64) ([]Finding, error) {
	fs, err := s.CheckTopic(ctx, ml, ids)
	if err != nil {
		return fs, err
	}
	var edits []mledger.Edit
	var idx []int
	for i, f := range fs {
		if f.Verdict == VerdictRepair {
			edits = append(edits, mledger.ClearOffloadEdit(f.LedgerID, f.UUID))
			idx = append(idx, i)
		}
	}
	if len(edits) == 0 {
		return fs, nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
	defer cancel()
	br, err := s.d.ML.UpdateOffloadContexts(wctx, ml, edits)
	if err != nil {
		for _, i := range idx {
			fs[i].Action = "not repaired: " + err.Error()
		}
		return fs, fmt.Errorf("scrub: repair %s: %w", ml, err)
	}
	var cleared, repaired []int64
	var errs []error
	for j, lu := range br.Ledgers {
		f := &fs[idx[j]]
		if lu.Err != nil {
			f.Action = "not repaired: " + lu.Err.Error()
			errs = append(errs, lu.Err)
			continue
		}
		cleared = append(cleared, f.LedgerID)
		// A deleter that marked the ledger bookkeeperDeleted (the broker
		// deletes right after its mark lands, whatever came after it) may
		// have deleted the BookKeeper copy since the check; the clear then
		// left no readable copy and no complete context for a later pass
		// to find: check again, and report it lost.
		if gone, err := s.bkGone(ctx, f.LedgerID); err != nil || gone {
			f.Verdict = VerdictLost
			f.Action = "cleared, but the BookKeeper ledger is gone: deleted since the check by a deleter that had marked it bookkeeperDeleted; no readable copy"
			if err != nil {
				f.Verdict = VerdictUnknown
				f.Action = "cleared, but whether the BookKeeper ledger still exists is not known: " + err.Error()
			}
			s.note(*f)
			errs = append(errs, fmt.Errorf("scrub: %s ledger %d: %s", ml, f.LedgerID, f.Action))
			s.log.Error("offload context cleared, BookKeeper copy gone", "ml", ml, "ledger", f.LedgerID, "uuid", f.UUID, "detail", f.Detail, "err", err)
			continue
		}
		f.Action, f.Repaired = "cleared", true
		repaired = append(repaired, f.LedgerID)
		s.repaired.Inc()
		s.log.Warn("offload context cleared: objects missing or wrong, brokers read BookKeeper again", "ml", ml, "ledger", f.LedgerID,
			"uuid", f.UUID, "detail", f.Detail)
	}
	s.forget(ml, repaired)
	if len(cleared) > 0 {
		note, err := s.reload(ctx, ml)
		for _, i := range idx {
			if slices.Contains(cleared, fs[i].LedgerID) {
				fs[i].Reload = note
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return fs, errors.Join(errs...)
}

// bkGone reports whether BookKeeper no longer has ledger id.
func (s *Scrubber) bkGone(ctx context.Context, id int64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
	defer cancel()
	_, err := s.d.Ledgers.ReadLedger(ctx, id)
	if errors.Is(err, metadata.ErrNoSuchLedger) {
		return true, nil
	}
	return false, err
}

// reload unloads the topic so its broker reads the cleared contexts.
func (s *Scrubber) reload(ctx context.Context, ml string) (string, error) {
	if s.d.Broker == nil {
		return pipeline.NoBrokerNote, nil
	}
	tn, err := mledger.ParseMLName(ml)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
	defer cancel()
	if err := s.d.Broker.Unload(ctx, tn); err != nil {
		return "unload failed: " + err.Error(), fmt.Errorf("scrub: reload %s after the repair (the broker reloads at its next write): %w", ml, err)
	}
	return "unloaded", nil
}

// Forget drops ml's ledgers ids from the pending set (a trim finished
// them).
func (s *Scrubber) Forget(ml string, ids []int64) { s.forget(ml, ids) }

// PassDone records the end of a pass over every committed ledger
// (tierkeeper_scrub_last_pass_*).
func (s *Scrubber) PassDone(r *Report) {
	s.passEnd.Set(float64(time.Now().Unix()))
	s.passSeconds.Set(r.Seconds)
}
