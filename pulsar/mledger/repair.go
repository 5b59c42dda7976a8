package mledger

import (
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
)

// ClearOffloadEdit removes the offload context of a ledger committed by
// attempt id whose objects turned out missing or wrong while its
// BookKeeper copy still exists (a repair): brokers that reload the
// managed ledger then read the ledger from BookKeeper again, and the
// ledger can be offloaded anew. It refuses a different or no attempt
// (ErrOffloadConflict) and an incomplete one (ErrNotOffloaded), so a
// decision taken on an older read never clears a newer attempt. The
// bookkeeperDeleted mark goes too: checking that the BookKeeper ledger
// still exists is the caller's part, before the write.
func ClearOffloadEdit(ledgerID int64, id uuid.UUID) Edit {
	return Edit{LedgerID: ledgerID, Fn: func(oc *mlproto.OffloadContext, _ *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
		if err := checkAttempt(oc, id); err != nil {
			return false, err
		}
		if !oc.GetComplete() {
			return false, ErrNotOffloaded
		}
		proto.Reset(oc)
		return true, nil
	}}
}
