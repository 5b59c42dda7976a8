package offloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/metrics"
	"github.com/tierkeeper/tierkeeper/internal/retry"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/discovery"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/pressure"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
	"github.com/tierkeeper/tierkeeper/offloader/sweeper"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Deps are the service's injected dependencies.
type Deps struct {
	// Logger receives the service's logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives every metric (tierkeeper_offloader_*, and the
	// store, upload and bookie client metrics). Default: a new registry,
	// which /metrics then serves with the Go and process collectors.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics serves. Default: the registry above, or
	// Registerer when it is a Gatherer.
	Gatherer prometheus.Gatherer
	// Listener, when set, serves HTTP instead of listening on
	// Config.HTTP.Listen (tests).
	Listener net.Listener
	// Failpoints, when set, is called at the pipeline's named failpoints
	// of every ledger (fault-injection tests; `offloader run` takes them
	// from $TIERKEEPER_FAILPOINTS).
	Failpoints pipeline.Failpoints
}

// Service is the offload service: discovery, policy, scheduler, pipelines,
// sweeper, leases, and the HTTP status and metrics.
type Service struct {
	cfg   *Config
	rules policy.Rules
	log   *slog.Logger
	reg   prometheus.Registerer
	gath  prometheus.Gatherer
	ln    net.Listener
	fps   pipeline.Failpoints
	store blob.Store
	drv   mledger.Driver
	pool  *format.Pool
	steps *stepMetrics
	src   pressure.Source

	eligibleBytes *prometheus.GaugeVec
	lagSeconds    *prometheus.GaugeVec
	offloaded     prometheus.Gauge
	bkBytes       prometheus.Gauge
	sessions      *prometheus.CounterVec
	up            prometheus.Gauge
	evals         prometheus.Counter

	mu      sync.Mutex
	status  Status
	done    Done
	sched   *scheduler.Scheduler
	scrub   *scrub.Scrubber
	ready   bool
	started time.Time
}

// New checks the config, opens the store and prepares the metrics. It
// connects to nothing else: Run does.
func New(ctx context.Context, c *Config, d Deps) (*Service, error) {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Registerer == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		d.Registerer, d.Gatherer = r, r
	}
	if d.Gatherer == nil {
		if g, ok := d.Registerer.(prometheus.Gatherer); ok {
			d.Gatherer = g
		} else {
			return nil, errors.New("offloader: Deps.Gatherer is required with a Registerer that is not a Gatherer")
		}
	}
	rules, err := c.PolicyRules()
	if err != nil {
		return nil, err
	}
	drv, err := c.driver()
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: c, rules: rules, log: d.Logger, reg: d.Registerer, gath: d.Gatherer, ln: d.Listener, fps: d.Failpoints,
		drv: drv, started: time.Now()}
	src, err := c.PressureSource(nil)
	if err != nil {
		return nil, err
	}
	s.src = src
	maxBlock := int64(pipeline.DefaultBlockSize)
	for _, r := range append([]policy.Rule{rules.Default}, rules.Rules...) {
		maxBlock = max(maxBlock, r.BlockSize)
	}
	s.pool = format.NewPool(int(maxBlock), c.Scheduler.PartsInFlight+c.Scheduler.LedgersInFlight)
	f := metrics.New(d.Registerer, "offloader")
	s.steps = newStepMetrics(f, d.Logger)
	var topicLabels []string
	if c.Metrics.PerTopic {
		topicLabels = []string{"topic"}
	}
	s.eligibleBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name("lag_bytes"),
		Help: "Bytes of closed ledgers the policy selects for offload that are not offloaded yet (per topic with metrics.per_topic)."}, topicLabels)
	s.lagSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name("lag_seconds"),
		Help: "Age since close of the oldest ledger selected for offload and not offloaded yet (0: none)."}, topicLabels)
	if !c.Metrics.PerTopic {
		s.eligibleBytes.WithLabelValues()
		s.lagSeconds.WithLabelValues()
	}
	f.Register(s.eligibleBytes)
	f.Register(s.lagSeconds)
	s.offloaded = f.Gauge("offloaded_bytes", "Bytes of ledgers in the object store (complete offloads), over all topics.")
	s.bkBytes = f.Gauge("bookkeeper_bytes", "Bytes of closed ledgers whose BookKeeper copy still exists, over all topics.")
	s.sessions = f.CounterVec("zookeeper_sessions_total", "ZooKeeper sessions opened and lost.",
		metrics.Label{Name: "event", Values: []string{"opened", "lost", "failed"}})
	s.up = f.Gauge("ready", "1 while the replica has a ZooKeeper session and serves work.")
	s.evals = f.Counter("policy_evaluations_total", "Policy evaluations.")
	if err := f.Err(); err != nil {
		return nil, err
	}
	st, err := c.openStore(ctx, d.Logger, d.Registerer)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s.store = st
	s.status = Status{Replica: c.Leases.ID, Topics: []TopicStatus{}, Ledgers: []LedgerStatus{}}
	return s, nil
}

// Run serves HTTP and works until ctx ends (then stops at safe points
// within Config.Scheduler.StopTimeout and returns nil). A lost ZooKeeper
// session stops all work at once and starts over on a new session.
func (s *Service) Run(ctx context.Context) error {
	defer s.store.Close()
	ln := s.ln
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.HTTP.Listen); err != nil {
			return fmt.Errorf("http.listen %s: %w", s.cfg.HTTP.Listen, err)
		}
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	s.log.Info("offload service started", "replica", s.cfg.Leases.ID, "http", ln.Addr().String(), "store", s.store.Name())
	back := retry.Backoff{Initial: time.Second, Max: 30 * time.Second}
	for n := 1; ctx.Err() == nil; n++ {
		err := s.session(ctx)
		if ctx.Err() != nil {
			break
		}
		s.log.Warn("offload work stopped; reconnecting", "err", err)
		if err := retry.Sleep(ctx, back.Delay(min(n, 6), nil)); err != nil {
			break
		}
	}
	s.log.Info("offload service stopped")
	return nil
}

// session runs one ZooKeeper session's worth of work.
func (s *Service) session(ctx context.Context) error {
	c := s.cfg
	servers, root, err := tzk.ParseServiceURI(c.ZooKeeper.Servers)
	if err != nil {
		return err
	}
	zo, err := c.zkOptions(s.log)
	if err != nil {
		return err
	}
	sess, err := tzk.Connect(ctx, servers, zo)
	if err != nil {
		s.sessions.WithLabelValues("failed").Inc()
		s.setError(err)
		return err
	}
	s.sessions.WithLabelValues("opened").Inc()
	s.log.Info("zookeeper session", "servers", sess.Servers(), "session", fmt.Sprintf("%#x", sess.SessionID()))
	defer sess.Close()
	if c.BookKeeper.LedgersRoot != "" {
		root = c.BookKeeper.LedgersRoot
	}
	// Every write a job makes is fenced by its topic's lease (the
	// scheduler puts the lease's fence in the job's context); the stores
	// refuse a write that comes without one.
	ledgers, err := metadata.NewStore(ctx, sess, metadata.StoreOptions{Root: root, Logger: s.log, RequireFence: true})
	if err != nil {
		s.setError(err)
		return err
	}
	bkTLS, err := c.bookieTLS()
	if err != nil {
		return err
	}
	bk, err := bkclient.New(bkclient.Options{Resolver: ledgers, TLS: bkTLS, Logger: s.log, Registerer: s.reg})
	if err != nil {
		return err
	}
	defer bk.Close()
	broker, err := c.Admin.BrokerAdmin(s.log)
	if err != nil {
		return err
	}
	ml := mledger.New(sess, &mledger.Options{Chroot: c.ZooKeeper.MLChroot, Logger: s.log, Registerer: s.reg, RequireFence: true})
	leases := newZKLeases(sess, c.Leases.Root, c.Leases.ID, s.log)
	defer leases.close()
	runner := newPipelineRunner(ml, ledgers, bk, s.store, broker, s.pool, s.steps, s.drv, c, s.log, s.reg)
	runner.deps.Failpoints = s.fps
	runner.onResult = s.record
	var sc *scrub.Scrubber
	if c.Scrub.On() {
		verifier, err := pipeline.New(runner.deps, runner.base)
		if err != nil {
			return err
		}
		var broker pipeline.Broker
		if runner.deps.Broker != nil {
			broker = runner.deps.Broker
		}
		sc, err = scrub.New(scrub.Deps{ML: ml, Ledgers: ledgers, Store: s.store, Verifier: verifier, Broker: broker,
			Logger: s.log, Registerer: s.reg}, scrub.Options{Deep: c.Scrub.Deep, LedgersPerSecond: c.Scrub.LedgersPerSecond})
		if err != nil {
			return err
		}
		runner.scrub = sc
	}
	runner.guard = NewTopicGuard(sess, ml, broker, c.ZooKeeper.ConfigChroot, c.brokerFallback(), s.log)
	sched := scheduler.New(runner, leases, scheduler.Options{
		LedgersInFlight: c.Scheduler.LedgersInFlight,
		Backoff:         retry.Backoff{Initial: c.Scheduler.RetryInitial.D(), Max: c.Scheduler.RetryMax.D()},
		ParkAfter:       c.Scheduler.ParkAfter, ParkFor: c.Scheduler.ParkFor.D(), StopTimeout: c.Scheduler.StopTimeout.D(),
		Logger: s.log, Registerer: s.reg,
	})
	disc := discovery.New(sess, discovery.Options{Chroot: c.ZooKeeper.MLChroot, Concurrency: c.Discovery.Concurrency,
		RescanInterval: c.Discovery.RescanInterval.D(), Logger: s.log, Registerer: s.reg})
	sn := &snapshotter{conn: sess, ledgers: ledgers, src: s.src, rules: s.rules, chroot: c.ZooKeeper.ConfigChroot,
		view: newBrokerView(broker, c, s.log), log: s.log}

	work, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := disc.Run(work); err != nil {
			errc <- fmt.Errorf("discovery: %w", err)
		}
	}()
	// The first scan must finish before the replica is ready.
	first, err := disc.Scan(work)
	if err != nil {
		cancel()
		wg.Wait()
		return err
	}
	s.log.Info("first scan", "managed_ledgers", first.Listed, "ledgers", first.Ledgers, "errors", first.Errors, "took", first.Took)
	s.mu.Lock()
	s.sched, s.scrub, s.ready = sched, sc, true
	s.mu.Unlock()
	s.up.Set(1)
	defer func() {
		s.mu.Lock()
		s.ready = false
		s.mu.Unlock()
		s.up.Set(0)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.evaluateLoop(work, disc, sn, sched)
	}()
	if sc != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.scrubLoop(work, disc, sc, leases)
		}()
	}
	if c.Sweeper.Enabled {
		sw := newSweeper(c, sess, s.store, false, s.log, s.reg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.sweepLoop(work, sw)
		}()
	}
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Run(ctx) }()
	var result error
	select {
	case err := <-schedDone:
		result = err // ctx ended (nil, after the safe-point stop) or leases lost
		if errors.Is(err, scheduler.ErrLeasesLost) {
			s.sessions.WithLabelValues("lost").Inc()
			result = fmt.Errorf("%w: %s", err, leases.reason())
		}
	case err := <-errc:
		result = err
		cancel()
		<-schedDone
	}
	cancel()
	wg.Wait()
	if result != nil {
		s.setError(result)
	}
	return result
}

// evaluateLoop evaluates the policy after discovery changes (at most once
// a second) and every scheduler.interval, and offers the candidates.
func (s *Service) evaluateLoop(ctx context.Context, disc *discovery.Discovery, sn *snapshotter, sched *scheduler.Scheduler) {
	t := time.NewTicker(s.cfg.Scheduler.Interval.D())
	defer t.Stop()
	for {
		s.evaluate(ctx, disc, sn, sched)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-disc.Changed():
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

func (s *Service) evaluate(ctx context.Context, disc *discovery.Discovery, sn *snapshotter, sched *scheduler.Scheduler) {
	topics, readErrs := disc.Snapshot()
	snap, rep := sn.build(ctx, topics)
	now := time.Now()
	res := policy.Evaluate(snap, now, s.rules)
	s.evals.Inc()
	sched.Offer(append(res.Candidates, s.scrubCandidates()...))
	s.publish(now, res, rep, readErrs, snap.BookieUsage, disc.LastScan())
}

func (s *Service) sweepLoop(ctx context.Context, sw *sweeper.Sweeper) {
	t := time.NewTicker(s.cfg.Sweeper.Interval.D())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := sw.Sweep(ctx)
		st := SweepStatus{At: time.Now(), DryRun: res.DryRun, Objects: res.Objects, Uploads: res.Uploads,
			Removed: res.Removed, Kept: res.Kept, Errors: res.Errors}
		if err != nil {
			st.Err = err.Error()
		}
		s.mu.Lock()
		s.status.Sweeper = &st
		s.mu.Unlock()
	}
}

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

func (s *Service) publish(now time.Time, res policy.Result, rep SnapshotReport, readErrs map[string]error,
	usage map[string]float64, scan discovery.ScanStats) {
	s.mu.Lock()
	sched := s.sched
	s.mu.Unlock()
	ledgers, elsewhere := s.ledgerStates(sched)
	next := map[string]string{}
	for _, c := range res.Candidates {
		if _, ok := next[c.ML]; !ok {
			next[c.ML] = fmt.Sprintf("%s ledger %d (%s: %s)", c.Action, c.LedgerID, c.Rule, c.Trigger)
		}
	}
	st := Status{Replica: s.cfg.Leases.ID, EvaluatedAt: now, StartedAt: s.started, Topics: []TopicStatus{},
		Ledgers: ledgers, LeasedElsewhere: elsewhere, BookieUsage: usage, Pressured: res.PressuredBookies}
	st.Totals.countLedgers(st.Ledgers)
	lastErr := ledgerErrors(st.Ledgers)
	var perTopicBytes, perTopicLag map[string]float64
	if s.cfg.Metrics.PerTopic {
		perTopicBytes, perTopicLag = map[string]float64{}, map[string]float64{}
	}
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
		if perTopicBytes != nil {
			perTopicBytes[t.Topic] = float64(t.EligibleBytes)
			perTopicLag[t.Topic] = ts.LagSeconds
		}
	}
	if !oldest.IsZero() {
		st.Totals.LagSeconds = now.Sub(oldest).Seconds()
	}
	st.Scan = ScanInfo{At: scan.Started, Seconds: scan.Took.Seconds(), ManagedLedgers: scan.Listed, Ledgers: scan.Ledgers}
	names := make([]string, 0, len(readErrs))
	for n := range readErrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st.Warnings = append(st.Warnings, fmt.Sprintf("managed ledger %s not read: %v", n, readErrs[n]))
	}
	st.Totals.UnreadableMLs = len(readErrs)
	st.Totals.PressureErrors = len(rep.PressureErrors)
	for _, e := range rep.PressureErrors {
		st.Warnings = append(st.Warnings, "pressure: "+e)
	}
	for _, e := range rep.PolicyErrors {
		st.Warnings = append(st.Warnings, "namespace policies: "+e)
	}
	for _, e := range rep.BrokerErrors {
		st.Warnings = append(st.Warnings, e+" (every topic is left to the broker meanwhile)")
	}
	for _, name := range res.UnusedRules {
		st.Warnings = append(st.Warnings, fmt.Sprintf("rule %q matches no topic", name))
	}
	for _, p := range res.UnusedIncludes {
		st.Warnings = append(st.Warnings, fmt.Sprintf("policy.include %q matches no topic", p))
	}
	// Metrics.
	s.offloaded.Set(float64(st.Totals.OffloadedBytes))
	s.bkBytes.Set(float64(st.Totals.BKBytes))
	if perTopicBytes != nil {
		s.eligibleBytes.Reset()
		s.lagSeconds.Reset()
		for t, v := range perTopicBytes {
			s.eligibleBytes.WithLabelValues(t).Set(v)
			s.lagSeconds.WithLabelValues(t).Set(perTopicLag[t])
		}
	} else {
		s.eligibleBytes.WithLabelValues().Set(float64(st.Totals.LagBytes))
		s.lagSeconds.WithLabelValues().Set(st.Totals.LagSeconds)
	}
	s.mu.Lock()
	st.Ready = s.ready
	st.Sweeper = s.status.Sweeper
	st.Scrub = s.status.Scrub
	st.LastError, st.LastErrorAt = s.status.LastError, s.status.LastErrorAt
	s.status = st
	s.mu.Unlock()
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

// Handler serves /status, /metrics, /healthz and /readyz.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.gath, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Status())
	})
	// healthz: the process serves (a liveness probe must not fail when
	// ZooKeeper is down: restarting would not help).
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	// readyz: a ZooKeeper session and a first full scan.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		st := s.Status()
		if !st.Ready {
			msg := "not ready: no ZooKeeper session or first scan not done"
			if st.LastError != "" {
				msg += "; last error: " + st.LastError
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "tierkeeper offloader: /status /metrics /healthz /readyz")
	})
	return mux
}

// driver is the driver metadata the config records in offload contexts.
func (c *Config) driver() (mledger.Driver, error) {
	drv, err := pipeline.DriverForStore(c.Store.Client(), c.Driver.Name)
	if err != nil {
		return mledger.Driver{}, fmt.Errorf("driver: %w", err)
	}
	if c.Driver.Provider != "" {
		drv.Provider = c.Driver.Provider
	}
	if c.Driver.Bucket != "" {
		drv.Bucket = c.Driver.Bucket
	}
	if c.Driver.Region != "" {
		drv.Region = c.Driver.Region
	}
	if c.Driver.ServiceEndpoint != "" {
		drv.ServiceEndpoint = c.Driver.ServiceEndpoint
	}
	if _, err := drv.Metadata(); err != nil {
		return mledger.Driver{}, fmt.Errorf("driver: %w", err)
	}
	return drv, nil
}
