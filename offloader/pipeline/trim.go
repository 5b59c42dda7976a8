package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/mlmeta"
)

// trimAll deletes the BookKeeper copies of the complete ledgers whose
// deletion lag has passed, in three phases: mark each (CAS
// bookkeeperDeleted=true), reload the topic once more (a broker reading
// with bookkeeper-first priority must stop using the BookKeeper copy
// before it goes), then compare-and-delete each BookKeeper ledger.
func (p *Pipeline) trimAll(ctx context.Context, tr *TopicResult, done []*LedgerResult) []error {
	var errs []error
	reloaded := tr.Reload.Done
	var toDelete []*LedgerResult
	// One read for all ledgers: only this topic's pipeline (per-topic
	// serialisation) and the broker's trimmer change these contexts, and
	// every write below is a compare-and-set that re-reads.
	snap, err := p.d.ML.Get(ctx, tr.ML)
	if err != nil {
		err = &StepError{Target: Target{ML: tr.ML, LedgerID: -1}, Step: StepTrim, Err: err}
		for _, lr := range done {
			lr.Err = err
		}
		return []error{err}
	}
	for _, lr := range done {
		if lr.Err != nil {
			continue
		}
		t := lr.Target
		var del bool
		err := p.step(ctx, t, StepTrim, lr, func() error {
			var err error
			del, err = p.mark(ctx, lr, snap, reloaded)
			return err
		})
		if err != nil {
			lr.Err = err
			errs = append(errs, err)
			continue
		}
		if del {
			toDelete = append(toDelete, lr)
		}
	}
	if len(toDelete) == 0 {
		return errs
	}
	if p.d.Broker != nil && !p.o.SkipReload {
		ids := make([]int64, len(toDelete))
		for i, lr := range toDelete {
			ids[i] = lr.LedgerID
		}
		err := p.step(ctx, toDelete[0].Target, StepReload, nil, func() error {
			_, err := p.reload(ctx, tr.ML, ids, true)
			return err
		})
		if err != nil {
			for _, lr := range toDelete {
				lr.Trim.Note = "bookkeeperDeleted is set; the BookKeeper ledger is kept until the broker has reloaded (run again)"
				lr.Err = err
			}
			return append(errs, err)
		}
	}
	for _, lr := range toDelete {
		err := p.step(ctx, lr.Target, StepTrim, lr, func() error { return p.deleteBK(ctx, lr) })
		if err != nil {
			lr.Err = err
			errs = append(errs, err)
		}
	}
	return errs
}

// mark sets bookkeeperDeleted=true when the lag has passed and the broker
// is known to read from the object store. It returns whether the
// BookKeeper ledger should now be deleted.
func (p *Pipeline) mark(ctx context.Context, lr *LedgerResult, snap *mlmeta.Snapshot, reloaded bool) (bool, error) {
	t := lr.Target
	var li *LedgerInfo
	for _, l := range snap.Info.GetLedgerInfo() {
		if l.GetLedgerId() == t.LedgerID {
			li = l
		}
	}
	if li == nil {
		return false, fmt.Errorf("%w: %w", ErrNotEligible, mlmeta.ErrLedgerNotFound)
	}
	oc := li.GetOffloadContext()
	id, _ := mlmeta.AttemptUUID(oc)
	if !oc.GetComplete() {
		return false, fmt.Errorf("%w: %w", ErrTrimRefused, mlmeta.ErrNotOffloaded)
	}
	if oc.GetBookkeeperDeleted() {
		lr.Trim.Marked = true
		// A crash between the mark and the delete leaves the ledger behind.
		_, err := p.d.Ledgers.ReadLedger(ctx, t.LedgerID)
		if errors.Is(err, metadata.ErrNoSuchLedger) {
			lr.Trim.Deleted = true
			return false, nil
		}
		return err == nil, err
	}
	notBefore := time.UnixMilli(oc.GetTimestamp()).Add(p.o.DeletionLag)
	if now := p.d.Now(); now.Before(notBefore) {
		lr.Trim = TrimResult{NotBefore: notBefore,
			Note: fmt.Sprintf("deletion lag: BookKeeper copy kept until %s (%s from now)", notBefore.Format(time.RFC3339), notBefore.Sub(now).Round(time.Second))}
		return false, nil
	}
	if !reloaded && !p.o.TrimWithoutReload {
		lr.Trim.Note = "not trimmed: the broker has not been seen serving this ledger from the object store"
		return false, fmt.Errorf("%w: the broker has not been seen serving ledger %d from the object store", ErrTrimRefused, t.LedgerID)
	}
	if _, err := p.d.ML.MarkBookkeeperDeleted(ctx, t.ML, t.LedgerID, id); err != nil {
		if errors.Is(err, mlmeta.ErrOffloadConflict) {
			return false, fmt.Errorf("%w: %w", ErrConflict, err)
		}
		return false, err
	}
	lr.Trim.Marked = true
	if err := p.hit(ctx, FPAfterMarkDeleted, t); err != nil {
		return false, err
	}
	return true, nil
}

// deleteBK compare-and-deletes the BookKeeper ledger: only if it is still
// closed with the entries and length the managed ledger recorded.
func (p *Pipeline) deleteBK(ctx context.Context, lr *LedgerResult) error {
	t := lr.Target
	res, err := p.d.Ledgers.DeleteLedger(ctx, t.LedgerID, metadata.Expect{LastEntryID: lr.Entries - 1, Length: lr.Bytes})
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
