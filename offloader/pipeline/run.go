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
	"github.com/tierkeeper/tierkeeper/offloader/mlmeta"
)

// TopicResult is what RunTopic did to one managed ledger.
type TopicResult struct {
	ML      string
	Ledgers []*LedgerResult
	// Reload is the topic's reload (one for all its ledgers).
	Reload ReloadResult
}

// Run offloads one ledger: RunTopic with a single ledger.
func (p *Pipeline) Run(ctx context.Context, t Target) (*LedgerResult, error) {
	tr, err := p.RunTopic(ctx, t.ML, []int64{t.LedgerID})
	if tr == nil || len(tr.Ledgers) == 0 {
		return nil, err
	}
	return tr.Ledgers[0], err
}

// RunTopic takes each of the given ledgers of managed ledger ml through
// select, prepare, copy, verify and commit (one after the other), then
// reloads the topic once for all of them, then trims those whose deletion
// lag has passed (Options.Trim). A ledger that fails does not stop the
// others; the returned error joins every ledger's error (each a
// *StepError). Every ledger gets a LedgerResult.
func (p *Pipeline) RunTopic(ctx context.Context, ml string, ledgers []int64) (*TopicResult, error) {
	tr := &TopicResult{ML: ml}
	if err := p.preflight(ctx, ml); err != nil {
		for _, id := range ledgers {
			lr := &LedgerResult{Target: Target{ML: ml, LedgerID: id}}
			tr.Ledgers = append(tr.Ledgers, lr.fail(err))
		}
		return tr, err
	}
	var errs []error
	for _, id := range ledgers {
		lr := p.offloadOne(ctx, Target{ML: ml, LedgerID: id})
		tr.Ledgers = append(tr.Ledgers, lr)
		if lr.Err != nil {
			errs = append(errs, lr.Err)
			if ctx.Err() != nil {
				return tr, errors.Join(errs...)
			}
		}
	}
	var complete []*LedgerResult
	for _, lr := range tr.Ledgers {
		if lr.Err == nil {
			complete = append(complete, lr)
		}
	}
	if len(complete) == 0 {
		return tr, errors.Join(errs...)
	}
	if err := p.reloadAll(ctx, tr, complete); err != nil {
		errs = append(errs, err)
	}
	if p.o.Trim {
		errs = append(errs, p.trimAll(ctx, tr, complete)...)
	}
	return tr, errors.Join(errs...)
}

// preflight checks, before anything is written, that the broker that will
// be asked to reload the topic answers for it (reachable, credentials
// accepted, topic known), so a broker that refuses leaves the metadata
// untouched.
func (p *Pipeline) preflight(ctx context.Context, ml string) error {
	if p.d.Broker == nil || p.o.SkipReload {
		return nil
	}
	tn, err := mlmeta.ParseMLName(ml)
	if err != nil {
		return &StepError{Target: Target{ML: ml, LedgerID: -1}, Step: StepSelect, Err: err}
	}
	if _, err := p.d.Broker.InternalStats(ctx, tn); err != nil {
		return &StepError{Target: Target{ML: ml, LedgerID: -1}, Step: StepSelect,
			Err: fmt.Errorf("%w: the broker that must reload the topic does not answer for it (nothing was changed): %w", ErrReload, err)}
	}
	return nil
}

func (lr *LedgerResult) fail(err error) *LedgerResult {
	lr.Outcome = OutcomeFailed
	lr.Err = err
	return lr
}

// selected is what the select step read.
type selected struct {
	snap *mlmeta.Snapshot
	li   *mlproto.ManagedLedgerInfo_LedgerInfo
	md   *metadata.LedgerMetadata // nil when complete and BK metadata is gone
}

// selectLedger checks that t may be offloaded and reads both metadata.
// A complete ledger is returned without BookKeeper checks (its BookKeeper
// copy may be gone).
func (p *Pipeline) selectLedger(ctx context.Context, t Target) (*selected, error) {
	snap, err := p.d.ML.Get(ctx, t.ML)
	if err != nil {
		return nil, err
	}
	ls := snap.Info.GetLedgerInfo()
	idx := -1
	for i, li := range ls {
		if li.GetLedgerId() == t.LedgerID {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("%w: %w (it has %d ledgers)", ErrNotEligible, mlmeta.ErrLedgerNotFound, len(ls))
	}
	li := ls[idx]
	if idx == len(ls)-1 {
		return nil, fmt.Errorf("%w: %w: ledger %d is the managed ledger's current ledger", ErrNotEligible, mlmeta.ErrLastLedger, t.LedgerID)
	}
	s := &selected{snap: snap, li: li}
	if li.GetOffloadContext().GetComplete() {
		return s, nil
	}
	if li.GetEntries() <= 0 || li.GetSize() <= 0 {
		return nil, fmt.Errorf("%w: %w (entries %d, size %d)", ErrNotEligible, mlmeta.ErrEmptyLedger, li.GetEntries(), li.GetSize())
	}
	md, err := p.d.Ledgers.ReadLedger(ctx, t.LedgerID)
	if errors.Is(err, metadata.ErrNoSuchLedger) {
		return nil, fmt.Errorf("%w: the BookKeeper ledger does not exist: %w", ErrNotEligible, err)
	}
	if err != nil {
		return nil, err
	}
	if !md.Closed() {
		return nil, fmt.Errorf("%w: %w (BookKeeper state %s)", ErrNotEligible, metadata.ErrNotClosed, md.State)
	}
	if md.LastEntryID+1 != li.GetEntries() || md.Length != li.GetSize() {
		return nil, fmt.Errorf("%w: managed ledger says %d entries / %d bytes, BookKeeper %d entries / %d bytes",
			ErrMetadataMismatch, li.GetEntries(), li.GetSize(), md.LastEntryID+1, md.Length)
	}
	s.md = md
	return s, nil
}

// offloadOne runs select..commit for one ledger.
func (p *Pipeline) offloadOne(ctx context.Context, t Target) *LedgerResult {
	lr := &LedgerResult{Target: t}
	var sel *selected
	if err := p.step(ctx, t, StepSelect, lr, func() error {
		var err error
		sel, err = p.selectLedger(ctx, t)
		return err
	}); err != nil {
		return lr.fail(err)
	}
	li := sel.li
	oc := li.GetOffloadContext()
	lr.Entries, lr.Bytes = li.GetEntries(), li.GetSize()
	lr.Before = stateOf(li)
	prev, hadPrev := mlmeta.AttemptUUID(oc)
	if oc.GetComplete() {
		lr.Outcome, lr.UUID = OutcomeAlreadyOffloaded, prev
		lr.DataKey, lr.IndexKey = format.DataKey(prev, t.LedgerID), format.IndexKey(prev, t.LedgerID)
		return lr
	}
	if err := p.hit(ctx, FPAfterSelect, t); err != nil {
		return lr.fail(&StepError{Target: t, Step: StepSelect, Err: err})
	}

	// An earlier attempt whose objects are whole is committed as it is.
	if hadPrev && mlmeta.DriverFromMetadata(oc.GetDriverMetadata()).Bucket == p.o.Driver.Bucket {
		if done := p.adopt(ctx, t, sel, prev, lr); done {
			return lr
		}
		if lr.Err != nil {
			return lr
		}
	}

	id := uuid.New()
	lr.UUID = id
	if err := p.step(ctx, t, StepPrepare, lr, func() error {
		old, _, err := p.d.ML.PrepareOffload(ctx, t.ML, t.LedgerID, id, p.o.Driver)
		if err != nil {
			return notEligible(err)
		}
		if old != uuid.Nil {
			lr.Superseded = append(lr.Superseded, old)
			if mlmeta.DriverFromMetadata(oc.GetDriverMetadata()).Bucket == p.o.Driver.Bucket {
				lr.Leftovers = append(lr.Leftovers, p.removeAttempt(ctx, old, t.LedgerID)...)
			} else {
				b := mlmeta.DriverFromMetadata(oc.GetDriverMetadata()).Bucket
				lr.Leftovers = append(lr.Leftovers, "bucket "+b+": "+format.DataKey(old, t.LedgerID), "bucket "+b+": "+format.IndexKey(old, t.LedgerID))
			}
		}
		return nil
	}); err != nil {
		return lr.fail(err)
	}
	if err := p.hit(ctx, FPAfterPrepare, t); err != nil {
		return lr.fail(&StepError{Target: t, Step: StepPrepare, Err: err})
	}

	var cp *copied
	if err := p.step(ctx, t, StepCopy, lr, func() error {
		var err error
		tw := &writeTracker{Writer: p.d.Store}
		cp, err = p.copy(ctx, t, sel.md, id, tw)
		if err != nil {
			p.abandon(ctx, t, id, oc, tw.wrote.Load(), lr)
		}
		return err
	}); err != nil {
		return lr.fail(err)
	}
	lr.ObjectBytes, lr.Blocks = cp.res.DataObjectLength, cp.res.Blocks
	lr.DataKey, lr.IndexKey = cp.res.DataKey, cp.res.IndexKey
	if err := p.hit(ctx, FPAfterCopy, t); err != nil {
		return lr.fail(&StepError{Target: t, Step: StepCopy, Err: err})
	}

	if err := p.step(ctx, t, StepVerify, lr, func() error {
		rep, err := p.verifyUploaded(ctx, t, cp)
		lr.Verify = rep
		if errors.Is(err, ErrVerify) {
			lr.Leftovers = append(lr.Leftovers, p.removeAttempt(ctx, id, t.LedgerID)...)
		}
		return err
	}); err != nil {
		return lr.fail(err)
	}
	if err := p.hit(ctx, FPAfterVerify, t); err != nil {
		return lr.fail(&StepError{Target: t, Step: StepVerify, Err: err})
	}

	if err := p.step(ctx, t, StepCommit, lr, func() error { return p.commit(ctx, t, id, lr) }); err != nil {
		return lr.fail(err)
	}
	lr.Outcome = OutcomeOffloaded
	if err := p.hit(ctx, FPAfterCommit, t); err != nil {
		return lr.fail(&StepError{Target: t, Step: StepCommit, Err: err})
	}
	p.log.Info("ledger offloaded", "ml", t.ML, "ledger", t.LedgerID, "uuid", id, "bytes", lr.Bytes,
		"object_bytes", lr.ObjectBytes, "blocks", lr.Blocks, "verified", lr.Verify.Level)
	return lr
}

// adopt verifies the objects of an earlier unfinished attempt against the
// bookies and commits them. It returns true when the ledger is committed;
// false with lr.Err unset when a new attempt should be made; false with
// lr.Err set on a failure that must stop the ledger (store unreachable,
// conflict).
func (p *Pipeline) adopt(ctx context.Context, t Target, sel *selected, prev uuid.UUID, lr *LedgerResult) bool {
	var rep VerifyReport
	err := p.step(ctx, t, StepVerify, lr, func() error {
		var err error
		rep, err = p.verifyStored(ctx, t, sel.md, prev)
		return err
	})
	if errors.Is(err, blob.ErrNotFound) || errors.Is(err, ErrVerify) || errors.Is(err, format.ErrCorruptIndex) ||
		errors.Is(err, format.ErrCorruptBlock) || errors.Is(err, format.ErrFormatVersion) {
		p.log.Info("earlier attempt not usable; starting a new one", "ml", t.ML, "ledger", t.LedgerID, "uuid", prev, "reason", err)
		lr.Steps = lr.Steps[:len(lr.Steps)-1]
		return false
	}
	if err != nil {
		lr.fail(err)
		return false
	}
	lr.UUID, lr.Verify = prev, rep
	lr.DataKey, lr.IndexKey = format.DataKey(prev, t.LedgerID), format.IndexKey(prev, t.LedgerID)
	lr.ObjectBytes, lr.Blocks = rep.ObjectBytes, rep.Blocks
	if err := p.hit(ctx, FPAfterVerify, t); err != nil {
		lr.fail(&StepError{Target: t, Step: StepVerify, Err: err})
		return false
	}
	if err := p.step(ctx, t, StepCommit, lr, func() error { return p.commit(ctx, t, prev, lr) }); err != nil {
		lr.fail(err)
		return false
	}
	lr.Outcome = OutcomeAdopted
	if err := p.hit(ctx, FPAfterCommit, t); err != nil {
		lr.fail(&StepError{Target: t, Step: StepCommit, Err: err})
		return false
	}
	p.log.Info("earlier attempt verified and committed", "ml", t.ML, "ledger", t.LedgerID, "uuid", prev)
	return true
}

// commit marks attempt id complete. A conflict (another UUID stored)
// removes this attempt's objects: nothing references them.
func (p *Pipeline) commit(ctx context.Context, t Target, id uuid.UUID, lr *LedgerResult) error {
	_, err := p.d.ML.CompleteOffload(ctx, t.ML, t.LedgerID, id)
	if errors.Is(err, mlmeta.ErrOffloadConflict) {
		lr.Leftovers = append(lr.Leftovers, p.removeAttempt(ctx, id, t.LedgerID)...)
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return notEligible(err)
}

// notEligible marks mlmeta's refusals as ErrNotEligible.
func notEligible(err error) error {
	if errors.Is(err, mlmeta.ErrLastLedger) || errors.Is(err, mlmeta.ErrLedgerNotFound) ||
		errors.Is(err, mlmeta.ErrEmptyLedger) || errors.Is(err, mlmeta.ErrAlreadyOffloaded) {
		return fmt.Errorf("%w: %w", ErrNotEligible, err)
	}
	return err
}

// abandon undoes the prepare of attempt id after a failed copy, once its
// objects are known to be gone (none was written, or all were removed), so a failed run leaves the metadata as it
// found it. When that cannot be established the attempt stays recorded and
// the next run replaces it.
func (p *Pipeline) abandon(ctx context.Context, t Target, id uuid.UUID, before *mlproto.OffloadContext, wrote bool, lr *LedgerResult) {
	if wrote {
		if left := p.removeAttempt(ctx, id, t.LedgerID); len(left) > 0 {
			lr.Leftovers = append(lr.Leftovers, left...)
			return
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := p.d.ML.AbandonOffload(cctx, t.ML, t.LedgerID, id, before); err != nil {
		p.log.Warn("cannot undo the prepare after a failed copy; the next run replaces the attempt", "ml", t.ML, "ledger", t.LedgerID, "uuid", id, "err", err)
		return
	}
	lr.UUID = uuid.Nil
}

// cleanupTimeout bounds object removal after a failure, which runs even when
// the caller's context has ended.
const cleanupTimeout = 30 * time.Second

// removeAttempt deletes the objects and incomplete multipart uploads of
// attempt id and returns what could not be removed.
func (p *Pipeline) removeAttempt(ctx context.Context, id uuid.UUID, ledgerID int64) []string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var left []string
	dataKey := format.DataKey(id, ledgerID)
	for _, k := range []string{format.IndexKey(id, ledgerID), dataKey} {
		if err := p.d.Store.Delete(ctx, k); err != nil {
			p.log.Warn("cannot delete object of a superseded attempt; the sweeper will", "key", k, "err", err)
			left = append(left, k)
		}
	}
	if ml, ok := p.d.Store.(blob.MultipartLister); ok {
		ups, err := ml.ListMultipart(ctx, dataKey)
		if err != nil {
			left = append(left, "multipart uploads of "+dataKey)
		}
		for _, u := range ups {
			if u.Key != dataKey {
				continue
			}
			if err := ml.AbortMultipart(ctx, u.Key, u.UploadID); err != nil && !errors.Is(err, blob.ErrNotFound) {
				left = append(left, "multipart upload "+u.UploadID+" of "+u.Key)
			}
		}
	}
	return left
}

// stateOf is the stored state of a non-last ledger.
func stateOf(li *mlproto.ManagedLedgerInfo_LedgerInfo) mlmeta.LedgerState {
	oc := li.GetOffloadContext()
	_, has := mlmeta.AttemptUUID(oc)
	switch {
	case oc.GetComplete() && oc.GetBookkeeperDeleted():
		return mlmeta.StateOffloadedBKDeleted
	case oc.GetComplete():
		return mlmeta.StateOffloaded
	case has:
		return mlmeta.StateOffloading
	}
	return mlmeta.StateBookKeeper
}
