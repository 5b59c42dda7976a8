package sim

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// LeaseRoot is the leases' root znode; LeasePath the simulated topic's
// lease (owner) node.
const LeaseRoot = "/sim/leases"

var LeasePath = LeaseRoot + "/" + mledger.EncodeName(Topic)

// objectsOK says why attempt id's objects of a ledger with the given
// entries and size are not whole ("" when they are): both objects
// present, the index decodes and describes the ledger, the data object
// has the index's length (w.mu held).
func (w *World) objectsOK(id uuid.UUID, ledger, entries, size int64) string {
	dk, ik := format.DataKey(id, ledger), format.IndexKey(id, ledger)
	raw, _, ok := w.store.Object(ik)
	if !ok {
		return "index " + ik + " missing" + w.by(ik)
	}
	data, _, ok := w.store.Object(dk)
	if !ok {
		return "data object " + dk + " missing" + w.by(dk)
	}
	ix, err := format.ParseIndex(raw)
	if err != nil {
		return fmt.Sprintf("index %s: %v", ik, err)
	}
	if got := ix.Metadata; got.GetLastEntryId() != entries-1 || got.GetLength() != size {
		return fmt.Sprintf("index %s describes 0..%d, %d bytes; the ledger has %d entries, %d bytes", ik, got.GetLastEntryId(), got.GetLength(), entries, size)
	}
	if int64(len(data)) != ix.DataObjectLength {
		return fmt.Sprintf("data object %s has %d bytes, the index says %d", dk, len(data), ix.DataObjectLength)
	}
	return ""
}

func (w *World) by(key string) string {
	if who, ok := w.deletedBy[key]; ok {
		return " (deleted by " + who + ")"
	}
	return " (never written)"
}

// contextOK checks a complete context of the stored list ("" when fine).
func (w *World) contextOK(li *mlproto.ManagedLedgerInfo_LedgerInfo) string {
	oc := li.GetOffloadContext()
	id, ok := mledger.AttemptUUID(oc)
	if !ok {
		return "complete context without an attempt UUID"
	}
	if b := mledger.DriverFromMetadata(oc.GetDriverMetadata()).Bucket; b != SimDriver.Bucket {
		return "context names bucket " + b
	}
	return w.objectsOK(id, li.GetLedgerId(), li.GetEntries(), li.GetSize())
}

// checkState checks the invariants on the stored state (w.mu held).
func (w *World) checkState() {
	if w.viol != nil {
		return
	}
	info, _, err := w.storedInfo()
	if err != nil {
		return
	}
	byID := map[int64]*mlproto.ManagedLedgerInfo_LedgerInfo{}
	for _, li := range info.GetLedgerInfo() {
		byID[li.GetLedgerId()] = li
		if !li.GetOffloadContext().GetComplete() {
			continue
		}
		if why := w.contextOK(li); why != "" {
			w.violate(InvCompleteObjects, "ledger %d is complete in the stored metadata but %s (stored: %s)", li.GetLedgerId(), why, w.describe(info))
			return
		}
	}
	for id, n := range w.acked {
		l := w.bk.ledgers[id]
		if l != nil && !l.deleted {
			continue
		}
		li := byID[id]
		switch {
		case li == nil:
			w.violate(InvReadable, "ledger %d (%d acknowledged entries) is gone from BookKeeper and from the managed ledger", id, n)
		case !li.GetOffloadContext().GetComplete():
			w.violate(InvReadable, "ledger %d (%d acknowledged entries) is gone from BookKeeper and not offloaded", id, n)
		case li.GetEntries() < n:
			w.violate(InvReadable, "ledger %d: %d entries acknowledged, %d offloaded", id, n, li.GetEntries())
		}
	}
}

// checkBKDelete checks, as BookKeeper ledger id is deleted, that the
// stored context is complete and its objects whole (w.mu held).
func (w *World) checkBKDelete(who string, id int64) {
	info, _, err := w.storedInfo()
	if err != nil {
		w.violate(InvBKDeleteChecked, "%s deletes ledger %d; managed ledger unreadable: %v", who, id, err)
		return
	}
	for _, li := range info.GetLedgerInfo() {
		if li.GetLedgerId() != id {
			continue
		}
		if !li.GetOffloadContext().GetComplete() {
			w.violate(InvBKDeleteChecked, "%s deletes ledger %d, which is not complete in the stored metadata", who, id)
			return
		}
		if why := w.contextOK(li); why != "" {
			w.violate(InvBKDeleteChecked, "%s deletes ledger %d while %s", who, id, why)
		}
		return
	}
	w.violate(InvBKDeleteChecked, "%s deletes ledger %d, which the managed ledger does not list", who, id)
}

// checkWrite checks, at every applied ZooKeeper change, that a replica or
// a CLI run changes the managed ledger only while it holds the topic's
// lease (w.mu held).
func (w *World) checkWrite(sess int64, paths []string) {
	ml := mledger.Root + "/" + Topic
	var a *actor
	for _, x := range w.actors {
		if x.sess != nil && x.sess.id == sess {
			a = x
		}
	}
	for _, p := range paths {
		if p != ml {
			continue
		}
		info, ver, _ := w.storedInfo()
		w.tracef("  managed ledger v%d: %s", ver, w.describe(info))
		if a == nil {
			continue // the broker
		}
		n, ok := w.zk.nodes[LeasePath]
		switch {
		case !ok:
			w.violate(InvOneWriter, "%s (session %#x) wrote the managed ledger while no replica holds its lease", a.name, sess)
		case n.owner != sess:
			w.violate(InvOneWriter, "%s (session %#x) wrote the managed ledger while session %#x holds its lease", a.name, sess, n.owner)
		}
	}
}

var _ = context.Background
