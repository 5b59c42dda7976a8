package status

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// tree is a read-only in-memory znode tree (mledger.ZK).
type tree struct {
	mu    sync.Mutex
	nodes map[string][]byte
}

func newTree(mls map[string]*mlproto.ManagedLedgerInfo) *tree {
	t := &tree{nodes: map[string][]byte{}}
	for ml, info := range mls {
		p := mledger.Path(ml)
		t.nodes[p] = mltest.Encode(info)
		for q := p[:strings.LastIndexByte(p, '/')]; q != ""; q = q[:strings.LastIndexByte(q, '/')] {
			if _, ok := t.nodes[q]; !ok {
				t.nodes[q] = nil
			}
		}
	}
	return t
}

func (t *tree) Get(p string) ([]byte, *zk.Stat, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.nodes[p]
	if !ok {
		return nil, nil, zk.ErrNoNode
	}
	return d, &zk.Stat{Version: 3, Mtime: 1_700_000_000_000}, nil
}

func (t *tree) Children(p string) ([]string, *zk.Stat, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.nodes[p]; !ok {
		return nil, nil, zk.ErrNoNode
	}
	var kids []string
	for q := range t.nodes {
		if strings.HasPrefix(q, p+"/") && !strings.Contains(q[len(p)+1:], "/") {
			kids = append(kids, q[len(p)+1:])
		}
	}
	return kids, &zk.Stat{}, nil
}

func (t *tree) Set(string, []byte, int32) (*zk.Stat, error) { return nil, errors.New("read only") }
func (t *tree) Multi(...any) ([]zk.MultiResponse, error)    { return nil, errors.New("read only") }

var now = time.UnixMilli(1_800_000_000_000)

func fixture() map[string]*mlproto.ManagedLedgerInfo {
	events := mltest.Info(mltest.Closed(1, 3, 1000, now.Add(-time.Hour))...)
	events.LedgerInfo[0].OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(1), UidLsb: proto.Int64(2),
		Complete: proto.Bool(true), BookkeeperDeleted: proto.Bool(true)}
	md, _ := mledger.Driver{Name: "aws-s3", Bucket: "cold", Region: "eu", ServiceEndpoint: "http://s3"}.Metadata()
	events.LedgerInfo[1].OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(3), UidLsb: proto.Int64(4),
		Complete: proto.Bool(true), DriverMetadata: md}
	events.LedgerInfo[2].OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(5), UidLsb: proto.Int64(6)}
	return map[string]*mlproto.ManagedLedgerInfo{
		"public/default/persistent/events":             events,
		"public/default/persistent/orders-partition-0": mltest.Info(mltest.Closed(10, 1, 50, now.Add(-2*time.Hour))...),
		"public/default/persistent/orders-partition-1": mltest.Info(mltest.Closed(20, 2, 70, now.Add(-3*time.Hour))...),
		"pulsar/us-west/ns1/persistent/legacy":         mltest.Info(mltest.Ledger{ID: 30}),
	}
}

func TestNames(t *testing.T) {
	s := mledger.New(newTree(fixture()), nil)
	ctx := context.Background()
	for _, c := range []struct {
		sel  Selector
		want []string
	}{
		{Selector{}, []string{"public/default/persistent/events", "public/default/persistent/orders-partition-0",
			"public/default/persistent/orders-partition-1", "pulsar/us-west/ns1/persistent/legacy"}},
		{Selector{Namespace: "pulsar/us-west/ns1"}, []string{"pulsar/us-west/ns1/persistent/legacy"}},
		// A partitioned topic means its partitions; duplicates collapse.
		{Selector{Topics: []string{"persistent://public/default/orders", "public/default/orders-partition-1"}},
			[]string{"public/default/persistent/orders-partition-0", "public/default/persistent/orders-partition-1"}},
		{Selector{Topics: []string{"events"}}, []string{"public/default/persistent/events"}},
	} {
		got, err := Names(ctx, s, c.sel)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Names(%+v) = %q, %v; want %q", c.sel, got, err, c.want)
		}
	}
	for _, c := range []struct {
		sel  Selector
		want error
	}{
		{Selector{Namespace: "public/default", Topics: []string{"x"}}, ErrBadSelector},
		{Selector{Topics: []string{"non-persistent://public/default/x"}}, ErrBadSelector},
		{Selector{Topics: []string{"persistent://onlytenant"}}, ErrBadSelector},
		{Selector{Topics: []string{"persistent://public/default/nope"}}, mledger.ErrNotFound},
		{Selector{Namespace: "bad"}, mledger.ErrInvalidName},
	} {
		if _, err := Names(ctx, s, c.sel); !errors.Is(err, c.want) {
			t.Errorf("Names(%+v) = %v, want %v", c.sel, err, c.want)
		}
	}
}

func TestRead(t *testing.T) {
	mls := fixture()
	tr := newTree(mls)
	tr.nodes[mledger.Path("bad/ns/persistent/garbage")] = []byte{0xff, 0xff}
	tr.nodes["/managed-ledgers/bad/ns/persistent"], tr.nodes["/managed-ledgers/bad/ns"], tr.nodes["/managed-ledgers/bad"] = nil, nil, nil
	s := mledger.New(tr, nil)
	var calls []int
	r, err := Read(context.Background(), s, Selector{}, ReadOptions{Chroot: "/pulsar/", Now: func() time.Time { return now },
		Progress: func(done, total int) {
			if total != 5 {
				t.Errorf("total %d", total)
			}
			calls = append(calls, done)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []int{1, 2, 3, 4, 5}) {
		t.Errorf("progress %v", calls)
	}
	if len(r.Errors) != 1 || r.Errors[0].Name != "bad/ns/persistent/garbage" || !strings.Contains(r.Errors[0].Error, "corrupt") {
		t.Errorf("errors %+v", r.Errors)
	}
	if !slices.Equal(r.States, []string{"open", "bookkeeper", "offloading", "offloaded", "offloaded-bk-deleted"}) {
		t.Errorf("states %q", r.States)
	}
	tot := r.Totals
	wantBytes := map[string]int64{"open": 0, "bookkeeper": 50 + 140, "offloading": 1000, "offloaded": 1000, "offloaded-bk-deleted": 1000}
	wantLedgers := map[string]int64{"open": 4, "bookkeeper": 3, "offloading": 1, "offloaded": 1, "offloaded-bk-deleted": 1}
	for st := range wantBytes {
		if tot.BytesByState[st] != wantBytes[st] || tot.LedgersByState[st] != wantLedgers[st] {
			t.Errorf("%s: %d bytes %d ledgers, want %d %d", st, tot.BytesByState[st], tot.LedgersByState[st], wantBytes[st], wantLedgers[st])
		}
	}
	if tot.ManagedLedgers != 4 || tot.Ledgers != 10 || tot.Bytes != 3190 || tot.Entries != 60 {
		t.Errorf("totals %+v", tot)
	}
	if tot.OffloadedBytes() != 2000 || tot.BookKeeperOnlyBytes() != 1190 {
		t.Errorf("offloaded %d, only in BookKeeper %d", tot.OffloadedBytes(), tot.BookKeeperOnlyBytes())
	}
	ev := r.ManagedLedgers[0]
	if ev.Name != "public/default/persistent/events" || ev.Topic != "persistent://public/default/events" ||
		ev.Path != "/pulsar/managed-ledgers/public/default/persistent/events" || ev.Version != 3 || ev.Codec != "NONE" {
		t.Errorf("ML %+v", ev)
	}
	off := ev.Ledgers[1].Offload
	if off == nil || !off.Complete || off.Driver != "aws-s3" || off.Bucket != "cold" || off.Region != "eu" || off.ServiceEndpoint != "http://s3" || off.UUID == "" {
		t.Errorf("offload %+v", off)
	}
	if a := ev.Ledgers[0].AgeSeconds; a == nil || *a != 3600+120 {
		t.Errorf("age %v", a)
	}
	if ev.Ledgers[3].AgeSeconds != nil || ev.Ledgers[3].State != "open" {
		t.Errorf("open ledger %+v", ev.Ledgers[3])
	}
	sum := ev.Summary()
	if sum.Ledgers != 4 || sum.Bytes != 3000 || sum.OffloadedBytes != 2000 || sum.Entries != 30 || *sum.OldestAgeSeconds != 3720 {
		t.Errorf("summary %+v", sum)
	}
	if legacy := r.ManagedLedgers[3]; legacy.Summary().OldestAgeSeconds != nil || legacy.TopicOrName() != "persistent://pulsar/us-west/ns1/legacy" {
		t.Errorf("legacy %+v", legacy)
	}

	// The JSON field names are the documented `offloader topics -o json` output.
	b, _ := json.Marshal(r)
	for _, k := range []string{`"managedLedgers":`, `"totals":`, `"states":`, `"errors":`, `"readAt":"2027-01-15T08:00:00Z"`,
		`"bytesByState":`, `"ledgersByState":`, `"ledgerId":`, `"ageSeconds":`, `"offload":`, `"bookkeeperDeleted":true`,
		`"storedBytes":`, `"modified":`, `"serviceEndpoint":"http://s3"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
}

// FuzzBuild: any value that decodes as managed-ledger metadata builds a
// report whose totals add up and which marshals to JSON.
func FuzzBuild(f *testing.F) {
	for _, info := range fixture() {
		f.Add(mltest.Encode(info))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, codec, err := mledger.Decode(data, mledger.Limits{})
		if err != nil {
			return
		}
		snap := &mledger.Snapshot{Name: "public/default/persistent/x", Info: info, Codec: codec, StoredBytes: len(data)}
		r := Build([]mledger.Result{{Name: snap.Name, Snapshot: snap}}, now, "")
		var bytes, ledgers int64
		for _, st := range r.States {
			bytes += r.Totals.BytesByState[st]
			ledgers += r.Totals.LedgersByState[st]
		}
		if bytes != r.Totals.Bytes || ledgers != r.Totals.Ledgers || ledgers != int64(len(info.GetLedgerInfo())) {
			t.Fatalf("totals do not add up: %+v", r.Totals)
		}
		if s := r.ManagedLedgers[0].Summary(); s.Bytes != r.Totals.Bytes || s.OffloadedBytes != r.Totals.OffloadedBytes() {
			t.Fatalf("summary %+v vs totals %+v", s, r.Totals)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}
