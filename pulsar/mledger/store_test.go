package mledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

const testML = "public/default/persistent/orders-partition-0"

var (
	uuidA = uuid.MustParse("123e4567-e89b-12d3-a456-426614174000")
	uuidB = uuid.MustParse("f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
	s3drv = Driver{Name: "aws-s3", Bucket: "offload", Region: "", ServiceEndpoint: "http://127.0.0.1:9000"}
)

func newTestStore(t *testing.T, info *mlproto.ManagedLedgerInfo, opts *Options) (*Store, *fakeZK) {
	t.Helper()
	f := newFakeZK()
	f.put(Path(testML), mustMarshal(info))
	if opts == nil {
		opts = &Options{}
	}
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = time.Millisecond
	}
	return New(f, opts), f
}

// stored decodes the node as it is now.
func stored(t *testing.T, f *fakeZK, ml string) (*mlproto.ManagedLedgerInfo, int32) {
	t.Helper()
	data, v := f.raw(Path(ml))
	info, _, err := Decode(data, Limits{})
	if err != nil {
		t.Fatalf("stored value does not decode: %v", err)
	}
	return info, v
}

// assertOnlyContextChanged checks that after differs from before only in
// the OffloadContext of ledger id.
func assertOnlyContextChanged(t *testing.T, before, after *mlproto.ManagedLedgerInfo, id int64) {
	t.Helper()
	b := proto.Clone(before).(*mlproto.ManagedLedgerInfo)
	a := proto.Clone(after).(*mlproto.ManagedLedgerInfo)
	for _, m := range []*mlproto.ManagedLedgerInfo{a, b} {
		for _, li := range m.LedgerInfo {
			if li.GetLedgerId() == id {
				li.OffloadContext = nil
			}
		}
	}
	if !proto.Equal(a, b) {
		t.Fatalf("more than ledger %d's offload context changed:\nbefore %v\nafter  %v", id, before, after)
	}
}

func TestUUIDBitsJavaVectors(t *testing.T) {
	// new UUID(msb, lsb) / getMost/LeastSignificantBits in Java.
	for _, v := range []struct {
		u        uuid.UUID
		msb, lsb int64
	}{
		{uuidA, 1314564453825188563, -6605018797301088256},
		{uuidB, -568210367123287600, -6384696206158828554},
		{uuid.Nil, 0, 0},
	} {
		msb, lsb := UUIDToBits(v.u)
		if msb != v.msb || lsb != v.lsb {
			t.Errorf("UUIDToBits(%s) = %d, %d; want %d, %d", v.u, msb, lsb, v.msb, v.lsb)
		}
		if got := UUIDFromBits(v.msb, v.lsb); got != v.u {
			t.Errorf("UUIDFromBits(%d, %d) = %s", v.msb, v.lsb, got)
		}
	}
	// A negative half is a 10-byte varint on the wire (int64, not sint64).
	b := mustMarshal(&mlproto.OffloadContext{UidMsb: proto.Int64(-568210367123287600)})
	if len(b) != 11 || b[0] != 0x08 {
		t.Errorf("uidMsb wire form = % x", b)
	}
}

func TestDriverMetadataExact(t *testing.T) {
	md, err := Driver{Name: "aws-s3", Bucket: "bkt", ServiceEndpoint: "http://e"}.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"managedLedgerOffloadDriver=AWS_S3", "bucket=bkt", "region=", "serviceEndpoint=http://e"}
	var got []string
	for _, kv := range md.Properties {
		got = append(got, kv.GetKey()+"="+kv.GetValue())
	}
	if md.GetName() != "aws-s3" || !slices.Equal(got, want) {
		t.Errorf("metadata = %s %v, want aws-s3 %v", md.GetName(), got, want)
	}
	for name, enum := range map[string]string{
		"aws-s3": "AWS_S3", "AWS-S3": "AWS_S3", "google-cloud-storage": "GOOGLE_CLOUD_STORAGE",
		"azureblob": "AZURE_BLOB", "aliyun-oss": "ALIYUN_OSS", "transient": "TRANSIENT", "S3": "S3",
	} {
		md, err := Driver{Name: name}.Metadata()
		if err != nil || md.Properties[0].GetValue() != enum || md.GetName() != name {
			t.Errorf("%s: %v, %v; want %s", name, md, err, enum)
		}
	}
	if _, err := (Driver{Name: "cos"}).Metadata(); !errors.Is(err, ErrUnknownDriver) {
		t.Errorf("unknown driver: %v", err)
	}
	md, err = Driver{Name: "cos", Provider: "TENCENT_COS", Bucket: "b"}.Metadata()
	if err != nil || md.Properties[0].GetValue() != "TENCENT_COS" {
		t.Errorf("explicit provider: %v, %v", md, err)
	}
	if d := DriverFromMetadata(md); d != (Driver{Name: "cos", Provider: "TENCENT_COS", Bucket: "b"}) {
		t.Errorf("DriverFromMetadata = %+v", d)
	}
}

func TestOffloadLifecycle(t *testing.T) {
	orig := sampleInfo(10, 5) // ledgers 10..14; 10 offloaded already; 14 open
	now := time.UnixMilli(1_800_000_000_123)
	reg := prometheus.NewRegistry()
	s, f := newTestStore(t, orig, &Options{Now: func() time.Time { return now }, Registerer: reg})
	ctx := context.Background()

	prev, res, err := s.PrepareOffload(ctx, testML, 12, uuidA, s3drv)
	if err != nil || !res.Written || prev != uuid.Nil || res.Before != nil {
		t.Fatalf("prepare: prev %s, %+v, %v", prev, res, err)
	}
	after, v1 := stored(t, f, testML)
	assertOnlyContextChanged(t, orig, after, 12)
	oc := after.LedgerInfo[2].OffloadContext
	if got, ok := AttemptUUID(oc); !ok || got != uuidA || oc.Complete != nil || oc.Timestamp != nil || oc.BookkeeperDeleted != nil {
		t.Fatalf("after prepare: %v", oc)
	}
	wantMD, _ := s3drv.Metadata()
	if !proto.Equal(oc.DriverMetadata, wantMD) {
		t.Fatalf("driver metadata = %v", oc.DriverMetadata)
	}

	// Idempotent: same attempt again writes nothing.
	if prev, res, err := s.PrepareOffload(ctx, testML, 12, uuidA, s3drv); err != nil || res.Written || prev != uuid.Nil {
		t.Fatalf("prepare again: %s %+v %v", prev, res, err)
	}
	// Mark before complete is refused; complete with another attempt conflicts.
	if _, err := s.MarkBookkeeperDeleted(ctx, testML, 12, uuidA); !errors.Is(err, ErrNotOffloaded) {
		t.Fatalf("mark before complete: %v", err)
	}
	if _, err := s.CompleteOffload(ctx, testML, 12, uuidB); !errors.Is(err, ErrOffloadConflict) {
		t.Fatalf("complete with other uuid: %v", err)
	}
	if _, err := s.CompleteOffload(ctx, testML, 11, uuidA); !errors.Is(err, ErrOffloadConflict) {
		t.Fatalf("complete of a ledger without attempt: %v", err)
	}
	if _, v := f.raw(Path(testML)); v != v1 {
		t.Fatalf("a refused update wrote (version %d → %d)", v1, v)
	}

	res, err = s.CompleteOffload(ctx, testML, 12, uuidA)
	if err != nil || !res.Written {
		t.Fatalf("complete: %+v %v", res, err)
	}
	after2, _ := stored(t, f, testML)
	assertOnlyContextChanged(t, after, after2, 12)
	oc = after2.LedgerInfo[2].OffloadContext
	if !oc.GetComplete() || oc.GetTimestamp() != now.UnixMilli() || oc.BookkeeperDeleted != nil || !proto.Equal(oc.DriverMetadata, wantMD) {
		t.Fatalf("after complete: %v", oc)
	}
	now = now.Add(time.Hour)
	if res, err := s.CompleteOffload(ctx, testML, 12, uuidA); err != nil || res.Written {
		t.Fatalf("complete again: %+v %v", res, err)
	}
	if _, _, err := s.PrepareOffload(ctx, testML, 12, uuidB, s3drv); !errors.Is(err, ErrAlreadyOffloaded) {
		t.Fatalf("prepare of an offloaded ledger: %v", err)
	}
	if _, err := s.MarkBookkeeperDeleted(ctx, testML, 12, uuidB); !errors.Is(err, ErrOffloadConflict) {
		t.Fatalf("mark with other uuid: %v", err)
	}
	if res, err := s.MarkBookkeeperDeleted(ctx, testML, 12, uuidA); err != nil || !res.Written {
		t.Fatalf("mark: %+v %v", res, err)
	}
	if res, err := s.MarkBookkeeperDeleted(ctx, testML, 12, uuidA); err != nil || res.Written {
		t.Fatalf("mark again: %+v %v", res, err)
	}
	final, _ := stored(t, f, testML)
	assertOnlyContextChanged(t, orig, final, 12)
	oc = final.LedgerInfo[2].OffloadContext
	if !oc.GetBookkeeperDeleted() || oc.GetTimestamp() != now.Add(-time.Hour).UnixMilli() {
		t.Fatalf("final: %v", oc)
	}
	if got := States(final); !slices.Equal(got, []LedgerState{StateOffloaded, StateBookKeeper, StateOffloadedBKDeleted, StateBookKeeper, StateOpen}) {
		t.Errorf("States = %v", got)
	}
	for res, want := range map[string]float64{"written": 3, "unchanged": 3, "rejected": 5} {
		if got := testutil.ToFloat64(s.updates.WithLabelValues(res)); got != want {
			t.Errorf("updates{result=%s} = %v, want %v", res, got, want)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "tierkeeper_mlmeta_updates_total", "tierkeeper_mlmeta_cas_retries_total"); err != nil || n != 5 {
		t.Errorf("registered series: %d, %v", n, err)
	}
}

func TestPrepareReplacesStaleAttempt(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(1, 4), nil)
	ctx := context.Background()
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, s3drv); err != nil {
		t.Fatal(err)
	}
	other := Driver{Name: "S3", Bucket: "other", ServiceEndpoint: "http://x"}
	prev, res, err := s.PrepareOffload(ctx, testML, 2, uuidB, other)
	if err != nil || prev != uuidA || !res.Written {
		t.Fatalf("second attempt: prev %s, %+v, %v", prev, res, err)
	}
	info, _ := stored(t, f, testML)
	oc := info.LedgerInfo[1].OffloadContext
	if got, _ := AttemptUUID(oc); got != uuidB || DriverFromMetadata(oc.DriverMetadata).Bucket != "other" {
		t.Fatalf("after second attempt: %v", oc)
	}
	// Same attempt, new location: rewritten, no previous attempt reported.
	prev, res, err = s.PrepareOffload(ctx, testML, 2, uuidB, s3drv)
	if err != nil || prev != uuid.Nil || !res.Written {
		t.Fatalf("same attempt new driver: prev %s, %+v, %v", prev, res, err)
	}
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuid.Nil, s3drv); err == nil {
		t.Fatal("nil UUID accepted")
	}
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, Driver{Name: "nope"}); !errors.Is(err, ErrUnknownDriver) {
		t.Fatalf("unknown driver: %v", err)
	}
}

// AbandonOffload restores the context that was there before the prepare,
// byte for byte (a ledger that had none gets none, not an empty one), and
// touches nothing once another attempt or a commit is stored.
func TestAbandonOffloadRestores(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(1, 4), nil)
	ctx := context.Background()
	orig := f.nodes[Path(testML)].data
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, s3drv); err != nil {
		t.Fatal(err)
	}
	if w, err := s.AbandonOffload(ctx, testML, 2, uuidB, nil); err != nil || w {
		t.Fatalf("abandon of another attempt: wrote %v, %v", w, err)
	}
	if w, err := s.AbandonOffload(ctx, testML, 2, uuidA, nil); err != nil || !w {
		t.Fatalf("abandon: wrote %v, %v", w, err)
	}
	if got := f.nodes[Path(testML)].data; !bytes.Equal(got, orig) {
		t.Fatalf("abandon did not restore the node: %x vs %x", got, orig)
	}
	// A ledger with an earlier attempt does not get that attempt back
	// (TestAbandonNeverResurrectsAReplacedAttempt): its context goes.
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, s3drv); err != nil {
		t.Fatal(err)
	}
	info, _ := stored(t, f, testML)
	before := proto.Clone(info.LedgerInfo[1].OffloadContext).(*mlproto.OffloadContext)
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidB, s3drv); err != nil {
		t.Fatal(err)
	}
	if w, err := s.AbandonOffload(ctx, testML, 2, uuidB, before); err != nil || !w {
		t.Fatalf("abandon B: %v %v", w, err)
	}
	if got := f.nodes[Path(testML)].data; !bytes.Equal(got, orig) {
		t.Fatalf("abandon of B did not leave the ledger without a context: %x vs %x", got, orig)
	}
	// Complete: never undone.
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, s3drv); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteOffload(ctx, testML, 2, uuidA); err != nil {
		t.Fatal(err)
	}
	if w, err := s.AbandonOffload(ctx, testML, 2, uuidA, nil); err != nil || w {
		t.Fatalf("abandon of a complete offload: %v %v", w, err)
	}
}

func TestRefusals(t *testing.T) {
	info := sampleInfo(1, 4)
	info.LedgerInfo[1].Entries = proto.Int64(0) // ledger 2: empty
	s, f := newTestStore(t, info, nil)
	ctx := context.Background()
	_, v0 := f.raw(Path(testML))
	for _, c := range []struct {
		ledger int64
		want   error
	}{
		{4, ErrLastLedger},
		{2, ErrEmptyLedger},
		{99, ErrLedgerNotFound},
	} {
		if _, _, err := s.PrepareOffload(ctx, testML, c.ledger, uuidA, s3drv); !errors.Is(err, c.want) {
			t.Errorf("ledger %d: %v, want %v", c.ledger, err, c.want)
		}
	}
	// The ledger with the highest id is refused even where it is not listed last.
	unsorted := sampleInfo(1, 4)
	unsorted.LedgerInfo[1], unsorted.LedgerInfo[3] = unsorted.LedgerInfo[3], unsorted.LedgerInfo[1]
	f.put(Path("t/ns/persistent/unsorted"), mustMarshal(unsorted))
	if _, err := s.UpdateOffloadContext(ctx, "t/ns/persistent/unsorted", 4, func(*mlproto.OffloadContext, *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
		return true, nil
	}); !errors.Is(err, ErrLastLedger) {
		t.Errorf("highest id: %v", err)
	}
	if _, err := s.CompleteOffload(ctx, "t/ns/persistent/missing", 1, uuidA); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing ML: %v", err)
	}
	f.put(Path("t/ns/persistent/single"), mustMarshal(sampleInfo(1, 1)))
	if _, _, err := s.PrepareOffload(ctx, "t/ns/persistent/single", 1, uuidA, s3drv); !errors.Is(err, ErrLastLedger) {
		t.Errorf("only ledger: %v", err)
	}
	f.put(Path("t/ns/persistent/corrupt"), []byte{0x47, 0x78, 0, 0})
	if _, _, err := s.PrepareOffload(ctx, "t/ns/persistent/corrupt", 1, uuidA, s3drv); !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupt: %v", err)
	}
	if _, v := f.raw(Path(testML)); v != v0 || f.sets != 0 {
		t.Errorf("refused updates wrote: version %d → %d, %d sets", v0, v, f.sets)
	}
}

// Two writers: another writer changes the node between our read and our
// compare-and-set. We lose the race, re-read, re-apply, and both changes
// survive.
func TestCASLostRaceReapplies(t *testing.T) {
	orig := sampleInfo(1, 5)
	s, f := newTestStore(t, orig, nil)
	other := New(f, &Options{RetryBackoff: time.Millisecond})
	ctx := context.Background()
	loseOneRace(t, f, other, 6, 2)
	_, res, err := s.PrepareOffload(ctx, testML, 3, uuidA, s3drv)
	if err != nil || !res.Written || res.Retries != 1 {
		t.Fatalf("prepare: %+v %v", res, err)
	}
	info, v := stored(t, f, testML)
	if v != 3 || len(info.LedgerInfo) != 6 {
		t.Fatalf("version %d, %d ledgers", v, len(info.LedgerInfo))
	}
	for id, want := range map[int64]uuid.UUID{2: uuidB, 3: uuidA} {
		if got, _ := AttemptUUID(info.LedgerInfo[id-1].OffloadContext); got != want {
			t.Errorf("ledger %d attempt %s, want %s", id, got, want)
		}
	}
	if testutil.ToFloat64(s.retries) != 1 {
		t.Errorf("retries metric = %v", testutil.ToFloat64(s.retries))
	}
}

// loseOneRace makes the next compare-and-set lose a race: just before it
// the broker rolls over (the last ledger closed, ledger newID appended)
// and other prepares ledger take with uuidB.
func loseOneRace(t *testing.T, f *fakeZK, other *Store, newID, take int64) {
	t.Helper()
	var once sync.Once
	f.beforeSet = func(string, int32) {
		once.Do(func() {
			f.beforeSet = nil
			info, _ := stored(t, f, testML)
			last := info.LedgerInfo[len(info.LedgerInfo)-1]
			last.Entries, last.Size, last.Timestamp = proto.Int64(3), proto.Int64(30), proto.Int64(1)
			info.LedgerInfo = append(info.LedgerInfo, &mlproto.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(newID), Timestamp: proto.Int64(0)})
			f.put(Path(testML), mustMarshal(info))
			if _, _, err := other.PrepareOffload(context.Background(), testML, take, uuidB, s3drv); err != nil {
				t.Errorf("other writer: %v", err)
			}
		})
	}
}

// The other writer's change makes ours invalid: the re-applied mutator sees
// it and refuses (conflict sentinel), and nothing of ours is written.
func TestCASRaceTurnsIntoConflict(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(1, 4), nil)
	other := New(f, nil)
	ctx := context.Background()
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, s3drv); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	f.beforeSet = func(string, int32) {
		once.Do(func() {
			f.beforeSet = nil
			if _, _, err := other.PrepareOffload(ctx, testML, 2, uuidB, s3drv); err != nil {
				t.Errorf("other: %v", err)
			}
		})
	}
	if _, err := s.CompleteOffload(ctx, testML, 2, uuidA); !errors.Is(err, ErrOffloadConflict) {
		t.Fatalf("complete after takeover: %v", err)
	}
	info, _ := stored(t, f, testML)
	if oc := info.LedgerInfo[1].OffloadContext; oc.GetComplete() {
		t.Fatalf("completed someone else's attempt: %v", oc)
	}
}

// A batch: ledgers 2..4 prepared in one write, then completed in one write
// that also meets a lost race (the broker rolls over, another offloader
// takes ledger 3 over): the retry re-applies every edit to the fresh value,
// ledger 3's edit is refused as a conflict (the other attempt is kept),
// ledgers 2 and 4 complete in the same single write, and the rollover
// survives. The last ledger and an offloaded one are refused without
// stopping the others.
func TestBatchUpdate(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(1, 6), nil)
	other := New(f, &Options{RetryBackoff: time.Millisecond})
	ctx := context.Background()
	ids := map[int64]uuid.UUID{2: uuid.New(), 3: uuidA, 4: uuid.New()}
	var edits []Edit
	for _, id := range []int64{2, 3, 4, 6, 1} {
		u := ids[id]
		if u == uuid.Nil {
			u = uuid.New()
		}
		e, err := PrepareEdit(id, u, s3drv)
		if err != nil {
			t.Fatal(err)
		}
		edits = append(edits, e)
	}
	_, v0 := stored(t, f, testML)
	br, err := s.UpdateOffloadContexts(ctx, testML, edits)
	if err != nil || !br.Written || br.Version != v0+1 || len(br.Ledgers) != 5 {
		t.Fatalf("prepare batch: %+v %v", br, err)
	}
	if !errors.Is(br.Ledgers[3].Err, ErrLastLedger) || br.Ledgers[3].Changed || !errors.Is(br.Ledgers[4].Err, ErrAlreadyOffloaded) {
		t.Fatalf("refused ledgers: %+v", br.Ledgers[3:])
	}
	for _, lu := range br.Ledgers[:3] {
		if lu.Err != nil || !lu.Changed || lu.Before != nil {
			t.Fatalf("ledger %d: %+v", lu.LedgerID, lu)
		}
	}
	loseOneRace(t, f, other, 7, 3)
	sets := f.sets
	br, err = s.UpdateOffloadContexts(ctx, testML, []Edit{s.CompleteEdit(2, ids[2]), s.CompleteEdit(3, ids[3]), s.CompleteEdit(4, ids[4])})
	if err != nil || !br.Written || br.Retries != 1 || f.sets-sets != 3 { // ours lost, the other's, ours
		t.Fatalf("complete batch: %+v %v (%d sets)", br, err, f.sets-sets)
	}
	if !errors.Is(br.Ledgers[1].Err, ErrOffloadConflict) || br.Ledgers[0].Err != nil || br.Ledgers[2].Err != nil {
		t.Fatalf("complete batch outcomes: %+v", br.Ledgers)
	}
	info, _ := stored(t, f, testML)
	if len(info.LedgerInfo) != 7 {
		t.Fatalf("the rollover was lost: %d ledgers", len(info.LedgerInfo))
	}
	for i, want := range []struct {
		id       uuid.UUID
		complete bool
	}{{ids[2], true}, {uuidB, false}, {ids[4], true}} {
		oc := info.LedgerInfo[i+1].OffloadContext
		if got, _ := AttemptUUID(oc); got != want.id || oc.GetComplete() != want.complete {
			t.Errorf("ledger %d: %v", i+2, oc)
		}
	}
	if _, err := s.UpdateOffloadContexts(ctx, testML, []Edit{s.CompleteEdit(2, ids[2]), s.CompleteEdit(2, ids[2])}); err == nil {
		t.Fatal("a ledger edited twice in one batch was accepted")
	}
	// Nothing to change: no write.
	sets = f.sets
	if br, err := s.UpdateOffloadContexts(ctx, testML, []Edit{s.CompleteEdit(2, ids[2]), MarkBookkeeperDeletedEdit(3, uuidB)}); err != nil || br.Written ||
		f.sets != sets || !errors.Is(br.Ledgers[1].Err, ErrNotOffloaded) {
		t.Fatalf("no-op batch: %+v %v", br, err)
	}
}

func TestCASContentionBounded(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(1, 4), &Options{MaxRetries: 5})
	f.beforeSet = func(path string, _ int32) {
		data, _ := f.raw(path)
		f.put(path, data) // bump the version every time
	}
	start := time.Now()
	_, _, err := s.PrepareOffload(context.Background(), testML, 2, uuidA, s3drv)
	if !errors.Is(err, ErrContention) {
		t.Fatalf("err = %v, want ErrContention", err)
	}
	if f.sets != 6 || time.Since(start) > 5*time.Second {
		t.Errorf("%d sets in %s", f.sets, time.Since(start))
	}
	info, _ := stored(t, f, testML)
	if info.LedgerInfo[1].OffloadContext != nil {
		t.Errorf("lost race still wrote: %v", info.LedgerInfo[1].OffloadContext)
	}
}

// Many goroutines update different ledgers of one managed ledger at once;
// every change survives.
func TestCASConcurrentWriters(t *testing.T) {
	const n = 12
	s, f := newTestStore(t, sampleInfo(1, n+2), &Options{MaxRetries: 100}) // ledger 1 is offloaded already
	ctx := context.Background()
	var wg sync.WaitGroup
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := s.PrepareOffload(ctx, testML, int64(i+2), ids[i], s3drv); err != nil {
				t.Errorf("ledger %d: %v", i+2, err)
			}
		}()
	}
	wg.Wait()
	info, v := stored(t, f, testML)
	if v != n {
		t.Errorf("version %d, want %d", v, n)
	}
	for i := range ids {
		if got, _ := AttemptUUID(info.LedgerInfo[i+1].OffloadContext); got != ids[i] {
			t.Errorf("ledger %d: attempt %s, want %s", i+2, got, ids[i])
		}
	}
}

func TestUpdateKeepsUnknownFields(t *testing.T) {
	info := sampleInfo(1, 4)
	addUnknown(info, 99, "ml-level")
	addUnknown(info.LedgerInfo[1], 50, "ledger-level")
	info.LedgerInfo[1].OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(1), UidLsb: proto.Int64(2)}
	addUnknown(info.LedgerInfo[1].OffloadContext, 40, "context-level")
	addUnknown(info.LedgerInfo[2], 51, "other-ledger")
	s, f := newTestStore(t, info, nil)
	_, res, err := s.PrepareOffload(context.Background(), testML, 2, uuidA, s3drv)
	if err != nil || !res.Written {
		t.Fatal(err)
	}
	got, _ := stored(t, f, testML)
	assertOnlyContextChanged(t, info, got, 2)
	oc := got.LedgerInfo[1].OffloadContext
	if string(oc.ProtoReflect().GetUnknown()) != string(info.LedgerInfo[1].OffloadContext.ProtoReflect().GetUnknown()) {
		t.Errorf("unknown field inside the updated context lost")
	}
	for i, m := range []proto.Message{got, got.LedgerInfo[1], got.LedgerInfo[2]} {
		if len(m.ProtoReflect().GetUnknown()) == 0 {
			t.Errorf("message %d lost its unknown field", i)
		}
	}
}

func TestWriteCodecOptions(t *testing.T) {
	ctx := context.Background()
	big := sampleInfo(1, 800)
	for _, c := range []struct {
		name   string
		stored func() []byte
		opts   Options
		want   mlproto.CompressionType
	}{
		{"plain default from zstd", func() []byte { b, _ := Encode(big, EncodeOptions{Codec: mlproto.CompressionType_ZSTD}); return b }, Options{}, mlproto.CompressionType_NONE},
		{"preserve zstd", func() []byte { b, _ := Encode(big, EncodeOptions{Codec: mlproto.CompressionType_ZSTD}); return b }, Options{PreserveCodec: true}, mlproto.CompressionType_ZSTD},
		{"preserve snappy small", func() []byte {
			b, _ := Encode(sampleInfo(1, 4), EncodeOptions{Codec: mlproto.CompressionType_SNAPPY})
			return b
		}, Options{PreserveCodec: true}, mlproto.CompressionType_SNAPPY},
		{"preserve plain", func() []byte { return mustMarshal(big) }, Options{PreserveCodec: true}, mlproto.CompressionType_NONE},
		{"lz4 over threshold", func() []byte { return mustMarshal(big) }, Options{WriteCodec: mlproto.CompressionType_LZ4}, mlproto.CompressionType_LZ4},
		{"lz4 under threshold", func() []byte { return mustMarshal(sampleInfo(1, 4)) }, Options{WriteCodec: mlproto.CompressionType_LZ4}, mlproto.CompressionType_NONE},
		{"zlib always", func() []byte { return mustMarshal(sampleInfo(1, 4)) }, Options{WriteCodec: mlproto.CompressionType_ZLIB, CompressThresholdBytes: -1}, mlproto.CompressionType_ZLIB},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeZK()
			f.put(Path(testML), c.stored())
			before, _, err := Decode(c.stored(), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			s := New(f, &c.opts)
			if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, s3drv); err != nil {
				t.Fatal(err)
			}
			data, _ := f.raw(Path(testML))
			after, codec, err := Decode(data, Limits{})
			if err != nil || codec != c.want {
				t.Fatalf("stored codec %s, %v; want %s", codec, err, c.want)
			}
			assertOnlyContextChanged(t, before, after, 2)
		})
	}
}

// A value that only fits ZooKeeper compressed stays compressed; one that
// fits in no form is refused before anything is sent.
func TestMaxValueBytes(t *testing.T) {
	ctx := context.Background()
	big := sampleInfo(1, 300)
	plain := len(mustMarshal(big))
	zs, err := Encode(big, EncodeOptions{Codec: mlproto.CompressionType_ZSTD})
	if err != nil || len(zs) >= plain/2 {
		t.Fatalf("zstd %d bytes of %d: %v", len(zs), plain, err)
	}
	opts := &Options{MaxValueBytes: plain - 10}
	f := newFakeZK()
	f.put(Path(testML), zs)
	s := New(f, opts)
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, s3drv); err != nil {
		t.Fatal(err)
	}
	data, _ := f.raw(Path(testML))
	if _, codec, err := Decode(data, Limits{}); err != nil || codec != mlproto.CompressionType_ZSTD {
		t.Fatalf("stored %s, %v; want ZSTD kept", codec, err)
	}
	f.put(Path(testML), mustMarshal(big))
	sets := f.sets
	if _, _, err := s.PrepareOffload(ctx, testML, 3, uuidA, s3drv); !errors.Is(err, ErrTooLarge) || f.sets != sets {
		t.Fatalf("plain too big: %v (%d sets)", err, f.sets-sets)
	}
}

func TestListWalk(t *testing.T) {
	f := newFakeZK()
	info := mustMarshal(sampleInfo(1, 3))
	for _, p := range []string{
		"public/default/persistent/t1",
		"public/default/persistent/t1/sub-1", // cursor
		"public/default/persistent/t1/sub-2", // cursor
		"public/default/persistent/a%2Fb",
		"public/default/persistent/orders-partition-0",
		"public/default/persistent/orders-partition-1",
		"pulsar/us-west/ns1/persistent/legacy",    // v1
		"pulsar/us-west/ns1/persistent/legacy/c1", // v1 cursor
		"pulsar/us-west/ns2/persistent/x+y",       // v1
		"t2/ns/persistent/z",
	} {
		f.put(Path(p), info)
	}
	f.put(Root+"/t3/empty-ns", nil) // namespace node without topics
	f.put(Root+"/t4", nil)          // tenant without namespaces
	f.put(Root+"/t5/ns/persistent", nil)
	s := New(f, nil)
	got, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"public/default/persistent/a%2Fb",
		"public/default/persistent/orders-partition-0",
		"public/default/persistent/orders-partition-1",
		"public/default/persistent/t1",
		"pulsar/us-west/ns1/persistent/legacy",
		"pulsar/us-west/ns2/persistent/x+y",
		"t2/ns/persistent/z",
	}
	if !slices.Equal(got, want) {
		t.Errorf("List =\n%q\nwant\n%q", got, want)
	}
	nss, err := s.ListNamespaces(context.Background())
	if wantNS := []string{"public/default", "pulsar/us-west/ns1", "pulsar/us-west/ns2", "t2/ns", "t5/ns"}; err != nil || !slices.Equal(nss, wantNS) {
		t.Errorf("ListNamespaces = %q, %v; want %q", nss, err, wantNS)
	}
	one, err := s.ListNamespace(context.Background(), "pulsar/us-west/ns1")
	if err != nil || !slices.Equal(one, []string{"pulsar/us-west/ns1/persistent/legacy"}) {
		t.Errorf("ListNamespace = %q, %v", one, err)
	}
	if none, err := s.ListNamespace(context.Background(), "t3/empty-ns"); err != nil || len(none) != 0 {
		t.Errorf("empty namespace: %q, %v", none, err)
	}
	if _, err := s.ListNamespace(context.Background(), "bad"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("bad namespace: %v", err)
	}
	// Every listed name parses and reads.
	res, err := s.GetMany(context.Background(), got, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil || len(r.Snapshot.Info.LedgerInfo) != 3 {
			t.Errorf("%s: %v", r.Name, r.Err)
		}
		if _, err := ParseMLName(r.Name); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
	}
	// An empty store lists nothing.
	if got, err := New(newFakeZK(), nil).List(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("empty store: %q, %v", got, err)
	}
}

func TestChroot(t *testing.T) {
	f := newFakeZK()
	f.put("/pulsar"+Path(testML), mustMarshal(sampleInfo(1, 3)))
	s := New(f, &Options{Chroot: "/pulsar/"})
	names, err := s.List(context.Background())
	if err != nil || !slices.Equal(names, []string{testML}) {
		t.Fatalf("List = %q, %v", names, err)
	}
	if _, _, err := s.PrepareOffload(context.Background(), testML, 2, uuidA, s3drv); err != nil {
		t.Fatal(err)
	}
	if _, v := f.raw("/pulsar" + Path(testML)); v != 1 {
		t.Errorf("version %d", v)
	}
}

func TestContextCancelledDuringZKCall(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(1, 3), nil)
	release := make(chan struct{})
	f.getHook = func(string) error { <-release; return nil }
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := s.PrepareOffload(ctx, testML, 1, uuidA, s3drv)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

func TestZKErrorsWrapped(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(1, 3), nil)
	boom := errors.New("zk: connection closed (test)")
	f.getHook = func(string) error { return boom }
	_, err := s.Get(context.Background(), testML)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if want := fmt.Sprintf("read %s: %v", Path(testML), boom); err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if _, err := s.Get(context.Background(), "/abs"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("bad name: %v", err)
	}
}

// A ZooKeeper that stops answering (go-zookeeper: ErrNoServer after each
// failed reconnect round, about 1 s apart) ends GetMany at the first such
// answer; no read is started after it.
func TestGetManyStopsWhenZooKeeperIsGone(t *testing.T) {
	f := newFakeZK()
	var names []string
	for i := range 400 {
		ml := fmt.Sprintf("public/default/persistent/t-%03d", i)
		f.put(Path(ml), mustMarshal(sampleInfo(1, 3)))
		names = append(names, ml)
	}
	var gets atomic.Int32
	f.getHook = func(string) error {
		if gets.Add(1) > 20 {
			time.Sleep(50 * time.Millisecond) // a slow failure, as go-zookeeper's
			return zk.ErrNoServer
		}
		return nil
	}
	s := New(f, &Options{ListConcurrency: 4})
	start := time.Now()
	res, err := s.GetMany(context.Background(), names, nil)
	if !errors.Is(err, zk.ErrNoServer) || !strings.Contains(err.Error(), "stopped after 20 of 400") {
		t.Fatalf("GetMany = %v", err)
	}
	if n := gets.Load(); n > 20+4 {
		t.Errorf("%d reads started, want at most 20 + the 4 in flight", n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	read := 0
	for _, r := range res {
		switch {
		case r.Snapshot != nil && r.Err == nil:
			read++
		case r.Snapshot == nil && (errors.Is(r.Err, zk.ErrNoServer) || errors.Is(r.Err, context.Canceled) || r.Name == ""):
		default:
			t.Errorf("%s: %v %v", r.Name, r.Snapshot, r.Err)
		}
	}
	if read == 0 || read > 20 {
		t.Errorf("%d reads kept, want 1..20", read)
	}
	// Per-ledger answers do not stop it.
	f.getHook = func(p string) error {
		if strings.HasSuffix(p, "-007") {
			return zk.ErrNoNode
		}
		return nil
	}
	res, err = s.GetMany(context.Background(), names, nil)
	if err != nil || !errors.Is(res[7].Err, ErrNotFound) || res[8].Err != nil {
		t.Errorf("per-ledger error: %v, %v", err, res[7].Err)
	}
}

// Several stores on one registry (the service makes one per session) do
// not fail or panic, and count into the same series.
func TestStoresShareRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a, _ := newTestStore(t, sampleInfo(1, 4), &Options{Registerer: reg})
	b, _ := newTestStore(t, sampleInfo(1, 4), &Options{Registerer: reg})
	for _, s := range []*Store{a, b} {
		if _, _, err := s.PrepareOffload(context.Background(), testML, 2, uuidA, s3drv); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(a.updates.WithLabelValues("written")); got != 2 {
		t.Errorf("written = %v, want 2 (one per store)", got)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// An abandoned attempt never brings back the attempt its prepare replaced:
// that prepare's writer deleted the replaced attempt's objects, so if the
// replaced attempt's own writer then commits, it must meet a conflict, not
// a context that names it again (complete, with its objects gone). Keeps
// the fields of the earlier context that are not the attempt's. Before the
// fix AbandonEdit restored the context read at select time, uuidA and all,
// and the late CompleteOffload of uuidA succeeded.
func TestAbandonNeverResurrectsAReplacedAttempt(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(1, 4), nil)
	ctx := context.Background()
	// Writer 1 prepared uuidA (and uploads).
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, s3drv); err != nil {
		t.Fatal(err)
	}
	info, _ := stored(t, f, testML)
	before := proto.Clone(info.LedgerInfo[1].OffloadContext).(*mlproto.OffloadContext)
	before.Timestamp = proto.Int64(1234) // a field that is not the attempt's
	// Writer 2 replaces uuidA by uuidB (and removes uuidA's objects), then
	// its copy fails without writing: it abandons uuidB.
	prev, _, err := s.PrepareOffload(ctx, testML, 2, uuidB, s3drv)
	if err != nil || prev != uuidA {
		t.Fatalf("prepare B: superseded %v, %v", prev, err)
	}
	if w, err := s.AbandonOffload(ctx, testML, 2, uuidB, before); err != nil || !w {
		t.Fatalf("abandon B: %v %v", w, err)
	}
	info, _ = stored(t, f, testML)
	oc := info.LedgerInfo[1].OffloadContext
	if id, has := AttemptUUID(oc); has {
		t.Fatalf("abandon of B brought back attempt %s (its objects were deleted): %v", id, oc)
	}
	if oc.GetDriverMetadata() != nil || oc.GetTimestamp() != 1234 {
		t.Fatalf("after abandon: %v, want the earlier context without its attempt", oc)
	}
	// Writer 1 finishes and commits uuidA: refused.
	if _, err := s.CompleteOffload(ctx, testML, 2, uuidA); !errors.Is(err, ErrOffloadConflict) {
		t.Fatalf("commit of the replaced attempt after the abandon: %v, want ErrOffloadConflict", err)
	}
	info, _ = stored(t, f, testML)
	if info.LedgerInfo[1].OffloadContext.GetComplete() {
		t.Fatal("the replaced attempt is complete")
	}
}

// A store that requires a fence refuses a write without one (nothing
// written) and writes under one as one multi of its checks and the Set; a
// fence that no longer holds refuses the write (ErrFenced, not retried as
// a lost compare-and-set).
func TestRequireFence(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(1, 4), &Options{RequireFence: true})
	ctx := context.Background()
	orig, v0 := f.raw(Path(testML))
	if _, _, err := s.PrepareOffload(ctx, testML, 2, uuidA, s3drv); !errors.Is(err, tkzk.ErrUnfenced) {
		t.Fatalf("unfenced write: %v, want ErrUnfenced", err)
	}
	if err := s.CheckFence(ctx); !errors.Is(err, tkzk.ErrUnfenced) {
		t.Fatalf("CheckFence without a fence: %v", err)
	}
	f.put("/lease/epoch", nil)
	fctx := tkzk.WithFence(ctx, tkzk.NewFence("lease", tkzk.PathVersion{Path: "/lease/epoch", Version: 0}))
	if got, v := f.raw(Path(testML)); !bytes.Equal(got, orig) || v != v0 {
		t.Fatal("the refused write changed the node")
	}
	if _, _, err := s.PrepareOffload(fctx, testML, 2, uuidA, s3drv); err != nil {
		t.Fatalf("fenced write: %v", err)
	}
	if err := s.CheckFence(fctx); err != nil {
		t.Fatalf("CheckFence under a held fence: %v", err)
	}
	f.put("/lease/epoch", []byte("taken")) // another generation
	_, v1 := f.raw(Path(testML))
	sets := f.sets
	if _, err := s.CompleteOffload(fctx, testML, 2, uuidA); !errors.Is(err, tkzk.ErrFenced) || errors.Is(err, ErrContention) {
		t.Fatalf("write under a stale fence: %v, want ErrFenced", err)
	}
	if _, v := f.raw(Path(testML)); v != v1 || f.sets != sets {
		t.Fatal("the fenced-off write changed the node")
	}
}
