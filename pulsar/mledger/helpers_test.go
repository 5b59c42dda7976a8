package mledger

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
)

// sampleInfo builds a ManagedLedgerInfo shaped like a broker's: n ledgers
// with ascending ids from firstID, the last one open (timestamp 0), ledger
// properties, one already-offloaded ledger, ML properties and a terminated
// position.
func sampleInfo(firstID int64, n int) *mlproto.ManagedLedgerInfo {
	info := &mlproto.ManagedLedgerInfo{}
	for i := 0; i < n; i++ {
		id := firstID + int64(i)
		li := &mlproto.ManagedLedgerInfo_LedgerInfo{
			LedgerId:  proto.Int64(id),
			Entries:   proto.Int64(10 + int64(i)),
			Size:      proto.Int64(1000 * (int64(i) + 1)),
			Timestamp: proto.Int64(1_700_000_000_000 + int64(i)*60_000),
			Properties: []*mlproto.KeyValue{
				{Key: proto.String("k"), Value: proto.String(fmt.Sprint("v", i))},
			},
		}
		if i == n-1 {
			li.Entries, li.Size, li.Timestamp = nil, nil, proto.Int64(0)
		}
		info.LedgerInfo = append(info.LedgerInfo, li)
	}
	if n > 2 {
		md, _ := Driver{Name: "aws-s3", Bucket: "b", Region: "eu"}.Metadata()
		info.LedgerInfo[0].OffloadContext = &mlproto.OffloadContext{
			UidMsb: proto.Int64(-5), UidLsb: proto.Int64(7), Complete: proto.Bool(true),
			Timestamp: proto.Int64(1_700_000_100_000), DriverMetadata: md,
		}
	}
	info.Properties = []*mlproto.KeyValue{{Key: proto.String("pulsar.owner"), Value: proto.String("x")}}
	return info
}

// addUnknown appends an unknown field (number num, bytes payload) to m.
func addUnknown(m proto.Message, num protowire.Number, payload string) {
	r := m.ProtoReflect()
	u := r.GetUnknown()
	u = protowire.AppendTag(u, num, protowire.BytesType)
	u = protowire.AppendString(u, payload)
	r.SetUnknown(u)
}

// fakeZK is an in-memory ZooKeeper with compare-and-set semantics, used for
// fault injection (racing writers, errors, stalls) in fast unit tests; the
// same behaviour is checked against a real server in zk_test.go.
type fakeZK struct {
	mu    sync.Mutex
	nodes map[string]*fakeNode

	// beforeSet, if set, runs (without the lock) before each Set is applied.
	beforeSet func(path string, version int32)
	// getHook, if set, runs before each Get; a non-nil error is returned.
	getHook func(path string) error
	sets    int
}

type fakeNode struct {
	data    []byte
	version int32
	mtime   int64
}

func newFakeZK() *fakeZK { return &fakeZK{nodes: map[string]*fakeNode{}} }

// put creates or overwrites path (and missing parents) without a version check.
func (f *fakeZK) put(path string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := 1; i < len(parts); i++ {
		p := "/" + strings.Join(parts[:i], "/")
		if f.nodes[p] == nil {
			f.nodes[p] = &fakeNode{}
		}
	}
	if n := f.nodes[path]; n != nil {
		n.data, n.version = slices.Clone(data), n.version+1
		return
	}
	f.nodes[path] = &fakeNode{data: slices.Clone(data), mtime: time.Now().UnixMilli()}
}

func (f *fakeZK) raw(path string) ([]byte, int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[path]
	if n == nil {
		return nil, -1
	}
	return slices.Clone(n.data), n.version
}

func (f *fakeZK) Get(path string) ([]byte, *zk.Stat, error) {
	if f.getHook != nil {
		if err := f.getHook(path); err != nil {
			return nil, nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[path]
	if n == nil {
		return nil, nil, zk.ErrNoNode
	}
	return slices.Clone(n.data), &zk.Stat{Version: n.version, Mtime: n.mtime, DataLength: int32(len(n.data))}, nil
}

func (f *fakeZK) Children(path string) ([]string, *zk.Stat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodes[path] == nil {
		return nil, nil, zk.ErrNoNode
	}
	var out []string
	prefix := path + "/"
	for p := range f.nodes {
		if rest, ok := strings.CutPrefix(p, prefix); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	return out, &zk.Stat{}, nil
}

func (f *fakeZK) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if f.beforeSet != nil {
		f.beforeSet(path, version)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets++
	n := f.nodes[path]
	if n == nil {
		return nil, zk.ErrNoNode
	}
	if version != -1 && version != n.version {
		return nil, zk.ErrBadVersion
	}
	n.data, n.version, n.mtime = slices.Clone(data), n.version+1, time.Now().UnixMilli()
	return &zk.Stat{Version: n.version, Mtime: n.mtime}, nil
}

// Multi applies version checks and Sets atomically, as ZooKeeper does:
// all or nothing, the failing op's error reported at its index and
// returned.
func (f *fakeZK) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if f.beforeSet != nil {
		for _, op := range ops {
			if o, ok := op.(*zk.SetDataRequest); ok {
				f.beforeSet(o.Path, o.Version)
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res := make([]zk.MultiResponse, len(ops))
	for i, op := range ops {
		var path string
		var version int32
		switch o := op.(type) {
		case *zk.CheckVersionRequest:
			path, version = o.Path, o.Version
		case *zk.SetDataRequest:
			path, version = o.Path, o.Version
		default:
			return nil, fmt.Errorf("fakeZK: unsupported multi op %T", op)
		}
		n := f.nodes[path]
		var err error
		switch {
		case n == nil:
			err = zk.ErrNoNode
		case version != -1 && version != n.version:
			err = zk.ErrBadVersion
		}
		if err != nil {
			res[i].Error = err
			return res, err
		}
	}
	for i, op := range ops {
		if o, ok := op.(*zk.SetDataRequest); ok {
			f.sets++
			n := f.nodes[o.Path]
			n.data, n.version, n.mtime = slices.Clone(o.Data), n.version+1, time.Now().UnixMilli()
			res[i].Stat = &zk.Stat{Version: n.version, Mtime: n.mtime}
		}
	}
	return res, nil
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}
