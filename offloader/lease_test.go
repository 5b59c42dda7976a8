package offloader

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// slowRelease delays every lease release, as a slow ZooKeeper answer
// would.
type slowRelease struct {
	*zkLeases
	delay time.Duration
}

func (s slowRelease) TryAcquire(ctx context.Context, ml string) (scheduler.Lease, string, error) {
	g, holder, err := s.zkLeases.TryAcquire(ctx, ml)
	if g == nil {
		return nil, holder, err
	}
	return slowLease{g, s.delay}, holder, err
}

type slowLease struct {
	scheduler.Lease
	delay time.Duration
}

func (s slowLease) Release(ctx context.Context) {
	time.Sleep(s.delay)
	s.Lease.Release(ctx)
}

// leaseChecker is a scheduler.Runner that, in the middle of each job,
// checks that the job's lease node exists and is this session's.
type leaseChecker struct {
	t    *testing.T
	sess *tzk.Session
	l    *zkLeases
	hold time.Duration

	mu   sync.Mutex
	jobs []string // per job: "" (lease held throughout) or what was wrong
	done chan struct{}
}

func (r *leaseChecker) Run(ctx context.Context, j scheduler.Job) []scheduler.Outcome {
	time.Sleep(r.hold)
	why := ""
	_, st, err := r.sess.Get(r.l.path(j.ML))
	switch {
	case err != nil:
		why = "lease node: " + err.Error()
	case st.EphemeralOwner != r.sess.SessionID():
		why = "lease node owned by another session"
	}
	r.mu.Lock()
	r.jobs = append(r.jobs, why)
	if len(r.jobs) == 2 {
		close(r.done)
	}
	r.mu.Unlock()
	out := make([]scheduler.Outcome, len(j.Ledgers))
	for i, id := range j.Ledgers {
		out[i] = scheduler.Outcome{LedgerID: id}
	}
	return out
}

// Two jobs of one topic in a row, the first one's lease release slow: the
// second job must run under a lease node of its own for all its run (the
// release of the first job must neither free the topic before it is done
// nor delete the second job's lease). Before the fix the scheduler
// released in a goroutine after freeing the topic, the second job's
// TryAcquire found its own session's node ("held") and the late release
// deleted it: "job 2 ran without its lease: lease node: zk: node does not
// exist".
func TestLeaseReleaseBeforeNextJob(t *testing.T) {
	peers(t)
	sess := peer.ZK.Session(t, tzk.Options{SessionTimeout: 10 * time.Second})
	l := newZKLeases(sess, "/tierkeeper/release-race-leases", "r1", slog.New(slog.DiscardHandler))
	defer l.close()
	r := &leaseChecker{t: t, sess: sess, l: l, hold: 600 * time.Millisecond, done: make(chan struct{})}
	s := scheduler.New(r, slowRelease{l, 300 * time.Millisecond}, scheduler.Options{LedgersInFlight: 2, MaxBatch: 1})
	const ml = "acme/race/persistent/t"
	s.Offer(policy.ListOf(policy.Candidate{LedgerRef: mledger.LedgerRef{ML: ml, LedgerID: 1}, Action: policy.ActionOffload}, policy.Candidate{LedgerRef: mledger.LedgerRef{ML: ml, LedgerID: 2}, Action: policy.ActionOffload}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	select {
	case <-r.done:
	case <-ctx.Done():
		t.Fatal("two jobs did not run within 30 s")
	}
	cancel()
	<-errc
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, why := range r.jobs {
		if why != "" {
			t.Errorf("job %d ran without its lease: %s", i+1, why)
		}
	}
}

// The lease fences every write of its job (real ZooKeeper, a real session
// expiry behind a fault proxy): a write under a held lease lands; an
// unfenced write on a store that requires a fence is refused; after the
// lease's session expired, a write with its fence — sent on another, live
// session, as go-zookeeper does with requests queued when it silently
// opens a new session — is refused and writes nothing; after another
// replica took the lease, and after this replica took it again on its own
// session, the older generation's writes and release are refused too.
// Before the fence, the stale writes landed (the store wrote with a plain
// compare-and-set).
func TestLeaseFencesWrites(t *testing.T) {
	peers(t)
	const root = "/tierkeeper/fence-leases"
	const ml = "acme/fence/persistent/t"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	live := peer.ZK.Session(t, tzk.Options{SessionTimeout: 10 * time.Second})
	if err := mltest.NewCreator(live.Conn).CreateML(ml, mltest.Info(mltest.Closed(1, 2, 100, time.Now())...)); err != nil {
		t.Fatal(err)
	}
	store := mledger.New(live, &mledger.Options{RequireFence: true})
	version := func() int32 {
		s, err := store.Get(ctx, ml)
		if err != nil {
			t.Fatal(err)
		}
		return s.Version
	}
	write := func(ctx context.Context) error {
		e, err := mledger.PrepareEdit(1, uuid.New(), mledger.Driver{Name: "aws-s3", Bucket: "b"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = store.UpdateOffloadContexts(ctx, ml, []mledger.Edit{e})
		return err
	}

	px := testenv.StartFaultProxy(t, peer.ZK.Addr)
	const timeout = 2 * time.Second
	sessA, err := tzk.Connect(ctx, []string{px.Addr}, tzk.Options{SessionTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer sessA.Close()
	la := newZKLeases(sessA, root, "a", slog.New(slog.DiscardHandler))
	defer la.close()
	ga, holder, err := la.TryAcquire(ctx, ml)
	if err != nil || ga == nil {
		t.Fatalf("acquire: %v (holder %q)", err, holder)
	}
	if err := write(ga.Fence(ctx)); err != nil {
		t.Fatalf("write under a held lease: %v", err)
	}
	v := version()
	if err := write(ctx); !errors.Is(err, tzk.ErrUnfenced) || version() != v {
		t.Fatalf("unfenced write on a store requiring a fence: %v (version %d, was %d)", err, version(), v)
	}

	// Expire A's session for real: hold its traffic past the timeout.
	owner := la.path(ml)
	_, _, gone, err := live.ExistsW(owner)
	if err != nil {
		t.Fatal(err)
	}
	px.Partition()
	select {
	case <-gone:
	case <-time.After(10 * timeout):
		t.Fatal("the server did not expire the partitioned session")
	}
	px.Heal()
	if err := write(ga.Fence(ctx)); !errors.Is(err, tzk.ErrFenced) || version() != v {
		t.Fatalf("write after the lease's session expired: %v (version %d, was %d), want ErrFenced and nothing written", err, version(), v)
	}

	// Another replica takes the topic; A's generation stays refused.
	lb := newZKLeases(live, root, "b", slog.New(slog.DiscardHandler))
	defer lb.close()
	gb, _, err := lb.TryAcquire(ctx, ml)
	if err != nil || gb == nil {
		t.Fatalf("replica b acquire: %v", err)
	}
	if err := write(ga.Fence(ctx)); !errors.Is(err, tzk.ErrFenced) || version() != v {
		t.Fatalf("write after another replica took the lease: %v (version %d, was %d)", err, version(), v)
	}
	// A stale release (A's generation, sent on a live session) leaves b's lease.
	stale := &zkLease{l: lb, ml: ml, fence: ga.(*zkLease).fence}
	stale.Release(ctx)
	if _, st, err := live.Get(owner); err != nil || st.EphemeralOwner != live.SessionID() {
		t.Fatalf("b's lease after a stale release: %v", err)
	}
	if err := write(gb.Fence(ctx)); err != nil {
		t.Fatalf("write under b's lease: %v", err)
	}
	// b releases and takes the topic again on the same session: the
	// owner node looks the same (b's session, version 1), the epoch does not.
	gb.Release(ctx)
	gb2, _, err := lb.TryAcquire(ctx, ml)
	if err != nil || gb2 == nil {
		t.Fatalf("replica b acquire again: %v", err)
	}
	v = version()
	if err := write(gb.Fence(ctx)); !errors.Is(err, tzk.ErrFenced) || version() != v {
		t.Fatalf("write of an earlier generation of this session: %v", err)
	}
	if err := write(gb2.Fence(ctx)); err != nil {
		t.Fatalf("write under b's new generation: %v", err)
	}
	gb2.Release(ctx)

	// An old-layout lease (ephemeral, version 0, no epoch) excludes.
	const oldML = "acme/fence/persistent/old"
	if _, err := live.Create(lb.path(oldML), []byte("old-replica"), gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if g, holder, err := lb.TryAcquire(ctx, oldML); err != nil || g != nil || !strings.Contains(holder, "old-replica") {
		t.Fatalf("topic leased by an old-layout replica: lease %v holder %q err %v", g, holder, err)
	}
}

// TestLeaseBreak: a lease whose holder is known dead is broken only while
// that holder's generation is the lease (the owner names it and no one has
// acquired since), and the broken generation's fenced writes fail.
func TestLeaseBreak(t *testing.T) {
	peers(t)
	const root = "/tierkeeper/break-leases"
	const ml = "acme/break/persistent/t"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	dead := peer.ZK.Session(t, tzk.Options{SessionTimeout: 10 * time.Second})
	other := peer.ZK.Session(t, tzk.Options{SessionTimeout: 10 * time.Second})
	ld := NewTopicLeases(dead, root, "dead-run", log)
	defer ld.Close()
	lo := NewTopicLeases(other, root, "rerun", log)
	defer lo.Close()
	g, _, err := ld.TryAcquire(ctx, ml)
	if err != nil || g == nil {
		t.Fatalf("acquire: %v %v", g, err)
	}
	if broke, err := lo.Break(ctx, ml, "someone-else"); err != nil || broke {
		t.Fatalf("break naming another holder: %v %v, want false", broke, err)
	}
	if g2, holder, err := lo.TryAcquire(ctx, ml); err != nil || g2 != nil || holder != "dead-run" {
		t.Fatalf("acquire while held: %v %q %v", g2, holder, err)
	}
	if broke, err := lo.Break(ctx, ml, "dead-run"); err != nil || !broke {
		t.Fatalf("break: %v %v, want true", broke, err)
	}
	g2, _, err := lo.TryAcquire(ctx, ml)
	if err != nil || g2 == nil {
		t.Fatalf("acquire after break: %v %v", g2, err)
	}
	// The broken generation writes nothing; the new one's lease stays.
	if _, err := tzk.SetFenced(g.Fence(ctx), dead, root+"/epochs/"+mledger.EncodeName(ml), nil, -1, true); !errors.Is(err, tzk.ErrFenced) {
		t.Fatalf("write of the broken generation: %v, want ErrFenced", err)
	}
	if broke, err := lo.Break(ctx, ml, "dead-run"); err != nil || broke {
		t.Fatalf("break after a new acquisition: %v %v, want false", broke, err)
	}
	g2.Release(ctx)
}
