// Package client reads entries of closed BookKeeper ledgers straight from
// the bookies over the v2 protocol (as Pulsar's brokers read) or the v3
// one (Options.WireProtocol), verifying every entry's digest.
//
// # Connections
//
// The Client keeps one connection per bookie. Many reads are in flight on a
// connection at once; responses, which bookies may send in any order, are
// matched to their requests by the txnId each v3 request carries (unique
// on that connection), or over v2, whose responses carry none, by ledger
// and entry (the oldest pending read of that entry). A writer goroutine batches requests into few syscalls; a
// reader goroutine decodes frames (length bounded before allocating). A
// protocol violation (garbage, an oversized frame, a truncated frame) closes
// the connection and fails every read pending on it over to other replicas;
// the next read re-dials. Every request has its own timeout.
//
// # Reading an entry
//
// An entry lives on the write set of its segment (ensemble): ensemble
// indexes (entry + i) mod E for i < W. The reader asks those bookies one at
// a time, in write-set order, except that bookies that failed recently go
// last. It moves to the next replica on any error, timeout or digest
// mismatch; ETOOMANYREQUESTS is retried on the same bookie with exponential
// back-off first. Only when every replica answered NoSuchEntry or
// NoSuchLedger is the entry reported missing (ErrEntryMissing); otherwise the
// read fails with a *ReadError listing every attempt, and a later retry may
// succeed.
//
// Each entry's digest (CRC32, CRC32C, HMAC or DUMMY, from the ledger
// metadata) and header (ledger id, entry id) are checked; a Stream also
// checks that the header's cumulative lengths add up and that the last
// entry's length equals the metadata's.
//
// # Safety
//
// Only CLOSED ledgers are opened, and only entries 0..lastEntryId are read.
// Requests never carry the fence flag or a master key.
//
// # Memory
//
// A Stream keeps at most Window reads in flight (fewer for large entries,
// see Options.WindowBytes) and delivers entries in order; an entry's payload
// is a slice of the response frame it arrived in, owned by the caller.
package client
