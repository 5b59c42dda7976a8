package mledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Tests against a real ZooKeeper server (testenv.StartZooKeeper). One server
// serves every subtest; the session-loss subtests crash and restart it, so
// they run last.

func connect(t *testing.T, z *testenv.ZooKeeper) *zk.Conn {
	t.Helper()
	return z.Session(t, tkzk.Options{SessionTimeout: 4 * time.Second}).Conn
}

// create makes p with data, creating missing parents empty.
func create(t *testing.T, c *zk.Conn, p string, data []byte) {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := 1; i < len(parts); i++ {
		_, err := c.Create("/"+strings.Join(parts[:i], "/"), nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create parent of %s: %v", p, err)
		}
	}
	if _, err := c.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
}

// brokerInfo is a ManagedLedgerInfo like a broker's: ledgers firstID..,
// closed ones with entries/size/timestamp, the last open.
func brokerInfo(firstID int64, n int) *mlproto.ManagedLedgerInfo {
	info := &mlproto.ManagedLedgerInfo{}
	for i := 0; i < n; i++ {
		li := &mlproto.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(firstID + int64(i))}
		if i < n-1 {
			li.Entries, li.Size, li.Timestamp = proto.Int64(10), proto.Int64(1234), proto.Int64(1_700_000_000_000+int64(i))
		} else {
			li.Timestamp = proto.Int64(0)
		}
		info.LedgerInfo = append(info.LedgerInfo, li)
	}
	info.Properties = []*mlproto.KeyValue{{Key: proto.String("p"), Value: proto.String("v")}}
	return info
}

func encode(t *testing.T, info *mlproto.ManagedLedgerInfo, codec mlproto.CompressionType) []byte {
	t.Helper()
	b, err := mledger.Encode(info, mledger.EncodeOptions{Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readInfo(t *testing.T, c *zk.Conn, ml string) (*mlproto.ManagedLedgerInfo, int32) {
	t.Helper()
	data, st, err := c.Get(mledger.Path(ml))
	if err != nil {
		t.Fatalf("get %s: %v", ml, err)
	}
	info, _, err := mledger.Decode(data, mledger.Limits{})
	if err != nil {
		t.Fatalf("%s does not decode: %v", ml, err)
	}
	return info, st.Version
}

var drv = mledger.Driver{Name: "aws-s3", Bucket: "offload", ServiceEndpoint: "http://127.0.0.1:9000"}

func TestRealZooKeeper(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	admin := connect(t, z)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	mls := map[string][]byte{
		"public/default/persistent/plain":              encode(t, brokerInfo(1, 4), mlproto.CompressionType_NONE),
		"public/default/persistent/zstd":               encode(t, brokerInfo(10, 4), mlproto.CompressionType_ZSTD),
		"public/default/persistent/my+topic%7E*":       encode(t, brokerInfo(20, 2), mlproto.CompressionType_LZ4),
		"public/default/persistent/orders-partition-0": encode(t, brokerInfo(30, 3), mlproto.CompressionType_SNAPPY),
		"public/default/persistent/orders-partition-1": encode(t, brokerInfo(40, 3), mlproto.CompressionType_ZLIB),
		"public/default/persistent/new":                nil, // a freshly created ML: 0 bytes
		"pulsar/us-west/ns1/persistent/legacy":         encode(t, brokerInfo(50, 3), mlproto.CompressionType_NONE),
	}
	for ml, data := range mls {
		create(t, admin, mledger.Path(ml), data)
	}
	create(t, admin, mledger.Path("public/default/persistent/plain")+"/sub-1", []byte{8, 1})
	create(t, admin, mledger.Path("public/default/persistent/plain")+"/sub-2", []byte{8, 1})
	create(t, admin, mledger.Path("pulsar/us-west/ns1/persistent/legacy")+"/c", []byte{8, 1})
	create(t, admin, mledger.Root+"/empty-tenant/ns-without-topics", nil)

	s := mledger.New(connect(t, z), &mledger.Options{RetryBackoff: 5 * time.Millisecond})

	t.Run("list and read", func(t *testing.T) {
		got, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for ml := range mls {
			want = append(want, ml)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("List =\n%q\nwant\n%q", got, want)
		}
		nss, err := s.ListNamespaces(ctx)
		if wantNS := []string{"public/default", "pulsar/us-west/ns1"}; err != nil || !slices.Equal(nss, wantNS) {
			t.Errorf("ListNamespaces = %q, %v; want %q", nss, err, wantNS)
		}
		if one, err := s.ListNamespace(ctx, "pulsar/us-west/ns1"); err != nil || !slices.Equal(one, []string{"pulsar/us-west/ns1/persistent/legacy"}) {
			t.Errorf("ListNamespace(v1) = %q, %v", one, err)
		}
		if none, err := s.ListNamespace(ctx, "empty-tenant/ns-without-topics"); err != nil || len(none) != 0 {
			t.Errorf("namespace without topics: %q, %v", none, err)
		}
		res, err := s.GetMany(ctx, got, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Errorf("%s: %v", r.Name, r.Err)
				continue
			}
			want, _, _ := mledger.Decode(mls[r.Name], mledger.Limits{})
			if !proto.Equal(r.Snapshot.Info, want) || r.Snapshot.StoredBytes != len(mls[r.Name]) {
				t.Errorf("%s: read %v", r.Name, r.Snapshot.Info)
			}
		}
		if _, err := s.Get(ctx, "public/default/persistent/nope"); !errors.Is(err, mledger.ErrNotFound) {
			t.Errorf("missing: %v", err)
		}
		if _, err := s.CompleteOffload(ctx, "public/default/persistent/new", 1, uuid.New()); !errors.Is(err, mledger.ErrLedgerNotFound) {
			t.Errorf("empty ML: %v", err)
		}
	})

	t.Run("update keeps codec choice and other fields", func(t *testing.T) {
		for _, ml := range []string{"public/default/persistent/zstd", "public/default/persistent/orders-partition-1"} {
			before, _ := readInfo(t, admin, ml)
			id := before.LedgerInfo[1].GetLedgerId()
			if _, _, err := s.PrepareOffload(ctx, ml, id, uuid.New(), drv); err != nil {
				t.Fatal(err)
			}
			data, _, _ := admin.Get(mledger.Path(ml))
			if data[0] == 0x47 {
				t.Errorf("%s: default options wrote compressed", ml)
			}
			after, _ := readInfo(t, admin, ml)
			before.LedgerInfo[1].OffloadContext = after.LedgerInfo[1].OffloadContext
			if !proto.Equal(before, after) {
				t.Errorf("%s: other fields changed", ml)
			}
		}
	})

	t.Run("CAS with a writer bumping the version mid-update", func(t *testing.T) {
		const ml = "public/default/persistent/plain"
		other := connect(t, z) // a second client, like a broker
		var once sync.Once
		id := uuid.New()
		res, err := s.UpdateOffloadContext(ctx, ml, 2, func(oc *mlproto.OffloadContext, li *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
			once.Do(func() {
				// The broker rolls over between our read and our write.
				data, st, err := other.Get(mledger.Path(ml))
				if err != nil {
					t.Error(err)
					return
				}
				info, _, _ := mledger.Decode(data, mledger.Limits{})
				last := info.LedgerInfo[len(info.LedgerInfo)-1]
				last.Entries, last.Size, last.Timestamp = proto.Int64(5), proto.Int64(500), proto.Int64(1_700_000_900_000)
				info.LedgerInfo = append(info.LedgerInfo, &mlproto.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(last.GetLedgerId() + 1), Timestamp: proto.Int64(0)})
				if _, err := other.Set(mledger.Path(ml), encode(t, info, mlproto.CompressionType_NONE), st.Version); err != nil {
					t.Error(err)
				}
			})
			msb, lsb := mledger.UUIDToBits(id)
			oc.UidMsb, oc.UidLsb = proto.Int64(msb), proto.Int64(lsb)
			return true, nil
		})
		if err != nil || res.Retries != 1 || !res.Written {
			t.Fatalf("update: %+v, %v", res, err)
		}
		info, v := readInfo(t, admin, ml)
		if v != res.Version || len(info.LedgerInfo) != 5 {
			t.Fatalf("version %d (result %d), %d ledgers: the concurrent rollover was lost", v, res.Version, len(info.LedgerInfo))
		}
		if got, _ := mledger.AttemptUUID(info.LedgerInfo[1].OffloadContext); got != id {
			t.Fatalf("our change was lost: %v", info.LedgerInfo[1].OffloadContext)
		}
	})

	t.Run("concurrent stores on separate sessions", func(t *testing.T) {
		const ml = "public/default/persistent/many"
		const n = 8
		create(t, admin, mledger.Path(ml), encode(t, brokerInfo(100, n+1), mlproto.CompressionType_NONE))
		ids := make([]uuid.UUID, n)
		var wg sync.WaitGroup
		for i := range ids {
			ids[i] = uuid.New()
			st := mledger.New(connect(t, z), &mledger.Options{MaxRetries: 50, RetryBackoff: time.Millisecond})
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, err := st.PrepareOffload(ctx, ml, int64(100+i), ids[i], drv); err != nil {
					t.Errorf("writer %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		info, v := readInfo(t, admin, ml)
		if v != n {
			t.Errorf("version %d, want %d writes", v, n)
		}
		for i, id := range ids {
			if got, _ := mledger.AttemptUUID(info.LedgerInfo[i].OffloadContext); got != id {
				t.Errorf("ledger %d: %s, want %s", 100+i, got, id)
			}
		}
	})

	// Session loss: the server crashes between our read and our write.
	// The update fails with a clear error (or, if the write reached the
	// server, succeeds); the node is never half-written, and calling the
	// idempotent helper again converges.
	for _, mode := range []string{"crash", "restart"} {
		t.Run("ZooKeeper "+mode+" mid-update", func(t *testing.T) {
			ml := "public/default/persistent/loss-" + mode
			// Its own admin session: the previous mode's crash may have
			// kept the server down longer than the shared one's 4 s session
			// timeout (then internal/zk ends that session).
			admin := connect(t, z)
			create(t, admin, mledger.Path(ml), encode(t, brokerInfo(200, 4), mlproto.CompressionType_NONE))
			before, _ := readInfo(t, admin, ml)
			sess := z.Session(t, tkzk.Options{SessionTimeout: 4 * time.Second})
			st := mledger.New(sess.Conn, nil)
			id := uuid.New()
			// What bounds the request once the fault is over (whatever the
			// restart itself took, which is the JVM's time, not ours): a
			// request queued while disconnected fails with ErrNoServer after
			// a round of dials (1 s each) that found no server, and is sent
			// on reconnect otherwise; internal/zk closes a session
			// disconnected for longer than its timeout, failing what is
			// queued. Its context is armed only when the fault is over, at
			// twice that bound: reaching it means the request hung.
			bound := sess.SessionTimeout() + 2*time.Second // + a dial and go-zookeeper's 1 s reconnect pause
			uctx, ucancel := context.WithCancel(ctx)
			defer ucancel()
			var once sync.Once
			var faulted time.Time
			_, err := st.UpdateOffloadContext(uctx, ml, 201, func(oc *mlproto.OffloadContext, li *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
				once.Do(func() {
					if mode == "crash" {
						z.Kill()
					} else {
						z.Restart(t)
					}
					faulted = time.Now()
					time.AfterFunc(2*bound, ucancel)
				})
				msb, lsb := mledger.UUIDToBits(id)
				oc.UidMsb, oc.UidLsb = proto.Int64(msb), proto.Int64(lsb)
				md, _ := drv.Metadata()
				oc.DriverMetadata = md
				return true, nil
			})
			if faulted.IsZero() {
				t.Fatalf("the update never ran its edit: %v", err)
			}
			took := time.Since(faulted)
			t.Logf("%s: update returned %s after the fault: %v", mode, took.Round(time.Millisecond), err)
			if uctx.Err() != nil || took > bound {
				t.Errorf("update returned %s after the fault (context ended: %v), want within %s (session timeout %s + a dial + the reconnect pause)",
					took.Round(time.Millisecond), uctx.Err(), bound, sess.SessionTimeout())
			}
			switch {
			case err != nil:
				if !tkzk.Unavailable(err) || !strings.Contains(err.Error(), ml) {
					t.Errorf("want an Unavailable error naming %s, got %v", ml, err)
				}
			case mode == "crash":
				t.Errorf("update succeeded against a crashed server")
			}
			if !z.Running() {
				z.Start(t)
			}
			fresh := connect(t, z)
			mid, _ := readInfo(t, fresh, ml)
			got, had := mledger.AttemptUUID(mid.LedgerInfo[1].OffloadContext)
			switch {
			case had && got != id:
				t.Fatalf("foreign attempt %s", got)
			case err == nil && !had:
				t.Fatalf("update reported written but the node has no attempt")
			case mode == "crash" && had:
				t.Fatalf("the write reached a server killed before it was sent")
			}
			check := proto.Clone(mid).(*mlproto.ManagedLedgerInfo)
			check.LedgerInfo[1].OffloadContext = nil
			if !proto.Equal(check, before) {
				t.Fatalf("node changed beyond the ledger's context:\n%v\n%v", before, mid)
			}
			// Converge: the helper is idempotent whether or not the write landed.
			st2 := mledger.New(fresh, nil)
			if _, _, err := st2.PrepareOffload(ctx, ml, 201, id, drv); err != nil {
				t.Fatalf("retry after restart: %v", err)
			}
			final, _ := readInfo(t, fresh, ml)
			if got, _ := mledger.AttemptUUID(final.LedgerInfo[1].OffloadContext); got != id {
				t.Fatalf("after retry: %v", final.LedgerInfo[1].OffloadContext)
			}
		})
	}
}

// ZooKeeper dies while GetMany reads many managed ledgers: the whole read
// stops at once with an error that says so, instead of failing each
// remaining read after go-zookeeper's 1 s reconnect pause.
func TestGetManyZooKeeperKilled(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	admin := connect(t, z)
	const n = 1500
	data := encode(t, brokerInfo(1, 3), mlproto.CompressionType_NONE)
	testenv.CreatePath(t, admin, mledger.Path("public/default/persistent/t-0"), data)
	var ops []any
	names := []string{"public/default/persistent/t-0"}
	for i := 1; i < n; i++ {
		ml := fmt.Sprintf("public/default/persistent/t-%d", i)
		names = append(names, ml)
		ops = append(ops, &zk.CreateRequest{Path: mledger.Path(ml), Data: data, Acl: zk.WorldACL(zk.PermAll)})
		if len(ops) == 500 || i == n-1 {
			if _, err := admin.Multi(ops...); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	s := mledger.New(connect(t, z), &mledger.Options{ListConcurrency: 8})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if res, err := s.GetMany(ctx, names[:50], nil); err != nil || res[49].Err != nil {
		t.Fatalf("healthy read: %v", err)
	}
	var killed time.Time
	var once sync.Once
	res, err := s.GetMany(ctx, names, func(done int) {
		if done == 100 {
			once.Do(func() { killed = time.Now(); go z.Kill() })
		}
	})
	took := time.Since(killed)
	t.Logf("GetMany returned %s after the kill: %v", took.Round(time.Millisecond), err)
	if killed.IsZero() {
		t.Fatal("progress never reached 100")
	}
	if !tkzk.Unavailable(err) || !strings.Contains(err.Error(), "read managed ledgers") {
		t.Fatalf("want an Unavailable error for the whole read, got %v", err)
	}
	// Old behaviour: each of the ~175 remaining batches of 8 waited ~1 s.
	if took > 5*time.Second {
		t.Errorf("GetMany took %s after the kill, want < 5s", took)
	}
	ok := 0
	for _, r := range res {
		if r.Err == nil && r.Snapshot != nil {
			ok++
		}
	}
	if ok < 100 || ok == n {
		t.Errorf("%d of %d read", ok, n)
	}
	// List stops at once too.
	start := time.Now()
	if _, err := s.List(ctx); !tkzk.Unavailable(err) || time.Since(start) > 5*time.Second {
		t.Errorf("List on a dead server: %v after %s", err, time.Since(start))
	}
}
