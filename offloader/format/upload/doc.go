// Package upload writes one BookKeeper ledger to an object store in Pulsar's
// offload format (package format) and verifies the result.
//
// # Pipeline
//
// Entries go into a format.Encoder, which fills block buffers from a bounded
// pool; every finished block becomes one multipart part sent through
// blob.Parts (the project's one multipart pipeline), with up to
// PartsInFlight parts uploading while the next block is filled. Memory is
// therefore about (PartsInFlight + 1) × MaxBlockSize whatever the ledger
// size. After the last part the upload is completed and the index is stored
// with a single PUT. This is the order the broker uses
// (BlobStoreManagedLedgerOffloader.offload):
//
//	create multipart (data key, metadata role=data)
//	  → parts 1..N, one per block
//	  → complete
//	  → PUT index (metadata role=index)
//
// Any failure before the index aborts the multipart upload; a failed index
// PUT deletes the data object (as the broker does), so a failed Upload
// leaves nothing behind but, at worst, an abandoned upload or object the
// sweeper removes (the UUID is recorded before the upload starts).
//
// A ledger that fits in one block (the whole ledger is one exactly-sized
// block, see format.BlockSize) is stored with a single PUT instead of a
// multipart upload (Options.Multipart = Auto): one request instead of three,
// atomic, no incomplete upload to sweep after a crash. The bytes are the
// same; Pulsar's reader locates blocks by offset and never uses part
// numbers, and the index still says part 1.
//
// # Streaming from BookKeeper
//
// A caller that reads entries as they arrive (the offload pipeline reading
// a ledger from the bookies) drives a Session itself, so reading and
// uploading overlap and nothing is buffered beyond the pool:
//
//	u, _ := upload.New(store, &upload.Options{MaxBlockSize: 64 << 20, PartsInFlight: 2, Pool: shared})
//	s, err := u.Begin(ctx, upload.Request{UUID: id, Ledger: l, Metadata: format.IndexMetadata(md)})
//	for each entry 0..LastEntryID: err = s.Add(ctx, entryID, payload) // blocks while the parts are busy
//	res, err := s.Finish(ctx)
//	err = upload.Verify(ctx, store, res, &upload.VerifyOptions{BlockHeaders: true})
//
// Add copies the payload, so the caller may reuse it. Any error from Add
// or Finish has already aborted the session (multipart upload aborted,
// buffers returned); call Abort to give up for a reason of the caller's
// own (a failed BookKeeper read). Upload does the same loop over an
// EntrySource. The Result (keys, sizes, index bytes) is what Verify and the
// metadata commit need.
//
// # Verify
//
// Verify runs before the managed-ledger metadata is marked complete: it
// HEADs both objects (sizes, format-version and role metadata), GETs the
// index back and compares it byte for byte with what was uploaded, and
// optionally reads every block header with small ranged GETs.
package upload
