package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// mayTrim says whether a mark can be followed by a reload that makes the
// broker stop reading the BookKeeper copy (or the caller waived it).
func (p *Pipeline) mayTrim() bool {
	return (p.d.Broker != nil && !p.o.SkipReload) || p.o.TrimWithoutReload
}

// markAll decides the trim of each complete ledger of done from its stored
// context, and sets bookkeeperDeleted=true in one compare-and-set on those
// whose deletion lag has passed. It returns the ledgers whose BookKeeper
// copy is to be deleted once the broker has reloaded the topic (a broker
// reading with bookkeeper-first priority must stop using the BookKeeper
// copy before it goes): those marked now, by the commit, or by an earlier
// run that did not get to the delete.
func (p *Pipeline) markAll(ctx context.Context, ml string, done []*work) []*work {
	var del, mark []*work
	for _, w := range done {
		lr := w.lr
		if lr.Err != nil {
			continue
		}
		oc := w.after
		switch {
		case oc.GetBookkeeperDeleted() && lr.Outcome != OutcomeAlreadyOffloaded:
			del = append(del, w) // marked by this run's commit
			continue
		case oc.GetBookkeeperDeleted():
			lr.Trim.Marked = true
			// A crash between the mark and the delete leaves the ledger behind.
			err := p.step(ctx, lr.LedgerRef, StepTrim, lr, func() error {
				_, err := p.d.Ledgers.ReadLedger(ctx, lr.LedgerID)
				if errors.Is(err, metadata.ErrNoSuchLedger) {
					lr.Trim.Deleted = true
					return nil
				}
				if err == nil {
					del = append(del, w)
				}
				return err
			})
			if err != nil {
				lr.Err = err
			}
			continue
		}
		notBefore := time.UnixMilli(oc.GetTimestamp()).Add(p.o.DeletionLag)
		if now := p.d.Now(); now.Before(notBefore) {
			lr.Trim = TrimResult{NotBefore: notBefore,
				Note: fmt.Sprintf("deletion lag: BookKeeper copy kept until %s (%s from now)", notBefore.Format(time.RFC3339), notBefore.Sub(now).Round(time.Second))}
			continue
		}
		if !p.mayTrim() {
			lr.Trim.Note = "not trimmed: the broker is not reloaded by this run (SkipReload), so it may still read the BookKeeper copy"
			lr.Err = &StepError{LedgerRef: lr.LedgerRef, Step: StepTrim,
				Err: fmt.Errorf("%w: the broker is not reloaded, so it may still read ledger %d from BookKeeper", ErrTrimRefused, lr.LedgerID)}
			continue
		}
		// The mark lets the broker delete the BookKeeper copy too: the
		// objects are checked first, as before the delete.
		if err := p.step(ctx, lr.LedgerRef, StepTrim, lr, func() error {
			_, err := p.checkBeforeDelete(ctx, lr.LedgerRef, oc, lr.Entries, lr.Bytes)
			if errors.Is(err, errBKGone) {
				return nil
			}
			return err
		}); err != nil {
			lr.Trim.Note = "not trimmed: " + err.Error()
			lr.Err = err
			continue
		}
		mark = append(mark, w)
	}
	if len(mark) == 0 {
		return del
	}
	edits := make([]mledger.Edit, len(mark))
	lrs := make([]*LedgerResult, len(mark))
	for i, w := range mark {
		edits[i], lrs[i] = mledger.MarkBookkeeperDeletedEdit(w.lr.LedgerID, w.id), w.lr
	}
	p.batchStep(ctx, lrs, StepTrim, func() (map[int64]error, error) {
		br, err := p.d.ML.UpdateOffloadContexts(ctx, ml, edits)
		if err != nil {
			return nil, err
		}
		per := map[int64]error{}
		for _, lu := range br.Ledgers {
			switch {
			case errors.Is(lu.Err, mledger.ErrOffloadConflict):
				per[lu.LedgerID] = fmt.Errorf("%w: %w", ErrConflict, lu.Err)
			case errors.Is(lu.Err, mledger.ErrNotOffloaded):
				per[lu.LedgerID] = fmt.Errorf("%w: %w", ErrTrimRefused, lu.Err)
			case lu.Err != nil:
				per[lu.LedgerID] = lu.Err
			}
		}
		return per, nil
	})
	for _, w := range mark {
		lr := w.lr
		if lr.Err != nil {
			continue
		}
		if p.marked(ctx, lr) {
			del = append(del, w)
		}
	}
	return del
}

// marked records that bookkeeperDeleted=true is stored for lr and passes
// its failpoint; false when the failpoint stops the ledger.
func (p *Pipeline) marked(ctx context.Context, lr *LedgerResult) bool {
	lr.Trim.Marked = true
	if err := p.hit(ctx, FPAfterMarkDeleted, lr.LedgerRef); err != nil {
		lr.Err = &StepError{LedgerRef: lr.LedgerRef, Step: StepTrim, Err: err}
		return false
	}
	return true
}

// deleteBK compare-and-deletes the BookKeeper ledger, after
// checkBeforeDelete on the offload context as stored now (re-read: the
// objects or the context may have changed since the run selected the
// ledger), and only if the ledger is still closed with the entries and
// length the managed ledger recorded.
func (p *Pipeline) deleteBK(ctx context.Context, lr *LedgerResult) error {
	t := lr.LedgerRef
	snap, err := p.d.ML.Get(ctx, t.ML)
	if err != nil {
		return err
	}
	var li *LedgerInfo
	for _, l := range snap.Info.GetLedgerInfo() {
		if l.GetLedgerId() == t.LedgerID {
			li = l
		}
	}
	if li == nil {
		return fmt.Errorf("%w: %w", ErrTrimRefused, mledger.ErrLedgerNotFound)
	}
	oc := li.GetOffloadContext()
	if id, _ := mledger.AttemptUUID(oc); !oc.GetBookkeeperDeleted() || (lr.UUID != uuid.Nil && id != lr.UUID) {
		return fmt.Errorf("%w: the stored offload context changed (attempt %s, bookkeeperDeleted %t)", ErrTrimRefused, id, oc.GetBookkeeperDeleted())
	}
	if _, err := p.checkBeforeDelete(ctx, t, oc, li.GetEntries(), li.GetSize()); errors.Is(err, errBKGone) {
		lr.Trim.Deleted = true
		return nil
	} else if err != nil {
		lr.Trim.Note = "not trimmed: " + err.Error()
		return err
	}
	res, err := p.d.Ledgers.DeleteLedger(ctx, t.LedgerID, metadata.Expect{LastEntryID: li.GetEntries() - 1, Length: li.GetSize()})
	if errors.Is(err, metadata.ErrChanged) || errors.Is(err, metadata.ErrNotClosed) {
		return fmt.Errorf("%w: %w", ErrTrimRefused, err)
	}
	if err != nil {
		return err
	}
	lr.Trim.Deleted = true
	if res == metadata.Deleted {
		lr.Trim.FreedBytes = lr.Bytes
	}
	return p.hit(ctx, FPAfterTrim, t)
}

// errBKGone: checkBeforeDelete found no BookKeeper ledger (nothing to
// delete).
var errBKGone = errors.New("the BookKeeper ledger does not exist")

// checkBeforeDelete is what must hold before any deletion of a ledger's
// BookKeeper copy, and before the bookkeeperDeleted mark that lets the
// broker delete it: the context is complete and names the bucket this
// offloader reads (the broker may have offloaded the ledger elsewhere);
// both objects are there, the index parses and describes exactly the
// managed ledger's entries and bytes (CheckObjects); and the BookKeeper
// ledger is closed with the same last entry and length. Anything else is
// ErrTrimRefused (wrapping ErrVerify when the objects are missing or
// wrong). errBKGone when the BookKeeper ledger is already gone (the
// objects were checked first).
func (p *Pipeline) checkBeforeDelete(ctx context.Context, t mledger.LedgerRef, oc *mlproto.OffloadContext, entries, size int64) (*metadata.LedgerMetadata, error) {
	id, ok := mledger.AttemptUUID(oc)
	if !ok || !oc.GetComplete() {
		return nil, fmt.Errorf("%w: %w", ErrTrimRefused, mledger.ErrNotOffloaded)
	}
	if b := mledger.DriverFromMetadata(oc.GetDriverMetadata()).Bucket; b != p.o.Driver.Bucket {
		return nil, fmt.Errorf("%w: %w: the objects are recorded in bucket %q, this offloader reads %q and cannot check them",
			ErrTrimRefused, ErrForeignBucket, b, p.o.Driver.Bucket)
	}
	if _, err := CheckObjects(ctx, p.d.Store, id, t.LedgerID, entries-1, size); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrimRefused, err)
	}
	md, err := p.d.Ledgers.ReadLedger(ctx, t.LedgerID)
	if errors.Is(err, metadata.ErrNoSuchLedger) {
		return nil, errBKGone
	}
	if err != nil {
		return nil, err
	}
	if !md.Closed() || md.LastEntryID != entries-1 || md.Length != size {
		return nil, fmt.Errorf("%w: BookKeeper has ledger %d %s with last entry %d / %d bytes, the managed ledger %d / %d",
			ErrTrimRefused, t.LedgerID, md.State, md.LastEntryID, md.Length, entries-1, size)
	}
	return md, nil
}

// ObjectsReport is what CheckObjects found.
type ObjectsReport struct {
	DataKey, IndexKey string
	// ObjectBytes and Blocks describe the data object (from its index).
	ObjectBytes int64
	Blocks      int
	// Requests counts the store requests made (2 when both exist).
	Requests int
}

// CheckObjects checks the two objects of attempt id of a ledger with two
// requests: a HEAD of the data object and a GET of the index. Both must
// exist with format version 1, the index must parse and describe entries
// 0..lastEntryID and length payload bytes, and the data object must be
// as long as the index says. Missing or wrong objects are ErrVerify
// (wrapping blob.ErrNotFound when one is missing); any other error means
// the store could not be asked (nothing is known).
func CheckObjects(ctx context.Context, store blob.Reader, id uuid.UUID, ledgerID, lastEntryID, length int64) (ObjectsReport, error) {
	rep := ObjectsReport{DataKey: format.DataKey(id, ledgerID), IndexKey: format.IndexKey(id, ledgerID)}
	rep.Requests++
	a, err := store.Head(ctx, rep.DataKey)
	if err != nil {
		return rep, objectsWrong(fmt.Errorf("head %s: %w", rep.DataKey, err))
	}
	if err := format.CheckVersion(rep.DataKey, a.Metadata); err != nil {
		return rep, objectsWrong(err)
	}
	rep.Requests++
	ix, _, err := format.ReadIndex(ctx, store, rep.IndexKey, 0)
	if err != nil {
		return rep, objectsWrong(err)
	}
	rep.ObjectBytes, rep.Blocks = ix.DataObjectLength, len(ix.Blocks)
	if err := ix.Validate(); err != nil {
		return rep, objectsWrong(fmt.Errorf("index %s: %w", rep.IndexKey, err))
	}
	if got := ix.Metadata; got.GetLastEntryId() != lastEntryID || got.GetLength() != length {
		return rep, fmt.Errorf("%w: index %s describes entries 0..%d, %d bytes; the ledger has 0..%d, %d bytes",
			ErrVerify, rep.IndexKey, got.GetLastEntryId(), got.GetLength(), lastEntryID, length)
	}
	if a.Size != ix.DataObjectLength {
		return rep, fmt.Errorf("%w: %s has %d bytes, its index says %d", ErrVerify, rep.DataKey, a.Size, ix.DataObjectLength)
	}
	return rep, nil
}
