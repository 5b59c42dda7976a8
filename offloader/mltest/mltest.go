// Package mltest builds managed-ledger trees in a real ZooKeeper for the
// service's tests and benchmarks: ManagedLedgerInfo values shaped like a
// broker's, written at the paths a broker uses, with parents created.
package mltest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Ledger describes one ledger of a test managed ledger.
type Ledger struct {
	ID      int64
	Entries int64
	Size    int64
	// Closed is the close time; zero for the open (last) ledger.
	Closed time.Time
	// Offloaded, when set, marks the ledger offloaded (complete) at that
	// time by attempt UUID (msb, lsb) = (ID, ID).
	Offloaded time.Time
}

// Info builds the ManagedLedgerInfo of ledgers (ascending ids).
func Info(ledgers ...Ledger) *mlproto.ManagedLedgerInfo {
	info := &mlproto.ManagedLedgerInfo{}
	for _, l := range ledgers {
		li := &mlproto.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(l.ID)}
		if !l.Closed.IsZero() {
			li.Entries, li.Size, li.Timestamp = proto.Int64(l.Entries), proto.Int64(l.Size), proto.Int64(l.Closed.UnixMilli())
		} else {
			li.Timestamp = proto.Int64(0)
		}
		if !l.Offloaded.IsZero() {
			md, _ := mledger.Driver{Name: "aws-s3", Bucket: "b"}.Metadata()
			li.OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(l.ID), UidLsb: proto.Int64(l.ID),
				Complete: proto.Bool(true), Timestamp: proto.Int64(l.Offloaded.UnixMilli()), DriverMetadata: md}
		}
		info.LedgerInfo = append(info.LedgerInfo, li)
	}
	return info
}

// Closed returns n closed ledgers with ids from first, sizes size, closed
// one minute apart ending at last, followed by an open ledger.
func Closed(first int64, n int, size int64, last time.Time) []Ledger {
	var out []Ledger
	for i := 0; i < n; i++ {
		out = append(out, Ledger{ID: first + int64(i), Entries: 10, Size: size, Closed: last.Add(-time.Duration(n-1-i) * time.Minute)})
	}
	return append(out, Ledger{ID: first + int64(n)})
}

// Encode returns the plain protobuf value of info.
func Encode(info *mlproto.ManagedLedgerInfo) []byte {
	b, err := mledger.Encode(info, mledger.EncodeOptions{})
	if err != nil {
		panic(err)
	}
	return b
}

// Creator creates znodes with missing parents, remembering the parents
// already made. It is safe for concurrent use.
type Creator struct {
	Conn *gozk.Conn
	mu   sync.Mutex
	made map[string]bool
}

// NewCreator returns a Creator on conn.
func NewCreator(conn *gozk.Conn) *Creator { return &Creator{Conn: conn, made: map[string]bool{}} }

// Create creates p with data (parents empty); an existing p is set to data.
func (c *Creator) Create(p string, data []byte) error {
	if err := c.parents(p); err != nil {
		return err
	}
	_, err := c.Conn.Create(p, data, 0, gozk.WorldACL(gozk.PermAll))
	if errors.Is(err, gozk.ErrNodeExists) {
		_, err = c.Conn.Set(p, data, -1)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return nil
}

// Node is a znode for CreateAll.
type Node struct {
	Path string
	Data []byte
}

// CreateAll creates new znodes (parents empty, made first) in one multi
// request: all or none. The nodes must not exist; keep the request well
// below the server's jute.maxbuffer (1 MiB by default).
func (c *Creator) CreateAll(nodes []Node) error {
	ops := make([]any, 0, len(nodes))
	for _, n := range nodes {
		if err := c.parents(n.Path); err != nil {
			return err
		}
		ops = append(ops, &gozk.CreateRequest{Path: n.Path, Data: n.Data, Acl: gozk.WorldACL(gozk.PermAll)})
	}
	if _, err := c.Conn.Multi(ops...); err != nil {
		return fmt.Errorf("create %d znodes from %s: %w", len(nodes), nodes[0].Path, err)
	}
	return nil
}

// parents creates p's missing parents.
func (c *Creator) parents(p string) error {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := 1; i < len(parts); i++ {
		sub := "/" + strings.Join(parts[:i], "/")
		c.mu.Lock()
		done := c.made[sub]
		c.mu.Unlock()
		if done {
			continue
		}
		if _, err := c.Conn.Create(sub, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil && !errors.Is(err, gozk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", sub, err)
		}
		c.mu.Lock()
		c.made[sub] = true
		c.mu.Unlock()
	}
	return nil
}

// CreateML writes a managed ledger's value at its znode.
func (c *Creator) CreateML(ml string, info *mlproto.ManagedLedgerInfo) error {
	return c.Create(mledger.Path(ml), Encode(info))
}

// Parallel runs fn(i) for i in [0, n) with conc goroutines and returns the
// first error.
func Parallel(ctx context.Context, n, conc int, fn func(i int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
		if first != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// Agent starts a real bookie agent server (bookieagent.Server) whose
// ledger directory's mount reports ledgerUsage (its journal mount 10%), and
// returns its /report URL. It stops with t.
func Agent(t testing.TB, ledgerUsage float64) string {
	t.Helper()
	return AgentServer(t, ledgerUsage, nil) + "/report"
}

// AgentServer is Agent returning the server's base URL; a non-nil rec is
// what its /recommendation serves (status done).
func AgentServer(t testing.TB, ledgerUsage float64, rec *bookieagent.Recommendation) string {
	t.Helper()
	jdir, ldir := t.TempDir(), t.TempDir()
	s, err := bookieagent.NewSampler(bookieagent.SamplerOptions{
		Dirs: []bookieagent.DirRole{{Dir: jdir, Role: bookieagent.RoleJournal}, {Dir: ldir, Role: bookieagent.RoleLedger}},
		Statfs: func(_ context.Context, p string) (bookieagent.FSUsage, error) {
			const size = 1 << 40
			u := 0.10
			if strings.HasPrefix(p, ldir) {
				u = ledgerUsage
			}
			return bookieagent.FSUsage{Size: size, Avail: uint64((1 - u) * size), FSType: "xfs"}, nil
		},
		// No mountinfo under an empty procfs root: each dir is its own mount.
		Host: bookieagent.HostFS{ProcPath: t.TempDir(), SysPath: t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The sample's diskstats read fails under the empty procfs root; the
	// capacity figures the report carries are taken all the same.
	_ = s.Sample(context.Background())
	srv, err := bookieagent.NewServer(bookieagent.ServerOptions{Sampler: s})
	if err != nil {
		t.Fatal(err)
	}
	if rec != nil {
		srv.SetBench(bookieagent.BenchState{Status: "done", Recommendation: rec})
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

// BookKeeperLedger writes a closed ledger's v3 metadata znode (hierarchical
// layout under /ledgers) with one ensemble of bookies.
func (c *Creator) BookKeeperLedger(id int64, bookies ...string) error {
	n, err := BookKeeperLedgerNode(id, bookies...)
	if err != nil {
		return err
	}
	return c.Create(n.Path, n.Data)
}

// BookKeeperLedgerNode is the znode BookKeeperLedger writes.
func BookKeeperLedgerNode(id int64, bookies ...string) (Node, error) {
	p, err := metadata.Hierarchical.LedgerPath("/ledgers", id)
	if err != nil {
		return Node{}, err
	}
	md := &metadata.LedgerMetadata{LedgerID: id, EnsembleSize: len(bookies), WriteQuorum: len(bookies), AckQuorum: len(bookies),
		State: metadata.StateClosed, LastEntryID: 9, Length: 1000, HasPassword: true, DigestType: digest.CRC32C,
		Segments: []metadata.Segment{{FirstEntryID: 0, Bookies: bookies}}, Ctime: time.Now().UnixMilli()}
	data, err := metadata.Marshal(md, 3)
	if err != nil {
		return Node{}, err
	}
	return Node{Path: p, Data: data}, nil
}

// ZooKeeper starts a real ZooKeeper (testenv) and returns it with a
// Creator on a session that closes when t ends.
func ZooKeeper(t testing.TB) (*testenv.ZooKeeper, *Creator) {
	t.Helper()
	z := testenv.StartZooKeeper(t)
	return z, NewCreator(z.Session(t, tzk.Options{}).Conn)
}
