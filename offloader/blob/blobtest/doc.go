// Package blobtest is the acceptance suite every blob provider must pass:
// AcceptanceTest(t, store) runs the same behavioural script (not found,
// ranges with edge cases, metadata round trip, sorted iteration by prefix,
// overwrite, idempotent delete, multipart uploads in and out of order,
// concurrent parts, abort, missing parts, listing incomplete uploads) against
// a store backed by an empty bucket.
//
// It also has helpers the provider fault-injection tests share:
// AssertAbsentOrEqual checks that after a failed write there is either no
// object or one byte-identical to the input; AssertStored checks that a
// write that succeeded stored exactly its input; UploadParts drives the
// multipart pipeline (blob.Parts) over a byte slice. BenchParts is the
// upload benchmark every provider runs (make bench-blob).
package blobtest
