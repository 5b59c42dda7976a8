package sweeper

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func openS3(t *testing.T, srv *testenv.S3, bucket string) blob.Store {
	t.Helper()
	cfg := s3test.Config(srv, bucket)
	cfg.Retry.MaxAttempts = 1
	return s3test.Open(t, cfg)
}

func put(t *testing.T, st blob.Store, key string) {
	t.Helper()
	if _, err := st.Put(context.Background(), key, bytes.NewReader([]byte("x")), 1, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func putPair(t *testing.T, st blob.Store, id uuid.UUID, ledger int64) {
	t.Helper()
	put(t, st, format.DataKey(id, ledger))
	put(t, st, format.IndexKey(id, ledger))
}

func topicWith(ml string, ledgers ...policy.Ledger) policy.Topic {
	tn, _ := mledger.ParseMLName(ml)
	return policy.Topic{ML: ml, Topic: tn, Ledgers: ledgers}
}

func keys(st blob.Store) []string {
	var out []string
	_ = st.Iter(context.Background(), "", func(a blob.Attrs) error { out = append(out, a.Key); return nil })
	sort.Strings(out)
	return out
}

func TestSweepRealS3(t *testing.T) {
	srv := testenv.StartS3(t)
	st := openS3(t, srv, srv.NewBucket(t))
	ctx := context.Background()
	done, running, old, orphan := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	putPair(t, st, done, 1)   // ledger 1 offloaded by attempt done
	putPair(t, st, old, 1)    // an earlier attempt at ledger 1: superseded
	putPair(t, st, orphan, 9) // ledger 9 is in no managed ledger
	put(t, st, format.DataKey(running, 2))
	put(t, st, "notes/readme.txt") // not an offload object
	// A running attempt's multipart upload (ledger 2, prepared), and one
	// of the superseded attempt.
	mpRun2, err := st.CreateMultipart(ctx, format.DataKey(running, 2), blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mpOld, err := st.CreateMultipart(ctx, format.DataKey(old, 1), blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	topics := []policy.Topic{topicWith("t/ns/persistent/a",
		policy.Ledger{ID: 1, Attempt: done, OffloadedAt: time.Now(), State: mledger.StateOffloaded},
		policy.Ledger{ID: 2, Attempt: running, State: mledger.StateOffloading},
		policy.Ledger{ID: 3, State: mledger.StateOpen})}
	var unreadable []string
	refsCalls := 0
	refs := func(context.Context) ([]policy.Topic, []string, error) {
		refsCalls++
		return topics, unreadable, nil
	}

	// Within the grace period nothing unreferenced goes.
	res, err := New(st, refs, Options{Grace: time.Hour}).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 0 || res.Kept[ReasonYoung] != 5 || res.Kept[ReasonReferenced] != 3+1 || res.Kept[ReasonForeign] != 1 {
		t.Errorf("young sweep: %+v", res)
	}

	// Later: a dry run counts and deletes nothing.
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	reg := prometheus.NewRegistry()
	res, err = New(st, refs, Options{Grace: time.Hour, Now: later, DryRun: true, Registerer: reg}).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := keys(st)
	if res.Removed[ReasonSuperseded] != 2 || res.Removed[ReasonOrphan] != 2 || res.Removed[ReasonIncomplete] != 1 || !res.DryRun {
		t.Errorf("dry run: %+v", res)
	}
	for _, it := range res.Items {
		if it.Deleted {
			t.Errorf("dry run deleted %s", it.Key)
		}
	}
	if len(before) != 8 {
		t.Errorf("dry run changed the bucket: %v", before)
	}

	// The real sweep.
	sw := New(st, refs, Options{Grace: time.Hour, Now: later, Registerer: reg})
	res, err = sw.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{format.DataKey(done, 1), format.IndexKey(done, 1), format.DataKey(running, 2), "notes/readme.txt"}
	sort.Strings(want)
	if got := keys(st); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("left:\n%v\nwant:\n%v", got, want)
	}
	ups, err := st.(blob.MultipartLister).ListMultipart(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 1 || ups[0].UploadID != mpRun2.UploadID() {
		t.Errorf("uploads left: %+v (want only the running attempt's %s; %s aborted)", ups, mpRun2.UploadID(), mpOld.UploadID())
	}
	if v := testutil.ToFloat64(sw.deleted.WithLabelValues(ReasonOrphan)); v != 2 {
		t.Errorf("deleted{orphan} = %v", v)
	}

	// A managed ledger that cannot be read: nothing is deleted.
	putPair(t, st, uuid.New(), 50)
	unreadable = []string{"t/ns/persistent/broken"}
	res, err = New(st, refs, Options{Grace: time.Hour, Now: later}).Sweep(ctx)
	if !errors.Is(err, ErrIncompleteRefs) || len(res.Removed) != 0 || res.Kept[ReasonUnknown] < 2 {
		t.Errorf("incomplete refs: %v %+v", err, res)
	}
	if refsCalls != 4 {
		t.Errorf("refs read %d times, want once per sweep", refsCalls)
	}
}

// TestSweepAfterS3Crash kills the S3 server in the middle of a multipart
// upload; after a restart the incomplete upload is still there, and the
// sweeper removes it once past the grace period.
func TestSweepAfterS3Crash(t *testing.T) {
	srv := testenv.StartPrivateS3(t)
	bucket := srv.NewBucket(t)
	st := openS3(t, srv, bucket)
	ctx := context.Background()
	id := uuid.New()
	key := format.DataKey(id, 7)
	mp, err := st.CreateMultipart(ctx, key, blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := mp.UploadPart(ctx, 1, bytes.Repeat([]byte("a"), 5<<20)); err != nil {
		t.Fatal(err)
	}
	// Part 2 is on the wire when the server dies.
	partErr := make(chan error, 1)
	go func() { partErr <- mp.UploadPart(ctx, 2, bytes.Repeat([]byte("b"), 64<<20)) }()
	time.Sleep(50 * time.Millisecond)
	srv.Kill()
	if err := <-partErr; err == nil {
		t.Log("part 2 finished before the kill")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	ups, err := st.(blob.MultipartLister).ListMultipart(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 1 || ups[0].Key != key {
		t.Fatalf("after the crash: uploads %+v, want the one of %s", ups, key)
	}
	// The attempt was recorded but its ledger has since been offloaded by
	// another attempt: the upload is junk.
	other := uuid.New()
	refs := func(context.Context) ([]policy.Topic, []string, error) {
		return []policy.Topic{topicWith("t/ns/persistent/a",
			policy.Ledger{ID: 7, Attempt: other, OffloadedAt: time.Now(), State: mledger.StateOffloaded},
			policy.Ledger{ID: 8, State: mledger.StateOpen})}, nil, nil
	}
	res, err := New(st, refs, Options{Grace: time.Minute, Now: func() time.Time { return time.Now().Add(time.Hour) }}).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed[ReasonIncomplete] != 1 || res.Errors != 0 {
		t.Errorf("sweep: %+v", res)
	}
	ups, err = st.(blob.MultipartLister).ListMultipart(ctx, "")
	if err != nil || len(ups) != 0 {
		t.Errorf("uploads after the sweep: %+v %v", ups, err)
	}
}

// TestSweepRefusesEmptyView: a scan that finds no managed ledger at all
// (a wrong ZooKeeper chroot or address: the root is missing or empty)
// makes every object look orphaned. The sweep deletes nothing then and
// says why; with nothing it would remove (a new cluster, an empty
// bucket) it is not an error.
func TestSweepRefusesEmptyView(t *testing.T) {
	srv := testenv.StartS3(t)
	st := openS3(t, srv, srv.NewBucket(t))
	ctx := context.Background()
	none := func(context.Context) ([]policy.Topic, []string, error) { return nil, nil, nil }
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }

	res, err := New(st, none, Options{Grace: time.Hour, Now: later}).Sweep(ctx)
	if err != nil || len(res.Removed) != 0 {
		t.Fatalf("empty bucket, no managed ledger: %v %+v", err, res)
	}

	committed := uuid.New()
	putPair(t, st, committed, 7)
	if _, err := st.CreateMultipart(ctx, format.DataKey(uuid.New(), 8), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		reg := prometheus.NewRegistry()
		sw := New(st, none, Options{Grace: time.Hour, Now: later, DryRun: dry, Registerer: reg})
		res, err = sw.Sweep(ctx)
		if !errors.Is(err, ErrNoManagedLedgers) || !errors.Is(err, ErrIncompleteRefs) || !strings.Contains(err.Error(), "3 objects and uploads") {
			t.Errorf("dry run %v: err %v", dry, err)
		}
		if len(res.Removed) != 0 || res.Kept[ReasonUnknown] != 3 {
			t.Errorf("dry run %v: %+v", dry, res)
		}
		if v := testutil.ToFloat64(sw.runs.WithLabelValues("refs-incomplete")); v != 1 {
			t.Errorf("runs{refs-incomplete} = %v", v)
		}
	}
	if got := keys(st); len(got) != 2 {
		t.Errorf("left %v, want the 2 objects of ledger 7", got)
	}
	ups, err := st.(blob.MultipartLister).ListMultipart(ctx, "")
	if err != nil || len(ups) != 1 {
		t.Errorf("uploads left %v (%v), want 1", ups, err)
	}
}
