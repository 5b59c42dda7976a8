// Package scheduler runs the policy's candidates: in the policy's order
// (pressure first, then oldest), at most Options.LedgersInFlight topics at
// once, one job per topic at a time (serialised per topic, and across
// replicas by a per-topic lease), with jittered exponential backoff after
// a failure and parking after Options.ParkAfter failures in a row (the last
// error stays visible in Status).
//
// # Stopping
//
// Run returns when its ctx ends: it takes no new work, lets the jobs in
// flight finish for up to Options.StopTimeout, then cancels them; the
// pipeline stops at its next step boundary and leaves the ledger in a
// state it resumes from (every step is crash-safe). It also returns, at
// once and cancelling its jobs, when the leases are lost (the ZooKeeper
// session is gone): another replica may already own those topics.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
	"github.com/tierkeeper/tierkeeper/internal/retry"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// ErrLeasesLost is returned by Run when the leases were lost.
var ErrLeasesLost = errors.New("scheduler: leases lost; work stopped")

// Job is one run of the pipeline on some ledgers of one topic.
type Job struct {
	ML       string
	Ledgers  []int64
	Action   policy.Action
	Settings policy.Settings
}

// Result is how a job left one ledger.
type Result int

// Results. The zero value is no result: the scheduler counts it as a
// failure.
const (
	// ResultDone: the job's action was carried out.
	ResultDone Result = iota + 1
	// ResultSkipped: nothing to do (already offloaded, e.g. by another
	// replica).
	ResultSkipped
	// ResultPending: nothing failed, but the action is not finished yet
	// (a trim waiting for the broker's reload); Outcome.Note says why. It
	// is retried as a failure is (backoff, then parking).
	ResultPending
	// ResultFailed: a step failed (Outcome.Err).
	ResultFailed
)

// String is the result's name, as in the scheduler_ledgers_total metric
// (a pending ledger counts as failed there).
func (r Result) String() string {
	switch r {
	case ResultDone:
		return "ok"
	case ResultSkipped:
		return "skipped"
	case ResultPending:
		return "pending"
	case ResultFailed:
		return "failed"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Outcome is what a job did to one ledger.
type Outcome struct {
	LedgerID int64
	Result   Result
	// Err is the failure (ResultFailed).
	Err error
	// Note says what is pending (ResultPending).
	Note string
	// Step is the step that failed or is pending.
	Step string
	// Bytes offloaded (or freed, for a trim).
	Bytes int64
}

// Failed is the outcome of a step that failed on ledger id.
func Failed(id int64, step string, err error) Outcome {
	return Outcome{LedgerID: id, Result: ResultFailed, Err: err, Step: step}
}

// ok reports whether the job's work on the ledger is over (done or
// nothing to do).
func (o Outcome) ok() bool { return o.Result == ResultDone || o.Result == ResultSkipped }

// reason says why a ledger is to be tried again after job action a.
func (o Outcome) reason(a policy.Action) error {
	switch {
	case o.Result == ResultPending:
		return fmt.Errorf("%s pending: %s", a, o.Note)
	case o.Err != nil:
		return o.Err
	case o.Result == ResultFailed:
		return errors.New("failed without an error")
	}
	return errors.New("the pipeline reported nothing for this ledger")
}

// Runner runs jobs (the service's pipelines).
type Runner interface {
	Run(ctx context.Context, j Job) []Outcome
}

// Leases grant per-topic leases shared by the replicas.
type Leases interface {
	// TryAcquire takes a new generation of the lease of ml for this
	// replica, or returns a nil Lease and the holder when another replica
	// has it.
	TryAcquire(ctx context.Context, ml string) (l Lease, holder string, err error)
	// Lost is closed when every lease is lost at once (the session is
	// gone, or may be about to expire).
	Lost() <-chan struct{}
}

// Lease is one generation of a topic's lease, held by one job.
type Lease interface {
	// Fence returns ctx carrying the lease's fence: the stores' writes
	// under it land only while this generation is held.
	Fence(ctx context.Context) context.Context
	// Release gives this generation back (a later one is never touched).
	Release(ctx context.Context)
}

// Options configure a Scheduler.
type Options struct {
	// LedgersInFlight bounds jobs (topics) in flight. Default 2.
	LedgersInFlight int
	// MaxBatch bounds the ledgers of one topic in one job. Default 8.
	MaxBatch int
	// Backoff spaces the tries of a failing ledger. Default 10s..10m.
	Backoff retry.Backoff
	// ParkAfter parks a ledger after this many failures in a row, for
	// ParkFor. Defaults 5 and 1h.
	ParkAfter int
	ParkFor   time.Duration
	// StopTimeout bounds the wait for jobs in flight when Run's ctx ends.
	// Default 60s.
	StopTimeout time.Duration
	// Settle is how long a finished ledger is not run again for the same
	// action (a trim may follow an offload at once), while the
	// policy's view catches up with the change. Default 30s.
	Settle     time.Duration
	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// LedgerState is a ledger the scheduler has worked on or holds back.
type LedgerState struct {
	mledger.LedgerRef
	State    State     `json:"state"`
	Failures int       `json:"failures"`
	LastErr  string    `json:"lastError,omitempty"`
	LastStep string    `json:"lastStep,omitempty"`
	NextTry  time.Time `json:"nextTry,omitempty"`
}

// State is where a ledger stands with the scheduler.
type State string

// States (as in the status JSON).
const (
	// StateRunning: a job works on the ledger now.
	StateRunning State = "running"
	// StateBackoff: the ledger failed and waits for its next try.
	StateBackoff State = "backoff"
	// StateParked: the ledger failed Options.ParkAfter times in a row and
	// waits Options.ParkFor.
	StateParked State = "parked"
)

func (s State) String() string { return string(s) }

// recentKey is a ledger and an action that finished on it: a trim may
// follow an offload at once (the deletion lag says when), only the same
// action is held back while the policy's view catches up.
type recentKey struct {
	mledger.LedgerRef
	action policy.Action
}

// idlePass is a dispatch pass that asked for no lease and started no job:
// until gen moves or the time until comes (zero: no time), a pass would
// find the same, so none is made. With 900 000 candidates all waiting (the
// store down, every ledger backing off) a pass costs about 0.3 s of CPU.
type idlePass struct {
	set   bool
	gen   uint64
	until time.Time
}

type ledgerState struct {
	failures int
	lastErr  string
	lastStep string
	nextTry  time.Time
	parked   bool
}

// Scheduler dispatches jobs.
type Scheduler struct {
	run    Runner
	leases Leases
	o      Options
	log    *slog.Logger

	mu       sync.Mutex
	queue    policy.Candidates
	byML     map[string][]int // topic → its candidates' positions in queue, in order
	busy     map[string]bool  // topics with a job in flight
	states   map[mledger.LedgerRef]*ledgerState
	running  map[mledger.LedgerRef]bool
	recent   map[recentKey]time.Time // finished: the same action not run again before this time
	held     map[string]Lease        // leases this replica holds
	others   map[string]string       // topics leased by another replica → holder
	inFlight int
	wake     chan struct{}
	// gen counts the changes that can make a waiting candidate due before
	// its time (a new queue, a job's end); idle is what the last pass that
	// started nothing found.
	gen  uint64
	idle idlePass
	// nParked counts the parked states (the gauge), kept as they change:
	// a job's end looks at its own ledgers only, not at every state.
	nParked int

	jobs      *prometheus.CounterVec
	ledgers   *prometheus.CounterVec
	bytes     prometheus.Counter
	parked    prometheus.Gauge
	flight    prometheus.Gauge
	leaseHeld prometheus.Gauge
	queued    prometheus.Gauge
}

// New returns a Scheduler.
func New(r Runner, l Leases, o Options) *Scheduler {
	if o.LedgersInFlight <= 0 {
		o.LedgersInFlight = 2
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 8
	}
	if o.Backoff.Initial <= 0 {
		o.Backoff = retry.Backoff{Initial: 10 * time.Second, Max: 10 * time.Minute}
	}
	if o.ParkAfter <= 0 {
		o.ParkAfter = 5
	}
	if o.ParkFor <= 0 {
		o.ParkFor = time.Hour
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = time.Minute
	}
	if o.Settle <= 0 {
		o.Settle = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	f := metrics.New(o.Registerer, "offloader")
	s := &Scheduler{run: r, leases: l, o: o, log: o.Logger.With("component", "scheduler"),
		busy: map[string]bool{}, states: map[mledger.LedgerRef]*ledgerState{}, running: map[mledger.LedgerRef]bool{}, recent: map[recentKey]time.Time{},
		held: map[string]Lease{}, others: map[string]string{}, wake: make(chan struct{}, 1)}
	actions := metrics.Label{Name: "action", Values: []string{"offload", "trim"}}
	s.jobs = f.CounterVec("scheduler_jobs_total", "Jobs (one topic, some ledgers) run, by action.", actions)
	s.ledgers = f.CounterVec("scheduler_ledgers_total", "Ledgers run by the scheduler, by action and result (ok, skipped: nothing to do, failed, parked).",
		actions, metrics.Label{Name: "result", Values: []string{ResultDone.String(), ResultSkipped.String(), ResultFailed.String(), string(StateParked)}})
	s.bytes = f.Counter("scheduler_offloaded_bytes_total", "Bytes of ledgers the scheduler offloaded.")
	s.parked = f.Gauge("scheduler_parked_ledgers", "Ledgers parked after repeated failures.")
	s.flight = f.Gauge("scheduler_jobs_in_flight", "Jobs running now.")
	s.leaseHeld = f.Gauge("lease_topics_held", "Topic leases this replica holds.")
	s.queued = f.Gauge("scheduler_candidates", "Candidates in the scheduler's queue.")
	return s
}

// Offer replaces the queue with the policy's latest candidates (in order).
// The queue is cs itself (a list never changes), not a copy.
func (s *Scheduler) Offer(cs policy.Candidates) {
	byML := make(map[string][]int)
	for i := range cs.Len() {
		ml := cs.Ref(i).ML
		byML[ml] = append(byML[ml], i)
	}
	s.mu.Lock()
	s.queue, s.byML = cs, byML
	s.gen++
	s.queued.Set(float64(cs.Len()))
	s.mu.Unlock()
	s.poke()
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run dispatches until ctx ends (nil after stopping) or the leases are
// lost (ErrLeasesLost).
func (s *Scheduler) Run(ctx context.Context) error {
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lost <-chan struct{}
	if s.leases != nil {
		lost = s.leases.Lost()
	}
	for {
		select {
		case <-ctx.Done():
			return s.stop(&wg, cancelWork)
		case <-lost:
			cancelWork()
			wg.Wait()
			s.mu.Lock()
			s.held = map[string]Lease{}
			s.leaseHeld.Set(0)
			s.mu.Unlock()
			return ErrLeasesLost
		case <-s.wake:
		case <-tick.C:
		}
		// A wake and a tick ready together ask for one dispatch: take
		// both. Otherwise select's random pick decides whether a tick that
		// fires during the dispatch finds the channel full (and is dropped)
		// or empty (one more dispatch): which requests follow would vary
		// from run to run of the same schedule.
		select {
		case <-s.wake:
		default:
		}
		select {
		case <-tick.C:
		default:
		}
		s.dispatch(ctx, work, &wg)
	}
}

// stop waits up to StopTimeout for jobs in flight, then cancels them and
// waits for them to reach a step boundary.
func (s *Scheduler) stop(wg *sync.WaitGroup, cancelWork context.CancelFunc) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.o.StopTimeout):
		s.log.Warn("stop timeout: cancelling jobs in flight (they stop at their next step boundary)", "timeout", s.o.StopTimeout)
		cancelWork()
		<-done
	}
	// Every job has released its lease (runJob does, before it ends).
	return nil
}

func (s *Scheduler) dispatch(ctx, work context.Context, wg *sync.WaitGroup) {
	now := s.o.Now()
	s.mu.Lock()
	queue, byML, gen := s.queue, s.byML, s.gen
	if idle := s.idle; idle.set && idle.gen == gen && (idle.until.IsZero() || now.Before(idle.until)) {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	// Topics whose lease this pass could not take: their later candidates
	// are not tried again in the same pass (each try is two ZooKeeper
	// round trips, and a topic has many candidates).
	denied := map[string]bool{}
	tried := false    // a lease asked for or a job started
	var due time.Time // the earliest a candidate waiting for its time is due
	for i := range queue.Len() {
		if ctx.Err() != nil {
			return
		}
		ref := queue.Ref(i)
		s.mu.Lock()
		full := s.inFlight >= s.o.LedgersInFlight
		busy := s.busy[ref.ML]
		s.mu.Unlock()
		if full {
			return
		}
		if busy || denied[ref.ML] {
			continue // a job's end moves gen; a denial makes the pass not idle
		}
		if ok, at := s.eligible(ref, queue.Action(i), now); !ok {
			if !at.IsZero() && (due.IsZero() || at.Before(due)) {
				due = at
			}
			continue
		}
		tried = true
		c := queue.At(i)
		var lease Lease
		if s.leases != nil {
			l, holder, err := s.leases.TryAcquire(ctx, c.ML)
			if err != nil {
				s.log.Warn("lease", "ml", c.ML, "err", err)
				denied[c.ML] = true
				continue
			}
			s.mu.Lock()
			if l == nil {
				s.others[c.ML] = holder
				s.mu.Unlock()
				denied[c.ML] = true
				continue
			}
			lease = l
			delete(s.others, c.ML)
			s.held[c.ML] = l
			s.leaseHeld.Set(float64(len(s.held)))
			s.mu.Unlock()
		}
		j := Job{ML: c.ML, Action: c.Action, Settings: c.Settings, Ledgers: []int64{c.LedgerID}}
		for _, k := range byML[c.ML] {
			if len(j.Ledgers) >= s.o.MaxBatch {
				break
			}
			if k <= i || queue.Action(k) != c.Action {
				continue
			}
			if o := queue.At(k); o.Settings == c.Settings {
				if ok, _ := s.eligible(o.LedgerRef, o.Action, now); ok {
					j.Ledgers = append(j.Ledgers, o.LedgerID)
				}
			}
		}
		s.mu.Lock()
		s.busy[c.ML] = true
		s.inFlight++
		s.flight.Set(float64(s.inFlight))
		for _, id := range j.Ledgers {
			s.running[mledger.LedgerRef{ML: c.ML, LedgerID: id}] = true
		}
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.runJob(work, j, lease)
		}()
	}
	if !tried {
		s.mu.Lock()
		s.idle = idlePass{set: true, gen: gen, until: due}
		s.mu.Unlock()
	}
}

// eligible says whether candidate k (action a) may run now, and if not
// when it may for a reason that ends with time (zero: one that ends with a
// job: it is running).
func (s *Scheduler) eligible(k mledger.LedgerRef, a policy.Action, now time.Time) (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[k] {
		return false, time.Time{}
	}
	rk := recentKey{k, a}
	if until, ok := s.recent[rk]; ok {
		if now.Before(until) {
			return false, until
		}
		delete(s.recent, rk)
	}
	if st := s.states[k]; st != nil && now.Before(st.nextTry) {
		return false, st.nextTry
	}
	return true, time.Time{}
}

// runJob runs j under lease (nil without leases). The lease is released
// before the topic is free for its next job: a release still in flight
// when the next job took a lease could otherwise delete that job's lease.
func (s *Scheduler) runJob(ctx context.Context, j Job, lease Lease) {
	s.jobs.WithLabelValues(j.Action.String()).Inc()
	s.log.Info("job started", "ml", j.ML, "action", j.Action.String(), "ledgers", j.Ledgers)
	jctx := ctx
	if lease != nil {
		jctx = lease.Fence(ctx)
	}
	outs := s.run.Run(jctx, j)
	now := s.o.Now()
	s.log.Info("job ended", "ml", j.ML, "action", j.Action.String(), "ledgers", j.Ledgers)
	if lease != nil {
		// Keep the lease only while the job runs; a released lease lets
		// another replica balance the load.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		lease.Release(rctx)
		cancel()
	}
	s.mu.Lock()
	defer func() {
		s.busy[j.ML] = false
		delete(s.busy, j.ML)
		s.inFlight--
		s.flight.Set(float64(s.inFlight))
		for _, id := range j.Ledgers {
			delete(s.running, mledger.LedgerRef{ML: j.ML, LedgerID: id})
		}
		s.parked.Set(float64(s.nParked))
		s.gen++
		s.mu.Unlock()
		s.poke()
	}()
	byID := map[int64]Outcome{}
	for _, o := range outs {
		byID[o.LedgerID] = o
	}
	for _, id := range j.Ledgers {
		k := mledger.LedgerRef{ML: j.ML, LedgerID: id}
		o := byID[id]
		if st := s.states[k]; st != nil && st.parked {
			s.unpark(st) // it ran: its time was up
		}
		if o.ok() {
			delete(s.states, k)
			// The policy's next candidates may still predate this change
			// (discovery sees the commit a moment later): hold it back.
			s.recent[recentKey{k, j.Action}] = now.Add(s.o.Settle)
			s.ledgers.WithLabelValues(j.Action.String(), o.Result.String()).Inc()
			if o.Result == ResultDone && j.Action == policy.ActionOffload {
				s.bytes.Add(float64(o.Bytes))
			}
			continue
		}
		if ctx.Err() != nil {
			continue // stopped, not failed: resumes as it is
		}
		reason := o.reason(j.Action)
		st := s.states[k]
		if st == nil {
			st = &ledgerState{}
			s.states[k] = st
		}
		st.failures++
		st.lastErr, st.lastStep = reason.Error(), o.Step
		if st.failures >= s.o.ParkAfter {
			st.parked, st.nextTry = true, now.Add(s.o.ParkFor)
			s.nParked++
			s.ledgers.WithLabelValues(j.Action.String(), string(StateParked)).Inc()
			s.log.Error("ledger parked after repeated failures", "ml", j.ML, "ledger", id, "failures", st.failures,
				"until", st.nextTry, "step", o.Step, "err", reason)
		} else {
			st.nextTry = now.Add(s.o.Backoff.Delay(st.failures, nil))
			s.ledgers.WithLabelValues(j.Action.String(), ResultFailed.String()).Inc()
			s.log.Warn("ledger failed; retrying later", "ml", j.ML, "ledger", id, "failures", st.failures,
				"next", st.nextTry, "step", o.Step, "err", reason)
		}
	}
	if lease != nil {
		delete(s.held, j.ML)
		s.leaseHeld.Set(float64(len(s.held)))
	}
}

// updateParked unparks the parked ledgers whose time is up (one more try
// each) and refreshes the parked gauge (s.mu held). It looks at every
// state: Status calls it, which lists them all anyway.
func (s *Scheduler) updateParked(now time.Time) {
	for _, st := range s.states {
		if st.parked && !now.Before(st.nextTry) {
			s.unpark(st)
		}
	}
	s.parked.Set(float64(s.nParked))
}

// unpark ends st's parking: one failure more parks it again (s.mu held).
func (s *Scheduler) unpark(st *ledgerState) {
	st.parked = false
	st.failures = s.o.ParkAfter - 1
	s.nParked--
}

// Status returns the ledgers running, backing off or parked, and the
// topics another replica holds.
func (s *Scheduler) Status() (ledgers []LedgerState, leasedElsewhere map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	s.updateParked(now)
	for k := range s.running {
		ledgers = append(ledgers, LedgerState{LedgerRef: k, State: StateRunning})
	}
	for k, st := range s.states {
		if s.running[k] {
			continue
		}
		state := StateBackoff
		if st.parked {
			state = StateParked
		}
		ledgers = append(ledgers, LedgerState{LedgerRef: k, State: state, Failures: st.failures,
			LastErr: st.lastErr, LastStep: st.lastStep, NextTry: st.nextTry})
	}
	sort.Slice(ledgers, func(i, j int) bool {
		if ledgers[i].ML != ledgers[j].ML {
			return ledgers[i].ML < ledgers[j].ML
		}
		return ledgers[i].LedgerID < ledgers[j].LedgerID
	})
	leasedElsewhere = make(map[string]string, len(s.others))
	for k, v := range s.others {
		leasedElsewhere[k] = v
	}
	return ledgers, leasedElsewhere
}

// String describes a job for logs.
func (j Job) String() string { return fmt.Sprintf("%s %s %v", j.Action, j.ML, j.Ledgers) }
