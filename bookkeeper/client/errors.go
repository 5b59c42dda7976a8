package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

var (
	// ErrEntryMissing is returned (inside a *ReadError) when every bookie of
	// an entry's write set answered NoSuchEntry or NoSuchLedger: the data is
	// gone (or the ledger was deleted).
	ErrEntryMissing = errors.New("client: entry missing on every replica")
	// ErrReadFailed is returned (inside a *ReadError) when an entry could not
	// be read from any replica for a reason other than "missing" (timeouts,
	// connection failures, digest mismatches, bookie errors). Retrying later
	// may succeed.
	ErrReadFailed = errors.New("client: entry could not be read from any replica")
	// ErrNoSuchEntry is a bookie's ENOENTRY answer for one replica.
	ErrNoSuchEntry = errors.New("client: bookie has no such entry")
	// ErrNoSuchLedger is a bookie's ENOLEDGER answer for one replica.
	ErrNoSuchLedger = errors.New("client: bookie has no such ledger")
	// ErrBusy is a bookie's ETOOMANYREQUESTS answer that persisted through
	// every back-off retry.
	ErrBusy = errors.New("client: bookie overloaded (ETOOMANYREQUESTS)")
	// ErrTimeout is returned for one request that got no answer within
	// Options.ReadTimeout.
	ErrTimeout = errors.New("client: read timed out")
	// ErrConnection is returned when the connection to a bookie could not be
	// made or broke (including protocol violations by the bookie).
	ErrConnection = errors.New("client: bookie connection failed")
	// ErrBadResponse is returned for a well-formed response that does not
	// answer the request (other ledger/entry id, no body, other operation).
	ErrBadResponse = errors.New("client: bookie response does not match request")
	// ErrNotClosed is returned by Open for a ledger that is OPEN or
	// IN_RECOVERY: reading it could race a live writer.
	ErrNotClosed = errors.New("client: ledger is not closed")
	// ErrOutOfRange is returned for entry ids outside 0..lastEntryId.
	ErrOutOfRange = errors.New("client: entry id outside the closed ledger")
	// ErrLengthMismatch is returned by a Stream when entry headers' cumulative
	// lengths do not add up or the last entry's length differs from the
	// metadata's length.
	ErrLengthMismatch = errors.New("client: entry lengths inconsistent with metadata")
	// ErrNoDigest is returned by Open for metadata that records no digest
	// type and password (v1, pre-4.2 ledgers) when Options gives none either.
	ErrNoDigest = errors.New("client: ledger metadata has no digest type; set Options.DigestType")
	// ErrTLS is returned (inside ErrConnection) when a bookie connection
	// could not be secured: START_TLS refused (the bookie has no TLS
	// configured) or the TLS handshake failed; the error says which and,
	// for certificate problems, what to check.
	ErrTLS = errors.New("client: bookie TLS failed")
	// ErrClosed is returned after Client.Close.
	ErrClosed = errors.New("client: closed")
)

// StatusError is a non-OK status a bookie answered for one read.
type StatusError struct {
	Bookie string
	Status bkproto.StatusCode
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("bookie %s answered %v", e.Bookie, e.Status)
}

// Unwrap maps the status to this package's sentinels where one exists.
func (e *StatusError) Unwrap() error {
	switch e.Status {
	case bkproto.StatusCode_ENOENTRY:
		return ErrNoSuchEntry
	case bkproto.StatusCode_ENOLEDGER:
		return ErrNoSuchLedger
	case bkproto.StatusCode_ETOOMANYREQUESTS:
		return ErrBusy
	}
	return nil
}

// Attempt is one replica's failure while reading an entry.
type Attempt struct {
	Bookie string
	Err    error
}

// ReadError reports an entry that could not be read from any replica.
// errors.Is(err, ErrEntryMissing) tells "missing everywhere" from a
// transient failure (ErrReadFailed); the attempts' errors are also matched
// (e.g. errors.Is(err, digest.ErrMismatch)).
type ReadError struct {
	LedgerID, EntryID int64
	Missing           bool
	Attempts          []Attempt
}

func (e *ReadError) Error() string {
	var sb strings.Builder
	what := "could not be read"
	if e.Missing {
		what = "is missing on every replica"
	}
	fmt.Fprintf(&sb, "ledger %d entry %d %s", e.LedgerID, e.EntryID, what)
	for i, a := range e.Attempts {
		if i == 0 {
			sb.WriteString(": ")
		} else {
			sb.WriteString("; ")
		}
		fmt.Fprintf(&sb, "%s: %v", a.Bookie, a.Err)
	}
	return sb.String()
}

// Unwrap returns the summary sentinel and every attempt's error.
func (e *ReadError) Unwrap() []error {
	errs := make([]error, 0, len(e.Attempts)+1)
	if e.Missing {
		errs = append(errs, ErrEntryMissing)
	} else {
		errs = append(errs, ErrReadFailed)
	}
	for _, a := range e.Attempts {
		errs = append(errs, a.Err)
	}
	return errs
}

// isMissing reports whether a replica's error means "not there".
func isMissing(err error) bool {
	return errors.Is(err, ErrNoSuchEntry) || errors.Is(err, ErrNoSuchLedger)
}
