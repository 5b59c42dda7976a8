package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tierkeeper/tierkeeper/internal/retry"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// fakeRunner injects failures and delays and records what ran
// concurrently (scheduling logic only; the service test runs real
// pipelines).
type fakeRunner struct {
	mu       sync.Mutex
	fail     map[int64]int    // ledger → failures to inject
	pending  map[int64]string // ledger → pending note to report
	delay    time.Duration
	active   map[string]int
	maxTopic int // most jobs of one topic at once
	maxAll   int
	cur      int
	order    []string
	block    chan struct{}
}

func (f *fakeRunner) Run(ctx context.Context, j Job) []Outcome {
	f.mu.Lock()
	f.active[j.ML]++
	f.cur++
	f.maxTopic = max(f.maxTopic, f.active[j.ML])
	f.maxAll = max(f.maxAll, f.cur)
	f.order = append(f.order, fmt.Sprintf("%s%v", j.ML, j.Ledgers))
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active[j.ML]--
		f.cur--
		f.mu.Unlock()
	}()
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			out := []Outcome{}
			for _, id := range j.Ledgers {
				out = append(out, Failed(id, "copy", ctx.Err()))
			}
			return out
		}
	}
	time.Sleep(f.delay)
	var out []Outcome
	for _, id := range j.Ledgers {
		f.mu.Lock()
		n := f.fail[id]
		if n > 0 {
			f.fail[id] = n - 1
		}
		f.mu.Unlock()
		if n > 0 {
			out = append(out, Failed(id, "copy", errors.New("bookie unreachable")))
			continue
		}
		if note, ok := f.pending[id]; ok {
			out = append(out, Outcome{LedgerID: id, Result: ResultPending, Note: note, Step: "trim"})
			continue
		}
		out = append(out, Outcome{LedgerID: id, Result: ResultDone, Bytes: 100})
	}
	return out
}

func newFake() *fakeRunner { return &fakeRunner{fail: map[int64]int{}, active: map[string]int{}} }

type memLeases struct {
	mu     sync.Mutex
	others map[string]string
	held   map[string]bool
	lost   chan struct{}
	tries  map[string]int
}

func (l *memLeases) TryAcquire(_ context.Context, ml string) (Lease, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tries == nil {
		l.tries = map[string]int{}
	}
	l.tries[ml]++
	if h := l.others[ml]; h != "" {
		return nil, h, nil
	}
	l.held[ml] = true
	return memLease{l, ml}, "me", nil
}

type memLease struct {
	l  *memLeases
	ml string
}

func (g memLease) Fence(ctx context.Context) context.Context { return ctx }
func (g memLease) Release(context.Context) {
	g.l.mu.Lock()
	delete(g.l.held, g.ml)
	g.l.mu.Unlock()
}
func (l *memLeases) Lost() <-chan struct{} { return l.lost }

func cands(spec ...string) policy.Candidates {
	var out []policy.Candidate
	for _, s := range spec {
		var ml string
		var id int64
		fmt.Sscanf(strings.Replace(s, ":", " ", 1), "%s %d", &ml, &id)
		out = append(out, policy.Candidate{LedgerRef: mledger.LedgerRef{ML: ml, LedgerID: id}, Action: policy.ActionOffload})
	}
	return policy.ListOf(out...)
}

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	testenv.WaitFor(t, what, 10*time.Second, 5*time.Millisecond, f)
}

func TestLimitsSerialisationAndBatching(t *testing.T) {
	f := newFake()
	f.delay = 30 * time.Millisecond
	l := &memLeases{others: map[string]string{"c": "replica-2"}, held: map[string]bool{}, lost: make(chan struct{})}
	s := New(f, l, Options{LedgersInFlight: 2, MaxBatch: 2})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	s.Offer(cands("a:1", "a:2", "a:3", "b:1", "c:1", "d:1"))
	waitUntil(t, "all but c done", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.order) == 4 && f.cur == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxTopic != 1 || f.maxAll != 2 {
		t.Errorf("max per topic %d (want 1), max in flight %d (want 2)", f.maxTopic, f.maxAll)
	}
	sort.Strings(f.order)
	if got := strings.Join(f.order, " "); got != "a[1 2] a[3] b[1] d[1]" {
		t.Errorf("jobs %s", got)
	}
	if _, other := s.Status(); other["c"] != "replica-2" {
		t.Errorf("leased elsewhere: %v", other)
	}
	if len(l.held) != 0 {
		t.Errorf("leases still held after stop: %v", l.held)
	}
}

func TestBackoffAndParking(t *testing.T) {
	f := newFake()
	f.fail[1] = 100 // never succeeds
	f.fail[2] = 1   // succeeds on the second try
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := New(f, nil, Options{LedgersInFlight: 1, MaxBatch: 1, Backoff: retry.Backoff{Initial: time.Minute, Max: time.Minute},
		ParkAfter: 3, ParkFor: time.Hour, Now: clock})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	s.Offer(cands("a:1", "b:2"))
	state := func(id int64) LedgerState {
		ls, _ := s.Status()
		for _, l := range ls {
			if l.LedgerID == id {
				return l
			}
		}
		return LedgerState{State: "none"}
	}
	waitUntil(t, "both tried once", func() bool { return state(1).Failures == 1 && state(2).Failures == 1 })
	if st := state(1); st.State != StateBackoff || st.LastErr != "bookie unreachable" || st.LastStep != "copy" ||
		st.NextTry.Before(now.Add(30*time.Second)) || st.NextTry.After(now.Add(time.Minute)) {
		t.Errorf("after one failure: %#v (backoff within [30s, 1m])", st)
	}
	// Not retried hot: nothing runs before the backoff ends.
	time.Sleep(1100 * time.Millisecond)
	if st := state(1); st.Failures != 1 {
		t.Errorf("retried during backoff: %#v", st)
	}
	for i := 0; i < 2; i++ {
		advance(2 * time.Minute)
		s.Offer(cands("a:1", "b:2"))
		want := i + 2
		waitUntil(t, fmt.Sprintf("try %d", want), func() bool { return state(1).Failures == want })
	}
	if st := state(1); st.State != StateParked || !st.NextTry.Equal(now.Add(time.Hour)) {
		t.Errorf("after 3 failures: %#v, want parked for 1h", st)
	}
	if st := state(2); st.State != "none" {
		t.Errorf("ledger 2 should have succeeded on its second try: %#v", st)
	}
	if v := testutil.ToFloat64(s.parked); v != 1 {
		t.Errorf("parked gauge %v, want 1", v)
	}
	// Its time up, the next status unparks it (one failure more parks it
	// again); the retry fails and parks it again.
	advance(time.Hour)
	if st := state(1); st.State != StateBackoff || st.Failures != 2 || testutil.ToFloat64(s.parked) != 0 {
		t.Errorf("after the parking: %#v, parked gauge %v; want backing off with 2 failures, gauge 0", st, testutil.ToFloat64(s.parked))
	}
	s.Offer(cands("a:1"))
	waitUntil(t, "parked again after one more failure", func() bool { return state(1).State == StateParked })
	if v := testutil.ToFloat64(s.parked); v != 1 {
		t.Errorf("parked gauge %v, want 1", v)
	}
	// Its time up again, the retry runs before any status looks: the
	// job's end unparks it first, and the failure parks it anew.
	advance(time.Hour)
	s.Offer(cands("a:1"))
	waitUntil(t, "the fifth try", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, o := range f.order {
			if o == "a[1]" {
				n++
			}
		}
		return n == 5
	})
	if st := state(1); st.State != StateParked || st.Failures != 3 || testutil.ToFloat64(s.parked) != 1 {
		t.Errorf("after the fifth try: %#v, parked gauge %v; want parked with 3 failures, gauge 1", st, testutil.ToFloat64(s.parked))
	}
}

// TestPendingRetried: a pending outcome (a trim waiting for its reload)
// is tried again later as a failure is, its note shown as the error.
func TestPendingRetried(t *testing.T) {
	f := newFake()
	f.pending = map[int64]string{1: "waiting for the reload"}
	s := New(f, nil, Options{LedgersInFlight: 1, Backoff: retry.Backoff{Initial: time.Hour, Max: time.Hour}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	s.Offer(policy.ListOf(policy.Candidate{LedgerRef: mledger.LedgerRef{ML: "a", LedgerID: 1}, Action: policy.ActionTrim}))
	var st LedgerState
	waitUntil(t, "the trim ran", func() bool {
		ls, _ := s.Status()
		for _, l := range ls {
			if l.LedgerID == 1 && l.Failures > 0 {
				st = l
				return true
			}
		}
		return false
	})
	if st.State != StateBackoff || st.LastErr != "trim pending: waiting for the reload" || st.LastStep != "trim" {
		t.Errorf("pending trim: %#v, want backoff with the note", st)
	}
}

func TestStopCancelsAfterTimeoutAndLostLeases(t *testing.T) {
	f := newFake()
	f.block = make(chan struct{}) // jobs never finish on their own
	s := New(f, nil, Options{LedgersInFlight: 2, StopTimeout: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	s.Offer(cands("a:1", "b:1"))
	waitUntil(t, "two jobs running", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.cur == 2 })
	start := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("stop took %s with a 200ms stop timeout", took)
	}
	// A cancelled job is not a failure: no backoff recorded.
	if ls, _ := s.Status(); len(ls) != 0 {
		t.Errorf("after stop: %#v", ls)
	}

	l := &memLeases{others: map[string]string{}, held: map[string]bool{}, lost: make(chan struct{})}
	s = New(f, l, Options{LedgersInFlight: 2, StopTimeout: time.Hour})
	done = make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	s.Offer(cands("a:1"))
	waitUntil(t, "job running", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.cur == 1 })
	close(l.lost)
	select {
	case err := <-done:
		if !errors.Is(err, ErrLeasesLost) {
			t.Errorf("Run = %v, want ErrLeasesLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop at once when the leases were lost")
	}
}

// A finished ledger is held back from the same action for Settle (the
// policy may still offer it from a view older than the change), but a
// trim may follow its offload at once: the deletion lag alone says when.
func TestSettleHoldsOnlyTheSameAction(t *testing.T) {
	f := newFake()
	s := New(f, nil, Options{LedgersInFlight: 1, Settle: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	jobs := func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.order) }
	s.Offer(cands("a:1"))
	waitUntil(t, "offload done", func() bool { return jobs() == 1 })
	s.Offer(cands("a:1"))              // a stale view: offload again
	time.Sleep(300 * time.Millisecond) // Offer dispatches at once
	if n := jobs(); n != 1 {
		t.Fatalf("offload run again within Settle: %d jobs", n)
	}
	trim := policy.ListOf(policy.Candidate{LedgerRef: mledger.LedgerRef{ML: "a", LedgerID: 1}, Action: policy.ActionTrim})
	s.Offer(trim)
	waitUntil(t, "trim right after the offload", func() bool { return jobs() == 2 })
	s.Offer(trim)
	time.Sleep(300 * time.Millisecond) // Offer dispatches at once
	if n := jobs(); n != 2 {
		t.Fatalf("trim run again within Settle: %d jobs", n)
	}
}

// A topic another replica holds is asked for once per dispatch pass, not
// once per candidate of it: each ask is ZooKeeper round trips, and a large
// cluster's queue holds many ledgers of every topic.
func TestLeaseTriedOncePerPass(t *testing.T) {
	f := newFake()
	l := &memLeases{others: map[string]string{"c": "replica-2"}, held: map[string]bool{}, lost: make(chan struct{})}
	s := New(f, l, Options{LedgersInFlight: 1})
	var spec []string
	for i := 1; i <= 50; i++ {
		spec = append(spec, fmt.Sprintf("c:%d", i))
	}
	spec = append(spec, "a:1", "a:2")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	s.Offer(cands(spec...))
	waitUntil(t, "a done", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.order) == 1 && f.cur == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// One pass at the offer, one when a's job ended, one per second tick.
	if n := l.tries["c"]; n < 1 || n > 5 {
		t.Errorf("lease of c asked %d times for 50 candidates over a few passes, want one per pass", n)
	}
	if got := strings.Join(f.order, " "); got != "a[1 2]" {
		t.Errorf("jobs %s, want a[1 2]", got)
	}
}

// TestIdlePassesSkippedUntilDue: once a pass finds nothing due (the only
// candidate backs off after a failure), later passes are skipped, and the
// candidate still runs once its time comes, with no new Offer and no job's
// end to wake the scheduler: the tick after its time.
func TestIdlePassesSkippedUntilDue(t *testing.T) {
	f := newFake()
	f.fail[1] = 1 // succeeds on the second try
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := New(f, nil, Options{LedgersInFlight: 1, MaxBatch: 1, Backoff: retry.Backoff{Initial: time.Minute, Max: time.Minute}, Now: clock})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	s.Offer(cands("a:1"))
	tries := func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.order) }
	waitUntil(t, "the first try", func() bool { return tries() == 1 })
	idle := func() idlePass {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.idle.gen != s.gen {
			return idlePass{}
		}
		return s.idle
	}
	waitUntil(t, "an idle pass after the failure", func() bool { return idle().set })
	ls, _ := s.Status()
	if len(ls) != 1 || !idle().until.Equal(ls[0].NextTry) {
		t.Fatalf("idle until %v, the ledger's next try %+v", idle().until, ls)
	}
	advance(20 * time.Second) // still backing off (30 s to 1 min)
	time.Sleep(1100 * time.Millisecond)
	if n := tries(); n != 1 {
		t.Fatalf("%d tries during the backoff", n)
	}
	advance(time.Minute) // due now; nothing else happens
	waitUntil(t, "the retry at its time, on a tick", func() bool { return tries() == 2 })
	if ls, _ := s.Status(); len(ls) != 0 {
		t.Fatalf("after the retry: %+v", ls)
	}
}
