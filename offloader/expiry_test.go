package offloader

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	s3api "github.com/aws/aws-sdk-go-v2/service/s3"
	gozk "github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// logRec is one log record a replica wrote.
type logRec struct {
	at    time.Time
	msg   string
	attrs map[string]string
}

// logStore keeps every record of a replica's logger (and prints them with
// -v), for assertions on what happened when.
type logStore struct {
	mu   sync.Mutex
	recs []logRec
}

type recHandler struct {
	st    *logStore
	attrs []slog.Attr
	echo  slog.Handler
}

func newLogger(st *logStore, name string) *slog.Logger {
	h := recHandler{st: st}
	if testing.Verbose() {
		h.echo = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}).WithAttrs([]slog.Attr{slog.String("replica", name)})
	}
	return slog.New(h)
}

func (h recHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h recHandler) Handle(ctx context.Context, r slog.Record) error {
	m := map[string]string{}
	for _, a := range h.attrs {
		m[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	h.st.mu.Lock()
	h.st.recs = append(h.st.recs, logRec{at: r.Time, msg: r.Message, attrs: m})
	h.st.mu.Unlock()
	if h.echo != nil {
		return h.echo.Handle(ctx, r)
	}
	return nil
}

func (h recHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = append(slices.Clone(h.attrs), as...)
	if h.echo != nil {
		h.echo = h.echo.WithAttrs(as)
	}
	return h
}

func (h recHandler) WithGroup(string) slog.Handler { return h }

// find returns the records with message msg whose attributes include kv
// (key, value, key, value ...).
func (s *logStore) find(msg string, kv ...string) []logRec {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logRec
next:
	for _, r := range s.recs {
		if r.msg != msg {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if r.attrs[kv[i]] != kv[i+1] {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// fpEvent is one failpoint a replica's pipeline reached.
type fpEvent struct {
	name string
	t    mledger.LedgerRef
	at   time.Time
}

// fpLog records a replica's failpoints and can stall it at one: the
// first after-verify (verified, not committed) of a ledger of a chosen
// managed ledger blocks until released, whatever the context says — a
// replica stopped exactly before its commit, like a process paused by the
// machine.
type fpLog struct {
	mu       sync.Mutex
	evs      []fpEvent
	stallML  string
	stalledT mledger.LedgerRef
	stalled  chan mledger.LedgerRef
	release  chan struct{}
	failML   string
}

func (f *fpLog) Hit(_ context.Context, name string, t mledger.LedgerRef) error {
	f.mu.Lock()
	f.evs = append(f.evs, fpEvent{name: name, t: t, at: time.Now()})
	stall := name == pipeline.FPAfterVerify && t.ML == f.stallML
	if stall {
		f.stallML, f.stalledT = "", t
	}
	fail := name == pipeline.FPMidCopy && t.ML == f.failML && f.stalledT.ML == t.ML && t != f.stalledT
	if fail {
		f.failML = ""
	}
	release := f.release
	f.mu.Unlock()
	if stall {
		f.stalled <- t
		<-release
	}
	if fail {
		return fmt.Errorf("%w: injected after the stall", pipeline.ErrFailpoint)
	}
	return nil
}

// failOtherCopy makes the first copy of another ledger of ml after the
// stall fail half-way: the pipeline commits the ledgers of a topic in one
// write, so this keeps that ledger out of the stalled ledger's commit, for
// another replica to take.
func (f *fpLog) failOtherCopy(ml string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failML = ml
}

// stallAt arms the stall for the next after-verify of ml.
func (f *fpLog) stallAt(ml string) (stalled <-chan mledger.LedgerRef, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stallML, f.stalled, f.release = ml, make(chan mledger.LedgerRef, 1), make(chan struct{})
	r := f.release
	return f.stalled, sync.OnceFunc(func() { close(r) })
}

// of returns the failpoint names reached for t, in order.
func (f *fpLog) of(t mledger.LedgerRef) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.evs {
		if e.t == t {
			out = append(out, e.name)
		}
	}
	return out
}

// replica is one in-process service of the expiry test.
type replica struct {
	name string
	base string
	logs *logStore
	fps  *fpLog
}

// status reads the replica's /status (which must answer).
func (r *replica) status(t *testing.T) Status {
	t.Helper()
	var st Status
	getJSON(t, r.base+"/status", &st)
	return st
}

// TestServiceSessionExpiresAtCommit runs the service on a real ZooKeeper
// behind a fault proxy (testenv.FaultProxy) and lets its session expire
// exactly at the commit step, stopping the pipeline there with its
// failpoints, while a second replica (connected directly) competes for
// the topic:
//
//   - the commit reaches ZooKeeper and its reply is lost (the proxy
//     partitions right after the setData): the ledger ends committed
//     exactly once, by that attempt, never copied again; the other replica
//     takes the topic only after the first one stopped working on it and
//     its session expired; /status shows the loss, then the recovery;
//   - the replica is stalled before its commit while its session expires:
//     the stale commit is never sent, and the new session adopts the
//     verified objects and commits them (no second copy);
//   - the service kept offloading another topic while a ledger was stuck
//     at its commit, and serves new topics on its new session;
//   - nothing lost: Pulsar's managed-ledger code reads every entry back.
func TestServiceSessionExpiresAtCommit(t *testing.T) {
	peers(t)
	const prefix = "acme/expiry/persistent/"
	mlA, mlB, mlC, mlD := prefix+"a", prefix+"b", prefix+"c", prefix+"d"
	written := map[string]mltest.Written{}
	written[mlA] = peer.MLWrite(t, mlA, 25, 10, 1000) // 2 closed ledgers + the open one
	written[mlB] = peer.MLWrite(t, mlB, 25, 10, 1000)
	s3 := testenv.StartS3(t)
	bucket := s3.NewBucket(t)
	px := testenv.StartFaultProxy(t, peer.ZK.Addr)
	const sessionTimeout = 3 * time.Second
	const leaseRoot = "/tierkeeper/expiry-leases"

	ctx, cancelAll := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancelAll()
	start := func(name, zkAddr string, include ...string) *replica {
		doc := fmt.Sprintf("zookeeper: {servers: %q, session_timeout: %s, connect_timeout: 20s}\nbookkeeper: {ledgers_root: %q}\n",
			zkAddr, sessionTimeout, peer.BK.LedgersRoot) + s3test.StoreYAML(s3, bucket, "TK_S3_SECRET") + fmt.Sprintf(`
leases: {id: %s, root: %s}
scheduler: {interval: 1s, retry_initial: 1s, retry_max: 3s, stop_timeout: 10s, ledgers_in_flight: 2, min_reload_interval: 0s}
discovery: {rescan_interval: 5s}
policy:
  include: [%s]
  default: {after: 0s, deletion_lag: broker}
`, name, leaseRoot, strings.Join(include, ", "))
		r := &replica{name: name, logs: &logStore{}, fps: &fpLog{}}
		r.base = startService(t, ctx, parseConfig(t, doc, s3), Deps{Logger: newLogger(r.logs, name), Failpoints: r.fps}).base
		return r
	}
	sess := peer.ZK.Session(t, tzk.Options{})
	ml := mledger.New(sess, nil)
	offloaded := func(name string) bool {
		states := ledgerStates(t, sess, name)
		for _, s := range states[:len(states)-1] {
			if s != mledger.StateOffloaded {
				return false
			}
		}
		return true
	}
	attempt := func(name string, id int64) (uuid.UUID, bool) {
		snap, err := ml.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, li := range snap.Info.GetLedgerInfo() {
			if li.GetLedgerId() == id {
				u, _ := mledger.AttemptUUID(li.GetOffloadContext())
				return u, li.GetOffloadContext().GetComplete()
			}
		}
		t.Fatalf("%s has no ledger %d", name, id)
		return uuid.Nil, false
	}
	// objectsOf lists the bucket's objects of ledger id.
	objectsOf := func(id int64) []string {
		out, err := s3.Client().ListObjectsV2(ctx, &s3api.ListObjectsV2Input{Bucket: &bucket})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, o := range out.Contents {
			if strings.Contains(*o.Key, fmt.Sprintf("-ledger-%d", id)) {
				keys = append(keys, *o.Key)
			}
		}
		slices.Sort(keys)
		return keys
	}
	leasePath := func(name string) string { return leaseRoot + "/" + mledger.EncodeName(name) }
	// watchGone returns a channel closed when the znode at p is deleted.
	watchGone := func(p string) <-chan time.Time {
		ok, _, ev, err := sess.ExistsW(p)
		if err != nil || !ok {
			t.Fatalf("lease %s: exists %v %v", p, ok, err)
		}
		c := make(chan time.Time, 1)
		go func() {
			if e := <-ev; e.Type == gozk.EventNodeDeleted {
				c <- time.Now()
			}
		}()
		return c
	}

	// Phase 1: the commit's reply is lost and the session expires.
	a := start("a", px.Addr, "acme/expiry") // policy patterns are tenant/namespace/topic
	stalled, release := a.fps.stallAt(mlA)
	a.fps.failOtherCopy(mlA)
	defer release()
	var a1 mledger.LedgerRef
	select {
	case a1 = <-stalled:
	case <-time.After(2 * time.Minute):
		t.Fatal("replica a never reached the commit of a ledger of topic a")
	}
	u1, complete := attempt(mlA, a1.LedgerID)
	if u1 == uuid.Nil || complete {
		t.Fatalf("at its commit, ledger %d: attempt %v complete %v", a1.LedgerID, u1, complete)
	}
	// Another topic goes on while this ledger waits at its commit.
	until(t, "topic b offloaded while topic a waits at its commit", time.Minute, func() bool { return offloaded(mlB) })
	data, lst, err := sess.Get(leasePath(mlA))
	if err != nil || string(data) != "a" {
		t.Fatalf("lease of topic a: %q %v", data, err)
	}
	gone := watchGone(leasePath(mlA))
	// The competitor, on a direct connection, finds the topic leased.
	b := start("b", peer.ZK.Addr, "acme/expiry/a")
	until(t, "replica b sees topic a leased by a", time.Minute, func() bool {
		return b.status(t).LeasedElsewhere[mlA] == "a"
	})
	fired := px.PartitionAfterZKRequest(testenv.ZKOpSetData, testenv.ZKOpMulti)
	release()
	select {
	case <-fired:
	case <-time.After(30 * time.Second):
		t.Fatal("the commit never reached ZooKeeper")
	}
	parted := time.Now()
	// The replica stops working and says so in /status, which it serves
	// throughout.
	var lost Status
	until(t, "replica a not ready, with the reason, while partitioned", 30*time.Second, func() bool {
		lost = a.status(t)
		return !lost.Ready && strings.Contains(lost.LastError, "leases lost")
	})
	t.Logf("a's /status while partitioned: ready %v, last error %q", lost.Ready, lost.LastError)
	var expiredAt time.Time
	select {
	case expiredAt = <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not expire the partitioned session")
	}
	t.Logf("session of a expired %s after the partition", expiredAt.Sub(parted).Round(time.Millisecond))
	// The committed ledger is complete with a's attempt: the write went
	// through although its reply never came back.
	if u, complete := attempt(mlA, a1.LedgerID); u != u1 || !complete {
		t.Fatalf("ledger %d after the lost reply: attempt %v complete %v, want %v complete", a1.LedgerID, u, complete, u1)
	}
	// The survivor finishes the topic while a is still cut off.
	until(t, "replica b offloads the rest of topic a", time.Minute, func() bool { return offloaded(mlA) })
	px.Heal()
	until(t, "replica a ready again on a new session", time.Minute, func() bool {
		return a.status(t).Ready
	})

	// Exactly once: a's attempt is the one stored, its two objects the only
	// ones of the ledger; nobody copied or committed it again.
	if u, complete := attempt(mlA, a1.LedgerID); u != u1 || !complete {
		t.Errorf("ledger %d: attempt %v complete %v, want %v", a1.LedgerID, u, complete, u1)
	}
	if got, want := objectsOf(a1.LedgerID), []string{format.DataKey(u1, a1.LedgerID), format.IndexKey(u1, a1.LedgerID)}; !slices.Equal(got, sortedCopy(want)) {
		t.Errorf("objects of ledger %d: %v, want %v", a1.LedgerID, got, want)
	}
	wantA := []string{pipeline.FPAfterSelect, pipeline.FPAfterPrepare, pipeline.FPMidCopy, pipeline.FPAfterCopy, pipeline.FPAfterVerify}
	if got := a.fps.of(a1); !slices.Equal(got, wantA) {
		t.Errorf("replica a at ledger %d: %v, want %v (one copy, no commit acknowledged)", a1.LedgerID, got, wantA)
	}
	if got := b.fps.of(a1); len(got) != 0 {
		t.Errorf("replica b worked on the ledger a committed: %v", got)
	}
	// Never two replicas on the topic: a stopped (leases lost, job ended)
	// before the server expired its session, and b's job on the topic
	// started only after that.
	aLost := a.logs.find("leases lost; stopping work")
	aEnd := a.logs.find("job ended", "ml", mlA)
	bStart := b.logs.find("job started", "ml", mlA)
	if len(aLost) == 0 || len(aEnd) == 0 || len(bStart) == 0 {
		t.Fatalf("logs: a lost leases %d times, a ended %d jobs on topic a, b started %d", len(aLost), len(aEnd), len(bStart))
	}
	t.Logf("a: leases lost %s after the partition (%s), its job on topic a ended %s; server expiry %s; b's first job on topic a %s",
		aLost[0].at.Sub(parted).Round(time.Millisecond), aLost[0].attrs["why"], aEnd[len(aEnd)-1].at.Sub(parted).Round(time.Millisecond),
		expiredAt.Sub(parted).Round(time.Millisecond), bStart[0].at.Sub(parted).Round(time.Millisecond))
	if !aLost[0].at.Before(expiredAt) || !aEnd[len(aEnd)-1].at.Before(expiredAt) || !bStart[0].at.After(expiredAt) {
		t.Errorf("a lost its leases at %s and ended its job at %s, the server expired it at %s, b started at %s: overlap",
			aLost[0].at.Format(time.StampMilli), aEnd[len(aEnd)-1].at.Format(time.StampMilli), expiredAt.Format(time.StampMilli),
			bStart[0].at.Format(time.StampMilli))
	}
	if lst.EphemeralOwner == 0 {
		t.Errorf("lease of topic a was not ephemeral: %+v", lst)
	}
	_, m := getText(t, a.base+"/metrics")
	for _, w := range []string{`tierkeeper_offloader_zookeeper_sessions_total{event="lost"} 1`, `tierkeeper_offloader_ready 1`} {
		if !strings.Contains(m, w) {
			t.Errorf("a's /metrics misses %q", w)
		}
	}

	// The recovered replica serves a new topic.
	written[mlC] = peer.MLWrite(t, mlC, 15, 10, 1000)
	until(t, "replica a offloads a topic created after the recovery", time.Minute, func() bool { return offloaded(mlC) })

	// Phase 2: stalled before the commit while the session expires.
	stalled, release2 := a.fps.stallAt(mlD)
	defer release2()
	written[mlD] = peer.MLWrite(t, mlD, 15, 10, 1000)
	var d1 mledger.LedgerRef
	select {
	case d1 = <-stalled:
	case <-time.After(time.Minute):
		t.Fatal("replica a never reached the commit of topic d")
	}
	ud, _ := attempt(mlD, d1.LedgerID)
	goneD := watchGone(leasePath(mlD))
	px.Partition()
	select {
	case <-goneD:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not expire the partitioned session (topic d)")
	}
	px.Heal()
	release2()
	until(t, "topic d offloaded on a's new session", time.Minute, func() bool { return offloaded(mlD) })
	if u, complete := attempt(mlD, d1.LedgerID); u != ud || !complete {
		t.Errorf("ledger %d of topic d: attempt %v complete %v, want the stalled attempt %v adopted", d1.LedgerID, u, complete, ud)
	}
	// The stalled commit was never sent (its context ended with the
	// leases); the new session verified the objects again and committed.
	wantD := []string{pipeline.FPAfterSelect, pipeline.FPAfterPrepare, pipeline.FPMidCopy, pipeline.FPAfterCopy, pipeline.FPAfterVerify,
		pipeline.FPAfterSelect, pipeline.FPAfterVerify, pipeline.FPAfterCommit}
	if got := a.fps.of(d1); !slices.Equal(got, wantD) {
		t.Errorf("replica a at ledger %d of topic d: %v, want %v (adopted, no second copy)", d1.LedgerID, got, wantD)
	}
	if len(a.logs.find("earlier attempt verified and committed", "ml", mlD)) != 1 {
		t.Errorf("the stalled attempt of topic d was not adopted once")
	}
	if got, want := objectsOf(d1.LedgerID), []string{format.DataKey(ud, d1.LedgerID), format.IndexKey(ud, d1.LedgerID)}; !slices.Equal(got, sortedCopy(want)) {
		t.Errorf("objects of ledger %d: %v, want %v", d1.LedgerID, got, want)
	}

	// Nothing lost.
	for _, name := range []string{mlA, mlB, mlC, mlD} {
		if !offloaded(name) {
			t.Errorf("%s: not every closed ledger offloaded: %v", name, ledgerStates(t, sess, name))
		}
		peer.PulsarReadsAll(t, s3, bucket, name, written[name])
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
