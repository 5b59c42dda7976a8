package metadata

import (
	"context"
	"errors"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// One ZooKeeper server for the package, started by the first test that
// needs it; each test works under its own root.
var (
	scope = testenv.NewSharedTB("bookkeeper-metadata")
	zkSrv testenv.Shared[*testenv.ZooKeeper]
)

func TestMain(m *testing.M) {
	code := m.Run()
	scope.Close()
	os.Exit(code)
}

// connectZK returns a session to the shared server, closed when t ends.
func connectZK(t *testing.T) *zk.Conn {
	t.Helper()
	return zkSrv.Get(t, scope, "zookeeper", testenv.StartZooKeeper).Session(t, tkzk.Options{SessionTimeout: 10 * time.Second}).Conn
}

func layoutFor(m Manager) string {
	cls := map[Manager]string{
		Hierarchical:       "org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory",
		LongHierarchical:   "org.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory",
		LegacyHierarchical: "org.apache.bookkeeper.meta.LegacyHierarchicalLedgerManagerFactory",
		Flat:               "org.apache.bookkeeper.meta.FlatLedgerManagerFactory",
	}[m]
	return "2\n" + cls + ":1"
}

func ledgerWithID(id int64) *LedgerMetadata {
	m := sample()
	m.LedgerID = id
	return m
}

// cluster creates a ledgers root with LAYOUT and the znodes BookKeeper keeps
// next to ledgers (which listing must skip).
func cluster(t *testing.T, c *zk.Conn, root string, m Manager) {
	t.Helper()
	testenv.CreatePath(t, c, root+"/LAYOUT", []byte(layoutFor(m)))
	testenv.CreatePath(t, c, root+"/INSTANCEID", []byte("0b5c0a4e-7d6f-4f3c-9d2e-1a2b3c4d5e6f"))
	testenv.CreatePath(t, c, root+"/available/readonly", nil)
	testenv.CreatePath(t, c, root+"/cookies/127.0.0.1:3181", []byte("5\nbookieHost: \"127.0.0.1:3181\"\n"))
	testenv.CreatePath(t, c, root+"/underreplication/ledgers", nil)
	testenv.CreatePath(t, c, root+"/idgen/ID-0000000007", nil)
	testenv.CreatePath(t, c, root+"/idgen-long/HOB-0000000001", nil)
	testenv.CreatePath(t, c, root+"/ID-0000000003", nil)
}

func TestZKLayoutsPathsAndListing(t *testing.T) {
	c := connectZK(t)
	ctx := context.Background()
	ids := map[Manager][]int64{
		Hierarchical:       {1, 2, 9999, 10000, 123456789, 2147483646, 2147483647, 4294967296, 9223372036854775807},
		LongHierarchical:   {0, 1, 123456789, 4294967296},
		LegacyHierarchical: {0, 5, 123456789, 2147483646},
		Flat:               {1, 77, 123456789},
	}
	for m, list := range ids {
		t.Run(m.String(), func(t *testing.T) {
			root := "/t-layout-" + m.String() + "/ledgers"
			cluster(t, c, root, m)
			for _, id := range list {
				p, _ := m.LedgerPath(root, id)
				data, err := Marshal(ledgerWithID(id), 3)
				if err != nil {
					t.Fatal(err)
				}
				testenv.CreatePath(t, c, p, data)
			}
			// Junk that must not be mistaken for ledgers.
			if m != Flat {
				testenv.CreatePath(t, c, root+"/00/0000/Lxyz1", []byte("x"))
				testenv.CreatePath(t, c, root+"/00/12/L0001", []byte("x"))
				testenv.CreatePath(t, c, root+"/99/0000", nil) // empty intermediate node
				if m == Hierarchical {
					// Long form of a small id: not where hierarchical keeps ledger 5.
					testenv.CreatePath(t, c, root+"/000/0000/0000/0000/L0005", []byte("x"))
				}
			} else {
				testenv.CreatePath(t, c, root+"/Lnotanumber", []byte("x"))
			}
			s, err := NewStore(ctx, c, StoreOptions{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			if s.Layout().Manager != m {
				t.Fatalf("layout manager %v, want %v", s.Layout().Manager, m)
			}
			got, err := s.ListLedgers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, list) {
				t.Fatalf("ListLedgers = %v, want %v", got, list)
			}
			for _, id := range list {
				md, err := s.ReadLedger(ctx, id)
				if err != nil {
					t.Fatalf("ReadLedger(%d): %v", id, err)
				}
				if md.LedgerID != id || md.Version != 0 || md.LastEntryID != 9 || md.DigestType != sample().DigestType {
					t.Fatalf("ReadLedger(%d) = %+v", id, md)
				}
			}
			if _, err := s.ReadLedger(ctx, 31337); !errors.Is(err, ErrNoSuchLedger) {
				t.Fatalf("missing ledger: %v", err)
			}
		})
	}
}

func TestZKFormatsAndCtime(t *testing.T) {
	c := connectZK(t)
	ctx := context.Background()
	root := "/t-formats/ledgers"
	cluster(t, c, root, Hierarchical)
	testenv.CreatePath(t, c, root+"/00/0000/L0001", []byte(javaV1))
	testenv.CreatePath(t, c, root+"/00/0000/L0002", []byte(javaV2))
	v3, _ := Marshal(sample(), 3)
	testenv.CreatePath(t, c, root+"/00/0000/L0003", v3)
	testenv.CreatePath(t, c, root+"/00/0000/L0004", []byte("\x00garbled"))
	s, err := NewStore(ctx, c, StoreOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Hour).UnixMilli()
	for id, ver := range map[int64]int{1: 1, 2: 2, 3: 3} {
		m, err := s.ReadLedger(ctx, id)
		if err != nil {
			t.Fatalf("ledger %d: %v", id, err)
		}
		if m.FormatVersion != ver || m.LastEntryID != 9 || m.Length != 1024 || len(m.Segments) != 2 {
			t.Fatalf("ledger %d: %+v", id, m)
		}
		if ver == 1 && (m.CtimeStored || m.Ctime < before) {
			t.Fatalf("v1 ctime should come from the znode: %d", m.Ctime)
		}
		if ver > 1 && (!m.CtimeStored || m.Ctime != 1600000000000) {
			t.Fatalf("stored ctime lost: %+v", m)
		}
	}
	if _, err := s.ReadLedger(ctx, 4); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbled: %v", err)
	}
}

func TestZKStoreErrors(t *testing.T) {
	c := connectZK(t)
	ctx := context.Background()
	if _, err := NewStore(ctx, c, StoreOptions{Root: "/t-nothing-here"}); !errors.Is(err, ErrNoCluster) {
		t.Fatalf("missing root: %v", err)
	}
	testenv.CreatePath(t, c, "/t-nolayout/ledgers/00/0000/L0001", mustMarshal(t, ledgerWithID(1)))
	s, err := NewStore(ctx, c, StoreOptions{Root: "/t-nolayout/ledgers"})
	if err != nil || s.Layout().Manager != Hierarchical {
		t.Fatalf("no LAYOUT: %v %+v", err, s)
	}
	if ids, err := s.ListLedgers(ctx); err != nil || !reflect.DeepEqual(ids, []int64{1}) {
		t.Fatalf("list without LAYOUT: %v %v", ids, err)
	}
	testenv.CreatePath(t, c, "/t-badlayout/ledgers/LAYOUT", []byte("2\norg.apache.bookkeeper.meta.MSLedgerManagerFactory:1"))
	if _, err := NewStore(ctx, c, StoreOptions{Root: "/t-badlayout/ledgers"}); !errors.Is(err, ErrBadLayout) {
		t.Fatalf("MS layout: %v", err)
	}
	// An explicit manager overrides an unusable LAYOUT.
	if s, err := NewStore(ctx, c, StoreOptions{Root: "/t-badlayout/ledgers", Manager: Flat}); err != nil || s.Layout().Manager != Flat {
		t.Fatalf("override: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.ReadLedger(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
}

func mustMarshal(t *testing.T, m *LedgerMetadata) []byte {
	b, err := Marshal(m, 3)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestZKResolveBookie(t *testing.T) {
	c := connectZK(t)
	ctx := context.Background()
	root := "/t-bookies/ledgers"
	cluster(t, c, root, Hierarchical)
	info := func(host string, port int) []byte {
		b, err := MarshalBookieServiceInfo(&BookieServiceInfo{Endpoints: []Endpoint{
			{ID: "httpserver", Host: host, Port: 8080, Protocol: "http"},
			{ID: "bookie", Host: host, Port: port, Protocol: "bookie-rpc"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	testenv.CreatePath(t, c, root+"/available/bookie-1", info("127.0.0.1", 4001))
	testenv.CreatePath(t, c, root+"/available/readonly/bookie-2", info("127.0.0.2", 4002))
	testenv.CreatePath(t, c, root+"/available/10.1.1.1:3181", nil) // pre-4.12 bookie: empty data
	testenv.CreatePath(t, c, root+"/available/bookie-bad", []byte("\xff\xff"))
	testenv.CreatePath(t, c, root+"/available/bookie-norpc", func() []byte {
		b, _ := MarshalBookieServiceInfo(&BookieServiceInfo{Endpoints: []Endpoint{{ID: "httpserver", Host: "h", Port: 1, Protocol: "http"}}})
		return b
	}())
	s, err := NewStore(ctx, c, StoreOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"bookie-1":       "127.0.0.1:4001",
		"bookie-2":       "127.0.0.2:4002",
		"10.1.1.1:3181":  "10.1.1.1:3181",
		"10.9.9.9:3181":  "10.9.9.9:3181", // registered nowhere: id as address
		"bookie-3:3181":  "bookie-3:3181",
		"localhost:3181": "localhost:3181",
	} {
		got, err := s.ResolveBookie(ctx, id)
		if err != nil || got != want {
			t.Errorf("ResolveBookie(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	for id, want := range map[string]error{
		"bookie-unknown": ErrBookieNotFound,
		"../LAYOUT":      ErrBookieNotFound,
		"bookie-bad":     ErrBadBookieInfo,
		"bookie-norpc":   ErrBadBookieInfo,
	} {
		if _, err := s.ResolveBookie(ctx, id); !errors.Is(err, want) {
			t.Errorf("ResolveBookie(%q): %v, want %v", id, err, want)
		}
	}
	w, r, err := s.Bookies(ctx)
	if err != nil || !reflect.DeepEqual(w, []string{"10.1.1.1:3181", "bookie-1", "bookie-bad", "bookie-norpc"}) || !reflect.DeepEqual(r, []string{"bookie-2"}) {
		t.Fatalf("Bookies = %v %v %v", w, r, err)
	}
}

// racingConn makes one concurrent change to the ledger znode just before
// the Store's first delete, as autorecovery or a broker might.
type racingConn struct {
	*zk.Conn
	t       *testing.T
	change  func(c *zk.Conn)
	once    sync.Once
	deletes int
}

func (r *racingConn) Delete(p string, version int32) error {
	r.deletes++
	r.once.Do(func() { r.change(r.Conn) })
	return r.Conn.Delete(p, version)
}

func TestZKCompareAndDelete(t *testing.T) {
	c := connectZK(t)
	ctx := context.Background()
	root := "/t-delete/ledgers"
	cluster(t, c, root, Hierarchical)
	s, err := NewStore(ctx, c, StoreOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	put := func(id int64, m *LedgerMetadata) string {
		m.LedgerID = id
		p, _ := s.LedgerPath(id)
		testenv.CreatePath(t, c, p, mustMarshal(t, m))
		return p
	}
	exists := func(p string) bool {
		ok, _, err := c.Exists(p)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	want := Expect{LastEntryID: 9, Length: 1024}

	t.Run("plain", func(t *testing.T) {
		p := put(100, sample())
		if r, err := s.DeleteLedger(ctx, 100, want); err != nil || r != Deleted || exists(p) {
			t.Fatalf("delete: %v %v", r, err)
		}
		if r, err := s.DeleteLedger(ctx, 100, want); err != nil || r != AlreadyDeleted {
			t.Fatalf("second delete: %v %v", r, err)
		}
	})
	t.Run("mismatch keeps ledger", func(t *testing.T) {
		p := put(101, sample())
		if _, err := s.DeleteLedger(ctx, 101, Expect{LastEntryID: 8, Length: 1024}); !errors.Is(err, ErrChanged) || !exists(p) {
			t.Fatalf("lastEntryId mismatch: %v", err)
		}
		if _, err := s.DeleteLedger(ctx, 101, Expect{LastEntryID: 9, Length: 1}); !errors.Is(err, ErrChanged) || !exists(p) {
			t.Fatalf("length mismatch: %v", err)
		}
		open := sample()
		open.State, open.LastEntryID, open.Length = StateOpen, -1, 0
		p = put(102, open)
		if _, err := s.DeleteLedger(ctx, 102, want); !errors.Is(err, ErrNotClosed) || !exists(p) {
			t.Fatalf("open ledger: %v", err)
		}
	})
	t.Run("concurrent rewrite then retry", func(t *testing.T) {
		p := put(103, sample())
		// Autorecovery replaces a bookie: same lastEntryId/length, new version.
		rc := &racingConn{Conn: c, t: t, change: func(c *zk.Conn) {
			m := ledgerWithID(103)
			m.Segments[0].Bookies[0] = "127.0.0.1:3190"
			if _, err := c.Set(p, mustMarshal(t, m), -1); err != nil {
				t.Error(err)
			}
		}}
		s2, err := NewStore(ctx, rc, StoreOptions{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := s2.DeleteLedger(ctx, 103, want); err != nil || r != Deleted || exists(p) {
			t.Fatalf("delete after race: %v %v", r, err)
		}
		if rc.deletes != 2 {
			t.Fatalf("expected a BadVersion then a successful delete, got %d delete calls", rc.deletes)
		}
	})
	t.Run("concurrent change of meaning", func(t *testing.T) {
		p := put(104, sample())
		rc := &racingConn{Conn: c, t: t, change: func(c *zk.Conn) {
			m := ledgerWithID(104)
			m.Length = 2048
			if _, err := c.Set(p, mustMarshal(t, m), -1); err != nil {
				t.Error(err)
			}
		}}
		s2, _ := NewStore(ctx, rc, StoreOptions{Root: root})
		if _, err := s2.DeleteLedger(ctx, 104, want); !errors.Is(err, ErrChanged) || !exists(p) {
			t.Fatalf("changed meaning: %v, exists %t", err, exists(p))
		}
	})
	t.Run("concurrent delete", func(t *testing.T) {
		p := put(105, sample())
		rc := &racingConn{Conn: c, t: t, change: func(c *zk.Conn) {
			if err := c.Delete(p, -1); err != nil {
				t.Error(err)
			}
		}}
		s2, _ := NewStore(ctx, rc, StoreOptions{Root: root})
		if r, err := s2.DeleteLedger(ctx, 105, want); err != nil || r != AlreadyDeleted {
			t.Fatalf("deleted by another: %v %v", r, err)
		}
	})
	t.Run("racing writers", func(t *testing.T) {
		// Real concurrency: a writer keeps rewriting the znode (same meaning)
		// while we delete; the delete must still succeed without losing a
		// write that changed the meaning.
		p := put(106, sample())
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 200; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Set(p, mustMarshal(t, ledgerWithID(106)), -1); err != nil {
					return // deleted
				}
			}
		}()
		var r DeleteResult
		var err error
		for i := 0; i < 20; i++ {
			if r, err = s.DeleteLedger(ctx, 106, want); err == nil {
				break
			}
		}
		close(stop)
		<-done
		if err != nil || r != Deleted || exists(p) {
			t.Fatalf("delete under racing writer: %v %v", r, err)
		}
	})
}

// DeleteLedger under a lease fence: refused with ErrFenced (ledger kept)
// once the fence's epoch moved; deleted while it holds; a store that
// requires a fence refuses a context without one (ledger kept).
func TestZKFencedDelete(t *testing.T) {
	c := connectZK(t)
	ctx := context.Background()
	root := "/t-fenced-delete/ledgers"
	cluster(t, c, root, Hierarchical)
	s, err := NewStore(ctx, c, StoreOptions{Root: root, RequireFence: true})
	if err != nil {
		t.Fatal(err)
	}
	want := Expect{LastEntryID: 9, Length: 1024}
	p, _ := s.LedgerPath(200)
	testenv.CreatePath(t, c, p, mustMarshal(t, ledgerWithID(200)))
	exists := func() bool {
		ok, _, err := c.Exists(p)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if _, err := s.DeleteLedger(ctx, 200, want); !errors.Is(err, tkzk.ErrUnfenced) || !exists() {
		t.Fatalf("unfenced delete on a store requiring a fence: %v (exists %v)", err, exists())
	}
	testenv.CreatePath(t, c, "/t-fenced-delete/epoch", nil)
	f := tkzk.NewFence("test lease", tkzk.PathVersion{Path: "/t-fenced-delete/epoch", Version: 0})
	if _, err := c.Set("/t-fenced-delete/epoch", []byte("taken"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteLedger(tkzk.WithFence(ctx, f), 200, want); !errors.Is(err, tkzk.ErrFenced) || !exists() {
		t.Fatalf("delete under a stale fence: %v (exists %v)", err, exists())
	}
	f = tkzk.NewFence("test lease", tkzk.PathVersion{Path: "/t-fenced-delete/epoch", Version: 1})
	if r, err := s.DeleteLedger(tkzk.WithFence(ctx, f), 200, want); err != nil || r != Deleted || exists() {
		t.Fatalf("delete under a held fence: %v %v (exists %v)", r, err, exists())
	}
}
