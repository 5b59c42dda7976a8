package discovery

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func names(d *Discovery) string {
	ts, errs := d.Snapshot()
	out := ""
	for _, t := range ts {
		out += fmt.Sprintf("%s:%d ", t.ML, len(t.Ledgers))
	}
	for n := range errs {
		out += "ERR:" + n + " "
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, what, 15*time.Second, 20*time.Millisecond, cond)
}

// TestDiscoveryFromEmpty starts on a ZooKeeper without /managed-ledgers:
// the first topic anywhere is found through the watches, not at the next
// periodic rescan.
func TestDiscoveryFromEmpty(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	s := z.Session(t, tzk.Options{ConnectTimeout: 10 * time.Second})
	d := New(s, Options{RescanInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = d.Run(ctx) }()
	waitFor(t, "first scan", func() bool { return !d.LastScan().Started.IsZero() })
	c := mltest.NewCreator(s.Conn)
	if err := c.CreateML("public/default/persistent/first", mltest.Info(mltest.Closed(1, 2, 100, time.Now())...)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first topic", func() bool { return names(d) == "public/default/persistent/first:3 " })
}

func TestDiscoveryRealZooKeeper(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	s := z.Session(t, tzk.Options{ConnectTimeout: 10 * time.Second})
	c := mltest.NewCreator(s.Conn)
	now := time.Now()
	for _, ml := range []string{"t/ns/persistent/a", "t/ns/persistent/b", "u/c1/ns/persistent/v1topic"} {
		if err := c.CreateML(ml, mltest.Info(mltest.Closed(1, 3, 100, now)...)); err != nil {
			t.Fatal(err)
		}
	}
	// A value that is not a ManagedLedgerInfo is an error of that entry only.
	if err := c.Create(mledger.Path("t/ns/persistent/bad"), []byte{0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d := New(s, Options{Registerer: reg, RescanInterval: time.Hour})
	st, err := d.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Listed != 4 || st.Read != 4 || st.Statted != 0 || st.Errors != 1 || st.Namespaces != 2 || st.Ledgers != 12 {
		t.Errorf("first scan: %+v", st)
	}
	if got := names(d); got != "t/ns/persistent/a:4 t/ns/persistent/b:4 u/c1/ns/persistent/v1topic:4 ERR:t/ns/persistent/bad " {
		t.Errorf("snapshot: %s", got)
	}
	// A rescan of an unchanged tree reads nothing: stat only.
	st, err = d.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != 1 || st.Statted != 4 { // the bad one is re-read each scan
		t.Errorf("unchanged rescan: %+v", st)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(ctx) }()

	// A change (a ledger rollover) is seen through the data watch.
	if err := c.CreateML("t/ns/persistent/a", mltest.Info(mltest.Closed(1, 5, 100, now)...)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "watch refresh of a", func() bool {
		ts, _ := d.Snapshot()
		return len(ts) > 0 && len(ts[0].Ledgers) == 6
	})
	// A new topic is seen through the namespace's child watch; a deleted one goes.
	if err := c.CreateML("t/ns/persistent/new", mltest.Info(mltest.Closed(1, 1, 100, now)...)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(mledger.Path("t/ns/persistent/b"), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "new topic and deletion", func() bool {
		return names(d) == "t/ns/persistent/a:6 t/ns/persistent/new:2 u/c1/ns/persistent/v1topic:4 ERR:t/ns/persistent/bad "
	})
	// A topic in a namespace (and tenant) that did not exist: the tree
	// watches trigger a rescan at once.
	if err := c.CreateML("brand/new/persistent/x", mltest.Info(mltest.Closed(1, 1, 100, now)...)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "topic in a new namespace", func() bool {
		ts, _ := d.Snapshot()
		for _, x := range ts {
			if x.ML == "brand/new/persistent/x" {
				return true
			}
		}
		return false
	})
	select {
	case <-d.Changed():
	default:
		t.Error("no change notification")
	}
	if v := testutil.ToFloat64(d.reads.WithLabelValues("watch")); v < 1 {
		t.Errorf("watch reads = %v", v)
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Errorf("Run: %v", err)
	}

	// A rescan after changes made without watches (a new Discovery with
	// NoWatches) reads only what changed since its own last scan.
	d2 := New(s, Options{NoWatches: true})
	if _, err := d2.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateML("u/c1/ns/persistent/v1topic", mltest.Info(mltest.Closed(1, 2, 100, now)...)); err != nil {
		t.Fatal(err)
	}
	st, err = d2.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != 2 || st.Statted != 5 { // v1topic changed + the bad one
		t.Errorf("rescan after one change: %+v", st)
	}

	// ZooKeeper gone: Scan fails with an error naming what it listed.
	z.Kill()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if _, err := d2.Scan(sctx); err == nil {
		t.Error("scan without ZooKeeper succeeded")
	}
}

// The watches of a whole tree report through one subscription to the
// session's events: scanning 200 managed ledgers (each with a data watch)
// starts no goroutine per watch; a watch that fired is re-armed by its
// re-read (a second change is seen too); the watches survive a reconnect
// within the session; and when the session is lost, Run returns an
// Unavailable error at once instead of waiting for its next request.
func TestDiscoveryWatchesOneSubscription(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	px := testenv.StartFaultProxy(t, z.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := tzk.Connect(ctx, []string{px.Addr}, tzk.Options{SessionTimeout: testenv.ReconnectSessionTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	w := z.Session(t, tzk.Options{})
	c := mltest.NewCreator(w.Conn)
	now := time.Now()
	const n = 200
	var nodes []mltest.Node
	for i := 0; i < n; i++ {
		nodes = append(nodes, mltest.Node{Path: mledger.Path(fmt.Sprintf("t/ns-%d/persistent/x%03d", i%2, i)),
			Data: mltest.Encode(mltest.Info(mltest.Closed(1, 1, 100, now)...))})
	}
	if err := c.CreateAll(nodes); err != nil {
		t.Fatal(err)
	}
	d := New(s, Options{RescanInterval: time.Hour})
	defer d.Close()
	before := runtime.NumGoroutine()
	if st, err := d.Scan(ctx); err != nil || st.Listed != n || st.Read != n {
		t.Fatalf("scan: %+v %v", st, err)
	}
	if extra := runtime.NumGoroutine() - before; extra > 20 {
		t.Fatalf("%d goroutines more after watching %d managed ledgers", extra, n)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(ctx) }()
	ledgers := func(ml string) int {
		ts, _ := d.Snapshot()
		for _, x := range ts {
			if x.ML == ml {
				return len(x.Ledgers)
			}
		}
		return -1
	}
	roll := func(what, ml string, closed int) {
		t.Helper()
		if err := c.CreateML(ml, mltest.Info(mltest.Closed(1, closed, 100, now)...)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, what, func() bool { return ledgers(ml) == closed+1 })
	}
	roll("the first change", "t/ns-0/persistent/x000", 2)
	roll("a second change (the watch re-armed)", "t/ns-0/persistent/x000", 3)

	px.Cut()
	waitFor(t, "the client to notice the cut", func() bool { return s.State() != gozk.StateHasSession })
	px.Heal()
	waitFor(t, "the reconnect", func() bool { return s.State() == gozk.StateHasSession })
	roll("a change after the reconnect", "t/ns-1/persistent/x001", 2)
	roll("a new topic after the reconnect", "t/ns-1/persistent/new", 1)

	px.Partition()
	select {
	case <-s.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("session not lost behind the partition")
	}
	px.Heal() // the client hears the server's answer at once (see the internal/zk test)
	select {
	case err := <-runErr:
		if !tzk.Unavailable(err) {
			t.Errorf("Run after the session's loss: %v, want an Unavailable error", err)
		}
		t.Logf("Run: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run still running 20 s after the session was lost")
	}
}

// counts returns and resets c's stats and value reads.
func counts(c *countingConn) (stats, reads int64) {
	c.list.Store(0)
	return c.stat.Swap(0), c.get.Swap(0)
}

// staleStatter answers every stat with version 0, as a server far behind
// would for a managed ledger written since.
type staleStatter struct{ n atomic.Int64 }

func (s *staleStatter) Exists(string) (bool, *gozk.Stat, error) {
	s.n.Add(1)
	return true, &gozk.Stat{Version: 0}, nil
}

// goneStatter answers every stat with "no such node", as a server behind
// would for a managed ledger created since.
type goneStatter struct{ n atomic.Int64 }

func (s *goneStatter) Exists(string) (bool, *gozk.Stat, error) {
	s.n.Add(1)
	return false, nil, nil
}

// TestDiscoveryStatsThroughMoreSessions: a rescan sends its stats round
// robin over the Discovery's session and Options.StatConns (each session
// serves its requests in order on one ZooKeeper thread), reads and
// watches stay on its own session; a stat session that fails never fails
// a scan (its stats go through the own session, and it is left out from
// then on); a stale stat, "unchanged" or "gone", costs a read, never a
// missed change or a dropped managed ledger; with
// NoWatches the extra sessions are not used.
func TestDiscoveryStatsThroughMoreSessions(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	s := z.Session(t, tzk.Options{ConnectTimeout: 10 * time.Second})
	c := mltest.NewCreator(s.Conn)
	now := time.Now()
	const n = 30
	for i := range n {
		if err := c.CreateML(fmt.Sprintf("t/ns/persistent/m%02d", i), mltest.Info(mltest.Closed(1, 2, 100, now)...)); err != nil {
			t.Fatal(err)
		}
	}
	own := &countingConn{Conn: s}
	more := []*countingConn{
		{Conn: z.Session(t, tzk.Options{ConnectTimeout: 10 * time.Second})},
		{Conn: z.Session(t, tzk.Options{ConnectTimeout: 10 * time.Second})},
	}
	d := New(own, Options{RescanInterval: time.Hour, StatConns: []Statter{more[0], more[1]}})
	defer d.Close()
	ctx := context.Background()
	if st, err := d.Scan(ctx); err != nil || st.Read != n || st.Statted != 0 {
		t.Fatalf("first scan: %+v, %v", st, err)
	}
	if st, rd := counts(own); st != 0 || rd != n {
		t.Errorf("first scan through the own session: %d stats, %d value reads", st, rd)
	}
	// A rescan of the unchanged tree: n stats, a third through each
	// session, nothing read.
	st, err := d.Scan(ctx)
	if err != nil || st.Read != 0 || st.Statted != n {
		t.Fatalf("rescan: %+v, %v", st, err)
	}
	if st, rd := counts(own); st != n/3 || rd != 0 {
		t.Errorf("rescan through the own session: %d stats, %d value reads; want %d, 0", st, rd, n/3)
	}
	for i, m := range more {
		if l, st, rd := m.list.Swap(0), m.stat.Swap(0), m.get.Swap(0); l != 0 || st != n/3 || rd != 0 {
			t.Errorf("rescan through stat session %d: %d listings, %d stats, %d value reads; want 0, %d, 0", i+1, l, st, rd, n/3)
		}
	}
	// A changed managed ledger: whichever session stats it, it is read
	// again (through the own session, re-arming its watch).
	if err := c.CreateML("t/ns/persistent/m07", mltest.Info(mltest.Closed(1, 4, 100, now)...)); err != nil {
		t.Fatal(err)
	}
	if st, err := d.Scan(ctx); err != nil || st.Read != 1 {
		t.Fatalf("rescan after a change: %+v, %v", st, err)
	}
	if _, rd := counts(own); rd != 1 {
		t.Errorf("the changed one: %d value reads through the own session, want 1", rd)
	}
	for _, m := range more {
		if rd := m.get.Swap(0); rd != 0 {
			t.Errorf("%d value reads through a stat session", rd)
		}
	}
	ts, _ := d.Snapshot()
	for _, tp := range ts {
		if want := map[bool]int{true: 5, false: 3}[tp.ML == "t/ns/persistent/m07"]; len(tp.Ledgers) != want {
			t.Errorf("%s has %d ledgers after the rescan, want %d", tp.ML, len(tp.Ledgers), want)
		}
	}
	// A stale stat session (version 0 for every node; each was written
	// once, so version 0 is what the cache holds but for m07): m07 is read
	// again, the others are trusted because their watches are armed.
	stale := &staleStatter{}
	ds := New(s, Options{RescanInterval: time.Hour, StatConns: []Statter{stale}})
	defer ds.Close()
	if _, err := ds.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := ds.Scan(ctx); err != nil || st.Statted != n || stale.n.Load() != n/2 || st.Read > 1 {
		t.Errorf("rescan with a stale stat session: %+v (stale stats %d), %v; want %d stats, half of them stale, at most m07 read", st, stale.n.Load(), err, n)
	}
	// A stat session behind the own one says the managed ledgers are not
	// there: each is read through the own session, which finds it, and
	// none is dropped.
	gone := &goneStatter{}
	dg := New(s, Options{RescanInterval: time.Hour, StatConns: []Statter{gone}})
	defer dg.Close()
	if _, err := dg.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := dg.Scan(ctx); err != nil || st.Statted != n || gone.n.Load() != n/2 || st.Read != n/2 || st.Removed != 0 {
		t.Errorf("rescan with a session behind: %+v (%d stats through it), %v; want %d stats, %d read again, none removed", st, gone.n.Load(), err, n, n/2)
	}
	if ts, errs := dg.Snapshot(); len(ts) != n || len(errs) != 0 {
		t.Errorf("after a rescan with a session behind: %d managed ledgers (%d errors), want %d", len(ts), len(errs), n)
	}
	// With NoWatches a stale "unchanged" could hide a change: the extra
	// sessions are not used.
	stale.n.Store(0)
	dn := New(s, Options{NoWatches: true, StatConns: []Statter{stale}})
	if _, err := dn.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := dn.Scan(ctx); err != nil || st.Statted != n || stale.n.Load() != 0 {
		t.Errorf("NoWatches rescan: %+v, %d stats through the extra session, %v; want none", st, stale.n.Load(), err)
	}
	// A stat session that is gone never fails a scan: its stats are
	// asked again through the own session, and it is left out from then
	// on.
	more[1].Conn.(*tzk.Session).Close()
	counts(own)
	more[0].stat.Store(0)
	if st, err := d.Scan(ctx); err != nil || st.Statted != n || st.Read != 0 {
		t.Fatalf("rescan with a closed stat session: %+v, %v; want %d stats, nothing read", st, err, n)
	}
	if st, _ := counts(own); st != n/3+n/3 {
		t.Errorf("own session: %d stats, want its third and the closed session's third (%d)", st, 2*(n/3))
	}
	more[0].stat.Store(0)
	more[1].stat.Store(0)
	if st, err := d.Scan(ctx); err != nil || st.Statted != n {
		t.Fatalf("the next rescan: %+v, %v", st, err)
	}
	if a, b := more[0].stat.Load(), more[1].stat.Load(); a != n/2 || b != 0 {
		t.Errorf("the next rescan: %d stats through the live stat session (want %d), %d through the closed one (want 0)", a, n/2, b)
	}
}
