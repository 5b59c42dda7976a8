package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/format/upload"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Step names a step of the state machine.
type Step string

// Steps, in order.
const (
	StepSelect  Step = "select"
	StepPrepare Step = "prepare"
	StepCopy    Step = "copy"
	StepVerify  Step = "verify"
	StepCommit  Step = "commit"
	StepReload  Step = "reload"
	StepTrim    Step = "trim"
)

// LedgerStore reads BookKeeper ledger metadata and compare-and-deletes
// ledgers; *metadata.Store implements it.
type LedgerStore interface {
	ReadLedger(ctx context.Context, id int64) (*metadata.LedgerMetadata, error)
	DeleteLedger(ctx context.Context, id int64, want metadata.Expect) (metadata.DeleteResult, error)
}

// Bookies opens ledgers for reading; *client.Client implements it.
type Bookies interface {
	OpenReader(md *metadata.LedgerMetadata) (client.Reader, error)
}

// Broker is the broker admin API the reload step uses;
// *brokeradmin.Client implements it.
type Broker interface {
	Unload(ctx context.Context, t mledger.TopicName) error
	InternalStats(ctx context.Context, t mledger.TopicName) (*brokeradmin.InternalStats, error)
}

var (
	_ LedgerStore = (*metadata.Store)(nil)
	_ Bookies     = (*client.Client)(nil)
	_ Broker      = (*brokeradmin.Client)(nil)
)

// Observer receives progress and step outcomes (progress bars, metrics).
// Calls for one ledger come from one goroutine; implementations shared by
// concurrent pipelines must be safe for concurrent use. Embed NopObserver
// to implement only some methods.
type Observer interface {
	// StepStarted is called when a step begins.
	StepStarted(t mledger.LedgerRef, s Step)
	// StepDone is called when a step ends, with its error (nil: done).
	StepDone(t mledger.LedgerRef, s Step, d time.Duration, err error)
	// Copied reports the payload bytes handed to the upload so far
	// (of total, the ledger length).
	Copied(t mledger.LedgerRef, bytes, total int64)
	// Verified reports the payload bytes read back and compared so far
	// (of total, the bytes the verification will read).
	Verified(t mledger.LedgerRef, bytes, total int64)
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) StepStarted(mledger.LedgerRef, Step)                    {}
func (NopObserver) StepDone(mledger.LedgerRef, Step, time.Duration, error) {}
func (NopObserver) Copied(mledger.LedgerRef, int64, int64)                 {}
func (NopObserver) Verified(mledger.LedgerRef, int64, int64)               {}

// Deps are the servers and shared resources a Pipeline uses.
type Deps struct {
	// ML reads and compare-and-sets managed-ledger metadata. Required.
	ML *mledger.Store
	// Ledgers reads BookKeeper metadata and deletes ledgers. Required.
	Ledgers LedgerStore
	// Bookies reads entries. Required.
	Bookies Bookies
	// Store receives the objects. Required. Wrap it with the shared
	// blob.Limiter (blob.Limited, or the provider's Limiter option) to cap
	// bytes/s and requests/s.
	Store blob.Store
	// Broker, when set, is told to reload topics after commits.
	Broker Broker
	// Pool supplies block buffers; share one Pool between concurrent
	// pipelines to bound their memory together (its BlockSize must be at
	// least Options.BlockSize). Nil: each ledger gets PartsInFlight+1
	// buffers of its own.
	Pool *format.Pool
	// Failpoints, when set, is called at every failpoint.
	Failpoints Failpoints
	// Observer receives progress. Default NopObserver.
	Observer Observer
	// Logger receives one info line per step outcome. Default: discard.
	Logger *slog.Logger
	// Registerer receives the upload metrics (tierkeeper_upload_*) and
	// the copy's phases (tierkeeper_pipeline_copy_seconds_total);
	// pipelines sharing it share the series. Default: none.
	Registerer prometheus.Registerer
	// Now is the clock (deletion lag). Default time.Now.
	Now func() time.Time
}

// Options tune a Pipeline. The zero value gives the defaults.
type Options struct {
	// Driver is the driver metadata recorded in every OffloadContext
	// (DriverForStore). Required.
	Driver mledger.Driver
	// BlockSize is the data block (= multipart part) size. Default
	// DefaultBlockSize. Stock brokers read any block size.
	BlockSize int
	// PartsInFlight is the parts uploading at once per ledger (default 2).
	PartsInFlight int
	// ReadWindowBytes bounds the BookKeeper reads in flight per ledger, in
	// expected payload bytes (default the block size, at most 16 MiB: the
	// window is the one buffer besides the blocks that grows with the
	// entries).
	ReadWindowBytes int64
	// FullVerifyBytes: ledgers up to this length are compared entry by
	// entry in full after the upload; longer ones in three windows of
	// about one block each (first entries, a random place, last entries).
	// Default DefaultFullVerifyBytes.
	FullVerifyBytes int64
	// AlwaysSample compares every ledger in the three windows, whatever
	// its length (the policy's verify level "index").
	AlwaysSample bool
	// Info is the informational object metadata (software version,
	// cluster name).
	Info format.ObjectInfo
	// Trim deletes the BookKeeper copy once the deletion lag has passed
	// since the commit (OffloadContext.timestamp) and the broker is known
	// to serve the ledger from the object store.
	Trim bool
	// DeletionLag is the minimum time between commit and trim.
	DeletionLag time.Duration
	// TrimWithoutReload allows Trim without a Broker: only safe when no
	// broker has the topic loaded with the old metadata.
	TrimWithoutReload bool
	// SkipReload leaves the broker alone even when Deps.Broker is set.
	SkipReload bool
	// BatchBytes bounds the ledgers RunTopic copies between two metadata
	// writes: the ledgers of one call are prepared in one compare-and-set
	// and committed in one, in batches of at most this many payload bytes
	// (at least one ledger each), so a long run commits as it goes.
	// Default DefaultBatchBytes.
	BatchBytes int64
}

// Defaults.
const (
	// DefaultBlockSize is tierkeeper's block (= multipart part) size:
	// 10 MiB. Measured with Pulsar's own reader (make bench-offload,
	// docs/offload.md): a random seek into a ledger fetches 5.8x fewer
	// bytes than with Pulsar's 64 MiB default, a sequential read 1.09x the
	// bytes (its 1 MiB read buffer is fetched again at every block) in the
	// same time. Stock brokers read any block size.
	DefaultBlockSize = 10 << 20
	// DefaultFullVerifyBytes is the largest ledger verified entry by entry
	// in full (256 MiB).
	DefaultFullVerifyBytes = 256 << 20
	// DefaultReadWindowBytes caps the BookKeeper reads in flight per ledger.
	DefaultReadWindowBytes = 16 << 20
	// DefaultBatchBytes is the default Options.BatchBytes (4 GiB: under a
	// minute of copying at the measured pipeline rate).
	DefaultBatchBytes = 4 << 30
)

// MemoryBound is the memory one ledger's pipeline holds at most, by
// construction: the block buffers (PartsInFlight uploading, one being
// filled) and the BookKeeper read window. A process running one pipeline
// at a time can set its Go memory limit from it (the offload command does).
func (o Options) MemoryBound() int64 {
	return int64(o.PartsInFlight+1)*int64(o.BlockSize) + o.ReadWindowBytes
}

// Pipeline offloads ledgers. Safe for concurrent use on different
// managed ledgers; serialize the ledgers of one managed ledger (RunTopic
// does).
type Pipeline struct {
	d    Deps
	o    Options
	upo  upload.Options
	log  *slog.Logger
	obs  Observer
	m    *copyMetrics
	rand func(n int64) int64
}

// New checks deps and opts and returns a Pipeline.
func New(d Deps, o Options) (*Pipeline, error) {
	switch {
	case d.ML == nil || d.Ledgers == nil || d.Bookies == nil || d.Store == nil:
		return nil, errors.New("pipeline: Deps.ML, Ledgers, Bookies and Store are required")
	case o.Trim && d.Broker == nil && !o.TrimWithoutReload:
		return nil, fmt.Errorf("%w: trimming needs a broker admin URL, to be sure the broker no longer reads the ledgers from BookKeeper (or TrimWithoutReload)", ErrTrimRefused)
	case o.DeletionLag < 0:
		return nil, fmt.Errorf("pipeline: negative deletion lag %s", o.DeletionLag)
	case o.FullVerifyBytes < 0:
		return nil, fmt.Errorf("pipeline: negative FullVerifyBytes %d (AlwaysSample samples every ledger)", o.FullVerifyBytes)
	}
	if _, err := o.Driver.Metadata(); err != nil {
		return nil, fmt.Errorf("pipeline: driver: %w", err)
	}
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.PartsInFlight <= 0 {
		o.PartsInFlight = 2
	}
	if o.ReadWindowBytes <= 0 {
		o.ReadWindowBytes = min(DefaultReadWindowBytes, int64(o.BlockSize))
	}
	if o.FullVerifyBytes == 0 {
		o.FullVerifyBytes = DefaultFullVerifyBytes
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if d.Observer == nil {
		d.Observer = NopObserver{}
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	upo := upload.Options{
		MaxBlockSize: o.BlockSize, PartsInFlight: o.PartsInFlight, Pool: d.Pool, Info: o.Info,
		Logger: d.Logger, Registerer: d.Registerer,
	}
	if _, err := upload.New(d.Store, &upo); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	m, err := newCopyMetrics(d.Registerer)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return &Pipeline{d: d, o: o, upo: upo, log: d.Logger.With("component", "pipeline"), obs: d.Observer, m: m, rand: randInt63n}, nil
}

// Options returns the options in effect (defaults applied).
func (p *Pipeline) Options() Options { return p.o }

// hit calls the failpoint name.
func (p *Pipeline) hit(ctx context.Context, name string, t mledger.LedgerRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.d.Failpoints == nil {
		return nil
	}
	return p.d.Failpoints.Hit(ctx, name, t)
}

// step runs fn as step s of t, with observer calls and a StepError.
func (p *Pipeline) step(ctx context.Context, t mledger.LedgerRef, s Step, res *LedgerResult, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return &StepError{LedgerRef: t, Step: s, Err: err}
	}
	p.obs.StepStarted(t, s)
	start := time.Now()
	err := fn()
	d := time.Since(start)
	p.obs.StepDone(t, s, d, err)
	if res != nil {
		res.Steps = append(res.Steps, StepTiming{Step: s, Duration: d})
	}
	return p.stepErr(t, s, d, err)
}

// batchStep runs fn once as step s of every ledger of lrs (one metadata
// write for all of them), with observer calls and step timings for each.
// fn returns an error for the whole step or errors by ledger id. It returns
// the ledgers for which the step succeeded; the others get a StepError
// (and, before the commit, the failed outcome).
func (p *Pipeline) batchStep(ctx context.Context, lrs []*LedgerResult, s Step, fn func() (map[int64]error, error)) []*LedgerResult {
	if err := ctx.Err(); err != nil {
		for _, lr := range lrs {
			lr.fail(&StepError{LedgerRef: lr.LedgerRef, Step: s, Err: err})
		}
		return nil
	}
	for _, lr := range lrs {
		p.obs.StepStarted(lr.LedgerRef, s)
	}
	start := time.Now()
	per, err := fn()
	d := time.Since(start)
	var ok []*LedgerResult
	for _, lr := range lrs {
		e := err
		if e == nil {
			e = per[lr.LedgerID]
		}
		p.obs.StepDone(lr.LedgerRef, s, d, e)
		lr.Steps = append(lr.Steps, StepTiming{Step: s, Duration: d})
		if e := p.stepErr(lr.LedgerRef, s, d, e); e != nil {
			if s == StepTrim {
				lr.Err = e // the ledger stays offloaded
			} else {
				lr.fail(e)
			}
			continue
		}
		ok = append(ok, lr)
	}
	return ok
}

// stepErr logs a step's outcome and wraps its error in a StepError.
func (p *Pipeline) stepErr(t mledger.LedgerRef, s Step, d time.Duration, err error) error {
	if err == nil {
		p.log.Debug("step done", "ml", t.ML, "ledger", t.LedgerID, "step", s, "duration", d)
		return nil
	}
	p.log.Warn("step failed", "ml", t.ML, "ledger", t.LedgerID, "step", s, "duration", d, "err", err)
	var se *StepError
	if errors.As(err, &se) {
		return err
	}
	if tkzk.Unavailable(err) {
		// Nothing of this step is known to have been written; the stored
		// state says where the next run starts.
		err = fmt.Errorf("ZooKeeper unavailable (session lost or no server): %w", err)
	}
	return &StepError{LedgerRef: t, Step: s, Err: err}
}

// StepTiming is one step's duration.
type StepTiming struct {
	Step     Step          `json:"step"`
	Duration time.Duration `json:"duration"`
}

// Outcome is what a run did to a ledger.
type Outcome string

// Outcomes.
const (
	// OutcomeOffloaded: copied, verified and committed by this run.
	OutcomeOffloaded Outcome = "offloaded"
	// OutcomeAdopted: the objects of an earlier unfinished attempt were
	// verified against the bookies and committed (no copy needed).
	OutcomeAdopted Outcome = "adopted"
	// OutcomeAlreadyOffloaded: complete before this run.
	OutcomeAlreadyOffloaded Outcome = "already-offloaded"
	// OutcomeFailed: a step failed (LedgerResult.Err).
	OutcomeFailed Outcome = "failed"
)

// LedgerResult is what happened to one ledger.
type LedgerResult struct {
	mledger.LedgerRef
	Outcome Outcome
	// UUID is the attempt whose objects the ledger now points at (or
	// would, for a failed run: the attempt that was tried).
	UUID uuid.UUID
	// Before is the stored state when the run started.
	Before mledger.LedgerState
	// Entries and Bytes are the ledger's entries and payload bytes.
	Entries, Bytes int64
	// ObjectBytes is the data object's size, Blocks its number of blocks.
	ObjectBytes int64
	Blocks      int
	// DataKey and IndexKey are the objects' keys.
	DataKey, IndexKey string
	// Verify says what was verified.
	Verify VerifyReport
	// Reload says whether the broker now serves the ledger from the store.
	Reload ReloadResult
	// Trim says what happened to the BookKeeper copy.
	Trim TrimResult
	// Superseded are earlier unfinished attempts replaced by this one;
	// Leftovers the objects of theirs that could not be deleted (for the
	// sweeper).
	Superseded []uuid.UUID
	Leftovers  []string
	// Steps are the steps run, with durations.
	Steps []StepTiming
	// Copy says where the copy step's time went (zero when this run did
	// not copy).
	Copy CopyStats
	// Err is the failure, if any (a *StepError).
	Err error
}

// ReloadResult describes the reload step.
type ReloadResult struct {
	// Done: the broker's internalStats say the ledger is offloaded.
	Done bool
	// Unloaded: this run unloaded the topic (false when the broker already
	// served the ledger from the store).
	Unloaded bool
	// Note explains a skipped or failed reload.
	Note string
}

// TrimResult describes the trim step.
type TrimResult struct {
	// Marked: bookkeeperDeleted=true is stored.
	Marked bool
	// Deleted: the BookKeeper ledger is gone (by this run or before).
	Deleted bool
	// FreedBytes is the ledger size freed on the bookies by this run.
	FreedBytes int64
	// NotBefore is when the deletion lag ends (trim pending until then).
	NotBefore time.Time
	// Note explains a pending or refused trim.
	Note string
}

// LedgerInfo is a managed ledger's entry for one ledger.
type LedgerInfo = mlproto.ManagedLedgerInfo_LedgerInfo

func attemptOf(li *LedgerInfo) (uuid.UUID, bool) { return mledger.AttemptUUID(li.GetOffloadContext()) }

type brokerLedger = brokeradmin.LedgerStats
