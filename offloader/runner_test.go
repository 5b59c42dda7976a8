package offloader

import (
	"context"
	"errors"
	"testing"
	"time"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// A job cancelled (shutdown, lease lost) while its batch is in the select
// step did nothing to any of its ledgers, and says so: the ledgers
// selected before the cancellation fail with it as the one being selected
// does, and the scheduler's outcomes are failures, not an empty success
// (they used to come back with no outcome and no error: done, 0 bytes).
// On a real ZooKeeper; nothing is written.
func TestJobCancelledWhileSelecting(t *testing.T) {
	z, cr := mltest.ZooKeeper(t)
	ml := "public/default/persistent/cancel-select"
	if err := cr.CreateML(ml, mltest.Info(mltest.Closed(2, 3, 1000, time.Now().Add(-time.Hour))...)); err != nil {
		t.Fatal(err)
	}
	if err := cr.Create("/ledgers/LAYOUT", []byte("2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1")); err != nil {
		t.Fatal(err)
	}
	ids := []int64{2, 3, 4}
	for _, id := range ids {
		if err := cr.BookKeeperLedger(id, testenv.ClosedAddr(t)); err != nil {
			t.Fatal(err)
		}
	}
	_, before, err := cr.Conn.Get(mledger.Path(ml))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sess := z.Session(t, tzk.Options{})
	ledgers, err := metadata.NewStore(ctx, sess, metadata.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := bkclient.New(bkclient.Options{Resolver: ledgers})
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	store, err := fs.New(fs.Config{Dir: t.TempDir(), NoSync: true}, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// The cancellation arrives once ledger 3 is selected: ledger 2 is in
	// the batch, ledger 3 stops at its failpoint, ledger 4 is never read.
	fps := pipeline.FailpointFunc(func(_ context.Context, name string, lr mledger.LedgerRef) error {
		if name == pipeline.FPAfterSelect && lr.LedgerID == 3 {
			cancel()
		}
		return nil
	})
	p, err := pipeline.New(pipeline.Deps{ML: mledger.New(sess, nil), Ledgers: ledgers, Bookies: bk, Store: store, Failpoints: fps},
		pipeline.Options{Driver: mledger.Driver{Name: "aws-s3", Bucket: "fs"}, BlockSize: format.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := p.RunTopic(ctx, ml, ids)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunTopic: %v, want context.Canceled", err)
	}
	if len(tr.Ledgers) != len(ids) {
		t.Fatalf("%d results for %d ledgers", len(tr.Ledgers), len(ids))
	}
	for _, lr := range tr.Ledgers {
		var se *pipeline.StepError
		if lr.Outcome != pipeline.OutcomeFailed || !errors.Is(lr.Err, context.Canceled) || !errors.As(lr.Err, &se) || se.Step != pipeline.StepSelect {
			t.Errorf("ledger %d: outcome %q, error %v; want failed in select with context.Canceled", lr.LedgerID, lr.Outcome, lr.Err)
		}
	}
	outs := JobOutcomes(scheduler.Job{ML: ml, Action: policy.ActionOffload, Ledgers: ids}, tr)
	for _, o := range outs {
		if o.Result != scheduler.ResultFailed || !errors.Is(o.Err, context.Canceled) || o.Step != string(pipeline.StepSelect) || o.Bytes != 0 {
			t.Errorf("ledger %d: outcome %+v, want failed in select with context.Canceled", o.LedgerID, o)
		}
	}
	if _, after, err := cr.Conn.Get(mledger.Path(ml)); err != nil || after.Version != before.Version {
		t.Fatalf("managed ledger version %d -> %d (%v): a cancelled select wrote", before.Version, after.Version, err)
	}
}
