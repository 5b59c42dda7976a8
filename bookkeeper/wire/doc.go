// Package wire encodes and decodes the BookKeeper protocol frames a reader
// exchanges with a bookie (port 3181 by default): length-prefixed frames,
// READ_ENTRY requests and their responses, in the v3 (protobuf) protocol
// and in the v2 one (a packed header; v2.go, at the end).
//
// # Frames
//
// Every message, in both directions, is one frame:
//
//	+----------------------+------------------------------------------+
//	| length N (uint32 BE) | N bytes: protobuf Request or Response    |
//	+----------------------+------------------------------------------+
//
// N does not count its own 4 bytes. ReadFrame refuses N above a caller-given
// bound before allocating anything (a bookie's own limit is
// nettyMaxFrameSizeBytes, 5 MiB by default).
//
// # Read request
//
// The only request this package builds is a plain read (field numbers from
// BookkeeperProtocol.proto):
//
//	Request {
//	  1:   header      { 1: version = VERSION_THREE (3)
//	                     2: operation = READ_ENTRY (1)
//	                     3: txnId     (uint64, unique per connection) }
//	  100: readRequest { 1: ledgerId (int64)  2: entryId (int64) }
//	}
//
// It never sets ReadRequest.flag (100; FENCE_LEDGER would fence the ledger
// and break a live writer) nor masterKey (3): there is no API to do so.
//
// # Response
//
//	Response {
//	  1:   header       { version, operation, txnId echoed }
//	  2:   status       (StatusCode)
//	  100: readResponse { 1: status  2: ledgerId  3: entryId
//	                      4: body (the stored entry, see package digest)
//	                      5: maxLAC  6: lacUpdateTimestamp }
//	}
//
// DecodeResponse is a small hand-written decoder: Body aliases the frame
// (no copy of entry payloads), unknown fields are skipped, and malformed
// input yields an error, never a panic. Its results are checked against the
// generated protobuf code (internal/bkproto) in tests and fuzzing.
//
// # v2
//
// A bookie reads a frame it cannot parse as a v3 Request as v2, and keeps
// to v2 on that connection. The v2 read request (20 bytes after the frame
// length; AppendReadRequestV2):
//
//	int32 header = version 2 << 24 | READENTRY 2 << 16 | flags (none)
//	int64 ledgerId
//	int64 entryId
//
// (with the fencing flag a 20-byte master key would follow; this package
// never sets it). The response (DecodeReadResponseV2):
//
//	int32 header (version 2, READENTRY) | int32 rc | int64 ledgerId |
//	int64 entryId | the stored entry, when rc is EOK
//
// rc is BookieProtocol's: EOK 0, ENOLEDGER 1, ENOENTRY 2, EBADREQ 100,
// EIO 101 ... ETOOMANYREQUESTS 106, given as the v3 status codes
// (V2ReturnCode maps back; AppendReadResponseV2 builds a response, for a
// fake bookie). A v2
// response carries no txnId: the reader matches it by ledger and entry.
// The bookie writes the entry after the header from its own buffers; a v3
// answer is first serialized into a new heap buffer, entry included.
package wire
