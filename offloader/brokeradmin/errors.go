package brokeradmin

import (
	"errors"
	"fmt"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNotFound: the broker answered 404 (no such topic or namespace).
	ErrNotFound = errors.New("brokeradmin: not found")
	// ErrUnauthorized: the broker answered 401 or 403 (missing or refused
	// credentials, or no permission for the operation).
	ErrUnauthorized = errors.New("brokeradmin: not authorized")
	// ErrRefused: the broker answered another error status.
	ErrRefused = errors.New("brokeradmin: request refused")
	// ErrUnreachable: no answer (connection refused, TLS failure, timeout).
	ErrUnreachable = errors.New("brokeradmin: broker unreachable")
	// ErrConfig: the client configuration is invalid.
	ErrConfig = errors.New("brokeradmin: invalid configuration")
)

// StatusError is an HTTP error answer from the broker.
type StatusError struct {
	// Op is what was asked ("unload persistent://t/ns/x").
	Op string
	// URL is the request URL (no credentials).
	URL string
	// Status is the HTTP status code.
	Status int
	// Reason is the broker's explanation (the "reason" of its JSON error
	// body, or the start of the body).
	Reason string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s: broker answered %d", e.Op, e.Status)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg + " (" + e.URL + ")"
}

// Unwrap classifies the status.
func (e *StatusError) Unwrap() error {
	switch {
	case e.Status == 404:
		return ErrNotFound
	case e.Status == 401 || e.Status == 403:
		return ErrUnauthorized
	}
	return ErrRefused
}
