package mledger

import "errors"

// Sentinel errors. Every error returned by this package wraps one of these
// (or a go-zookeeper error such as zk.ErrConnectionClosed, zk.ErrNoServer or
// zk.ErrSessionExpired, or a context error), so callers branch with errors.Is.
var (
	// ErrInvalidName is returned for a topic name, managed-ledger name or
	// znode name that Pulsar would reject or that cannot be decoded.
	ErrInvalidName = errors.New("mledger: invalid name")

	// ErrNotFound is returned when the managed-ledger znode does not exist.
	ErrNotFound = errors.New("mledger: managed ledger not found")

	// ErrCorrupt is returned when a znode value is not a ManagedLedgerInfo
	// (plain or compression-wrapped) that Pulsar could read: truncated or
	// garbled protobuf, missing required fields, an unknown codec, a
	// decompressed length that differs from the recorded one.
	ErrCorrupt = errors.New("mledger: corrupt managed-ledger metadata")

	// ErrTooLarge is returned when a compression wrapper declares (or a
	// codec produces) more than Limits.MaxDecompressedBytes (nothing of
	// that size is allocated), and when a value to write exceeds
	// Options.MaxValueBytes (nothing is written).
	ErrTooLarge = errors.New("mledger: decompressed metadata exceeds limit")

	// ErrLedgerNotFound is returned when the ledger id is not listed in the
	// managed ledger.
	ErrLedgerNotFound = errors.New("mledger: ledger not in managed ledger")

	// ErrLastLedger is returned by every update of the last ledger of a
	// managed ledger (the open/current one): the broker replaces that
	// LedgerInfo when it reopens the managed ledger, so an offload context
	// written there would be lost (docs/design.md invariant 3).
	ErrLastLedger = errors.New("mledger: refusing to touch the last ledger")

	// ErrOffloadConflict is returned when the offload attempt UUID stored in
	// the ledger's OffloadContext is not the caller's: another offloader (or
	// the broker) has taken the ledger over. Like Pulsar's
	// OffloadConflict, it is not retried.
	ErrOffloadConflict = errors.New("mledger: offload conflict: stored attempt UUID differs")

	// ErrAlreadyOffloaded is returned by PrepareOffload when the ledger is
	// already offloaded (complete); a new attempt would redirect broker
	// reads to objects that do not exist yet.
	ErrAlreadyOffloaded = errors.New("mledger: ledger already offloaded")

	// ErrEmptyLedger is returned by PrepareOffload for a ledger without
	// entries (or size 0): Pulsar's offloader refuses to offload those.
	ErrEmptyLedger = errors.New("mledger: ledger has no entries")

	// ErrNotOffloaded is returned by MarkBookkeeperDeleted when the ledger's
	// offload is not complete.
	ErrNotOffloaded = errors.New("mledger: ledger offload not complete")

	// ErrContention is returned when a compare-and-set update still meets a
	// newer version after Options.MaxRetries re-reads.
	ErrContention = errors.New("mledger: too many concurrent writers (bad version on every retry)")

	// ErrUnknownDriver is returned for an offload driver name whose Java
	// provider enum constant is not known and was not given explicitly.
	ErrUnknownDriver = errors.New("mledger: unknown offload driver")
)
