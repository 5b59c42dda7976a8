// Package faults is an HTTP fault injector for the blob providers' tests: a
// handler that sits in front of the real server (a reverse proxy to
// versitygw, or the in-process cosfake handler) and, for requests matching
// a rule, answers with an error status, truncates the response body, resets
// the connection before or after forwarding, or corrupts the request body.
// It records every request so tests can assert on headers.
//
// Common is the fault suite every HTTP provider runs through the proxy
// (retries, corrupted and lost requests, truncated downloads), so the
// providers' own fault tests hold only what is particular to them.
package faults
