package metadata

import (
	"context"
	"errors"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

// treeConn is an in-memory znode tree for fault injection: after failAfter
// Children calls, every call fails with failErr.
type treeConn struct {
	nodes     map[string][]string // path -> children
	calls     atomic.Int32
	failAfter int32
	failErr   error
}

func newTree(paths ...string) *treeConn {
	c := &treeConn{nodes: map[string][]string{"/ledgers": nil}, failAfter: -1}
	for _, p := range paths {
		for p != "/ledgers" && p != "/" {
			parent := path.Dir(p)
			if !slices.Contains(c.nodes[parent], path.Base(p)) {
				c.nodes[parent] = append(c.nodes[parent], path.Base(p))
			}
			if _, ok := c.nodes[p]; !ok {
				c.nodes[p] = nil
			}
			p = parent
		}
	}
	return c
}

func (c *treeConn) fail() error {
	if n := c.calls.Add(1); c.failAfter >= 0 && n > c.failAfter {
		return c.failErr
	}
	return nil
}

func (c *treeConn) Get(p string) ([]byte, *zk.Stat, error) {
	if err := c.fail(); err != nil {
		return nil, nil, err
	}
	if _, ok := c.nodes[p]; !ok {
		return nil, nil, zk.ErrNoNode
	}
	return nil, &zk.Stat{}, nil
}

func (c *treeConn) Children(p string) ([]string, *zk.Stat, error) {
	if err := c.fail(); err != nil {
		return nil, nil, err
	}
	kids, ok := c.nodes[p]
	if !ok {
		return nil, nil, zk.ErrNoNode
	}
	return slices.Clone(kids), &zk.Stat{}, nil
}

func (c *treeConn) Delete(string, int32) error               { return errors.New("read only") }
func (c *treeConn) Multi(...any) ([]zk.MultiResponse, error) { return nil, errors.New("read only") }

// A ZooKeeper that stops answering ends a listing at its first failed
// request, with that error: no request after it.
func TestListLedgersStopsWhenZooKeeperIsGone(t *testing.T) {
	var paths []string
	for l1 := range 20 {
		for leaf := range 5 {
			id := int64(l1)*100_000_000 + int64(leaf)
			p, _ := Hierarchical.LedgerPath("/ledgers", id)
			paths = append(paths, p)
		}
	}
	c := newTree(paths...)
	ctx := context.Background()
	s, err := NewStore(ctx, c, StoreOptions{Manager: Hierarchical})
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.ListLedgers(ctx)
	if err != nil || len(all) != 100 {
		t.Fatalf("healthy listing: %d ids, %v", len(all), err)
	}
	for _, failErr := range []error{zk.ErrNoServer, zk.ErrConnectionClosed, zk.ErrSessionExpired} {
		c.calls.Store(0)
		c.failAfter, c.failErr = 7, failErr
		ids, err := s.ListLedgers(ctx)
		if !errors.Is(err, failErr) || !tkzk.Unavailable(err) || ids != nil {
			t.Errorf("%v: ListLedgers = %d ids, %v", failErr, len(ids), err)
		}
		if !strings.Contains(err.Error(), "/ledgers") {
			t.Errorf("error does not say what was listed: %v", err)
		}
		if n := c.calls.Load(); n != 8 {
			t.Errorf("%v: %d requests, want 8 (none after the failure)", failErr, n)
		}
	}
}

func TestLedgerIDOf(t *testing.T) {
	for _, c := range []struct {
		m   Manager
		rel string
		id  int64
		ok  bool
	}{
		{Hierarchical, "00/0000/L0001", 1, true},
		{Hierarchical, "21/4748/L3646", 2147483646, true},
		{Hierarchical, "000/0000/0021/4748/L3647", 2147483647, true},
		{Hierarchical, "000/0000/0000/0000/L0005", 0, false}, // long form of a short id
		{LongHierarchical, "000/0000/0000/0000/L0005", 5, true},
		{LongHierarchical, "00/0000/L0005", 0, false},
		{LegacyHierarchical, "99/9999/L9999", 9999999999, true},
		{Flat, "L0000000077", 77, true},
		{Flat, "L00000000077", 0, false}, // one leading zero too many
		{Flat, "L12345678901", 12345678901, true},
		{Hierarchical, "922/3372/0368/5477/L5807", 9223372036854775807, true},
		{Hierarchical, "922/3372/0368/5477/L5808", 0, false}, // overflows int64
		{Hierarchical, "00/0000/Lxyz1", 0, false},
		{Hierarchical, "00/0000/0001", 0, false},
		{Hierarchical, "", 0, false},
	} {
		var rel []string
		if c.rel != "" {
			rel = strings.Split(c.rel, "/")
		}
		if id, ok := ledgerIDOf(c.m, rel); id != c.id || ok != c.ok {
			t.Errorf("%v %s: %d %v, want %d %v", c.m, c.rel, id, ok, c.id, c.ok)
		}
	}
}

// FuzzListLedgerChildren builds a tree from fuzzed child names and checks,
// for every manager, that listing never panics, lists each id once, in
// order, and only ids whose path under that manager is a node of the tree.
// It also checks the other direction: the path of every id is recognised.
func FuzzListLedgerChildren(f *testing.F) {
	f.Add("00/0000/L0001\n000/0000/0000/0000/L0005\nL0000000077\navailable/readonly\n21/4748/L3646", int64(7))
	f.Add("922/3372/0368/5477/L5808\n00/0000/L00001\n00/0000/Lxyz1", int64(9223372036854775807))
	f.Add("L12345678901\nL-000000001\n99/9999/L9999", int64(9999999999))
	log := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, tree string, id int64) {
		var paths []string
		for _, l := range strings.Split(tree, "\n") {
			if l = strings.Trim(l, "/"); l == "" || strings.Contains(l, "//") || len(paths) > 50 {
				continue
			}
			paths = append(paths, "/ledgers/"+l)
		}
		c := newTree(paths...)
		for _, m := range []Manager{Hierarchical, LongHierarchical, LegacyHierarchical, Flat} {
			s := &Store{zk: c, root: "/ledgers", layout: Layout{Manager: m}, log: log}
			ids, err := s.ListLedgers(context.Background())
			if err != nil {
				t.Fatalf("%v: %v", m, err)
			}
			if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("%v: ids not sorted and unique: %v", m, ids)
			}
			for _, id := range ids {
				p, err := s.LedgerPath(id)
				if _, ok := c.nodes[p]; err != nil || !ok {
					t.Fatalf("%v: listed %d whose node %s (%v) is not in the tree", m, id, p, err)
				}
			}
			if id >= 0 {
				if p, err := m.LedgerPath("", id); err == nil {
					if got, ok := ledgerIDOf(m, strings.Split(strings.TrimPrefix(p, "/"), "/")); !ok || got != id {
						t.Fatalf("%v: path %s of %d read back as %d %v", m, p, id, got, ok)
					}
				}
			}
		}
		if len(tree) <= 256 {
			s := &Store{zk: c, root: "/ledgers", layout: Layout{Manager: Hierarchical}, log: log}
			if a := testing.AllocsPerRun(1, func() { _, _ = s.ListLedgers(context.Background()) }); a > 64+float64(len(tree))*8 {
				t.Fatalf("%v allocations listing a %d-byte tree", a, len(tree))
			}
		}
	})
}
