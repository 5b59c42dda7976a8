package blob

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned (wrapped) when an object or multipart upload does
// not exist. Test with errors.Is.
var ErrNotFound = errors.New("blob: not found")

// Attrs describes a stored object.
type Attrs struct {
	Key  string
	Size int64
	// ETag as the store reports it, without quotes.
	ETag         string
	LastModified time.Time
	// Metadata is the user metadata with lower-case keys and no provider
	// prefix (x-amz-meta-, x-cos-meta-). Filled by Head, GetRange/Get
	// attributes and Iter when the provider lists it (may be nil in Iter).
	Metadata map[string]string
}

// Reader reads objects.
type Reader interface {
	// Head returns an object's attributes, or ErrNotFound.
	Head(ctx context.Context, key string) (Attrs, error)
	// Get streams a whole object, or returns ErrNotFound.
	Get(ctx context.Context, key string) (io.ReadCloser, Attrs, error)
	// GetRange streams length bytes starting at off (length < 0: to the end).
	// A range past the end is an error; ErrNotFound when the object is missing.
	// The rules are those of ResolveRange: ErrInvalidRange for off < 0,
	// off > size or off+length > size; reading from off == size gives an
	// empty body. The body yields exactly the bytes asked for or fails
	// (io.ErrUnexpectedEOF), never short data. Attrs.Size is the size of the
	// whole object.
	GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, Attrs, error)
	// Iter calls fn for every object whose key starts with prefix, in
	// ascending key order (byte order, which is UTF-8 order). An error from
	// fn stops the iteration and is returned.
	Iter(ctx context.Context, prefix string, fn func(Attrs) error) error
}

// PutOptions are per-object write options.
type PutOptions struct {
	// Metadata is user metadata; keys are sent lower-case.
	Metadata map[string]string
	// ContentType defaults to application/octet-stream.
	ContentType string
}

// Writer writes and deletes objects.
type Writer interface {
	// Put stores size bytes from r under key in one request, replacing any
	// object there. The provider sends a checksum the server verifies, so a
	// corrupted transfer fails instead of being stored. Exactly size bytes
	// are read; a shorter reader is an error and nothing is stored. Keys
	// must pass ValidateKey and metadata NormalizeMetadata
	// (ErrInvalidArgument otherwise).
	Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (Attrs, error)
	// CreateMultipart starts a multipart upload. The object appears only
	// when Complete succeeds.
	CreateMultipart(ctx context.Context, key string, opts PutOptions) (Multipart, error)
	// Delete removes an object. Deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
}

// Multipart is one multipart upload in progress. UploadPart may be called
// concurrently for different part numbers.
type Multipart interface {
	// UploadID identifies the upload at the store (for sweeping).
	UploadID() string
	// UploadPart stores part partNumber (1-based). data must stay unchanged
	// until the call returns. A checksum of data is sent and verified by the
	// server. Re-uploading a part number replaces it. ErrInvalidArgument for
	// a part number outside 1..MaxParts; ErrNotFound once the upload is
	// aborted or completed.
	UploadPart(ctx context.Context, partNumber int, data []byte) error
	// Complete assembles the parts uploaded so far, in part-number order.
	// The part numbers must be exactly 1..N (ErrMissingPart) and every part
	// but the last at least the store's minimum (ErrPartTooSmall); on any
	// error no object is created and the upload stays for Abort.
	Complete(ctx context.Context) (Attrs, error)
	// Abort discards the upload and its parts. Aborting an upload that is
	// already gone returns nil or ErrNotFound.
	Abort(ctx context.Context) error
}

// Store is a bucket: reads and writes.
type Store interface {
	Reader
	Writer
	// Name describes the store for logs, e.g. "s3://bucket" (no credentials).
	Name() string
	io.Closer
}

// Upload describes an incomplete multipart upload.
type Upload struct {
	Key       string
	UploadID  string
	Initiated time.Time
}

// MultipartLister is implemented by stores that can list and abort
// incomplete multipart uploads (the sweeper uses it).
type MultipartLister interface {
	// ListMultipart lists incomplete uploads whose key starts with prefix,
	// sorted by key.
	ListMultipart(ctx context.Context, prefix string) ([]Upload, error)
	// AbortMultipart aborts one; ErrNotFound if it does not exist.
	AbortMultipart(ctx context.Context, key, uploadID string) error
}
