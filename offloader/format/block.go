package format

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Data block layout (V1), big-endian, as Pulsar's DataBlockHeaderImpl and
// BlockAwareSegmentInputStreamImpl write it:
//
//	offset  width  field
//	     0      4  magic 0xFBDBABCB (FB DB AB CB)
//	     4      8  header length = 128
//	    12      8  block length = the whole block, header included
//	    20      8  id of the first entry in the block
//	    28    100  zero
//	   128      …  records, ascending entry ids without gaps:
//	                 +---------------+-------------+-----------------+
//	                 | int32 length  | int64 entry | length bytes of |
//	                 | of payload    | id          | payload         |
//	                 +---------------+-------------+-----------------+
//	     …      …  padding to the block length: FE DC DE AD repeated,
//	               restarting at FE right after the last record
//
// A record is placed only if all of it fits in the rest of the block; the
// first one that does not fit ends the block. Readers find the end of the
// records by reading a negative int32 length (padding, or the next block's
// magic, both start with a byte >= 0x80).
const (
	// BlockMagic starts every V1 data block.
	BlockMagic uint32 = 0xFBDBABCB
	// BlockHeaderSize is the header length written in every block, and the
	// data header length written in the index.
	BlockHeaderSize = 128
	// RecordHeaderSize is the int32 length + int64 entry id before a payload.
	RecordHeaderSize = 12
	// blockHeaderUsed is the part of the header that carries fields.
	blockHeaderUsed = 4 + 8 + 8 + 8

	// MinPartSize is the S3 multipart minimum for every part but the last;
	// Pulsar rejects a managedLedgerOffloadMaxBlockSizeInBytes below it.
	MinPartSize = blob.MinPartSize
	// DefaultMaxBlockSize is Pulsar's default
	// managedLedgerOffloadMaxBlockSizeInBytes (64 MiB).
	DefaultMaxBlockSize = 64 << 20
	// MaxBlockSizeLimit is the largest block size: Pulsar holds block sizes
	// in a Java int.
	MaxBlockSizeLimit = math.MaxInt32
	// minBlockSize is the smallest block that can hold a header and one
	// record with an empty payload.
	minBlockSize = BlockHeaderSize + RecordHeaderSize
)

// padding is the end-of-block filler, repeated from its first byte.
var padding = [4]byte{0xFE, 0xDC, 0xDE, 0xAD}

// BlockHeader is the decoded 128-byte header of a data block.
type BlockHeader struct {
	HeaderLength int64
	BlockLength  int64
	FirstEntryID int64
}

// putBlockHeader writes a block header into b[:BlockHeaderSize].
func putBlockHeader(b []byte, blockLength int, firstEntryID int64) {
	_ = b[BlockHeaderSize-1]
	binary.BigEndian.PutUint32(b[0:], BlockMagic)
	binary.BigEndian.PutUint64(b[4:], BlockHeaderSize)
	binary.BigEndian.PutUint64(b[12:], uint64(blockLength))
	binary.BigEndian.PutUint64(b[20:], uint64(firstEntryID))
	clear(b[blockHeaderUsed:BlockHeaderSize])
}

// ParseBlockHeader decodes the header at the start of b. It checks the magic
// and that the lengths are plausible; it does not need the whole block.
func ParseBlockHeader(b []byte) (BlockHeader, error) {
	if len(b) < blockHeaderUsed {
		return BlockHeader{}, fmt.Errorf("%w: header needs %d bytes, have %d", ErrCorruptBlock, blockHeaderUsed, len(b))
	}
	if m := binary.BigEndian.Uint32(b); m != BlockMagic {
		return BlockHeader{}, fmt.Errorf("%w: magic %#08x, want %#08x", ErrCorruptBlock, m, BlockMagic)
	}
	h := BlockHeader{
		HeaderLength: int64(binary.BigEndian.Uint64(b[4:])),
		BlockLength:  int64(binary.BigEndian.Uint64(b[12:])),
		FirstEntryID: int64(binary.BigEndian.Uint64(b[20:])),
	}
	if h.HeaderLength != BlockHeaderSize {
		return h, fmt.Errorf("%w: header length %d, want %d", ErrCorruptBlock, h.HeaderLength, BlockHeaderSize)
	}
	if h.BlockLength < BlockHeaderSize || h.BlockLength > MaxBlockSizeLimit {
		return h, fmt.Errorf("%w: block length %d out of range", ErrCorruptBlock, h.BlockLength)
	}
	if h.FirstEntryID < 0 {
		return h, fmt.Errorf("%w: negative first entry id %d", ErrCorruptBlock, h.FirstEntryID)
	}
	return h, nil
}

// BlockSize returns the size Pulsar gives the next block
// (BlockAwareSegmentInputStreamImpl.calculateBlockSize):
//
//	min(maxBlockSize, (lastEntryID-firstEntryID+1)*12 + (ledgerLength-payloadWritten) + 128)
//
// where firstEntryID is the first entry of the block and payloadWritten the
// payload bytes already placed in earlier blocks. So every block but the last
// is exactly maxBlockSize (padded) and the last is exactly as long as the
// records it holds.
func BlockSize(maxBlockSize int, lastEntryID, firstEntryID, ledgerLength, payloadWritten int64) int {
	need := (lastEntryID-firstEntryID+1)*RecordHeaderSize + (ledgerLength - payloadWritten) + BlockHeaderSize
	if need < int64(maxBlockSize) {
		return int(need)
	}
	return maxBlockSize
}

// gatherPadding is the end padding of gathered blocks (EncoderOptions.
// Gather): the pattern repeated over 64 KiB, a multiple of its 4 bytes, so
// a padding of any length is this slice repeated and then cut. Read-only.
var gatherPadding = func() []byte {
	b := make([]byte, 64<<10)
	fillPadding(b)
	return b
}()

// fillPadding writes the end padding into b, starting with FE: the
// pattern once, then doubled by copying what is already written (a block's
// padding can be most of a megabyte).
func fillPadding(b []byte) {
	n := copy(b, padding[:])
	for n < len(b) {
		n += copy(b[n:], b[:n])
	}
}

// DecodeBlock checks one whole data block and calls fn for every record in
// order. The payload slices alias b. It verifies the header (magic, header
// length, block length == len(b)), that entry ids run from the header's
// first id without gaps, that every record lies inside the block, and that
// everything after the records is FE DC DE AD padding. An error from fn stops
// the walk and is returned as is.
func DecodeBlock(b []byte, fn func(entryID int64, payload []byte) error) (BlockHeader, error) {
	h, err := ParseBlockHeader(b)
	if err != nil {
		return h, err
	}
	if h.BlockLength != int64(len(b)) {
		return h, fmt.Errorf("%w: header says %d bytes, block has %d", ErrCorruptBlock, h.BlockLength, len(b))
	}
	next := h.FirstEntryID
	pos := BlockHeaderSize
	for len(b)-pos >= 4 {
		n := int32(binary.BigEndian.Uint32(b[pos:]))
		if n < 0 {
			break
		}
		if len(b)-pos < RecordHeaderSize || int(n) > len(b)-pos-RecordHeaderSize {
			return h, fmt.Errorf("%w: record at offset %d (length %d) overruns the block of %d bytes", ErrCorruptBlock, pos, n, len(b))
		}
		id := int64(binary.BigEndian.Uint64(b[pos+4:]))
		if id != next {
			return h, fmt.Errorf("%w: record at offset %d has entry id %d, want %d", ErrCorruptBlock, pos, id, next)
		}
		start := pos + RecordHeaderSize
		if fn != nil {
			if err := fn(id, b[start:start+int(n)]); err != nil {
				return h, err
			}
		}
		pos = start + int(n)
		next++
	}
	if next == h.FirstEntryID {
		return h, fmt.Errorf("%w: block starting at entry %d holds no record", ErrCorruptBlock, h.FirstEntryID)
	}
	for i := pos; i < len(b); i++ {
		if b[i] != padding[(i-pos)&3] {
			return h, fmt.Errorf("%w: byte %#02x at offset %d is not end padding", ErrCorruptBlock, b[i], i)
		}
	}
	return h, nil
}
