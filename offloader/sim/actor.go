package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// actor is one incarnation of a process: a replica or a CLI run.
type actor struct {
	w      *World
	name   string
	sess   *session
	cancel context.CancelFunc
	sched  *scheduler.Scheduler
	cli    bool
	done   bool // the CLI run ended

	pausedUntil   int // no request granted up to this decision
	dead          bool
	diedAt        time.Time
	partitioned   bool
	partitionedAt time.Time
}

// session is a simulated ZooKeeper session of one actor; it implements
// mledger.ZK and offloader.LeaseSession (and Multi, as go-zookeeper's
// Conn). Every request is a yield point.
type session struct {
	w          *World
	a          *actor
	id         int64
	timeout    time.Duration
	lost       chan struct{}
	lostClosed bool
}

var (
	_ mledger.ZK             = (*session)(nil)
	_ offloader.LeaseSession = (*session)(nil)
)

// SessionTimeout is the simulated sessions' timeout.
const SessionTimeout = 10 * time.Second

// do runs one request: waits for its turn, then applies fn unless the
// request is lost, and reports a lost answer as a connection loss.
func (s *session) do(desc string, fn func() error) error {
	fault, err := s.w.gateOn(s.a, s, "zk "+desc)
	if err != nil {
		return err
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	switch {
	case s.lostClosed || !s.w.zk.sessions[s.id]:
		return gozk.ErrSessionExpired
	case fault == "lose-request":
		return gozk.ErrConnectionClosed
	}
	err = fn()
	if fault == "lose-reply" {
		return gozk.ErrConnectionClosed
	}
	return err
}

func (s *session) Get(p string) (data []byte, st *gozk.Stat, err error) {
	err = s.do("get "+p, func() error {
		data, st, err = s.w.zk.get(p)
		return err
	})
	return data, st, err
}

func (s *session) Children(p string) (kids []string, st *gozk.Stat, err error) {
	err = s.do("children "+p, func() error {
		kids, st, err = s.w.zk.getChildren(p)
		return err
	})
	return kids, st, err
}

func (s *session) Set(p string, data []byte, version int32) (st *gozk.Stat, err error) {
	err = s.do(fmt.Sprintf("set %s v%d", p, version), func() error {
		var res []gozk.MultiResponse
		res, err = s.w.zk.multi(s.id, s.w.now(), []op{{kind: "set", path: p, data: data, version: version}})
		if err == nil {
			st = res[0].Stat
		}
		return err
	})
	return st, err
}

func (s *session) Create(p string, data []byte, flags int32, acl []gozk.ACL) (name string, err error) {
	err = s.do("create "+p, func() error {
		var res []gozk.MultiResponse
		res, err = s.w.zk.multi(s.id, s.w.now(), []op{{kind: "create", path: p, data: data, flags: flags}})
		if err == nil {
			name = res[0].String
		}
		return err
	})
	return name, err
}

func (s *session) Delete(p string, version int32) error {
	return s.do(fmt.Sprintf("delete %s v%d", p, version), func() error {
		_, err := s.w.zk.multi(s.id, s.w.now(), []op{{kind: "delete", path: p, version: version}})
		return err
	})
}

// Multi is go-zookeeper's Conn.Multi: ops are *gozk.CreateRequest,
// *gozk.SetDataRequest, *gozk.DeleteRequest or *gozk.CheckVersionRequest.
func (s *session) Multi(ops ...any) (res []gozk.MultiResponse, err error) {
	var os []op
	for _, o := range ops {
		switch r := o.(type) {
		case *gozk.CreateRequest:
			os = append(os, op{kind: "create", path: r.Path, data: r.Data, flags: r.Flags})
		case *gozk.SetDataRequest:
			os = append(os, op{kind: "set", path: r.Path, data: r.Data, version: r.Version})
		case *gozk.DeleteRequest:
			os = append(os, op{kind: "delete", path: r.Path, version: r.Version})
		case *gozk.CheckVersionRequest:
			os = append(os, op{kind: "check", path: r.Path, version: r.Version})
		default:
			return nil, fmt.Errorf("unknown operation type %T", o)
		}
	}
	desc := "multi"
	for _, o := range os {
		desc += " " + o.String()
	}
	err = s.do(desc, func() error {
		res, err = s.w.zk.multi(s.id, s.w.now(), os)
		return err
	})
	return res, err
}

func (s *session) SessionID() int64 { return s.id }

// ACL is the ACL of created znodes (not modelled: open to all).
func (s *session) ACL() []gozk.ACL { return gozk.WorldACL(gozk.PermAll) }

func (s *session) State() gozk.State {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	switch {
	case s.lostClosed:
		return gozk.StateExpired
	case s.a.partitioned:
		return gozk.StateDisconnected
	}
	return gozk.StateHasSession
}

func (s *session) Lost() <-chan struct{} { return s.lost }

// LastHeard: a connected client hears pings all the time; a partitioned
// one last heard from ZooKeeper when the partition began.
func (s *session) LastHeard() time.Time {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.a.partitioned {
		return s.a.partitionedAt
	}
	return s.w.now()
}

func (s *session) SessionTimeout() time.Duration { return s.timeout }

// newSession opens a session for a (w.mu held).
func (w *World) newSession(a *actor) *session {
	s := &session{w: w, a: a, id: w.zk.newSession(), timeout: SessionTimeout, lost: make(chan struct{})}
	a.sess = s
	return s
}

// newActor adds an incarnation of name (w.mu held).
func (w *World) newActor(name string) *actor {
	a := &actor{w: w, name: name}
	w.actors = append(w.actors, a)
	return a
}

// pipelineFor builds the real pipeline on a's simulated dependencies.
func (w *World) pipelineFor(a *actor, sess *session, trim bool) (*pipeline.Pipeline, *mledger.Store) {
	ml := mledger.New(sess, &mledger.Options{RetryBackoff: time.Nanosecond})
	d := pipeline.Deps{ML: ml, Ledgers: &bkClient{w: w, a: a}, Bookies: &bkClient{w: w, a: a}, Store: &gatedStore{w: w, a: a},
		Broker: &brokerAdmin{w: w, a: a}, Failpoints: &failpoints{w: w, a: a}}
	p, err := pipeline.New(d, pipeline.Options{Driver: SimDriver, BlockSize: format.MinPartSize, Trim: trim, DeletionLag: w.cfg.Lag})
	if err != nil {
		panic(err)
	}
	return p, ml
}

// SimDriver is the driver metadata the simulated offloaders record.
var SimDriver = mledger.Driver{Name: "aws-s3", Bucket: "sim", Region: "sim"}

// startReplica starts an incarnation of replica name: a session, the real
// topic leases on it, the real scheduler running the real pipeline. When
// the leases are lost the replica starts over with a new session, as the
// service does.
func (w *World) startReplica(name string) {
	w.mu.Lock()
	a := w.newActor(name)
	ctx, cancel := context.WithCancel(w.ctx)
	a.cancel = cancel
	sess := w.newSession(a)
	w.tracef("%s started, session %#x", name, sess.id)
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for first := true; ctx.Err() == nil; first = false {
			if !first {
				// Reconnecting is a request like any other, so that
				// session ids follow the schedule.
				if _, err := w.gate(a, "zk connect"); err != nil {
					return
				}
				w.mu.Lock()
				sess = w.newSession(a)
				w.tracef("%s session %#x", name, sess.id)
				w.mu.Unlock()
			}
			leases, stop := offloader.NewLeases(sess, LeaseRoot, name, slog.New(slog.DiscardHandler))
			// The scheduler starts half a millisecond after the leases, so
			// their tickers never fire together.
			time.Sleep(500 * time.Microsecond)
			p, ml := w.pipelineFor(a, sess, true)
			s := scheduler.New(&runner{p: p, guard: guardFor(sess, ml)}, leases, scheduler.Options{
				LedgersInFlight: 2, Backoff: backoffNone, Settle: time.Nanosecond, StopTimeout: time.Second,
			})
			w.mu.Lock()
			a.sched = s
			w.mu.Unlock()
			err := s.Run(ctx)
			stop()
			w.mu.Lock()
			a.sched = nil
			if ctx.Err() == nil {
				w.notef(a, "%s scheduler stopped: %v; reconnecting", name, err)
			}
			w.mu.Unlock()
			if ctx.Err() == nil && !errors.Is(err, scheduler.ErrLeasesLost) {
				return
			}
		}
	}()
}

// startCLI starts one `offloader offload --delete-bk` run on the topic.
func (w *World) startCLI(name string) {
	w.mu.Lock()
	a := w.newActor(name)
	a.cli = true
	ctx, cancel := context.WithCancel(w.ctx)
	a.cancel = cancel
	sess := w.newSession(a)
	w.cliRuns++
	w.tracef("%s started (session %#x)", name, sess.id)
	var ids []int64
	if info, _, err := w.storedInfo(); err == nil {
		ids = pipeline.Candidates(info, -1, true)
	}
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer cancel()
		p, ml := w.pipelineFor(a, sess, true)
		var tr *pipeline.TopicResult
		err := guardFor(sess, ml).Check(ctx, Topic)
		if err == nil {
			tr, err = runLeased(ctx, sess, a.name, p, ids)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		a.done = true
		if !a.dead {
			w.notef(a, "%s ended: %s", name, w.aliasKeys(summary(tr, err)))
			a.dead = true
			w.zk.expire(sess.id) // the process exits: its session closes
			sess.lostClosed = true
			close(sess.lost)
		}
	}()
}

// runLeased runs the pipeline as `offloader offload` does
// (offloader.RunLeased): under a fresh generation of the topic's lease,
// its writes fenced by it, cancelled when the leases are lost; a topic
// leased elsewhere is not touched.
func runLeased(ctx context.Context, sess *session, id string, p *pipeline.Pipeline, ids []int64) (*pipeline.TopicResult, error) {
	leases, stop := offloader.NewLeases(sess, LeaseRoot, id, slog.New(slog.DiscardHandler))
	defer stop()
	tr, holder, err := offloader.RunLeased(ctx, leases, p, Topic, ids, nil)
	if err == nil && tr == nil {
		err = fmt.Errorf("leased by %s", holder)
	}
	return tr, err
}

func summary(tr *pipeline.TopicResult, err error) string {
	if tr == nil {
		return fmt.Sprint(err)
	}
	s := ""
	for _, lr := range tr.Ledgers {
		s += fmt.Sprintf("L%d:%s ", lr.LedgerID, lr.Outcome)
	}
	if err != nil {
		s += "(errors)"
	}
	return s
}

// offer gives a's scheduler the policy's candidates, computed from the
// stored metadata as the service's discovery does (w.mu held).
func (a *actor) offer() {
	info, _, err := a.w.storedInfo()
	if err != nil {
		return
	}
	ls := info.GetLedgerInfo()
	var cs []policy.Candidate
	set := policy.Settings{BlockSize: format.MinPartSize, DeletionLag: policy.DeletionLag{Mode: policy.LagAfter, After: a.w.cfg.Lag}}
	for i, li := range ls {
		if i == len(ls)-1 || li.GetEntries() <= 0 {
			continue
		}
		oc := li.GetOffloadContext()
		switch {
		case !oc.GetComplete():
			cs = append(cs, policy.Candidate{LedgerRef: mledger.LedgerRef{ML: Topic, LedgerID: li.GetLedgerId()}, Action: policy.ActionOffload, Settings: set})
		case !oc.GetBookkeeperDeleted():
			cs = append(cs, policy.Candidate{LedgerRef: mledger.LedgerRef{ML: Topic, LedgerID: li.GetLedgerId()}, Action: policy.ActionTrim, Settings: set})
		}
	}
	a.w.tracef("%s offered %d candidates", a.name, len(cs))
	a.sched.Offer(policy.ListOf(cs...))
}

// backoffNone retries a failed ledger at the next dispatch after any time
// has passed (the scheduler's jitter is then too small to matter).
var backoffNone = retryBackoff()

// runner runs scheduler jobs on the pipeline as the service's runner
// does: the topic guard first (a topic the broker offloads by itself is
// not touched), then the pipeline, its results mapped to the scheduler's
// outcomes by the service's own mapping (offloader.JobOutcomes).
type runner struct {
	p     *pipeline.Pipeline
	guard *offloader.TopicGuard
}

func (r *runner) Run(ctx context.Context, j scheduler.Job) []scheduler.Outcome {
	if err := r.guard.Check(ctx, j.ML); err != nil {
		return offloader.FailJob(j, string(pipeline.StepSelect), err)
	}
	tr, _ := r.p.RunTopic(ctx, j.ML, j.Ledgers)
	if tr == nil {
		return nil
	}
	return offloader.JobOutcomes(j, tr)
}

// guardFor is the topic guard of a replica or CLI run on sess: namespace
// policies read from the simulated ZooKeeper, no admin URL (the
// broker-level thresholds off, as the offload command assumes without one).
func guardFor(sess *session, ml *mledger.Store) *offloader.TopicGuard {
	return offloader.NewTopicGuard(sess, ml, nil, "", policy.BrokerSettings{ThresholdBytes: -1, ThresholdSeconds: -1, Source: "sim"}, nil)
}

// failpoints make every pipeline failpoint a yield point where the
// process may crash.
type failpoints struct {
	w *World
	a *actor
}

func (f *failpoints) Hit(ctx context.Context, name string, t mledger.LedgerRef) error {
	fault, err := f.w.gate(f.a, fmt.Sprintf("fp %s L%d", name, t.LedgerID))
	if err != nil {
		return err
	}
	switch fault {
	case "crash":
		return fmt.Errorf("%w at %s", errCrashed, name)
	case "fail":
		return fmt.Errorf("%w %s (simulated)", pipeline.ErrFailpoint, name)
	}
	return nil
}
