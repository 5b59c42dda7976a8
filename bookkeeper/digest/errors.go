package digest

import "errors"

var (
	// ErrUnknownType is returned for a digest type that is not one of
	// CRC32, CRC32C, HMAC or DUMMY.
	ErrUnknownType = errors.New("digest: unknown digest type")
	// ErrShortEntry is returned when an entry is shorter than the 32-byte
	// header plus the digest.
	ErrShortEntry = errors.New("digest: entry shorter than header and digest")
	// ErrMismatch is returned when the digest stored in an entry does not
	// match the digest computed over its header and payload (corruption, or
	// the wrong digest type or password).
	ErrMismatch = errors.New("digest: digest mismatch")
	// ErrWrongEntry is returned when the digest is valid but the header names
	// another ledger or entry than the one requested.
	ErrWrongEntry = errors.New("digest: header names another ledger or entry")
)
