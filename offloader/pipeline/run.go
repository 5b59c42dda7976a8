package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// TopicResult is what RunTopic did to one managed ledger.
type TopicResult struct {
	ML      string
	Ledgers []*LedgerResult
	// Reload is the topic's reload (one for all its ledgers; the last one
	// when the ledgers took several batches).
	Reload ReloadResult
}

// Run offloads one ledger: RunTopic with a single ledger.
func (p *Pipeline) Run(ctx context.Context, t mledger.LedgerRef) (*LedgerResult, error) {
	tr, err := p.RunTopic(ctx, t.ML, []int64{t.LedgerID})
	if tr == nil || len(tr.Ledgers) == 0 {
		return nil, err
	}
	return tr.Ledgers[0], err
}

// RunTopic offloads the given ledgers of managed ledger ml together, so
// the managed-ledger znode that the broker also writes (at every ledger
// rollover) sees as few writes as possible:
//
//  1. select every ledger (one read of the managed ledger);
//  2. verify the objects of earlier unfinished attempts (adopted as they are
//     when whole);
//  3. prepare the others in one compare-and-set;
//  4. copy and verify them one after the other;
//  5. commit every verified ledger in one compare-and-set (which also
//     undoes the prepare of copies that failed without leaving objects and,
//     with Options.Trim and no deletion lag, marks bookkeeperDeleted);
//  6. with Options.Trim, mark the complete ledgers whose lag has passed in
//     one compare-and-set;
//  7. reload the topic once (unload, unless the broker already serves every
//     ledger from the store and nothing is to be trimmed);
//  8. compare-and-delete the marked BookKeeper ledgers.
//
// Ledgers to copy go in batches of at most Options.BatchBytes, steps 1–8
// per batch. Each step starts from the stored state, so a process killed
// anywhere resumes from ZooKeeper alone. A ledger that fails does not stop
// the others; the returned error joins every ledger's error (each a
// *StepError). Every ledger gets one LedgerResult, in the order given.
func (p *Pipeline) RunTopic(ctx context.Context, ml string, ledgers []int64) (*TopicResult, error) {
	tr := &TopicResult{ML: ml}
	if err := p.preflight(ctx, ml); err != nil {
		for _, id := range ledgers {
			lr := &LedgerResult{LedgerRef: mledger.LedgerRef{ML: ml, LedgerID: id}}
			tr.Ledgers = append(tr.Ledgers, lr.fail(err))
		}
		return tr, err
	}
	var todo []int64 // each ledger once
	order := make(map[int64]int, len(ledgers))
	for _, id := range ledgers {
		if _, dup := order[id]; !dup {
			order[id] = len(todo)
			todo = append(todo, id)
		}
	}
	for len(todo) > 0 && ctx.Err() == nil {
		todo = p.runBatch(ctx, tr, todo)
	}
	for _, id := range todo {
		t := mledger.LedgerRef{ML: ml, LedgerID: id}
		tr.Ledgers = append(tr.Ledgers, (&LedgerResult{LedgerRef: t}).fail(&StepError{LedgerRef: t, Step: StepSelect, Err: ctx.Err()}))
	}
	slices.SortStableFunc(tr.Ledgers, func(a, b *LedgerResult) int { return order[a.LedgerID] - order[b.LedgerID] })
	var errs []error
	for _, lr := range tr.Ledgers {
		if lr.Err != nil && !slices.Contains(errs, lr.Err) {
			errs = append(errs, lr.Err)
		}
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
	tn, err := mledger.ParseMLName(ml)
	if err != nil {
		return &StepError{LedgerRef: mledger.LedgerRef{ML: ml, LedgerID: -1}, Step: StepSelect, Err: err}
	}
	if _, err := p.d.Broker.InternalStats(ctx, tn); err != nil {
		return &StepError{LedgerRef: mledger.LedgerRef{ML: ml, LedgerID: -1}, Step: StepSelect,
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
	li *mlproto.ManagedLedgerInfo_LedgerInfo
	md *metadata.LedgerMetadata // nil when complete and BK metadata is gone
}

// selectIn checks that t may be offloaded, from the managed ledger as read
// in snap and the BookKeeper metadata. A complete ledger is returned
// without BookKeeper checks (its BookKeeper copy may be gone).
func (p *Pipeline) selectIn(ctx context.Context, snap *mledger.Snapshot, t mledger.LedgerRef) (*selected, error) {
	ls := snap.Info.GetLedgerInfo()
	idx := -1
	for i, li := range ls {
		if li.GetLedgerId() == t.LedgerID {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("%w: %w (it has %d ledgers)", ErrNotEligible, mledger.ErrLedgerNotFound, len(ls))
	}
	li := ls[idx]
	if idx == len(ls)-1 {
		return nil, fmt.Errorf("%w: %w: ledger %d is the managed ledger's current ledger", ErrNotEligible, mledger.ErrLastLedger, t.LedgerID)
	}
	s := &selected{li: li}
	if li.GetOffloadContext().GetComplete() {
		return s, nil
	}
	if li.GetEntries() <= 0 || li.GetSize() <= 0 {
		return nil, fmt.Errorf("%w: %w (entries %d, size %d)", ErrNotEligible, mledger.ErrEmptyLedger, li.GetEntries(), li.GetSize())
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

// work is one ledger's progress through a batch.
type work struct {
	lr     *LedgerResult
	sel    *selected
	before *mlproto.OffloadContext // the stored context at select
	id     uuid.UUID               // the attempt to commit
	after  *mlproto.OffloadContext // the stored context after the commit
	// objects: a failed verify left wrong objects of attempt id (or a
	// commit met a conflict), to be removed once the write has landed.
	objects bool
}

// runBatch runs steps 1–8 of RunTopic on the ledgers ids, appending their
// results to tr, and returns the ledgers left for the next batch (the
// batch's byte bound was reached): select them, adopt the whole objects of
// earlier attempts, prepare the others, copy and verify them, commit, and
// finish (mark the trims, reload the topic, delete the BookKeeper copies).
func (p *Pipeline) runBatch(ctx context.Context, tr *TopicResult, ids []int64) (rest []int64) {
	b, rest := p.selectBatch(ctx, tr, ids)
	if b == nil {
		return rest // stopped while selecting
	}
	adopted, fresh := p.adoptAll(ctx, b.toCopy)
	copied, undo := p.copyAll(ctx, p.prepareAll(ctx, tr.ML, fresh))
	done := append(b.complete, p.commitAll(ctx, tr.ML, append(adopted, copied...), undo)...)
	p.finish(ctx, tr, done)
	return rest
}

// batch is what the select step chose for one batch.
type batch struct {
	complete []*work // offloaded before this run
	toCopy   []*work // to adopt or copy
}

// selectBatch runs the select step on the ledgers ids (one read of the
// managed ledger), appending their results to tr, and returns the batch
// and the ledgers beyond its byte bound. A nil batch: ctx ended while
// selecting (rest holds the ledgers not selected; those selected before
// have failed with ctx's error, as the one being selected).
func (p *Pipeline) selectBatch(ctx context.Context, tr *TopicResult, ids []int64) (b *batch, rest []int64) {
	snap, snapErr := p.d.ML.Get(ctx, tr.ML)
	b = &batch{}
	var size int64
	for i, id := range ids {
		t := mledger.LedgerRef{ML: tr.ML, LedgerID: id}
		lr := &LedgerResult{LedgerRef: t}
		var sel *selected
		if err := p.step(ctx, t, StepSelect, lr, func() error {
			if snapErr != nil {
				return snapErr
			}
			var err error
			sel, err = p.selectIn(ctx, snap, t)
			return err
		}); err != nil {
			tr.Ledgers = append(tr.Ledgers, lr.fail(err))
			if ctx.Err() != nil {
				// The batch stops here: nothing is done to the ledgers
				// it had selected either, and each says so (they would
				// otherwise end with no outcome, an empty success).
				for _, w := range slices.Concat(b.complete, b.toCopy) {
					if w.lr.Err == nil {
						w.lr.fail(&StepError{LedgerRef: w.lr.LedgerRef, Step: StepSelect, Err: ctx.Err()})
					}
				}
				return nil, append(rest, ids[i+1:]...)
			}
			continue
		}
		li := sel.li
		oc := li.GetOffloadContext()
		lr.Entries, lr.Bytes = li.GetEntries(), li.GetSize()
		lr.Before = stateOf(li)
		if oc.GetComplete() {
			prev, _ := mledger.AttemptUUID(oc)
			lr.Outcome, lr.UUID = OutcomeAlreadyOffloaded, prev
			lr.DataKey, lr.IndexKey = format.DataKey(prev, id), format.IndexKey(prev, id)
			tr.Ledgers = append(tr.Ledgers, lr)
			b.complete = append(b.complete, &work{lr: lr, sel: sel, before: oc, id: prev, after: oc})
			continue
		}
		if len(b.toCopy) > 0 && size+lr.Bytes > p.o.BatchBytes {
			rest = append(rest, id) // selected again, fresh, in the next batch
			continue
		}
		size += lr.Bytes
		tr.Ledgers = append(tr.Ledgers, lr)
		if err := p.hit(ctx, FPAfterSelect, t); err != nil {
			lr.fail(&StepError{LedgerRef: t, Step: StepSelect, Err: err})
			continue
		}
		b.toCopy = append(b.toCopy, &work{lr: lr, sel: sel, before: oc})
	}
	return b, rest
}

// adoptAll verifies the objects of the earlier unfinished attempts of ws
// (those in this offloader's bucket, prepared under a UUID that names no
// object) and returns the ledgers whose objects are whole, to be committed
// as they are, and those to copy afresh. A ledger whose verify failed
// otherwise (store unreachable) is in neither: it has failed.
//
// An attempt whose recorded UUID also names its objects (an older
// tierkeeper's, or the broker's own) is never adopted, whole or not: a
// broker holding that attempt in memory removes the objects of the UUID
// it holds when it next prepares an offload of the ledger, and after a
// commit they would be the ledger's only copy but for BookKeeper's (see
// docs/design.md invariant 11). A fresh attempt supersedes it.
func (p *Pipeline) adoptAll(ctx context.Context, ws []*work) (adopted, fresh []*work) {
	for _, w := range ws {
		prev, had := mledger.AttemptUUID(w.before)
		if !had || mledger.DriverFromMetadata(w.before.GetDriverMetadata()).Bucket != p.o.Driver.Bucket {
			fresh = append(fresh, w)
			continue
		}
		if stored, _ := mledger.StoredUUID(w.before); stored == prev {
			p.log.Info("earlier attempt records the UUID its objects are named by (a broker may remove them); starting a new one",
				"ml", w.lr.ML, "ledger", w.lr.LedgerID, "uuid", prev)
			fresh = append(fresh, w)
			continue
		}
		switch p.adopt(ctx, w, prev) {
		case attemptWhole:
			adopted = append(adopted, w)
		case attemptUnusable:
			fresh = append(fresh, w)
		}
	}
	return adopted, fresh
}

// attemptCheck is what adopt found of an earlier attempt's objects.
type attemptCheck int

const (
	// attemptFailed: the check failed (store unreachable); the ledger
	// stops with the failure.
	attemptFailed attemptCheck = iota
	// attemptWhole: the objects are whole; the attempt is committed.
	attemptWhole
	// attemptUnusable: missing or wrong objects; a new attempt is made.
	attemptUnusable
)

// adopt verifies the objects of an earlier unfinished attempt prev
// against the bookies.
func (p *Pipeline) adopt(ctx context.Context, w *work, prev uuid.UUID) attemptCheck {
	lr, t := w.lr, w.lr.LedgerRef
	var rep VerifyReport
	err := p.step(ctx, t, StepVerify, lr, func() error {
		var err error
		rep, err = p.verifyStored(ctx, t, w.sel.md, prev)
		return err
	})
	if errors.Is(err, blob.ErrNotFound) || errors.Is(err, ErrVerify) || errors.Is(err, format.ErrCorruptIndex) ||
		errors.Is(err, format.ErrCorruptBlock) || errors.Is(err, format.ErrFormatVersion) {
		p.log.Info("earlier attempt not usable; starting a new one", "ml", t.ML, "ledger", t.LedgerID, "uuid", prev, "reason", err)
		lr.Steps = lr.Steps[:len(lr.Steps)-1]
		return attemptUnusable
	}
	if err != nil {
		lr.fail(err)
		return attemptFailed
	}
	w.id, lr.UUID, lr.Verify = prev, prev, rep
	lr.DataKey, lr.IndexKey = format.DataKey(prev, t.LedgerID), format.IndexKey(prev, t.LedgerID)
	lr.ObjectBytes, lr.Blocks = rep.ObjectBytes, rep.Blocks
	lr.Outcome = OutcomeAdopted
	if err := p.hit(ctx, FPAfterVerify, t); err != nil {
		lr.fail(&StepError{LedgerRef: t, Step: StepVerify, Err: err})
		return attemptFailed
	}
	return attemptWhole
}

// prepareAll records a fresh attempt for each of ws in one compare-and-set
// and removes the objects of the attempts they replace. It returns the
// ledgers prepared.
func (p *Pipeline) prepareAll(ctx context.Context, ml string, ws []*work) []*work {
	if len(ws) == 0 {
		return nil
	}
	edits := make([]mledger.Edit, len(ws))
	lrs := make([]*LedgerResult, len(ws))
	for i, w := range ws {
		// The prepare records a prepare UUID (tagged: tells our attempts
		// from the broker's); the objects, and the commit, carry its object
		// UUID, so a broker's cleanup of the prepared attempt it may hold
		// in memory removes none of them (docs/design.md invariant 11).
		prep := mledger.NewAttemptUUID()
		w.id = mledger.ObjectUUID(prep)
		w.lr.UUID, lrs[i] = w.id, w.lr
		e, err := mledger.PrepareEdit(w.lr.LedgerID, prep, p.o.Driver)
		if err != nil {
			for _, lr := range lrs {
				lr.fail(&StepError{LedgerRef: lr.LedgerRef, Step: StepPrepare, Err: err})
			}
			return nil
		}
		edits[i] = e
	}
	ok := p.batchStep(ctx, lrs, StepPrepare, func() (map[int64]error, error) {
		br, err := p.d.ML.UpdateOffloadContexts(ctx, ml, edits)
		if err != nil {
			return nil, err
		}
		per := map[int64]error{}
		for i, lu := range br.Ledgers {
			if lu.Err != nil {
				per[lu.LedgerID] = notEligible(lu.Err)
				continue
			}
			w := ws[i]
			old := mledger.Superseded(lu.Before, w.id)
			if old == uuid.Nil {
				continue
			}
			w.lr.Superseded = append(w.lr.Superseded, old)
			if b := mledger.DriverFromMetadata(lu.Before.GetDriverMetadata()).Bucket; b == p.o.Driver.Bucket {
				w.lr.Leftovers = append(w.lr.Leftovers, p.removeAttempt(ctx, old, lu.LedgerID)...)
			} else {
				w.lr.Leftovers = append(w.lr.Leftovers, "bucket "+b+": "+format.DataKey(old, lu.LedgerID), "bucket "+b+": "+format.IndexKey(old, lu.LedgerID))
			}
		}
		return per, nil
	})
	var out []*work
	for _, w := range ws {
		if !slices.Contains(ok, w.lr) {
			continue
		}
		if err := p.hit(ctx, FPAfterPrepare, w.lr.LedgerRef); err != nil {
			w.lr.fail(&StepError{LedgerRef: w.lr.LedgerRef, Step: StepPrepare, Err: err})
			continue
		}
		out = append(out, w)
	}
	return out
}

// copyAll copies and verifies the prepared ledgers ws one after the
// other and returns those to commit and those whose prepare is to be
// undone (failed copies that left no object referenced only by it; with
// w.objects, wrong objects to remove once the undo has landed). The
// others failed with objects that may remain: their prepare stays, so the
// next run adopts or replaces the attempt.
func (p *Pipeline) copyAll(ctx context.Context, ws []*work) (ready, undo []*work) {
	for _, w := range ws {
		switch p.copyAndVerify(ctx, w) {
		case copyVerified:
			ready = append(ready, w)
		case copyUndo:
			undo = append(undo, w)
		}
	}
	return ready, undo
}

// copyEnd is how copyAndVerify left a ledger.
type copyEnd int

const (
	// copyVerified: copied and verified, to be committed.
	copyVerified copyEnd = iota
	// copyUndo: failed; its prepare is to be undone.
	copyUndo
	// copyKeep: failed, and objects of the attempt may remain and must
	// stay referenced: its prepare stays recorded.
	copyKeep
)

// copyAndVerify copies a prepared ledger and verifies the objects. The
// objects of a failed copy are removed at once, after a fence check, so
// that an upload the store could not abort stays referenced by the
// prepare (copyKeep); a verify that finds them wrong sets w.objects
// (copyUndo: removed after the undo).
func (p *Pipeline) copyAndVerify(ctx context.Context, w *work) copyEnd {
	lr, t := w.lr, w.lr.LedgerRef
	var cp *copied
	failed := copyUndo
	if err := p.step(ctx, t, StepCopy, lr, func() error {
		var err error
		tw := &writeTracker{Writer: p.d.Store}
		cp, err = p.copy(ctx, t, w.sel.md, w.id, tw)
		if err != nil && tw.wrote.Load() {
			// Remove what the failed copy wrote, but only while the lease is
			// held (a fence check), and keep the prepare (so the next run
			// replaces the attempt and removes them) when some remain.
			if ferr := p.checkFence(ctx); ferr != nil {
				p.log.Warn("objects of a failed copy kept: the lease is not held", "ml", t.ML, "ledger", t.LedgerID, "uuid", w.id, "err", ferr)
				failed = copyKeep
			} else if rm := p.removeAttempt(ctx, w.id, t.LedgerID); len(rm) > 0 {
				lr.Leftovers = append(lr.Leftovers, rm...)
				failed = copyKeep
			}
		}
		return err
	}); err != nil {
		lr.fail(err)
		return failed
	}
	lr.ObjectBytes, lr.Blocks = cp.res.DataObjectLength, cp.res.Blocks
	lr.Copy = cp.stats
	lr.DataKey, lr.IndexKey = cp.res.DataKey, cp.res.IndexKey
	if err := p.hit(ctx, FPAfterCopy, t); err != nil {
		lr.fail(&StepError{LedgerRef: t, Step: StepCopy, Err: err})
		return copyKeep
	}
	if err := p.step(ctx, t, StepVerify, lr, func() error {
		rep, err := p.verifyUploaded(ctx, t, cp)
		lr.Verify = rep
		if errors.Is(err, ErrVerify) {
			w.objects = true // wrong objects: undo, then remove them
		}
		return err
	}); err != nil {
		lr.fail(err)
		if w.objects {
			return copyUndo
		}
		return copyKeep
	}
	if err := p.hit(ctx, FPAfterVerify, t); err != nil {
		lr.fail(&StepError{LedgerRef: t, Step: StepVerify, Err: err})
		return copyKeep
	}
	lr.Outcome = OutcomeOffloaded
	return copyVerified
}

// commitAll marks every ready ledger complete in one compare-and-set, and
// in the same write undoes the prepare of each of undo (failed copies that
// left no object), so a failed run leaves their metadata as it found it.
// With Options.Trim and no deletion lag the same write marks the committed
// ledgers bookkeeperDeleted (the BookKeeper copy is deleted only after the
// reload that follows). When ctx has ended nothing is committed (the
// caller may have lost the topic to another offloader; the next run adopts
// the verified objects), but the undoing is still written, bounded by
// cleanupTimeout (and fenced by the job's lease, which ctx carries).
//
// Objects are removed only after the write, and only when it landed (every
// write is fenced by the job's lease, so this replica still held it) or,
// when nothing was written, a fence check passed: the objects of a
// conflict (another UUID stored: nothing references them), and those of
// an undone attempt (once the stored context no longer names it, no other
// replica can adopt it). It returns the ledgers committed.
func (p *Pipeline) commitAll(ctx context.Context, ml string, ready, undo []*work) []*work {
	if err := ctx.Err(); err != nil {
		for _, w := range ready {
			w.lr.fail(&StepError{LedgerRef: w.lr.LedgerRef, Step: StepCommit, Err: err})
		}
		ready = nil
	}
	if len(ready)+len(undo) == 0 {
		return nil
	}
	wctx := ctx // a commit ends with the caller's context
	if len(ready) == 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
	}
	markNow := p.o.Trim && p.o.DeletionLag <= 0 && p.mayTrim()
	var edits []mledger.Edit
	lrs := make([]*LedgerResult, len(ready))
	for i, w := range ready {
		e := p.d.ML.CompleteEdit(w.lr.LedgerID, w.id)
		if markNow {
			e.Fn = then(e.Fn, mledger.MarkBookkeeperDeletedEdit(w.lr.LedgerID, w.id).Fn)
		}
		edits, lrs[i] = append(edits, e), w.lr
	}
	for _, w := range undo {
		edits = append(edits, mledger.AbandonEdit(w.lr.LedgerID, w.id, w.before))
	}
	var br *mledger.BatchResult
	write := func() (map[int64]error, error) {
		var err error
		br, err = p.d.ML.UpdateOffloadContexts(wctx, ml, edits)
		if err != nil {
			return nil, err
		}
		per := map[int64]error{}
		for i, lu := range br.Ledgers[:len(ready)] {
			w := ready[i]
			switch {
			case errors.Is(lu.Err, mledger.ErrOffloadConflict):
				w.objects = true // removed below, once the write has landed
				per[lu.LedgerID] = fmt.Errorf("%w: %w", ErrConflict, lu.Err)
			case lu.Err != nil:
				per[lu.LedgerID] = notEligible(lu.Err)
			default:
				w.after = lu.After
			}
		}
		return per, nil
	}
	var ok []*LedgerResult
	if len(ready) > 0 {
		ok = p.batchStep(ctx, lrs, StepCommit, write)
	} else if _, err := write(); err != nil {
		br = nil
	}
	var remove []*work // attempts whose objects nothing references any more
	for i, w := range ready {
		if w.objects && br != nil {
			if lu := br.Ledgers[i]; errors.Is(lu.Err, mledger.ErrOffloadConflict) && !names(lu.After, w.id) {
				remove = append(remove, w)
			}
		}
	}
	for i, w := range undo {
		var err error
		if br == nil {
			err = errors.New("the batch write failed")
		} else {
			err = br.Ledgers[len(ready)+i].Err
		}
		if err != nil {
			p.log.Warn("cannot undo the prepare after a failed copy; the next run replaces the attempt", "ml", ml, "ledger", w.lr.LedgerID, "uuid", w.id, "err", err)
			continue
		}
		if names(br.Ledgers[len(ready)+i].After, w.id) {
			continue // still stored (complete by another writer?): its objects stay
		}
		w.lr.UUID = uuid.Nil
		if w.objects {
			remove = append(remove, w)
		}
	}
	if len(remove) > 0 {
		// A write that landed was fenced by the job's lease; without one, a
		// fence check stands in for it.
		ferr := error(nil)
		if !br.Written {
			ferr = p.checkFence(wctx)
		}
		for _, w := range remove {
			if ferr != nil {
				w.lr.Leftovers = append(w.lr.Leftovers, format.DataKey(w.id, w.lr.LedgerID), format.IndexKey(w.id, w.lr.LedgerID))
				p.log.Warn("objects of an unreferenced attempt kept for the sweeper: the lease is not held", "ml", ml, "ledger", w.lr.LedgerID, "uuid", w.id, "err", ferr)
				continue
			}
			w.lr.Leftovers = append(w.lr.Leftovers, p.removeAttempt(ctx, w.id, w.lr.LedgerID)...)
		}
	}
	var out []*work
	for _, w := range ready {
		lr := w.lr
		if !slices.Contains(ok, lr) {
			continue
		}
		if err := p.hit(ctx, FPAfterCommit, lr.LedgerRef); err != nil {
			lr.fail(&StepError{LedgerRef: lr.LedgerRef, Step: StepCommit, Err: err})
			continue
		}
		if lr.Outcome == OutcomeAdopted {
			p.log.Info("earlier attempt verified and committed", "ml", ml, "ledger", lr.LedgerID, "uuid", w.id)
		} else {
			p.log.Info("ledger offloaded", "ml", ml, "ledger", lr.LedgerID, "uuid", w.id, "bytes", lr.Bytes,
				"object_bytes", lr.ObjectBytes, "blocks", lr.Blocks, "verified", lr.Verify.Level)
		}
		if w.after.GetBookkeeperDeleted() && !p.marked(ctx, lr) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// finish ends a batch whose commits are written: with Options.Trim it
// marks the complete ledgers of done whose deletion lag has passed, then
// reloads the topic once, then deletes the BookKeeper copies of the marked
// ledgers that the broker now reads from the store. Nothing when ctx has
// ended or no ledger is complete.
func (p *Pipeline) finish(ctx context.Context, tr *TopicResult, done []*work) {
	if ctx.Err() != nil || len(done) == 0 {
		return
	}
	var del []*work
	if p.o.Trim {
		del = p.markAll(ctx, tr.ML, done)
	}
	reloaded := p.reloadAll(ctx, tr, done, len(del) > 0)
	if reloaded == nil {
		for _, w := range del {
			w.lr.Trim.Note = "bookkeeperDeleted is set; the BookKeeper ledger is kept until the broker has reloaded (run again)"
		}
		return
	}
	for _, w := range del {
		if slices.Contains(reloaded, w) {
			p.trimBK(ctx, w.lr)
		}
	}
}

// trimBK runs the trim step's delete of lr's BookKeeper ledger; a failure
// leaves the ledger offloaded.
func (p *Pipeline) trimBK(ctx context.Context, lr *LedgerResult) {
	if err := p.step(ctx, lr.LedgerRef, StepTrim, lr, func() error { return p.deleteBK(ctx, lr) }); err != nil {
		lr.Err = err
	}
}

// names reports whether oc records attempt id.
func names(oc *mlproto.OffloadContext, id uuid.UUID) bool {
	stored, ok := mledger.AttemptUUID(oc)
	return ok && stored == id
}

// then applies a and then b.
func then(a, b mledger.Mutator) mledger.Mutator {
	return func(oc *mlproto.OffloadContext, li *mlproto.ManagedLedgerInfo_LedgerInfo) (bool, error) {
		ca, err := a(oc, li)
		if err != nil {
			return false, err
		}
		cb, err := b(oc, li)
		if err != nil {
			return false, err
		}
		return ca || cb, nil
	}
}

// notEligible marks mledger's refusals as ErrNotEligible.
func notEligible(err error) error {
	if errors.Is(err, mledger.ErrLastLedger) || errors.Is(err, mledger.ErrLedgerNotFound) ||
		errors.Is(err, mledger.ErrEmptyLedger) || errors.Is(err, mledger.ErrAlreadyOffloaded) {
		return fmt.Errorf("%w: %w", ErrNotEligible, err)
	}
	return err
}

// cleanupTimeout bounds object removal and the commit after a failure or
// cancellation, which run even when the caller's context has ended.
const cleanupTimeout = 30 * time.Second

// checkFence checks the lease fence of ctx (ignoring its cancellation,
// bounded by cleanupTimeout): nil while the job's lease is held, or when
// the pipeline runs without leases.
func (p *Pipeline) checkFence(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	return p.d.ML.CheckFence(ctx)
}

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
func stateOf(li *mlproto.ManagedLedgerInfo_LedgerInfo) mledger.LedgerState {
	oc := li.GetOffloadContext()
	_, has := mledger.AttemptUUID(oc)
	switch {
	case oc.GetComplete() && oc.GetBookkeeperDeleted():
		return mledger.StateOffloadedBKDeleted
	case oc.GetComplete():
		return mledger.StateOffloaded
	case has:
		return mledger.StateOffloading
	}
	return mledger.StateBookKeeper
}
