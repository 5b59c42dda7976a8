package offloader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/metrics"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// pipelineRunner runs scheduler jobs on pipelines, one per distinct
// policy.Settings (block size, verify level, deletion lag), all sharing
// one buffer pool (the global bound on parts in flight) and one set of
// metrics.
type pipelineRunner struct {
	deps pipeline.Deps
	base pipeline.Options
	// onResult, when set, sees every ledger result.
	onResult func(*pipeline.LedgerResult)
	// scrub runs repair jobs and hears of finished trims (nil: no
	// scrubber).
	scrub *scrub.Scrubber
	// guard, when set, is asked right before every job whether the broker
	// offloads the topic itself; then the job writes nothing.
	guard *TopicGuard

	mu    sync.Mutex
	pipes map[policy.Settings]*pipeline.Pipeline
}

func newPipelineRunner(ml *mledger.Store, ledgers *metadata.Store, bk *bkclient.Client, store blob.Store,
	broker *brokeradmin.Client, pool *format.Pool, obs pipeline.Observer, drv mledger.Driver, c *Config,
	log *slog.Logger, reg prometheus.Registerer) *pipelineRunner {
	d := pipeline.Deps{ML: ml, Ledgers: ledgers, Bookies: bk, Store: store, Pool: pool, Observer: obs, Logger: log, Registerer: reg}
	if broker != nil {
		d.Broker = broker
	}
	per := max(1, c.Scheduler.PartsInFlight/c.Scheduler.LedgersInFlight) // parts in flight per ledger
	return &pipelineRunner{deps: d, base: pipeline.Options{Driver: drv, PartsInFlight: per},
		pipes: map[policy.Settings]*pipeline.Pipeline{}}
}

func (r *pipelineRunner) pipeline(s policy.Settings) (*pipeline.Pipeline, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pipes[s]; ok {
		return p, nil
	}
	o := r.base
	o.BlockSize = int(s.BlockSize)
	if s.Verify == policy.VerifyIndex {
		o.AlwaysSample = true // three windows instead of every entry
	}
	if s.DeletionLag.Mode == policy.LagAfter {
		o.Trim, o.DeletionLag = true, s.DeletionLag.After
	}
	p, err := pipeline.New(r.deps, o)
	if err != nil {
		return nil, err
	}
	r.pipes[s] = p
	return p, nil
}

// Run implements scheduler.Runner.
func (r *pipelineRunner) Run(ctx context.Context, j scheduler.Job) []scheduler.Outcome {
	p, err := r.pipeline(j.Settings)
	if err != nil {
		return FailJob(j, "setup", err)
	}
	if r.guard != nil && j.Action != policy.ActionRepair {
		// The policy's view may be minutes old (cached topic policies, a
		// namespace policy set since): look again before writing. A repair
		// (a committed context whose objects are gone, cleared so brokers
		// read BookKeeper again) is not held back: it takes the ledger from
		// no offloader, and leaving it would let the broker's deletion lag
		// remove the last copy.
		if err := r.guard.Check(ctx, j.ML); err != nil {
			return FailJob(j, string(pipeline.StepSelect), err)
		}
	}
	if j.Action == policy.ActionRepair {
		return r.repair(ctx, j)
	}
	tr, _ := p.RunTopic(ctx, j.ML, j.Ledgers)
	if tr == nil {
		return nil
	}
	for _, lr := range tr.Ledgers {
		if r.scrub != nil && lr.Err == nil && lr.Trim.Deleted {
			r.scrub.Forget(j.ML, []int64{lr.LedgerID})
		}
		if r.onResult != nil && !errors.Is(lr.Err, context.Canceled) {
			r.onResult(lr)
		}
	}
	return JobOutcomes(j, tr)
}

// FailJob is the outcome of a job none of whose ledgers got past step:
// each failed with err.
func FailJob(j scheduler.Job, step string, err error) []scheduler.Outcome {
	out := make([]scheduler.Outcome, 0, len(j.Ledgers))
	for _, id := range j.Ledgers {
		out = append(out, scheduler.Failed(id, step, err))
	}
	return out
}

// JobOutcomes maps what the pipeline did to the ledgers of offload or
// trim job j to the scheduler's outcomes: a failed step is a failure; an
// offload found already complete is skipped; a trim whose BookKeeper copy
// is not deleted yet (the deletion lag, or the reload) is pending; bytes
// are those offloaded, or freed by a trim.
func JobOutcomes(j scheduler.Job, tr *pipeline.TopicResult) []scheduler.Outcome {
	out := make([]scheduler.Outcome, 0, len(tr.Ledgers))
	for _, lr := range tr.Ledgers {
		o := scheduler.Outcome{LedgerID: lr.LedgerID, Result: scheduler.ResultDone}
		var se *pipeline.StepError
		switch {
		case lr.Err != nil:
			o.Result, o.Err = scheduler.ResultFailed, lr.Err
			if errors.As(lr.Err, &se) {
				o.Step = string(se.Step)
			}
		case j.Action == policy.ActionTrim && !lr.Trim.Deleted:
			o.Result, o.Note, o.Step = scheduler.ResultPending, lr.Trim.Note, string(pipeline.StepTrim)
		case j.Action == policy.ActionOffload && lr.Outcome == pipeline.OutcomeAlreadyOffloaded:
			o.Result = scheduler.ResultSkipped
		}
		switch {
		case j.Action == policy.ActionTrim:
			o.Bytes = lr.Trim.FreedBytes
		case lr.Outcome == pipeline.OutcomeOffloaded || lr.Outcome == pipeline.OutcomeAdopted:
			o.Bytes = lr.Bytes
		}
		out = append(out, o)
	}
	return out
}

// repair runs a repair job: the scrubber checks the ledgers again and
// clears the contexts of those still to repair (the policy offloads them
// again in a later round).
func (r *pipelineRunner) repair(ctx context.Context, j scheduler.Job) []scheduler.Outcome {
	const step = "repair"
	if r.scrub == nil {
		return FailJob(j, step, errors.New("no scrubber"))
	}
	fs, err := r.scrub.Repair(ctx, j.ML, j.Ledgers)
	got := map[int64]scrub.Finding{}
	for _, f := range fs {
		got[f.LedgerID] = f
	}
	out := make([]scheduler.Outcome, 0, len(j.Ledgers))
	for _, id := range j.Ledgers {
		f, ok := got[id]
		switch {
		case !ok && err != nil:
			out = append(out, scheduler.Failed(id, step, err))
		case !ok: // no longer committed: nothing to repair
			out = append(out, scheduler.Outcome{LedgerID: id, Step: step, Result: scheduler.ResultSkipped})
		case f.Repaired:
			out = append(out, scheduler.Outcome{LedgerID: id, Step: step, Result: scheduler.ResultDone})
		case f.Verdict == scrub.VerdictRepair:
			out = append(out, scheduler.Failed(id, step, fmt.Errorf("not repaired: %s", f.Action)))
		case (f.Verdict == scrub.VerdictLost || f.Verdict == scrub.VerdictUnknown) && f.Action != "":
			// Cleared while a deleter took the BookKeeper copy (the
			// scrubber keeps it in its lost set), or not known.
			out = append(out, scheduler.Failed(id, step, errors.New(f.Action)))
		default: // the fresh check found no repair to do
			out = append(out, scheduler.Outcome{LedgerID: id, Step: step, Result: scheduler.ResultSkipped})
		}
	}
	return out
}

// stepMetrics is the pipeline observer feeding the step metrics.
type stepMetrics struct {
	pipeline.NopObserver
	log      *slog.Logger
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	copied   prometheus.Counter

	mu   sync.Mutex
	last map[mledger.LedgerRef]int64
	// active holds the step each ledger is in, with its progress (for
	// /status).
	active map[mledger.LedgerRef]activeStep
}

// activeStep is a ledger's step in flight: for copy and verify the
// payload bytes done of total.
type activeStep struct {
	step         pipeline.Step
	bytes, total int64
}

var allSteps = []string{string(pipeline.StepSelect), string(pipeline.StepPrepare), string(pipeline.StepCopy),
	string(pipeline.StepVerify), string(pipeline.StepCommit), string(pipeline.StepReload), string(pipeline.StepTrim)}

func newStepMetrics(f *metrics.Factory, log *slog.Logger) *stepMetrics {
	steps := metrics.Label{Name: "step", Values: allSteps}
	return &stepMetrics{
		log: log.With("component", "pipeline"),
		duration: f.HistogramVec("step_duration_seconds", "Duration of pipeline steps, by step.",
			[]float64{0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600}, steps),
		errors: f.CounterVec("step_errors_total", "Pipeline steps that failed, by step.", steps),
		copied: f.Counter("copied_bytes_total", "Ledger payload bytes read from BookKeeper and handed to the upload."),
		last:   map[mledger.LedgerRef]int64{}, active: map[mledger.LedgerRef]activeStep{},
	}
}

// StepStarted records the step; copies are logged at info (one line when
// a replica starts uploading a ledger, one when it stops), so operators
// (and the replica tests) see who uploaded what when.
func (m *stepMetrics) StepStarted(t mledger.LedgerRef, s pipeline.Step) {
	if s == pipeline.StepCopy {
		m.log.Info("copy started", "ml", t.ML, "ledger", t.LedgerID)
	}
	m.mu.Lock()
	m.active[t] = activeStep{step: s}
	m.mu.Unlock()
}

func (m *stepMetrics) StepDone(t mledger.LedgerRef, s pipeline.Step, d time.Duration, err error) {
	if s == pipeline.StepCopy {
		m.log.Info("copy ended", "ml", t.ML, "ledger", t.LedgerID, "duration", d, "err", err)
	}
	m.duration.WithLabelValues(string(s)).Observe(d.Seconds())
	if err != nil && !errors.Is(err, context.Canceled) {
		m.errors.WithLabelValues(string(s)).Inc()
	}
	m.mu.Lock()
	delete(m.active, t)
	if s == pipeline.StepCopy {
		delete(m.last, t)
	}
	m.mu.Unlock()
}

func (m *stepMetrics) Copied(t mledger.LedgerRef, bytes, total int64) {
	m.mu.Lock()
	d := bytes - m.last[t]
	m.last[t] = bytes
	m.progress(t, pipeline.StepCopy, bytes, total)
	m.mu.Unlock()
	if d > 0 {
		m.copied.Add(float64(d))
	}
}

func (m *stepMetrics) Verified(t mledger.LedgerRef, bytes, total int64) {
	m.mu.Lock()
	m.progress(t, pipeline.StepVerify, bytes, total)
	m.mu.Unlock()
}

// progress records bytes of total for t's step s, if t is in it (m.mu held).
func (m *stepMetrics) progress(t mledger.LedgerRef, s pipeline.Step, bytes, total int64) {
	if a, ok := m.active[t]; ok && a.step == s {
		m.active[t] = activeStep{step: s, bytes: bytes, total: total}
	}
}

func (m *stepMetrics) steps() map[mledger.LedgerRef]activeStep {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[mledger.LedgerRef]activeStep, len(m.active))
	for k, v := range m.active {
		out[k] = v
	}
	return out
}
