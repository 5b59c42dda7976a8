package upload

import "errors"

// Sentinel errors, wrapped with context; test with errors.Is.
var (
	// ErrInvalidRequest is returned by Begin for a request the offloader
	// must not upload: metadata that disagrees with the ledger, a ledger
	// that is not closed, no UUID.
	ErrInvalidRequest = errors.New("upload: invalid request")

	// ErrVerify is returned by Verify when the stored objects do not match
	// what was uploaded (size, metadata, index bytes, block headers).
	ErrVerify = errors.New("upload: verification failed")

	// ErrSessionDone is returned when a Session is used after Finish or
	// after it failed or was aborted.
	ErrSessionDone = errors.New("upload: session finished")
)
