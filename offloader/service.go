package offloader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/internal/metrics"
	"github.com/tierkeeper/tierkeeper/internal/retry"
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

	metrics *statusMetrics

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
	if s.metrics, err = newStatusMetrics(f, c.Metrics.PerTopic); err != nil {
		return nil, err
	}
	st, err := c.openStore(ctx, d.Logger, d.Registerer)
	if err != nil {
		return nil, err
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
	addr, stop, err := s.serveHTTP()
	if err != nil {
		return err
	}
	defer stop()
	s.log.Info("offload service started", "replica", s.cfg.Leases.ID, "http", addr, "store", s.store.Name())
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
	pc, err := c.Peers()
	if err != nil {
		return err
	}
	// Every write a job makes is fenced by its topic's lease (the
	// scheduler puts the lease's fence in the job's context); the stores
	// refuse a write that comes without one.
	peers, err := OpenPeers(ctx, pc, PeersOptions{Logger: s.log, Registerer: s.reg, Bookies: &bkclient.Options{}, Fenced: true})
	if err != nil {
		s.metrics.sessions.WithLabelValues("failed").Inc()
		s.setError(err)
		return err
	}
	defer peers.Close()
	s.metrics.sessions.WithLabelValues("opened").Inc()
	sess, ml, ledgers, bk, broker := peers.ZK, peers.ML, peers.Ledgers, peers.BK, peers.Admin
	s.log.Info("zookeeper session", "servers", sess.Servers(), "session", fmt.Sprintf("%#x", sess.SessionID()))
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
			Logger: s.log, Registerer: s.reg}, scrub.Options{Deep: c.Scrub.Deep, LedgersPerSecond: c.Scrub.LedgersPerSecond,
			CallTimeout: c.Scrub.LedgerTimeout.D()})
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
	// More sessions for the rescans' stats (discovery.sessions). One that
	// fails is left out (its stats go through the main session) until the
	// next session of the service opens new ones.
	var stats []discovery.Statter
	for range c.Discovery.Sessions - 1 {
		ss, err := pc.connect(ctx)
		if err != nil {
			return fmt.Errorf("discovery: a session for the rescans' stats: %w", err)
		}
		defer ss.Close()
		stats = append(stats, ss)
	}
	disc := discovery.New(sess, discovery.Options{Chroot: c.ZooKeeper.MLChroot, Concurrency: c.Discovery.Concurrency,
		RescanInterval: c.Discovery.RescanInterval.D(), StatConns: stats, Logger: s.log, Registerer: s.reg})
	defer disc.Close()
	sn := &snapshotter{conn: sess, ledgers: ledgers, src: s.src, rules: s.rules, chroot: c.ZooKeeper.ConfigChroot,
		view: newBrokerView(broker, c, s.log), log: s.log}

	work, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	// The first scan must finish before the replica is ready. Discovery
	// runs after it (watch events, rescans) without scanning again.
	first, err := disc.Scan(work)
	if err != nil {
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := disc.Run(work); err != nil {
			errc <- fmt.Errorf("discovery: %w", err)
		}
	}()
	s.log.Info("first scan", "managed_ledgers", first.Listed, "ledgers", first.Ledgers, "errors", first.Errors, "took", first.Took)
	s.mu.Lock()
	s.sched, s.scrub, s.ready = sched, sc, true
	s.mu.Unlock()
	s.metrics.up.Set(1)
	defer func() {
		s.mu.Lock()
		s.ready = false
		s.mu.Unlock()
		s.metrics.up.Set(0)
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
			s.metrics.sessions.WithLabelValues("lost").Inc()
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
	s.metrics.evals.Inc()
	sched.Offer(res.Candidates.Append(s.scrubCandidates()...))
	s.publish(evaluation{at: now, res: res, rep: rep, readErrs: readErrs, usage: snap.BookieUsage, scan: disc.LastScan()})
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
