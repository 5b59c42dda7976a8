package blob

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// Sentinel errors shared by every provider. Providers wrap them with the
// operation and key; test with errors.Is. ErrNotFound is declared in blob.go.
var (
	// ErrInvalidRange is returned by GetRange when off is negative, off is
	// past the end of the object, or off+length runs past the end. Reading
	// from off == size to the end (length < 0 or 0) gives an empty body.
	ErrInvalidRange = errors.New("blob: invalid range")

	// ErrMissingPart is returned by Multipart.Complete when no part was
	// uploaded or the part numbers are not exactly 1..N (a gap would
	// silently drop data). The upload is left as it was; Abort it.
	ErrMissingPart = errors.New("blob: multipart upload has missing parts")

	// ErrPartTooSmall is returned by Multipart.Complete when a part other
	// than the last is smaller than the store's minimum (5 MiB on S3, 1 MiB
	// on COS, 5 MiB by default on fs).
	ErrPartTooSmall = errors.New("blob: multipart part smaller than the store minimum")

	// ErrBadDigest is returned when the server rejected data because its
	// checksum did not match (the bytes were corrupted on the way). Nothing
	// was stored; the write may be retried.
	ErrBadDigest = errors.New("blob: checksum mismatch, data rejected")

	// ErrInvalidArgument is returned for a key, metadata entry, part number
	// or option the store cannot accept. Nothing was sent.
	ErrInvalidArgument = errors.New("blob: invalid argument")

	// ErrAccessDenied is returned when the store refused the credentials
	// or the request (HTTP 403). Retrying does not help.
	ErrAccessDenied = errors.New("blob: access denied")
)

// UntrustedServer reports whether err says the store's endpoint failed
// TLS verification: a certificate from a CA the client does not trust,
// for another name, expired or otherwise invalid, or an endpoint that
// does not speak TLS at all. The same connection fails the same way
// until the operator changes the trust store, the endpoint or the
// server's certificate, so the providers do not retry it.
func UntrustedServer(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) ||
		errors.As(err, &invalid) || errors.As(err, &record)
}
