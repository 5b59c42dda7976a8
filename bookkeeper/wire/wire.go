package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/crc32c"
)

// DefaultMaxFrameSize bounds response frames: a bookie's default
// nettyMaxFrameSizeBytes (5 MiB) plus room for protocol overhead. Bookies
// configured with a larger limit need a larger bound.
const DefaultMaxFrameSize = 5*1024*1024 + 64*1024

// Protocol constants used in the header.
const (
	versionThree   = int32(bkproto.ProtocolVersion_VERSION_THREE)
	opReadEntry    = int32(bkproto.OperationType_READ_ENTRY)
	fieldHeader    = 1
	fieldStatus    = 2
	fieldReadReq   = 100
	fieldReadResp  = 100
	hdrVersion     = 1
	hdrOperation   = 2
	hdrTxnID       = 3
	readLedgerID   = 1
	readEntryID    = 2
	rrStatus       = 1
	rrLedgerID     = 2
	rrEntryID      = 3
	rrBody         = 4
	rrMaxLAC       = 5
	rrLacTimestamp = 6
)

// AppendFrame appends msg to dst as one frame (4-byte big-endian length,
// then msg).
func AppendFrame(dst, msg []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(msg)))
	return append(dst, msg...)
}

// AppendReadRequest appends one framed READ_ENTRY request for entryID of
// ledgerID with the given txnId to dst. The request carries no flag and no
// master key, so it can never fence the ledger.
func AppendReadRequest(dst []byte, txnID uint64, ledgerID, entryID int64) []byte {
	hdrLen := headerLen(opReadEntry, txnID)
	rrLen := 1 + protowire.SizeVarint(uint64(ledgerID)) +
		1 + protowire.SizeVarint(uint64(entryID))
	msgLen := 1 + protowire.SizeVarint(uint64(hdrLen)) + hdrLen +
		protowire.SizeTag(fieldReadReq) + protowire.SizeVarint(uint64(rrLen)) + rrLen

	dst = binary.BigEndian.AppendUint32(dst, uint32(msgLen))
	dst = appendHeader(dst, hdrLen, opReadEntry, txnID)
	dst = protowire.AppendTag(dst, fieldReadReq, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(rrLen))
	dst = protowire.AppendTag(dst, readLedgerID, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(ledgerID))
	dst = protowire.AppendTag(dst, readEntryID, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(entryID))
	return dst
}

// headerLen is the size of a v3 BKPacketHeader{version 3, op, txnID}.
func headerLen(op int32, txnID uint64) int {
	return 1 + protowire.SizeVarint(uint64(versionThree)) +
		1 + protowire.SizeVarint(uint64(op)) +
		1 + protowire.SizeVarint(txnID)
}

// appendHeader appends Request.header: BKPacketHeader{version 3, op,
// txnID} of size hdrLen (headerLen).
func appendHeader(dst []byte, hdrLen int, op int32, txnID uint64) []byte {
	dst = protowire.AppendTag(dst, fieldHeader, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(hdrLen))
	dst = protowire.AppendTag(dst, hdrVersion, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(versionThree))
	dst = protowire.AppendTag(dst, hdrOperation, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(op))
	dst = protowire.AppendTag(dst, hdrTxnID, protowire.VarintType)
	return protowire.AppendVarint(dst, txnID)
}

// frameChunk is how much of a frame body ReadFrame allocates before any
// of it arrives: a peer must send that much of a larger frame before the
// rest is allocated, so a frame header claiming megabytes followed by
// little or nothing costs at most 64 KiB. (Growing the buffer step by step
// with the input would bound it tighter but reads 1 MiB frames at a third
// of the speed: BenchmarkReadFrame1MiB.)
const frameChunk = 64 << 10

// ReadFrame reads one frame from r and returns its body. A length above
// maxSize fails with ErrFrameTooLarge before anything is allocated; of a
// body above 64 KiB only the first 64 KiB are allocated until they have
// arrived. alloc, if not nil, may provide the body buffer up front (a
// slice of length n, e.g. a reused one); when it returns nil the body is
// allocated as without alloc, but with capacity ReuseCap(n), so that the
// caller can read a later, slightly longer frame into it.
func ReadFrame(r io.Reader, maxSize int, alloc func(n int) []byte) ([]byte, error) {
	body, _, err := readFrame(r, maxSize, alloc, false)
	return body, err
}

// SumMin is the body size from which ReadFrameSum takes a frame's
// CRC-32C as it arrives: below it, hashing the few bytes again later costs
// less than the combines that reuse the sum (crc32c.MinCombine).
const SumMin = crc32c.MinCombine

// sumChunk is how much of a frame ReadFrameSum reads before it hashes what
// arrived: small enough to be hashed while it is still in this core's
// cache, large enough not to add system calls (a read returns what the
// socket holds, up to this).
const sumChunk = 256 << 10

// FrameSum is the CRC-32C of a whole frame body, when ReadFrameSum took
// it.
type FrameSum struct {
	CRC32C uint32
	OK     bool // false: not taken (a body under SumMin)
}

// ReadFrameSum is ReadFrame that also returns the CRC-32C of a body of at
// least SumMin bytes, hashed piece by piece as the pieces arrive: on the
// core that has just received them, from its cache, instead of in a later
// pass from memory. With crc32c.Suffix it gives the CRC of any tail of the
// body (a read response's entry, then its payload) without hashing it
// again.
func ReadFrameSum(r io.Reader, maxSize int, alloc func(n int) []byte) ([]byte, FrameSum, error) {
	return readFrame(r, maxSize, alloc, true)
}

func readFrame(r io.Reader, maxSize int, alloc func(n int) []byte, summed bool) ([]byte, FrameSum, error) {
	var lb [4]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, FrameSum{}, err
	}
	n := int(binary.BigEndian.Uint32(lb[:]))
	if uint64(n) > uint64(maxSize) {
		return nil, FrameSum{}, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, maxSize)
	}
	summed = summed && n >= SumMin
	var body []byte
	c := n
	if alloc != nil {
		body = alloc(n)
		c = ReuseCap(n)
	}
	off := 0
	switch {
	case body != nil:
	case n <= frameChunk:
		body = make([]byte, n, c)
	default:
		head := make([]byte, frameChunk)
		if _, err := io.ReadFull(r, head); err != nil {
			return nil, FrameSum{}, unexpectedEOF(err)
		}
		body = make([]byte, n, c)
		off = copy(body, head)
	}
	if !summed {
		if _, err := io.ReadFull(r, body[off:]); err != nil {
			return nil, FrameSum{}, unexpectedEOF(err)
		}
		return body, FrameSum{}, nil
	}
	sum := crc32c.Checksum(body[:off])
	for off < n {
		k, err := io.ReadAtLeast(r, body[off:min(off+sumChunk, n)], 1)
		sum = crc32c.Update(sum, body[off:off+k])
		off += k
		if err != nil {
			return nil, FrameSum{}, unexpectedEOF(err)
		}
	}
	return body, FrameSum{CRC32C: sum, OK: true}, nil
}

// ReuseCap is the capacity ReadFrame gives a body of n bytes that is to
// be reused: n plus at least 64 bytes, rounded up to 1/64 of n's power of
// two (under 1/32 more). The frames of a ledger's entries of one size grow
// by a byte or two as the varints of entry and transaction ids grow (at
// 128, 16384, ...); exact-sized buffers would then fit none of the later
// frames, and a pool of them would keep a whole stale window alive.
func ReuseCap(n int) int {
	step := max(64, 1<<(bits.Len(uint(n)|1)-1)/64)
	return (n + 64 + step - 1) / step * step
}

// unexpectedEOF turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Response is a decoded v3 Response.
type Response struct {
	Version   int32
	Operation int32
	TxnID     uint64
	// Status is the response-level status.
	Status bkproto.StatusCode
	// Read is set when the response carries a readResponse.
	Read *ReadResponse
}

// ReadResponse is a decoded v3 ReadResponse.
type ReadResponse struct {
	Status   bkproto.StatusCode
	LedgerID int64
	EntryID  int64
	// Body is the stored entry (header, digest, payload); it aliases the
	// frame passed to DecodeResponse. Nil when absent.
	Body      []byte
	MaxLAC    int64
	HasMaxLAC bool
	// LacUpdateTimestamp is only set by long-poll reads.
	LacUpdateTimestamp int64

	required uint8 // bits: status, ledgerId, entryId seen
}

// EffectiveStatus is the status of a read: the response status when it is
// not EOK, else the readResponse status. An EOK response without a
// readResponse can not be used for a read and reports EBADREQ.
func (r *Response) EffectiveStatus() bkproto.StatusCode {
	if r.Status != bkproto.StatusCode_EOK {
		return r.Status
	}
	if r.Read == nil {
		return bkproto.StatusCode_EBADREQ
	}
	return r.Read.Status
}

// DecodeResponse decodes a Response from a frame body. Fields of repeated
// embedded messages are merged, later scalar values win, unknown fields and
// known fields with an unexpected wire type are skipped, as protobuf does.
// Required fields (header with version/operation/txnId, status, and in a
// readResponse status/ledgerId/entryId) must be present.
func DecodeResponse(b []byte) (*Response, error) {
	r := &Response{}
	var haveHeader, haveStatus, haveVer, haveOp, haveTxn bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, malformed("response tag", n)
		}
		b = b[n:]
		switch {
		case num == fieldHeader && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, malformed("header", n)
			}
			b = b[n:]
			if err := decodeHeader(v, r, &haveVer, &haveOp, &haveTxn); err != nil {
				return nil, err
			}
			haveHeader = true
		case num == fieldStatus && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, malformed("status", n)
			}
			b = b[n:]
			r.Status = bkproto.StatusCode(int32(v))
			haveStatus = true
		case num == fieldReadResp && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, malformed("readResponse", n)
			}
			b = b[n:]
			if r.Read == nil {
				r.Read = &ReadResponse{}
			}
			if err := decodeReadResponse(v, r.Read); err != nil {
				return nil, err
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, malformed("unknown field", n)
			}
			b = b[n:]
		}
	}
	if !haveHeader || !haveStatus || !haveVer || !haveOp || !haveTxn {
		return nil, fmt.Errorf("%w: missing required field (header %t, status %t, version %t, operation %t, txnId %t)",
			ErrMalformed, haveHeader, haveStatus, haveVer, haveOp, haveTxn)
	}
	if r.Read != nil && r.Read.required != 7 {
		return nil, fmt.Errorf("%w: readResponse lacks status, ledgerId or entryId", ErrMalformed)
	}
	return r, nil
}

func decodeHeader(b []byte, r *Response, haveVer, haveOp, haveTxn *bool) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return malformed("header tag", n)
		}
		b = b[n:]
		if typ != protowire.VarintType || num < hdrVersion || num > hdrTxnID {
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return malformed("header field", n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return malformed("header varint", n)
		}
		b = b[n:]
		switch num {
		case hdrVersion:
			r.Version, *haveVer = int32(v), true
		case hdrOperation:
			r.Operation, *haveOp = int32(v), true
		case hdrTxnID:
			r.TxnID, *haveTxn = v, true
		}
	}
	return nil
}

func decodeReadResponse(b []byte, rr *ReadResponse) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return malformed("readResponse tag", n)
		}
		b = b[n:]
		switch {
		case num == rrBody && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return malformed("body", n)
			}
			b = b[n:]
			if v == nil {
				v = []byte{}
			}
			rr.Body = v[:len(v):len(v)]
		case num >= rrStatus && num <= rrLacTimestamp && num != rrBody && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return malformed("readResponse varint", n)
			}
			b = b[n:]
			switch num {
			case rrStatus:
				rr.Status = bkproto.StatusCode(int32(v))
				rr.required |= 1
			case rrLedgerID:
				rr.LedgerID = int64(v)
				rr.required |= 2
			case rrEntryID:
				rr.EntryID = int64(v)
				rr.required |= 4
			case rrMaxLAC:
				rr.MaxLAC, rr.HasMaxLAC = int64(v), true
			case rrLacTimestamp:
				rr.LacUpdateTimestamp = int64(v)
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return malformed("readResponse field", n)
			}
			b = b[n:]
		}
	}
	return nil
}

func malformed(what string, n int) error {
	return fmt.Errorf("%w: %s: %v", ErrMalformed, what, protowire.ParseError(n))
}

// fieldStartTLSReq is Request.startTLSRequest.
const fieldStartTLSReq = 106

// OpStartTLS is the START_TLS operation type.
const OpStartTLS = int32(bkproto.OperationType_START_TLS)

// AppendStartTLSRequest appends one framed START_TLS request (a v3 header
// and an empty startTLSRequest) with txnID to dst. A bookie with TLS
// configured answers EOK in plain text and then expects the client's TLS
// handshake on the same connection; one without answers EBADREQ.
func AppendStartTLSRequest(dst []byte, txnID uint64) []byte {
	hdrLen := headerLen(OpStartTLS, txnID)
	msgLen := 1 + protowire.SizeVarint(uint64(hdrLen)) + hdrLen + protowire.SizeTag(fieldStartTLSReq) + 1
	dst = binary.BigEndian.AppendUint32(dst, uint32(msgLen))
	dst = appendHeader(dst, hdrLen, OpStartTLS, txnID)
	dst = protowire.AppendTag(dst, fieldStartTLSReq, protowire.BytesType)
	return protowire.AppendVarint(dst, 0)
}
