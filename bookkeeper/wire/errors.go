package wire

import "errors"

var (
	// ErrFrameTooLarge is returned by ReadFrame when a frame's length prefix
	// exceeds the caller's bound; nothing is allocated for it.
	ErrFrameTooLarge = errors.New("wire: frame too large")
	// ErrMalformed is returned by DecodeResponse for bytes that are not a
	// valid v3 Response (bad protobuf, missing required field).
	ErrMalformed = errors.New("wire: malformed response")
)
