package offloader

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
	"github.com/tierkeeper/tierkeeper/offloader/discovery"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
)

// record adds a ledger's result to Status.Done.
func (s *Service) record(lr *pipeline.LedgerResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := &s.done
	switch {
	case lr.Err != nil:
		d.FailedLedgers++
	case lr.Outcome == pipeline.OutcomeOffloaded || lr.Outcome == pipeline.OutcomeAdopted:
		d.OffloadedLedgers++
		d.OffloadedBytes += lr.Bytes
	}
	for _, st := range lr.Steps {
		if st.Step == pipeline.StepCopy && lr.Outcome == pipeline.OutcomeOffloaded {
			d.CopiedBytes += lr.Bytes
			d.CopySeconds += st.Duration.Seconds()
		}
	}
	if lr.Trim.FreedBytes > 0 {
		d.TrimmedLedgers++
		d.FreedBytes += lr.Trim.FreedBytes
	}
}

func (s *Service) setError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.LastError = err.Error()
	s.status.LastErrorAt = time.Now()
}

// Status is what /status serves.
type Status struct {
	Replica     string    `json:"replica"`
	Ready       bool      `json:"ready"`
	StartedAt   time.Time `json:"startedAt"`
	EvaluatedAt time.Time `json:"evaluatedAt"`
	// LastError is the last service-level error (session, discovery).
	LastError   string        `json:"lastError,omitempty"`
	LastErrorAt time.Time     `json:"lastErrorAt,omitempty"`
	Totals      Totals        `json:"totals"`
	Scan        ScanInfo      `json:"scan"`
	Topics      []TopicStatus `json:"topics"`
	// Ledgers are the ledgers running, backing off or parked.
	Ledgers         []LedgerStatus     `json:"ledgers"`
	LeasedElsewhere map[string]string  `json:"leasedElsewhere,omitempty"`
	BookieUsage     map[string]float64 `json:"bookieUsage,omitempty"`
	Pressured       map[string]float64 `json:"pressuredBookies,omitempty"`
	Warnings        []string           `json:"warnings,omitempty"`
	Sweeper         *SweepStatus       `json:"sweeper,omitempty"`
	// Scrub is the scrubber's last pass, the ledgers it found lost and
	// those waiting for a repair.
	Scrub *ScrubStatus `json:"scrub,omitempty"`
	// Done is what this replica did since it started.
	Done Done `json:"done"`
}

// Done counts the ledgers this replica finished since it started (over
// all its sessions).
type Done struct {
	// OffloadedLedgers/Bytes: committed by this replica (copied, or an
	// earlier attempt's objects adopted); Bytes are ledger payload bytes.
	OffloadedLedgers int   `json:"offloadedLedgers"`
	OffloadedBytes   int64 `json:"offloadedBytes"`
	// CopiedBytes were read from the bookies and uploaded, in CopySeconds
	// of copy steps (summed over ledgers copied at once).
	CopiedBytes int64   `json:"copiedBytes"`
	CopySeconds float64 `json:"copySeconds"`
	// TrimmedLedgers had their BookKeeper copy deleted, FreedBytes in all
	// (once per replica on the bookies' disks).
	TrimmedLedgers int   `json:"trimmedLedgers"`
	FreedBytes     int64 `json:"freedBytes"`
	// FailedLedgers counts failed ledger runs (retried later).
	FailedLedgers int `json:"failedLedgers"`
}

// Totals sum the topics.
type Totals struct {
	Topics         int     `json:"topics"`
	BKBytes        int64   `json:"bookkeeperBytes"`
	OffloadedBytes int64   `json:"offloadedBytes"`
	LagBytes       int64   `json:"lagBytes"`
	LagLedgers     int     `json:"lagLedgers"`
	LagSeconds     float64 `json:"lagSeconds"`
	TrimBytes      int64   `json:"trimBytes"`
	RunningLedgers int     `json:"runningLedgers"`
	ParkedLedgers  int     `json:"parkedLedgers"`
	BackoffLedgers int     `json:"backoffLedgers"`
	UnreadableMLs  int     `json:"unreadableManagedLedgers"`
	// RefusedTopics are left to the broker's own offloader.
	RefusedTopics  int `json:"refusedTopics"`
	PressureErrors int `json:"pressureErrors"`
}

// ScanInfo describes the last discovery scan.
type ScanInfo struct {
	At             time.Time `json:"at"`
	Seconds        float64   `json:"seconds"`
	ManagedLedgers int       `json:"managedLedgers"`
	Ledgers        int       `json:"ledgers"`
}

// TopicStatus is one managed ledger in /status.
type TopicStatus struct {
	Topic    string `json:"topic"`
	ML       string `json:"managedLedger"`
	Rule     string `json:"rule,omitempty"`
	Excluded bool   `json:"excluded,omitempty"`
	// Refused says why the topic is left to the broker's own offloader
	// (it would offload the topic itself; running both loses data).
	Refused string `json:"refused,omitempty"`
	// Held says why the topic's candidates wait (the reload bound).
	Held           string `json:"held,omitempty"`
	BKBytes        int64  `json:"bookkeeperBytes"`
	EligibleBytes  int64  `json:"eligibleBytes"`
	OffloadedBytes int64  `json:"offloadedBytes"`
	// LagBytes/LagSeconds: what the policy wants offloaded and is not yet.
	LagBytes   int64   `json:"lagBytes"`
	LagSeconds float64 `json:"lagSeconds"`
	LastError  string  `json:"lastError,omitempty"`
	// NextAction says what happens next, e.g. "offload ledger 12 (age)".
	NextAction string `json:"nextAction"`
}

// SweepStatus is the last sweep.
type SweepStatus struct {
	At      time.Time      `json:"at"`
	DryRun  bool           `json:"dryRun"`
	Objects int            `json:"objects"`
	Uploads int            `json:"uploads"`
	Removed map[string]int `json:"removed"`
	Kept    map[string]int `json:"kept"`
	Errors  int            `json:"errors"`
	Err     string         `json:"error,omitempty"`
}

// statusMetrics are the service's gauges and counters: publish sets the
// gauges from each status document.
type statusMetrics struct {
	// perTopic: lag per topic label (metrics.per_topic), else one total.
	perTopic      bool
	eligibleBytes *prometheus.GaugeVec
	lagSeconds    *prometheus.GaugeVec
	offloaded     prometheus.Gauge
	bkBytes       prometheus.Gauge
	sessions      *prometheus.CounterVec
	up            prometheus.Gauge
	evals         prometheus.Counter
}

func newStatusMetrics(f *metrics.Factory, perTopic bool) (*statusMetrics, error) {
	m := &statusMetrics{perTopic: perTopic}
	var topicLabels []string
	if perTopic {
		topicLabels = []string{"topic"}
	}
	m.eligibleBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name("lag_bytes"),
		Help: "Bytes of closed ledgers the policy selects for offload that are not offloaded yet (per topic with metrics.per_topic)."}, topicLabels)
	m.lagSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name("lag_seconds"),
		Help: "Age since close of the oldest ledger selected for offload and not offloaded yet (0: none)."}, topicLabels)
	if !perTopic {
		m.eligibleBytes.WithLabelValues()
		m.lagSeconds.WithLabelValues()
	}
	f.Register(m.eligibleBytes)
	f.Register(m.lagSeconds)
	m.offloaded = f.Gauge("offloaded_bytes", "Bytes of ledgers in the object store (complete offloads), over all topics.")
	m.bkBytes = f.Gauge("bookkeeper_bytes", "Bytes of closed ledgers whose BookKeeper copy still exists, over all topics.")
	m.sessions = f.CounterVec("zookeeper_sessions_total", "ZooKeeper sessions opened and lost.",
		metrics.Label{Name: "event", Values: []string{"opened", "lost", "failed"}})
	m.up = f.Gauge("ready", "1 while the replica has a ZooKeeper session and serves work.")
	m.evals = f.Counter("policy_evaluations_total", "Policy evaluations.")
	return m, f.Err()
}

// set sets the gauges from st: the totals, and the lag per topic with
// metrics.per_topic.
func (m *statusMetrics) set(st *Status) {
	m.offloaded.Set(float64(st.Totals.OffloadedBytes))
	m.bkBytes.Set(float64(st.Totals.BKBytes))
	if !m.perTopic {
		m.eligibleBytes.WithLabelValues().Set(float64(st.Totals.LagBytes))
		m.lagSeconds.WithLabelValues().Set(st.Totals.LagSeconds)
		return
	}
	m.eligibleBytes.Reset()
	m.lagSeconds.Reset()
	for _, t := range st.Topics {
		m.eligibleBytes.WithLabelValues(t.Topic).Set(float64(t.LagBytes))
		m.lagSeconds.WithLabelValues(t.Topic).Set(t.LagSeconds)
	}
}

// evaluation is what one policy evaluation saw: its result, the snapshot's
// report, the managed ledgers discovery could not read, the bookies' disk
// usage and the last scan.
type evaluation struct {
	at       time.Time
	res      policy.Result
	rep      SnapshotReport
	readErrs map[string]error
	usage    map[string]float64
	scan     discovery.ScanStats
}

// publish makes the status document of an evaluation the current one and
// sets the metrics from it.
func (s *Service) publish(ev evaluation) {
	s.mu.Lock()
	sched := s.sched
	s.mu.Unlock()
	ledgers, elsewhere := s.ledgerStates(sched)
	st := newStatus(s.cfg.Leases.ID, s.started, ev, ledgers, elsewhere)
	s.metrics.set(&st)
	s.mu.Lock()
	st.Ready = s.ready
	st.Sweeper = s.status.Sweeper
	st.Scrub = s.status.Scrub
	st.LastError, st.LastErrorAt = s.status.LastError, s.status.LastErrorAt
	s.status = st
	s.mu.Unlock()
}

// newStatus is the status document of an evaluation, with the ledgers in
// flight and the topics leased elsewhere as the scheduler has them.
func newStatus(replica string, started time.Time, ev evaluation, ledgers []LedgerStatus, elsewhere map[string]string) Status {
	now, res := ev.at, ev.res
	next := map[string]string{}
	for i := range res.Candidates.Len() {
		if _, ok := next[res.Candidates.Ref(i).ML]; !ok {
			c := res.Candidates.At(i)
			next[c.ML] = fmt.Sprintf("%s ledger %d (%s: %s)", c.Action, c.LedgerID, c.Rule, c.Trigger)
		}
	}
	st := Status{Replica: replica, EvaluatedAt: now, StartedAt: started, Topics: []TopicStatus{},
		Ledgers: ledgers, LeasedElsewhere: elsewhere, BookieUsage: ev.usage, Pressured: res.PressuredBookies}
	st.Totals.countLedgers(st.Ledgers)
	lastErr := ledgerErrors(st.Ledgers)
	var oldest time.Time
	for _, t := range res.Topics {
		ts := TopicStatus{Topic: t.Topic, ML: t.ML, Rule: t.Rule, Excluded: t.Excluded, Refused: t.Refused, Held: t.Held, BKBytes: t.BKBytes,
			EligibleBytes: t.EligibleBytes + t.OffloadedBytes, OffloadedBytes: t.OffloadedBytes, LagBytes: t.EligibleBytes,
			LastError: lastErr[t.ML], NextAction: "none"}
		if !t.OldestEligible.IsZero() {
			ts.LagSeconds = now.Sub(t.OldestEligible).Seconds()
			if oldest.IsZero() || t.OldestEligible.Before(oldest) {
				oldest = t.OldestEligible
			}
		}
		switch {
		case t.Excluded:
			ts.NextAction = t.ExcludedWhy
		case t.Refused != "":
			ts.NextAction = "none, left to the broker's offloader: " + t.Refused
			st.Totals.RefusedTopics++
		case elsewhere[t.ML] != "":
			ts.NextAction = "leased by replica " + elsewhere[t.ML]
		case next[t.ML] != "":
			ts.NextAction = next[t.ML]
		case t.Held != "":
			ts.NextAction = "waits: " + t.Held
		}
		st.Topics = append(st.Topics, ts)
		st.Totals.Topics++
		st.Totals.BKBytes += t.BKBytes
		st.Totals.OffloadedBytes += t.OffloadedBytes
		st.Totals.LagBytes += t.EligibleBytes
		st.Totals.LagLedgers += t.EligibleLedgers
		st.Totals.TrimBytes += t.TrimBytes
	}
	if !oldest.IsZero() {
		st.Totals.LagSeconds = now.Sub(oldest).Seconds()
	}
	st.Scan = ScanInfo{At: ev.scan.Started, Seconds: ev.scan.Took.Seconds(), ManagedLedgers: ev.scan.Listed, Ledgers: ev.scan.Ledgers}
	st.Warnings = evaluationWarnings(ev)
	st.Totals.UnreadableMLs = len(ev.readErrs)
	st.Totals.PressureErrors = len(ev.rep.PressureErrors)
	return st
}

// evaluationWarnings are an evaluation's warnings (snapshotWarnings).
func evaluationWarnings(ev evaluation) []string {
	readErrs := make(map[string]string, len(ev.readErrs))
	for n, err := range ev.readErrs {
		readErrs[n] = err.Error()
	}
	return snapshotWarnings(readErrs, ev.rep, ev.res)
}

// snapshotWarnings are the warnings of one evaluation of the policy, as
// /status (Status.Warnings) and offloader plan give them: managed ledgers
// not read (by name), what the snapshot could not read (pressure,
// namespace policies, the broker, ledger metadata), rules and includes
// that match no topic.
func snapshotWarnings(readErrs map[string]string, rep SnapshotReport, res policy.Result) []string {
	var ws []string
	for _, n := range slices.Sorted(maps.Keys(readErrs)) {
		ws = append(ws, fmt.Sprintf("managed ledger %s not read: %v", n, readErrs[n]))
	}
	for _, e := range rep.PressureErrors {
		ws = append(ws, "pressure: "+e)
	}
	for _, e := range rep.PolicyErrors {
		ws = append(ws, "namespace policies: "+e)
	}
	for _, e := range rep.BrokerErrors {
		ws = append(ws, e+" (every topic is left to the broker meanwhile)")
	}
	for _, e := range rep.LedgerErrors {
		ws = append(ws, "ledger metadata: "+e)
	}
	for _, name := range res.UnusedRules {
		ws = append(ws, fmt.Sprintf("rule %q matches no topic", name))
	}
	for _, p := range res.UnusedIncludes {
		ws = append(ws, fmt.Sprintf("policy.include %q matches no topic", p))
	}
	return ws
}

// Status returns the current status document: the policy's view from the
// last evaluation, the ledgers in flight (with their step and its
// progress), backing off or parked as they are now.
func (s *Service) Status() Status {
	s.mu.Lock()
	st := s.status
	st.Ready = s.ready
	st.Scrub, st.Warnings = s.scrubView(st.Scrub, st.Warnings)
	st.StartedAt = s.started
	st.Done = s.done
	sched := s.sched
	s.mu.Unlock()
	if sched != nil {
		st.Ledgers, st.LeasedElsewhere = s.ledgerStates(sched)
		st.Totals.countLedgers(st.Ledgers)
		errs := ledgerErrors(st.Ledgers)
		st.Topics = append([]TopicStatus(nil), st.Topics...)
		for i := range st.Topics {
			st.Topics[i].LastError = errs[st.Topics[i].ML]
		}
	}
	return st
}

// ledgerErrors is each managed ledger's error to show from ls: a parked
// ledger's, else the first backing-off one's.
func ledgerErrors(ls []LedgerStatus) map[string]string {
	errs := map[string]string{}
	for _, l := range ls {
		switch l.State {
		case scheduler.StateParked:
			errs[l.ML] = fmt.Sprintf("ledger %d parked until %s after %d failures: %s", l.LedgerID, l.NextTry.Format(time.RFC3339), l.Failures, l.LastErr)
		case scheduler.StateBackoff:
			if _, ok := errs[l.ML]; !ok {
				errs[l.ML] = fmt.Sprintf("ledger %d failed %d times, next try %s: %s", l.LedgerID, l.Failures, l.NextTry.Format(time.RFC3339), l.LastErr)
			}
		}
	}
	return errs
}

// LedgerStatus is a ledger in /status: the scheduler's state of it and,
// while it runs, its step and the step's progress.
type LedgerStatus struct {
	scheduler.LedgerState
	// StepBytes of StepTotalBytes: the payload bytes a running ledger's
	// copy step has read from the bookies (and handed to the upload) or its
	// verify step has compared.
	StepBytes      int64 `json:"stepBytes,omitempty"`
	StepTotalBytes int64 `json:"stepTotalBytes,omitempty"`
}

// ledgerStates are sched's ledgers in flight, backing off or parked, the
// running ones with their step (as LastStep) and its progress; and the
// topics leased by other replicas.
func (s *Service) ledgerStates(sched *scheduler.Scheduler) ([]LedgerStatus, map[string]string) {
	if sched == nil {
		return []LedgerStatus{}, nil
	}
	states, elsewhere := sched.Status()
	active := s.steps.steps()
	ledgers := make([]LedgerStatus, len(states))
	for i, l := range states {
		ledgers[i] = LedgerStatus{LedgerState: l}
		if a, ok := active[l.LedgerRef]; ok && l.State == scheduler.StateRunning {
			ledgers[i].LastStep, ledgers[i].StepBytes, ledgers[i].StepTotalBytes = string(a.step), a.bytes, a.total
		}
	}
	return ledgers, elsewhere
}

// countLedgers sets the running, backing-off and parked counts from ls.
func (t *Totals) countLedgers(ls []LedgerStatus) {
	t.RunningLedgers, t.BackoffLedgers, t.ParkedLedgers = 0, 0, 0
	for _, l := range ls {
		switch l.State {
		case scheduler.StateRunning:
			t.RunningLedgers++
		case scheduler.StateBackoff:
			t.BackoffLedgers++
		case scheduler.StateParked:
			t.ParkedLedgers++
		}
	}
}
