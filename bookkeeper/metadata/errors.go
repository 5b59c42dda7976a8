package metadata

import "errors"

var (
	// ErrNoSuchLedger is returned when a ledger's metadata znode does not
	// exist (never created, or deleted).
	ErrNoSuchLedger = errors.New("metadata: no such ledger")
	// ErrCorrupt is returned (wrapped, with details) for metadata bytes that
	// can not be parsed: bad header, unknown format version, bad protobuf or
	// text, or values that violate BookKeeper's own invariants.
	ErrCorrupt = errors.New("metadata: corrupt ledger metadata")
	// ErrBadLayout is returned for a LAYOUT znode that can not be parsed or
	// names a ledger manager this package does not support.
	ErrBadLayout = errors.New("metadata: unsupported or corrupt LAYOUT")
	// ErrNoCluster is returned when the ledgers root znode does not exist.
	ErrNoCluster = errors.New("metadata: ledgers root does not exist")
	// ErrBadBookieInfo is returned for a bookie registration whose
	// BookieServiceInfoFormat can not be parsed or has no bookie-rpc endpoint.
	ErrBadBookieInfo = errors.New("metadata: corrupt bookie service info")
	// ErrBookieNotFound is returned when a bookie id is registered nowhere
	// and is not itself a host:port address.
	ErrBookieNotFound = errors.New("metadata: bookie not registered and id is not host:port")
	// ErrNotClosed is returned when an operation needs a CLOSED ledger and
	// the ledger is OPEN or IN_RECOVERY.
	ErrNotClosed = errors.New("metadata: ledger is not closed")
	// ErrChanged is returned by DeleteLedger when the ledger's metadata no
	// longer matches what the caller expects (not closed, other lastEntryId
	// or length); nothing is deleted.
	ErrChanged = errors.New("metadata: ledger metadata changed; not deleting")
	// ErrInvalidID is returned for a negative ledger id or an id that does
	// not fit the layout's path form.
	ErrInvalidID = errors.New("metadata: invalid ledger id")
)
