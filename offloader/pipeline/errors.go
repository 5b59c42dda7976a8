package pipeline

import (
	"errors"
	"fmt"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Sentinel errors; every error from Run and RunTopic wraps a *StepError and
// one of these (or an error of the layer that failed: mledger, blob,
// bookkeeper client, brokeradmin, context). Test with errors.Is.
var (
	// ErrNotEligible: the ledger must not be offloaded (open or last
	// ledger, no entries, not in the managed ledger, not closed in
	// BookKeeper, BookKeeper ledger gone). Wraps the precise reason
	// (mledger.ErrLastLedger, mledger.ErrEmptyLedger, ...). Nothing was
	// changed.
	ErrNotEligible = errors.New("pipeline: ledger not eligible for offload")
	// ErrMetadataMismatch: the managed ledger's LedgerInfo and the
	// BookKeeper metadata disagree on entries or size. Nothing was changed.
	ErrMetadataMismatch = errors.New("pipeline: managed-ledger and BookKeeper metadata disagree")
	// ErrVerify: the stored objects are not what was read from BookKeeper.
	// Nothing was committed; the objects were removed.
	ErrVerify = errors.New("pipeline: verification failed")
	// ErrConflict: another attempt (another offloader, or the broker) owns
	// the ledger's OffloadContext; this attempt's objects were removed and
	// the stored context left as is. Wraps mledger.ErrOffloadConflict.
	ErrConflict = errors.New("pipeline: offload conflict")
	// ErrReload: the broker could not be made to serve the ledger from the
	// object store. The commit stands (the broker reloads on its own at its
	// next metadata write); running again retries the reload.
	ErrReload = errors.New("pipeline: broker reload failed")
	// ErrTrimRefused: trimming BookKeeper is not safe yet (no confirmed
	// reload) or the BookKeeper ledger changed; nothing was deleted.
	ErrTrimRefused = errors.New("pipeline: not trimming BookKeeper")
	// ErrForeignBucket: the offload context names a bucket other than the
	// one this offloader reads (the broker offloaded the ledger elsewhere,
	// or another cluster's offloader did), so its objects cannot be
	// checked; nothing is deleted on their account.
	ErrForeignBucket = errors.New("pipeline: objects in a bucket this offloader does not read")
	// ErrFailpoint is returned by the failpoint action "error".
	ErrFailpoint = errors.New("pipeline: failpoint")
)

// StepError says which step of which ledger failed.
type StepError struct {
	mledger.LedgerRef
	Step Step
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("%s ledger %d: %s: %v", e.ML, e.LedgerID, e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }
