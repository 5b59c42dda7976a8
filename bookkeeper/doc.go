// Package bookkeeper is the root of tierkeeper's Apache BookKeeper reader.
// It holds no code; the work is done by its sub-packages:
//
//   - metadata: ledger metadata in ZooKeeper (layouts, znode paths, listing,
//     the v1/v2/v3 metadata formats, bookie address resolution and
//     compare-and-delete of ledgers);
//   - digest: the per-entry digests BookKeeper writers attach (CRC32, CRC32C,
//     HMAC-SHA1, DUMMY) and the 32-byte entry header they cover;
//   - wire: the v3 protobuf protocol frames spoken on a bookie's port 3181
//     (length-prefixed frames, read requests, response decoding);
//   - client: connections to bookies, pipelined reads matched by txnId,
//     write-set failover, and streaming range reads of closed ledgers;
//   - bookietest: an in-process fake bookie for fault-injection tests.
//
// Everything here follows what BookKeeper 4.14–4.17 (as used by Pulsar 3.x
// and 4.x) writes and serves; docs/bookkeeper.md describes what is read and
// how.
//
// # Safety
//
// The reader never fences: read requests never carry the FENCE_LEDGER flag or
// a master key, so reading a ledger can not break a live Pulsar writer. Only
// CLOSED ledgers are read, and only entries 0..lastEntryId.
package bookkeeper
