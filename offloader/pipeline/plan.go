package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Candidates returns, in stored order, the ledgers of info the pipeline
// takes: closed (not the last), with entries, not complete. upTo >= 0
// keeps only ids <= upTo. With trim, complete ledgers are included too,
// for their trim step: those marked bookkeeperDeleted as well, since a
// crash between the mark and the delete leaves the BookKeeper ledger
// behind (the trim step checks, and deletes it).
func Candidates(info *mlproto.ManagedLedgerInfo, upTo int64, trim bool) []int64 {
	ls := info.GetLedgerInfo()
	var out []int64
	for i, li := range ls {
		if i == len(ls)-1 || (upTo >= 0 && li.GetLedgerId() > upTo) {
			continue
		}
		oc := li.GetOffloadContext()
		switch {
		case oc.GetComplete():
			if trim {
				out = append(out, li.GetLedgerId())
			}
		case li.GetEntries() > 0 && li.GetSize() > 0:
			out = append(out, li.GetLedgerId())
		}
	}
	return out
}

// Action is what a run would do to a ledger.
type Action string

// Actions.
const (
	ActionOffload     Action = "offload"      // copy, verify, commit
	ActionResume      Action = "resume"       // verify an earlier attempt's objects and commit them, else offload anew
	ActionReload      Action = "reload"       // complete; make sure the broker reads from the store
	ActionTrim        Action = "trim"         // complete, lag passed: delete the BookKeeper copy
	ActionTrimPending Action = "trim-pending" // complete, lag not passed
	ActionNone        Action = "none"         // complete and trimmed (or trim not asked)
	ActionRefuse      Action = "refuse"       // not eligible (Reason)
)

// PlanItem is the plan for one ledger.
type PlanItem struct {
	mledger.LedgerRef
	State   mledger.LedgerState
	Entries int64
	Bytes   int64
	Action  Action
	Reason  string
}

// Plan says what RunTopic would do to each ledger, reading the same
// metadata and writing nothing (a dry run).
func (p *Pipeline) Plan(ctx context.Context, ml string, ledgers []int64) ([]PlanItem, error) {
	var out []PlanItem
	snap, snapErr := p.d.ML.Get(ctx, ml)
	if snapErr != nil && ctx.Err() != nil {
		return nil, snapErr
	}
	for _, id := range ledgers {
		t := mledger.LedgerRef{ML: ml, LedgerID: id}
		it := PlanItem{LedgerRef: t}
		sel, err := (*selected)(nil), snapErr
		if err == nil {
			sel, err = p.selectIn(ctx, snap, t)
		}
		if err != nil {
			if ctx.Err() != nil {
				return out, err
			}
			it.Action, it.Reason = ActionRefuse, err.Error()
			out = append(out, it)
			continue
		}
		li := sel.li
		oc := li.GetOffloadContext()
		it.State, it.Entries, it.Bytes = stateOf(li), li.GetEntries(), li.GetSize()
		switch u, has := mledger.AttemptUUID(oc); {
		case !oc.GetComplete() && has:
			it.Action, it.Reason = ActionResume, fmt.Sprintf("attempt %s recorded, not complete", u)
		case !oc.GetComplete():
			it.Action = ActionOffload
		case !p.o.Trim || oc.GetBookkeeperDeleted():
			it.Action = ActionNone
			if p.d.Broker != nil && !p.o.SkipReload {
				it.Action = ActionReload
			}
		default:
			nb := time.UnixMilli(oc.GetTimestamp()).Add(p.o.DeletionLag)
			if p.d.Now().Before(nb) {
				it.Action, it.Reason = ActionTrimPending, "deletion lag ends "+nb.Format(time.RFC3339)
			} else {
				it.Action = ActionTrim
			}
		}
		out = append(out, it)
	}
	return out, nil
}
