package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

// The v2 ("pre-v3") protocol: a packed big-endian header instead of
// protobuf. A bookie answers a v2 read with the stored entry after a
// 24-byte header, straight from its buffers; its v3 answer is a protobuf
// message it serializes into a new heap buffer first (a copy of every
// entry, and garbage for its collector). Pulsar's brokers read over v2.
const (
	// Version2 is the packet header's protocol version of a v2 request.
	Version2 = 2
	// opReadEntryV2 is READENTRY in the v2 packet header.
	opReadEntryV2 = 2
	// readRequestV2Len is a v2 read request without the frame length:
	// header, ledgerId, entryId (no master key: the request never fences).
	readRequestV2Len = 4 + 8 + 8
	// ReadResponseV2Header is the fixed part of a v2 read response: header,
	// rc, ledgerId, entryId; the stored entry follows when rc is EOK.
	ReadResponseV2Header = 4 + 4 + 8 + 8
)

// v2Status maps a v2 return code (BookieProtocol) to the v3 status code,
// so that a v2 response reads like a v3 one; ok is false for a code v2
// does not have.
func v2Status(rc int32) (st bkproto.StatusCode, ok bool) {
	switch rc {
	case 0:
		return bkproto.StatusCode_EOK, true
	case 1:
		return bkproto.StatusCode_ENOLEDGER, true
	case 2:
		return bkproto.StatusCode_ENOENTRY, true
	case 100, 101, 102, 103, 104, 105, 106:
		// EBADREQ, EIO, EUA, EBADVERSION, EFENCED, EREADONLY,
		// ETOOMANYREQUESTS: v3 numbers them 404 and 501-506.
		if rc == 100 {
			return bkproto.StatusCode_EBADREQ, true
		}
		return bkproto.StatusCode(rc + 400), true
	}
	return 0, false
}

// v2ReturnCodes are the return codes of BookieProtocol, in v2Status's
// order: V2ReturnCode inverts v2Status over them.
func v2ReturnCodes() [10]int32 { return [...]int32{0, 1, 2, 100, 101, 102, 103, 104, 105, 106} }

// V2ReturnCode is the v2 return code of a v3 status; ok is false for a
// status v2 does not have.
func V2ReturnCode(st bkproto.StatusCode) (rc int32, ok bool) {
	for _, rc := range v2ReturnCodes() {
		if s, _ := v2Status(rc); s == st {
			return rc, true
		}
	}
	return 0, false
}

// AppendReadResponseV2 appends one framed v2 read response to dst: the
// header, st as its v2 return code (EIO for a status v2 does not have),
// the ids and, with EOK, the stored entry. The reader never sends one; a
// fake bookie does (package bookietest).
func AppendReadResponseV2(dst []byte, st bkproto.StatusCode, ledgerID, entryID int64, entry []byte) []byte {
	rc, ok := V2ReturnCode(st)
	if !ok {
		rc, _ = V2ReturnCode(bkproto.StatusCode_EIO)
	}
	if st != bkproto.StatusCode_EOK {
		entry = nil
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(ReadResponseV2Header+len(entry)))
	dst = binary.BigEndian.AppendUint32(dst, Version2<<24|opReadEntryV2<<16)
	dst = binary.BigEndian.AppendUint32(dst, uint32(rc))
	dst = binary.BigEndian.AppendUint64(dst, uint64(ledgerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(entryID))
	return append(dst, entry...)
}

// AppendReadRequestV2 appends one framed v2 READENTRY request for entryID
// of ledgerID to dst: version 2, no flag (neither fencing, which would
// carry the master key and fence the ledger, nor high priority).
func AppendReadRequestV2(dst []byte, ledgerID, entryID int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, readRequestV2Len)
	dst = binary.BigEndian.AppendUint32(dst, Version2<<24|opReadEntryV2<<16)
	dst = binary.BigEndian.AppendUint64(dst, uint64(ledgerID))
	return binary.BigEndian.AppendUint64(dst, uint64(entryID))
}

// DecodeReadResponseV2 decodes a v2 read response from a frame body into
// the form DecodeResponse gives a v3 one: Version 2, Operation READ_ENTRY,
// Status EOK and Read holding the entry's status (mapped to the v3 code),
// ledger and entry ids and, for EOK, the stored entry (aliasing b). A v2
// response carries no txnId (TxnID 0): match it by ledger and entry. A
// frame shorter than the header, of another version or operation, with
// an unknown return code, or with a body after an error, is ErrMalformed.
func DecodeReadResponseV2(b []byte) (*Response, error) {
	if len(b) < ReadResponseV2Header {
		return nil, fmt.Errorf("%w: v2 read response of %d bytes, the header alone is %d", ErrMalformed, len(b), ReadResponseV2Header)
	}
	hdr := binary.BigEndian.Uint32(b)
	if v, op := hdr>>24, hdr>>16&0xff; v != Version2 || op != opReadEntryV2 {
		return nil, fmt.Errorf("%w: v2 response of version %d, operation %d, want version %d, READENTRY (%d)", ErrMalformed, v, op, Version2, opReadEntryV2)
	}
	rc := int32(binary.BigEndian.Uint32(b[4:]))
	st, ok := v2Status(rc)
	if !ok {
		return nil, fmt.Errorf("%w: v2 read response with unknown return code %d", ErrMalformed, rc)
	}
	rr := &ReadResponse{
		Status:   st,
		LedgerID: int64(binary.BigEndian.Uint64(b[8:])),
		EntryID:  int64(binary.BigEndian.Uint64(b[16:])),
		required: 7,
	}
	if body := b[ReadResponseV2Header:]; st == bkproto.StatusCode_EOK {
		rr.Body = body[:len(body):len(body)]
	} else if len(body) > 0 {
		return nil, fmt.Errorf("%w: v2 read response with return code %d and %d bytes of entry", ErrMalformed, rc, len(body))
	}
	return &Response{Version: Version2, Operation: opReadEntry, Status: bkproto.StatusCode_EOK, Read: rr}, nil
}
