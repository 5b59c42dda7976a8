package pipeline

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// No BookKeeper deletion without the objects: committed ledgers whose data
// object is deleted, whose index is deleted, or whose context names
// another bucket are neither marked nor deleted by a trim whose lag has
// passed; a ledger marked bookkeeperDeleted whose objects are deleted
// before the delete keeps its BookKeeper copy too. (Before the check, the
// trim deleted all four BookKeeper ledgers.)
func TestTrimRefusesWithoutObjects(t *testing.T) {
	r := newRig(t, true)
	ctx := context.Background()
	name, ids := r.topic(t, 50, 10, 1024)
	if len(ids) < 4 {
		t.Fatalf("candidates %v", ids)
	}
	// Ledgers 0..2 committed without the mark; ledger 3 committed and
	// marked, the run stopped before its delete.
	if _, err := r.pipeline(t, nil).RunTopic(ctx, name, ids[:3]); err != nil {
		t.Fatal(err)
	}
	stop := r.pipeline(t, func(d *Deps, o *Options) {
		o.Trim, o.TrimWithoutReload = true, true
		d.Failpoints = FailpointFunc(func(_ context.Context, n string, _ mledger.LedgerRef) error {
			if n == FPAfterMarkDeleted {
				return ErrFailpoint
			}
			return nil
		})
	})
	if lr, _ := stop.Run(ctx, mledger.LedgerRef{ML: name, LedgerID: ids[3]}); !lr.Trim.Marked || lr.Trim.Deleted {
		t.Fatalf("ledger %d: %+v", ids[3], lr.Trim)
	}
	uuidOf := func(id int64) (u [16]byte) {
		for _, li := range r.info(t, name).Info.GetLedgerInfo() {
			if li.GetLedgerId() == id {
				u, _ = mledger.AttemptUUID(li.GetOffloadContext())
			}
		}
		return u
	}
	del := func(key string) {
		if err := r.store.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	del(format.DataKey(uuidOf(ids[0]), ids[0]))
	del(format.IndexKey(uuidOf(ids[1]), ids[1]))
	if _, err := r.ml.UpdateOffloadContext(ctx, name, ids[2], func(oc *mlproto.OffloadContext, _ *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
		for _, kv := range oc.GetDriverMetadata().GetProperties() {
			if kv.GetKey() == mledger.PropBucket {
				kv.Value = proto.String("another-clusters-bucket")
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	del(format.DataKey(uuidOf(ids[3]), ids[3]))
	del(format.IndexKey(uuidOf(ids[3]), ids[3]))

	trim := r.pipeline(t, func(_ *Deps, o *Options) { o.Trim, o.TrimWithoutReload = true, true })
	tr, err := trim.RunTopic(ctx, name, ids[:4])
	if err == nil {
		t.Fatal("trim without objects succeeded")
	}
	for i, lr := range tr.Ledgers {
		if !errors.Is(lr.Err, ErrTrimRefused) || lr.Trim.Deleted || lr.Trim.FreedBytes != 0 {
			t.Errorf("ledger %d: trim %+v, err %v", lr.LedgerID, lr.Trim, lr.Err)
		}
		if i < 2 && !errors.Is(lr.Err, ErrVerify) {
			t.Errorf("ledger %d: %v, want a verification error", lr.LedgerID, lr.Err)
		}
		if i == 2 && !errors.Is(lr.Err, ErrForeignBucket) {
			t.Errorf("ledger %d: %v, want ErrForeignBucket", lr.LedgerID, lr.Err)
		}
		if _, err := r.ledgers.ReadLedger(ctx, lr.LedgerID); err != nil {
			t.Errorf("ledger %d: BookKeeper copy: %v", lr.LedgerID, err)
		}
	}
	st := mledger.States(r.info(t, name).Info)
	for i := range 3 {
		if st[i] != mledger.StateOffloaded {
			t.Errorf("ledger %d marked without its objects: %s", ids[i], st[i])
		}
	}
	// The check is what refused: with the objects whole the same trim
	// deletes (ledger 2 back in this bucket).
	if _, err := r.ml.UpdateOffloadContext(ctx, name, ids[2], func(oc *mlproto.OffloadContext, _ *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
		oc.DriverMetadata, _ = r.driver().Metadata()
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	lr, err := trim.Run(ctx, mledger.LedgerRef{ML: name, LedgerID: ids[2]})
	if err != nil || !lr.Trim.Deleted {
		t.Fatalf("trim of a whole ledger: %+v %v", lr.Trim, err)
	}
	if _, err := r.ledgers.ReadLedger(ctx, ids[2]); !errors.Is(err, metadata.ErrNoSuchLedger) {
		t.Fatalf("ledger %d still in BookKeeper: %v", ids[2], err)
	}
}
