package offloader

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// TestInspectTopic reads a topic in a real ZooKeeper: an offloaded ledger
// whose BookKeeper copy is gone and whose attempt left only its data
// object, a closed ledger on BookKeeper, and the open last ledger (whose
// BookKeeper copy is not checked).
func TestInspectTopic(t *testing.T) {
	ctx := t.Context()
	z, cr := mltest.ZooKeeper(t)
	now := time.Now()
	ml := "t/ns/persistent/a"
	if err := cr.CreateML(ml, mltest.Info(mltest.Ledger{ID: 1, Entries: 10, Size: 100, Closed: now.Add(-time.Hour), Offloaded: now},
		mltest.Ledger{ID: 2, Entries: 10, Size: 200, Closed: now}, mltest.Ledger{ID: 3})); err != nil {
		t.Fatal(err)
	}
	if err := cr.BookKeeperLedger(2, "b1:3181"); err != nil {
		t.Fatal(err)
	}
	sess := z.Session(t, tzk.Options{})
	ledgers, err := metadata.NewStore(ctx, sess, metadata.StoreOptions{Root: "/ledgers"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := fs.New(fs.Config{Dir: t.TempDir(), NoSync: true}, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := &Peers{ML: mledger.New(sess.Conn, nil), Ledgers: ledgers, Store: store}
	first, err := InspectTopic(ctx, p, "persistent://t/ns/a")
	if err != nil {
		t.Fatal(err)
	}
	if len(first.ManagedLedgers) != 1 || len(first.ManagedLedgers[0].Ledgers) != 3 {
		t.Fatalf("inspection %+v", first)
	}
	l1 := first.ManagedLedgers[0].Ledgers[0]
	if l1.Objects == nil || l1.Objects.Data || l1.Objects.Index || l1.Objects.Error != "" {
		t.Errorf("ledger 1 objects before any were written: %+v", l1.Objects)
	}
	id := uuid.MustParse(l1.Offload.UUID)
	if _, err := store.Put(ctx, format.DataKey(id, 1), strings.NewReader("data"), 4, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	in, err := InspectTopic(ctx, p, "t/ns/a")
	if err != nil {
		t.Fatal(err)
	}
	got := in.ManagedLedgers[0].Ledgers
	for i, want := range []struct{ readsFrom, bk string }{
		{"object store (bucket b)", "deleted"}, {"bookkeeper", "present"}, {"bookkeeper", ""},
	} {
		if got[i].ReadsFrom != want.readsFrom || got[i].BookKeeper != want.bk || got[i].Source != SourceMetadata {
			t.Errorf("ledger %d: reads from %q (%s), BookKeeper %q; want %q, %q", got[i].LedgerID, got[i].ReadsFrom, got[i].Source,
				got[i].BookKeeper, want.readsFrom, want.bk)
		}
	}
	if o := got[0].Objects; o == nil || !o.Data || o.DataBytes != 4 || o.Index || o.DataKey != format.DataKey(id, 1) {
		t.Errorf("ledger 1 objects: %+v, want the data object (4 bytes) without its index", o)
	}
	if got[1].Objects != nil || got[2].Objects != nil {
		t.Errorf("objects of ledgers never offloaded: %+v %+v", got[1].Objects, got[2].Objects)
	}
	if in.Totals.Ledgers != 3 || len(in.Errors) != 0 {
		t.Errorf("totals %+v, errors %v", in.Totals, in.Errors)
	}
}
