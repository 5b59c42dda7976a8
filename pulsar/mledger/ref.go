package mledger

import "fmt"

// LedgerRef names one ledger of one managed ledger: the identity a ledger
// keeps from the policy's candidate through the scheduler to the
// pipeline's commit (and in the status JSON).
type LedgerRef struct {
	// ML is the managed-ledger name (tenant/namespace/persistent/topic).
	ML string `json:"managedLedger"`
	// LedgerID is the BookKeeper ledger id.
	LedgerID int64 `json:"ledgerId"`
}

func (r LedgerRef) String() string { return fmt.Sprintf("%s ledger %d", r.ML, r.LedgerID) }
