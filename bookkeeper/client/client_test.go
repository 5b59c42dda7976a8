package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tierkeeper/tierkeeper/bookkeeper/bookietest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/bookkeeper/wire"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/crc32c"
	"github.com/tierkeeper/tierkeeper/internal/metrics/metricstest"
)

// env is a fake cluster plus a client reading from it. Every test checks,
// when it ends, that no request ever asked to fence or carried a master key.
type env struct {
	t       *testing.T
	cluster *bookietest.Cluster
	client  *Client
	reg     *prometheus.Registry
}

func newEnv(t *testing.T, bookies int, opts Options) *env {
	t.Helper()
	cl := bookietest.StartCluster(t, bookies)
	reg := prometheus.NewRegistry()
	if opts.Resolver == nil {
		opts.Resolver = cl
	}
	opts.Registerer = reg
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = 2 * time.Second
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cluster: cl, client: c, reg: reg}
	t.Cleanup(func() {
		c.Close()
		for _, r := range cl.Requests() {
			if r.HasFlag || r.MasterKey != nil {
				t.Errorf("request %+v carries a flag (%v) or master key: the reader must never fence", r, r.Flag)
			}
			want := bkproto.ProtocolVersion_VERSION_TWO
			if c.opts.WireProtocol == WireV3 {
				want = bkproto.ProtocolVersion_VERSION_THREE
			}
			if r.Version != want || r.Operation != bkproto.OperationType_READ_ENTRY {
				t.Errorf("unexpected request %+v (wire protocol %s)", r, c.opts.WireProtocol)
			}
		}
	})
	return e
}

func payloads(n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]byte, n)
	for i := range out {
		p := make([]byte, r.IntN(3000))
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		out[i] = p
	}
	if n > 3 {
		out[3] = []byte{} // an empty entry is legal
	}
	return out
}

func (e *env) write(l bookietest.Ledger, data [][]byte) *Ledger {
	e.t.Helper()
	if l.Ensemble == 0 {
		l.Ensemble, l.WriteQuorum, l.Ack = 3, 2, 2
	}
	if l.DigestType == 0 {
		l.DigestType = digest.CRC32C
	}
	md, err := e.cluster.Write(l, data)
	if err != nil {
		e.t.Fatal(err)
	}
	led, err := e.client.Open(md)
	if err != nil {
		e.t.Fatal(err)
	}
	return led
}

// readAll streams the whole ledger and checks it equals want.
func readAll(t *testing.T, l *Ledger, want [][]byte, opts StreamOptions) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var i int64
	err := l.ReadRange(ctx, 0, -1, opts, func(e Entry) error {
		if e.EntryID != i || e.LedgerID != l.md.LedgerID {
			return fmt.Errorf("got ledger %d entry %d, want entry %d", e.LedgerID, e.EntryID, i)
		}
		if !bytes.Equal(e.Payload, want[i]) {
			return fmt.Errorf("entry %d payload differs (%d vs %d bytes)", i, len(e.Payload), len(want[i]))
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != int64(len(want)) {
		t.Fatalf("read %d entries, want %d", i, len(want))
	}
}

func TestReadEveryDigestType(t *testing.T) {
	for _, tc := range []struct {
		typ digest.Type
		pw  string
	}{{digest.CRC32, ""}, {digest.CRC32C, ""}, {digest.HMAC, "secret"}, {digest.HMAC, ""}, {digest.DUMMY, ""}} {
		t.Run(tc.typ.String()+"/"+tc.pw, func(t *testing.T) {
			e := newEnv(t, 3, Options{})
			data := payloads(50, uint64(tc.typ))
			l := e.write(bookietest.Ledger{LedgerID: 7, DigestType: tc.typ, Password: []byte(tc.pw)}, data)
			readAll(t, l, data, StreamOptions{})
			// Healthy cluster: one request per entry, no failover.
			if n := len(e.cluster.Requests()); n != len(data) {
				t.Fatalf("%d requests for %d entries", n, len(data))
			}
			if got := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_read_entries_total"); got != float64(len(data)) {
				t.Fatalf("entries metric %v", got)
			}
			// Each entry was asked of the first bookie of its write set.
			for _, id := range e.cluster.IDs {
				for _, r := range e.cluster.Bookies[id].Requests() {
					if ws, _ := l.md.WriteSet(r.EntryID); ws[0] != id {
						t.Fatalf("entry %d asked of %s, write set %v", r.EntryID, id, ws)
					}
				}
			}
		})
	}
}

func TestWrongPasswordFailsEverywhere(t *testing.T) {
	e := newEnv(t, 3, Options{})
	md, err := e.cluster.Write(bookietest.Ledger{LedgerID: 8, Ensemble: 3, WriteQuorum: 2, DigestType: digest.HMAC, Password: []byte("right")}, payloads(3, 1))
	if err != nil {
		t.Fatal(err)
	}
	md.Password = []byte("wrong")
	l, err := e.client.Open(md)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.ReadEntry(context.Background(), 0)
	if !errors.Is(err, digest.ErrMismatch) || !errors.Is(err, ErrReadFailed) || errors.Is(err, ErrEntryMissing) {
		t.Fatalf("wrong password: %v", err)
	}
	var re *ReadError
	if !errors.As(err, &re) || len(re.Attempts) != 2 {
		t.Fatalf("expected 2 attempts: %v", err)
	}
}

func TestEnsembleChange(t *testing.T) {
	e := newEnv(t, 5, Options{})
	data := payloads(40, 2)
	l := e.write(bookietest.Ledger{LedgerID: 9, Ensemble: 3, WriteQuorum: 2, Segments: []metadata.Segment{
		{FirstEntryID: 0, Bookies: []string{"bookie-0", "bookie-1", "bookie-2"}},
		{FirstEntryID: 17, Bookies: []string{"bookie-0", "bookie-3", "bookie-2"}},
		{FirstEntryID: 30, Bookies: []string{"bookie-4", "bookie-3", "bookie-2"}},
	}}, data)
	readAll(t, l, data, StreamOptions{})
	for _, r := range e.cluster.Bookies["bookie-1"].Requests() {
		if r.EntryID >= 17 {
			t.Fatalf("bookie-1 left the ensemble at 17 but was asked for entry %d", r.EntryID)
		}
	}
	if len(e.cluster.Bookies["bookie-4"].Requests()) == 0 {
		t.Fatal("bookie-4 (joined at 30) never asked")
	}
}

func TestReplicaDown(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(60, 3)
	l := e.write(bookietest.Ledger{LedgerID: 10}, data)
	e.cluster.Bookies["bookie-1"].Stop()
	readAll(t, l, data, StreamOptions{})
	if f := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_read_failovers_total"); f == 0 {
		t.Fatal("no failover counted")
	}
	// A later pass prefers the healthy replicas: no failovers at all.
	before := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_read_failovers_total")
	readAll(t, l, data, StreamOptions{})
	if after := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_read_failovers_total"); after != before {
		t.Fatalf("failovers grew from %v to %v although bookie-1 is known down", before, after)
	}
}

func TestCorruptReplica(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(30, 4)
	l := e.write(bookietest.Ledger{LedgerID: 11}, data)
	e.cluster.Bookies["bookie-0"].SetFault(func(bookietest.Request) bookietest.Action { return bookietest.Action{Corrupt: true} })
	readAll(t, l, data, StreamOptions{Window: 1})
	if n := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_digest_errors_total"); n == 0 {
		t.Fatal("no digest error counted")
	}
	// Every replica corrupt: a read failure naming the digest, not "missing".
	for _, id := range e.cluster.IDs {
		e.cluster.Bookies[id].SetFault(func(bookietest.Request) bookietest.Action { return bookietest.Action{Corrupt: true} })
	}
	_, err := l.ReadEntry(context.Background(), 5)
	if !errors.Is(err, digest.ErrMismatch) || errors.Is(err, ErrEntryMissing) {
		t.Fatalf("all corrupt: %v", err)
	}
}

func TestWrongEntryServed(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(10, 5)
	l := e.write(bookietest.Ledger{LedgerID: 12, Ensemble: 3, WriteQuorum: 3}, data)
	e.cluster.Bookies["bookie-0"].SetFault(func(bookietest.Request) bookietest.Action { return bookietest.Action{WrongEntry: true} })
	readAll(t, l, data, StreamOptions{Window: 1}) // for entry 9 bookie-0 has no entry 10: ENOENTRY, next replica
}

func TestNoEntryOnOneReplica(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(20, 6)
	l := e.write(bookietest.Ledger{LedgerID: 13}, data)
	for i := int64(0); i < 20; i++ {
		ws, _ := l.md.WriteSet(i)
		e.cluster.Bookies[ws[0]].Delete(13, i) // ack quorum < write quorum can leave holes
	}
	readAll(t, l, data, StreamOptions{})
}

func TestAllReplicasMissing(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(10, 7)
	l := e.write(bookietest.Ledger{LedgerID: 14}, data)
	ws, _ := l.md.WriteSet(4)
	for _, b := range ws {
		e.cluster.Bookies[b].Delete(14, 4)
	}
	_, err := l.ReadEntry(context.Background(), 4)
	if !errors.Is(err, ErrEntryMissing) || errors.Is(err, ErrReadFailed) || !errors.Is(err, ErrNoSuchEntry) {
		t.Fatalf("all ENOENTRY: %v", err)
	}
	// The stream stops at the missing entry with the same sentinel.
	s, _ := l.Stream(context.Background(), 0, -1, StreamOptions{})
	defer s.Close()
	var got int
	for {
		_, err := s.Next()
		if err != nil {
			if !errors.Is(err, ErrEntryMissing) || got != 4 {
				t.Fatalf("stream stopped after %d entries with %v", got, err)
			}
			break
		}
		got++
	}

	// A ledger no bookie knows (deleted and garbage-collected): ENOLEDGER everywhere.
	md := *l.md
	md.LedgerID = 999
	gone, _ := e.client.Open(&md)
	if _, err := gone.ReadEntry(context.Background(), 0); !errors.Is(err, ErrEntryMissing) || !errors.Is(err, ErrNoSuchLedger) {
		t.Fatalf("all ENOLEDGER: %v", err)
	}

	// One replica missing, the other failing for real: not "missing".
	e.cluster.Bookies[ws[1]].SetFault(func(r bookietest.Request) bookietest.Action {
		return bookietest.Action{Status: bkproto.StatusCode_EIO}
	})
	_, err = l.ReadEntry(context.Background(), 4)
	if errors.Is(err, ErrEntryMissing) || !errors.Is(err, ErrReadFailed) {
		t.Fatalf("ENOENTRY + EIO must not be 'missing': %v", err)
	}
}

func TestSlowReplicaTimesOut(t *testing.T) {
	e := newEnv(t, 3, Options{ReadTimeout: 150 * time.Millisecond})
	data := payloads(30, 8)
	l := e.write(bookietest.Ledger{LedgerID: 15}, data)
	e.cluster.Bookies["bookie-0"].SetFault(func(bookietest.Request) bookietest.Action { return bookietest.Action{Delay: 10 * time.Second} })
	readAll(t, l, data, StreamOptions{Window: 4})
	if timeouts := testutil.ToFloat64(e.client.m.errors.WithLabelValues("timeout")); timeouts == 0 {
		t.Fatal("no timeout counted")
	}
	// After the first window timed out, bookie-0 is tried last: only the
	// first few entries waited for it.
	if n := len(e.cluster.Bookies["bookie-0"].Requests()); n > 8 {
		t.Fatalf("slow bookie asked %d times; expected it to be deprioritised", n)
	}
}

func TestConnectionFaults(t *testing.T) {
	faults := map[string]bookietest.Action{
		"garbage frame":      {Garbage: true},
		"oversized frame":    {Oversized: true},
		"drop mid-response":  {HalfAndClose: true},
		"stall mid-response": {HalfAndStall: true},
		"close":              {Close: true},
		"response-less hang": {NoResponse: true},
	}
	for name, act := range faults {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, 3, Options{ReadTimeout: 300 * time.Millisecond, FailurePenalty: time.Nanosecond})
			data := payloads(20, 9)
			l := e.write(bookietest.Ledger{LedgerID: 16}, data)
			var n atomic.Int32
			e.cluster.Bookies["bookie-0"].SetFault(func(bookietest.Request) bookietest.Action {
				if n.Add(1)%3 == 1 { // every third request to bookie-0 misbehaves
					return act
				}
				return bookietest.Action{}
			})
			readAll(t, l, data, StreamOptions{Window: 2})
			if act.NoResponse {
				return
			}
			if c := e.cluster.Bookies["bookie-0"].Connections(); c < 2 {
				t.Fatalf("bookie-0 connections %d: expected a reconnect after the broken one", c)
			}
		})
	}
}

func TestBusyBackoff(t *testing.T) {
	e := newEnv(t, 3, Options{BusyBackoff: time.Millisecond, BusyBackoffMax: 4 * time.Millisecond})
	data := payloads(10, 10)
	l := e.write(bookietest.Ledger{LedgerID: 17}, data)
	var mu sync.Mutex
	seen := map[int64]int{}
	for _, id := range e.cluster.IDs {
		e.cluster.Bookies[id].SetFault(func(r bookietest.Request) bookietest.Action {
			mu.Lock()
			defer mu.Unlock()
			seen[r.EntryID]++
			if seen[r.EntryID] <= 3 {
				return bookietest.Action{Status: bkproto.StatusCode_ETOOMANYREQUESTS, TopLevel: true}
			}
			return bookietest.Action{}
		})
	}
	readAll(t, l, data, StreamOptions{})
	if f := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_read_failovers_total"); f != 0 {
		t.Fatalf("busy bookie should be retried, not failed over: %v failovers", f)
	}
	if b := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_busy_retries_total"); b != 30 {
		t.Fatalf("busy retries %v, want 30", b)
	}

	// Persistently busy first replica: after the retries, fail over.
	e.cluster.Bookies["bookie-0"].SetFault(func(bookietest.Request) bookietest.Action {
		return bookietest.Action{Status: bkproto.StatusCode_ETOOMANYREQUESTS}
	})
	for _, id := range e.cluster.IDs[1:] {
		e.cluster.Bookies[id].SetFault(nil)
	}
	ent, err := l.ReadEntry(context.Background(), 0) // write set bookie-0, bookie-1
	if err != nil || ent.Bookie != "bookie-1" {
		t.Fatalf("persistently busy: %+v %v", ent, err)
	}
}

func TestOutOfOrderResponses(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(200, 11)
	l := e.write(bookietest.Ledger{LedgerID: 18, Ensemble: 3, WriteQuorum: 3}, data)
	for _, id := range e.cluster.IDs {
		e.cluster.Bookies[id].SetFault(func(r bookietest.Request) bookietest.Action {
			return bookietest.Action{Delay: time.Duration(rand.IntN(5)) * time.Millisecond}
		})
	}
	readAll(t, l, data, StreamOptions{Window: 64})
}

func TestStreamWindowIsBounded(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(100, 12)
	l := e.write(bookietest.Ledger{LedgerID: 19}, data)
	s, err := l.Stream(context.Background(), 0, -1, StreamOptions{Window: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitRequests := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for len(e.cluster.Requests()) < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(30 * time.Millisecond) // would more arrive?
		if got := len(e.cluster.Requests()); got != n {
			t.Fatalf("%d requests in flight/done, want exactly %d", got, n)
		}
	}
	waitRequests(5)
	for i := 0; i < 3; i++ {
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	waitRequests(8)

	// The byte budget shrinks the window for large entries.
	big := make([][]byte, 20)
	for i := range big {
		big[i] = bytes.Repeat([]byte{byte(i)}, 100_000)
	}
	l2 := e.write(bookietest.Ledger{LedgerID: 20}, big)
	s2, _ := l2.Stream(context.Background(), 0, -1, StreamOptions{Window: 64, WindowBytes: 250_000})
	defer s2.Close()
	if s2.window != 2 {
		t.Fatalf("window %d, want 2 (250 kB / 100 kB entries)", s2.window)
	}
}

func TestStreamCancel(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(50, 13)
	l := e.write(bookietest.Ledger{LedgerID: 21}, data)
	e.cluster.Bookies["bookie-0"].SetFault(func(bookietest.Request) bookietest.Action { return bookietest.Action{Delay: 10 * time.Second} })
	ctx, cancel := context.WithCancel(context.Background())
	s, _ := l.Stream(ctx, 0, -1, StreamOptions{})
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := s.Next() // entry 0 is on bookie-0 first: stuck until cancelled
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled stream: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("cancel did not interrupt the read")
	}
	s.Close()
	if _, err := s.Next(); err == nil {
		t.Fatal("Next after Close succeeded")
	}
}

func TestRanges(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(20, 14)
	l := e.write(bookietest.Ledger{LedgerID: 22}, data)
	var got []int64
	if err := l.ReadRange(context.Background(), 5, 9, StreamOptions{}, func(e Entry) error {
		if !bytes.Equal(e.Payload, data[e.EntryID]) {
			return fmt.Errorf("entry %d differs", e.EntryID)
		}
		got = append(got, e.EntryID)
		return nil
	}); err != nil || fmt.Sprint(got) != "[5 6 7 8 9]" {
		t.Fatalf("range 5..9: %v %v", got, err)
	}
	for _, r := range [][2]int64{{-1, 3}, {0, 20}, {10, 5}} {
		if _, err := l.Stream(context.Background(), r[0], r[1], StreamOptions{}); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("range %v: %v", r, err)
		}
	}
	if _, err := l.ReadEntry(context.Background(), 20); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("entry past lastEntryId: %v", err)
	}
	// Empty range and empty ledger.
	if err := l.ReadRange(context.Background(), 3, 2, StreamOptions{}, func(Entry) error { return errors.New("called") }); err != nil {
		t.Fatalf("empty range: %v", err)
	}
	md := &metadata.LedgerMetadata{LedgerID: 23, EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, State: metadata.StateClosed,
		LastEntryID: -1, Segments: []metadata.Segment{{FirstEntryID: 0, Bookies: e.cluster.IDs}}, HasPassword: true, DigestType: digest.CRC32C, Password: []byte{}}
	empty, err := e.client.Open(md)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := empty.Stream(context.Background(), 0, -1, StreamOptions{})
	if _, err := s.Next(); err != io.EOF {
		t.Fatalf("empty ledger: %v", err)
	}
}

func TestLengthChecks(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(10, 15)
	l := e.write(bookietest.Ledger{LedgerID: 24}, data)
	bad := *l.md
	bad.Length++
	lb, _ := e.client.Open(&bad)
	err := lb.ReadRange(context.Background(), 0, -1, StreamOptions{}, func(Entry) error { return nil })
	if !errors.Is(err, ErrLengthMismatch) {
		t.Fatalf("metadata length off by one: %v", err)
	}
	// An entry whose header length breaks the running sum (validly digested).
	d, _ := digest.New(digest.CRC32C, nil)
	ws, _ := l.md.WriteSet(5)
	for _, b := range ws {
		e.cluster.Bookies[b].Put(24, 5, d.Seal(digest.Header{LedgerID: 24, EntryID: 5, LastAddConfirmed: 4, Length: 1}, data[5]))
	}
	err = l.ReadRange(context.Background(), 0, -1, StreamOptions{}, func(Entry) error { return nil })
	if !errors.Is(err, ErrLengthMismatch) {
		t.Fatalf("broken running length: %v", err)
	}
}

func TestOpenChecks(t *testing.T) {
	e := newEnv(t, 3, Options{})
	base := func() *metadata.LedgerMetadata {
		return &metadata.LedgerMetadata{LedgerID: 1, EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, State: metadata.StateClosed,
			LastEntryID: 0, Length: 1, Segments: []metadata.Segment{{FirstEntryID: 0, Bookies: e.cluster.IDs}}, HasPassword: true, DigestType: digest.CRC32, Password: []byte{}}
	}
	for _, st := range []metadata.State{metadata.StateOpen, metadata.StateInRecovery} {
		m := base()
		m.State = st
		if _, err := e.client.Open(m); !errors.Is(err, ErrNotClosed) {
			t.Errorf("%v: %v", st, err)
		}
	}
	m := base()
	m.HasPassword, m.DigestType, m.Password = false, 0, nil // v1 metadata
	if _, err := e.client.Open(m); !errors.Is(err, ErrNoDigest) {
		t.Errorf("v1 without digest option: %v", err)
	}
	c2, _ := New(Options{Resolver: e.cluster, DigestType: digest.CRC32})
	defer c2.Close()
	if l, err := c2.Open(m); err != nil || l.d.Type() != digest.CRC32 {
		t.Errorf("v1 with digest option: %v", err)
	}
	m = base()
	m.Segments[0].Bookies = m.Segments[0].Bookies[:2]
	if _, err := e.client.Open(m); !errors.Is(err, metadata.ErrCorrupt) {
		t.Errorf("short ensemble: %v", err)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without resolver succeeded")
	}
}

func TestUnresolvableAndClosed(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(5, 16)
	l := e.write(bookietest.Ledger{LedgerID: 25}, data)
	var calls atomic.Int32
	c, _ := New(Options{Resolver: ResolverFunc(func(ctx context.Context, id string) (string, error) {
		calls.Add(1)
		if id == "bookie-0" {
			return "", errors.New("no such bookie registered")
		}
		return e.cluster.ResolveBookie(ctx, id)
	})})
	l2, _ := c.Open(l.md)
	readAll(t, l2, data, StreamOptions{Window: 1})
	c.Close()
	if _, err := l2.ReadEntry(context.Background(), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	// One resolution per bookie: connections are reused, and the
	// unresolvable bookie-0 goes last after its failure, so it is not
	// asked again while its replicas serve.
	if n := calls.Load(); n != 3 {
		t.Fatalf("resolver called %d times, want 3 (once per bookie)", n)
	}
}

func TestConcurrentLedgersShareConnections(t *testing.T) {
	e := newEnv(t, 3, Options{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		data := payloads(40, uint64(100+i))
		l := e.write(bookietest.Ledger{LedgerID: int64(100 + i)}, data)
		wg.Add(1)
		go func() {
			defer wg.Done()
			readAll(t, l, data, StreamOptions{Window: 16})
		}()
	}
	wg.Wait()
	for _, id := range e.cluster.IDs {
		if n := e.cluster.Bookies[id].Connections(); n != 1 {
			t.Errorf("%s: %d connections, want 1", id, n)
		}
	}
	if v := testutil.ToFloat64(e.client.m.connections); v != 3 {
		t.Errorf("connections gauge %v", v)
	}
}

// stuckConn is a connection whose writes block (a bookie that stopped
// reading its socket) until the write deadline or Close.
type stuckConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time
	closed   chan struct{}
	once     sync.Once
}

func (s *stuckConn) Write(p []byte) (int, error) {
	s.mu.Lock()
	d := s.deadline
	s.mu.Unlock()
	var tc <-chan time.Time
	if !d.IsZero() {
		tc = time.After(time.Until(d))
	}
	select {
	case <-s.closed:
		return 0, net.ErrClosed
	case <-tc:
		return 0, os.ErrDeadlineExceeded
	}
}

func (s *stuckConn) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	s.deadline = t
	s.mu.Unlock()
	return nil
}

func (s *stuckConn) Close() error {
	s.once.Do(func() { close(s.closed) })
	return s.Conn.Close()
}

func TestBookieNotReadingItsSocket(t *testing.T) {
	var cl *bookietest.Cluster
	var stuck atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil || addr != cl.Bookies["bookie-0"].Addr {
			return c, err
		}
		stuck.Add(1)
		return &stuckConn{Conn: c, closed: make(chan struct{})}, nil
	}
	e := newEnv(t, 3, Options{Dial: dial, ReadTimeout: 50 * time.Millisecond, MaxInFlightPerBookie: 2,
		FailurePenalty: time.Nanosecond, ReconnectDelay: time.Nanosecond})
	cl = e.cluster
	data := payloads(30, 17)
	l := e.write(bookietest.Ledger{LedgerID: 26}, data)
	done := make(chan struct{})
	go func() {
		defer close(done)
		readAll(t, l, data, StreamOptions{Window: 1})
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("reads hang behind a bookie that does not read its socket")
	}
	if stuck.Load() < 2 {
		t.Fatalf("stuck connection dialed %d times: a blocked write should have failed it and forced a redial", stuck.Load())
	}
}

// Two clients on one registry (the offload service reads with several):
// the second New does not fail or panic (promauto.With did), and both
// count into the same series.
func TestTwoClientsOneRegistry(t *testing.T) {
	e := newEnv(t, 3, Options{})
	data := payloads(20, 5)
	l := e.write(bookietest.Ledger{LedgerID: 31}, data)
	c2, err := New(Options{Resolver: e.cluster, Registerer: e.reg, ReadTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("second client on the same registry: %v", err)
	}
	defer c2.Close()
	l2, err := c2.Open(l.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, l, data, StreamOptions{})
	readAll(t, l2, data, StreamOptions{})
	if got := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_read_entries_total"); got != 2*float64(len(data)) {
		t.Errorf("entries = %v, want %d from both clients", got, 2*len(data))
	}
	if problems, err := testutil.GatherAndLint(e.reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	if n, err := testutil.GatherAndCount(e.reg, "tierkeeper_bookkeeper_replica_errors_total"); err != nil || n != len(errorReasons) {
		t.Errorf("replica error series: %d (%v), want all %d reasons pre-created", n, err, len(errorReasons))
	}
}

// A bookie without TLS answers START_TLS with EBADREQ (bookietest does as
// a real one): the read fails at once with ErrTLS saying so, and the
// client sent nothing but START_TLS.
func TestStartTLSRefused(t *testing.T) {
	cl := bookietest.StartCluster(t, 3)
	c, err := New(Options{Resolver: cl, TLS: &tls.Config{}, ConnectTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	md, err := cl.Write(bookietest.Ledger{Ensemble: 3, WriteQuorum: 2, Ack: 2, DigestType: digest.CRC32C}, payloads(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Open(md)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = l.ReadEntry(ctx, 0)
	if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "EBADREQ") || !strings.Contains(err.Error(), "no TLS configured") {
		t.Fatalf("read from bookies without TLS: %v", err)
	}
	for _, r := range cl.Requests() {
		if r.Operation != bkproto.OperationType_START_TLS {
			t.Errorf("request %+v sent on a connection whose START_TLS was refused", r)
		}
	}
}

// TestPayloadSum reads CRC32C entries of both sides of crc32c.MinCombine
// (and a CRC32 ledger) over both wire protocols: large CRC32C entries come
// with their payload's CRC-32C, the others without; a replica corrupting a
// large entry is still caught by the digest check made from the CRC the
// frame was read with (wire.ReadFrameSum) and the entry read from another
// one, with the right CRC.
func TestPayloadSum(t *testing.T) {
	for _, wp := range []string{WireV2, WireV3} {
		t.Run(wp, func(t *testing.T) { testPayloadSum(t, wp) })
	}
}

func testPayloadSum(t *testing.T, wp string) {
	e := newEnv(t, 3, Options{WireProtocol: wp})
	data := [][]byte{bytes.Repeat([]byte{1}, crc32c.MinCombine), []byte("small"), bytes.Repeat([]byte("xy"), 70000), bytes.Repeat([]byte{3}, crc32c.MinCombine-1)}
	l := e.write(bookietest.Ledger{LedgerID: 21, DigestType: digest.CRC32C}, data)
	l32 := e.write(bookietest.Ledger{LedgerID: 22, DigestType: digest.CRC32}, data)
	e.cluster.Bookies["bookie-0"].SetFault(func(bookietest.Request) bookietest.Action { return bookietest.Action{Corrupt: true} })
	for _, led := range []*Ledger{l, l32} {
		served := map[string]bool{}
		err := led.ReadRange(context.Background(), 0, -1, StreamOptions{ReuseBuffers: true}, func(en Entry) error {
			served[en.Bookie] = true
			p := data[en.EntryID]
			wantOK := led == l && len(p) >= crc32c.MinCombine
			if !bytes.Equal(en.Payload, p) || en.PayloadSum.OK != wantOK || (wantOK && en.PayloadSum.CRC32C != crc32c.Checksum(p)) {
				return fmt.Errorf("ledger %d entry %d (%d bytes): payload equal %v, sum %+v, want ok=%v crc %08x",
					en.LedgerID, en.EntryID, len(p), bytes.Equal(en.Payload, p), en.PayloadSum, wantOK, crc32c.Checksum(p))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// A connection hashes frames as they arrive only for the digest
		// type that uses it: the ledger it last served decides.
		for id := range served {
			k, err := e.client.getConn(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := k.sumFrames.Load(), led == l; got != want {
				t.Errorf("after reading ledger %d, bookie %s's connection hashes frames: %v, want %v", led.md.LedgerID, id, got, want)
			}
		}
	}
	if n := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_digest_errors_total"); n == 0 {
		t.Fatal("the corrupting replica was never caught")
	}
}

// Both wire protocols read a ledger whole, answers coming out of order,
// some busy and some corrupt: a v2 answer, which carries no txnId, goes to
// the call for its entry. The bookies see the protocol asked for (newEnv's
// check), and an unknown protocol is refused.
func TestWireProtocols(t *testing.T) {
	for _, wp := range []string{WireV2, WireV3} {
		t.Run(wp, func(t *testing.T) {
			e := newEnv(t, 3, Options{WireProtocol: wp, BusyBackoff: time.Millisecond, BusyBackoffMax: 2 * time.Millisecond})
			data := payloads(300, 21)
			l := e.write(bookietest.Ledger{LedgerID: 31, Ensemble: 3, WriteQuorum: 3}, data)
			for i, id := range e.cluster.IDs {
				var n atomic.Int64
				e.cluster.Bookies[id].SetFault(func(r bookietest.Request) bookietest.Action {
					// Two of the three replicas of every 11th entry answer
					// corrupt and the third (a different one each time)
					// does not: the reader must catch the corrupt answers
					// and read the good one. (Corrupting by a counter
					// shared by the bookies could corrupt all three.)
					if r.EntryID%11 == 5 && int(r.EntryID/11)%3 != i {
						return bookietest.Action{Corrupt: true}
					}
					if n.Add(1)%11 == 0 {
						return bookietest.Action{Status: bkproto.StatusCode_ETOOMANYREQUESTS}
					}
					return bookietest.Action{Delay: time.Duration(rand.IntN(4)) * time.Millisecond}
				})
			}
			readAll(t, l, data, StreamOptions{Window: 64})
			if b := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_busy_retries_total"); b == 0 {
				t.Error("no busy answer was retried")
			}
			if d := metricstest.CounterSum(t, e.reg, "tierkeeper_bookkeeper_digest_errors_total"); d == 0 {
				t.Error("no corrupt answer was caught")
			}
		})
	}
	if _, err := New(Options{Resolver: bookietest.StartCluster(t, 1), WireProtocol: "v4"}); err == nil || !strings.Contains(err.Error(), `"v4"`) {
		t.Fatalf("WireProtocol v4: %v", err)
	}
}

// TestEntrySum: the CRC of an entry that ends its frame comes from the
// frame's; one that does not end it (a v3 response with fields after the
// body), a small one, or a frame read without its sum gives none.
func TestEntrySum(t *testing.T) {
	frame := make([]byte, 200_000)
	for i := range frame {
		frame[i] = byte(i * 13)
	}
	sum := wire.FrameSum{CRC32C: crc32c.Checksum(frame), OK: true}
	body := frame[123:]
	if got := entrySum(frame, body, sum); !got.OK || got.CRC32C != crc32c.Checksum(body) {
		t.Fatalf("tail entry: %+v, want crc %08x", got, crc32c.Checksum(body))
	}
	if got := entrySum(frame, frame[:len(frame)-1], sum); got.OK {
		t.Errorf("entry short of the frame's end: %+v", got)
	}
	if got := entrySum(frame, frame[len(frame)-wire.SumMin+1:], sum); got.OK {
		t.Errorf("entry under wire.SumMin: %+v", got)
	}
	if got := entrySum(frame, body, wire.FrameSum{}); got.OK {
		t.Errorf("frame without a sum: %+v", got)
	}
}
