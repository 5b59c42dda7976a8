// Package blob is the object-store contract the offloader writes to and
// reads from. Providers live in sub-packages (fs, s3, cos); one acceptance
// suite (blobtest) runs against every provider.
//
// Reads are split from writes: code that only reads (the format reader, the
// verifier) takes a Reader.
//
// Besides the contract the package has what every provider shares: the
// sentinels (errors.go), key/metadata/range/part rules (validate.go), the
// HTTP range helpers of the s3 and cos providers (HTTPRange,
// CheckRangeAnswer, EmptyRange), Secret for credentials in configs,
// Duration, Payload (a re-readable Put body with its MD5), the Limiter
// (process-wide token buckets, also as an HTTP transport), the Limited and
// metrics decorators, and Parts, the multipart pipeline (parts in flight,
// the first failure cancelling the rest, aborted when given up). The
// in-memory store for tests is in memblob. See docs/blobstores.md.
package blob
