package format

import "errors"

// Sentinel errors. Functions wrap them with context (%w); test with errors.Is.
var (
	// ErrCorruptBlock is returned when a data block does not decode: wrong
	// magic, impossible lengths, an entry id out of sequence, or padding that
	// is not FE DC DE AD.
	ErrCorruptBlock = errors.New("format: corrupt data block")

	// ErrCorruptIndex is returned when an index object does not decode or is
	// inconsistent (bad magic, lengths out of bounds, blocks out of order,
	// missing required ledger-metadata fields, ledger not closed).
	ErrCorruptIndex = errors.New("format: corrupt index")

	// ErrUnsupportedIndex is returned for an index with the streaming (V2,
	// PIP-76) magic, which the managed ledger never writes.
	ErrUnsupportedIndex = errors.New("format: unsupported index version")

	// ErrFormatVersion is returned when an object's user metadata lacks
	// s3managedledgeroffloaderformatversion=1 (Pulsar refuses such objects
	// with "Invalid object version").
	ErrFormatVersion = errors.New("format: invalid object format version")

	// ErrRecordTooLarge is returned by the encoder for an entry whose record
	// (12 bytes + payload) cannot fit in one block after the 128-byte header.
	// Pulsar's writer would emit an entry-less block and a broken object.
	ErrRecordTooLarge = errors.New("format: entry too large for the block size")

	// ErrLengthMismatch is returned by the encoder when the entries do not add
	// up to the ledger length declared up front (BK metadata), so the block
	// sizes Pulsar would compute cannot be honoured.
	ErrLengthMismatch = errors.New("format: entries do not match the ledger length")

	// ErrEntrySequence is returned by the encoder when entries are not added
	// as 0, 1, 2, ... up to the last entry id, or when some are missing.
	ErrEntrySequence = errors.New("format: entries out of sequence")

	// ErrEntryRange is returned by the reader for a range outside
	// [0, lastEntryId] or with first > last.
	ErrEntryRange = errors.New("format: entry range out of bounds")

	// ErrInvalidLedger is returned for a ledger the format cannot represent:
	// not closed, no entries, length 0, or metadata missing a field Pulsar
	// needs.
	ErrInvalidLedger = errors.New("format: invalid ledger for offload")

	// ErrInvalidKey is returned by ParseKey for a key that is not an offload
	// object name.
	ErrInvalidKey = errors.New("format: not an offload object key")
)
