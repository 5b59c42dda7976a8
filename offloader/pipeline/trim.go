package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/mlmeta"
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
			err := p.step(ctx, lr.Target, StepTrim, lr, func() error {
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
			lr.Err = &StepError{Target: lr.Target, Step: StepTrim,
				Err: fmt.Errorf("%w: the broker is not reloaded, so it may still read ledger %d from BookKeeper", ErrTrimRefused, lr.LedgerID)}
			continue
		}
		mark = append(mark, w)
	}
	if len(mark) == 0 {
		return del
	}
	edits := make([]mlmeta.Edit, len(mark))
	lrs := make([]*LedgerResult, len(mark))
	for i, w := range mark {
		edits[i], lrs[i] = mlmeta.MarkBookkeeperDeletedEdit(w.lr.LedgerID, w.id), w.lr
	}
	p.batchStep(ctx, lrs, StepTrim, func() (map[int64]error, error) {
		br, err := p.d.ML.UpdateOffloadContexts(ctx, ml, edits)
		if err != nil {
			return nil, err
		}
		per := map[int64]error{}
		for _, lu := range br.Ledgers {
			switch {
			case errors.Is(lu.Err, mlmeta.ErrOffloadConflict):
				per[lu.LedgerID] = fmt.Errorf("%w: %w", ErrConflict, lu.Err)
			case errors.Is(lu.Err, mlmeta.ErrNotOffloaded):
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
	if err := p.hit(ctx, FPAfterMarkDeleted, lr.Target); err != nil {
		lr.Err = &StepError{Target: lr.Target, Step: StepTrim, Err: err}
		return false
	}
	return true
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
