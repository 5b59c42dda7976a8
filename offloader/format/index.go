package format

import (
	"encoding/binary"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

// Index object layout (V1), big-endian, as OffloadIndexBlockImpl.toStream
// writes it:
//
//	offset  width     field
//	     0      4     magic 0xDE47DE47
//	     4      4     index length = 32 + metaLen + 20*count (Pulsar ignores it)
//	     8      8     data object length (bounds every ranged GET)
//	    16      8     data header length = 128 (added to block offsets)
//	    24      4     count = number of blocks
//	    28      4     metaLen
//	    32      metaLen  BookKeeper LedgerMetadataFormat, raw protobuf
//	     …      20*count, ascending first entry id:
//	                 +---------------------+-------------+--------------------+
//	                 | int64 first entry id| int32 part  | int64 block offset |
//	                 +---------------------+-------------+--------------------+
//
// The first block starts at entry 0 and offset 0; the block offset is the
// start of the block's header in the data object.
const (
	// IndexMagic starts a V1 index.
	IndexMagic uint32 = 0xDE47DE47
	// indexMagicV2 starts a streaming (PIP-76) index, which we do not read.
	indexMagicV2 uint32 = 0x3D1FB0BC

	indexFixedSize = 32
	indexEntrySize = 8 + 4 + 8

	// MaxIndexSize bounds an index object before it is read into memory
	// (a 1 TiB ledger in 5 MiB blocks needs about 4 MiB).
	MaxIndexSize = 64 << 20
)

// IndexEntry locates one data block.
type IndexEntry struct {
	// FirstEntryID is the id of the block's first record.
	FirstEntryID int64
	// PartID is the 1-based multipart part number (Pulsar's reader never
	// uses it; offsets alone locate blocks).
	PartID int32
	// Offset is where the block (its header) starts in the data object.
	Offset int64
}

// Index is a decoded V1 index.
type Index struct {
	// DataObjectLength is the exact size of the data object.
	DataObjectLength int64
	// DataHeaderLength is the block header length (128).
	DataHeaderLength int64
	// Metadata is the ledger's BookKeeper metadata as Pulsar stores it:
	// state CLOSED, lastEntryId = LAC, length = total payload bytes.
	Metadata *bkproto.LedgerMetadataFormat
	// Blocks lists the data blocks in ascending entry-id and offset order.
	Blocks []IndexEntry
}

// LastEntryID is the ledger's last entry id (LAC) from the metadata.
func (ix *Index) LastEntryID() int64 { return ix.Metadata.GetLastEntryId() }

// Size returns the marshalled size of the index.
func (ix *Index) Size() int {
	return indexFixedSize + proto.Size(ix.Metadata) + indexEntrySize*len(ix.Blocks)
}

// Marshal encodes the index. It validates it first (see Validate).
func (ix *Index) Marshal() ([]byte, error) {
	if err := ix.Validate(); err != nil {
		return nil, err
	}
	meta, err := proto.Marshal(ix.Metadata)
	if err != nil {
		return nil, fmt.Errorf("%w: ledger metadata: %v", ErrCorruptIndex, err)
	}
	n := indexFixedSize + len(meta) + indexEntrySize*len(ix.Blocks)
	if n > MaxIndexSize {
		return nil, fmt.Errorf("%w: index of %d bytes exceeds %d", ErrCorruptIndex, n, MaxIndexSize)
	}
	b := make([]byte, n)
	binary.BigEndian.PutUint32(b[0:], IndexMagic)
	binary.BigEndian.PutUint32(b[4:], uint32(n))
	binary.BigEndian.PutUint64(b[8:], uint64(ix.DataObjectLength))
	binary.BigEndian.PutUint64(b[16:], uint64(ix.DataHeaderLength))
	binary.BigEndian.PutUint32(b[24:], uint32(len(ix.Blocks)))
	binary.BigEndian.PutUint32(b[28:], uint32(len(meta)))
	p := indexFixedSize + copy(b[indexFixedSize:], meta)
	for _, e := range ix.Blocks {
		binary.BigEndian.PutUint64(b[p:], uint64(e.FirstEntryID))
		binary.BigEndian.PutUint32(b[p+8:], uint32(e.PartID))
		binary.BigEndian.PutUint64(b[p+12:], uint64(e.Offset))
		p += indexEntrySize
	}
	return b, nil
}

// ParseIndex decodes and validates a V1 index. Every length is checked
// against len(b) before anything is allocated.
func ParseIndex(b []byte) (*Index, error) {
	if len(b) < indexFixedSize {
		return nil, fmt.Errorf("%w: %d bytes, need at least %d", ErrCorruptIndex, len(b), indexFixedSize)
	}
	if len(b) > MaxIndexSize {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", ErrCorruptIndex, len(b), MaxIndexSize)
	}
	switch m := binary.BigEndian.Uint32(b); m {
	case IndexMagic:
	case indexMagicV2:
		return nil, fmt.Errorf("%w: streaming (V2) index magic %#08x", ErrUnsupportedIndex, m)
	default:
		return nil, fmt.Errorf("%w: magic %#08x, want %#08x", ErrCorruptIndex, m, IndexMagic)
	}
	declared := int64(binary.BigEndian.Uint32(b[4:]))
	ix := &Index{
		DataObjectLength: int64(binary.BigEndian.Uint64(b[8:])),
		DataHeaderLength: int64(binary.BigEndian.Uint64(b[16:])),
	}
	count := int64(int32(binary.BigEndian.Uint32(b[24:])))
	metaLen := int64(int32(binary.BigEndian.Uint32(b[28:])))
	if count < 0 || metaLen < 0 {
		return nil, fmt.Errorf("%w: negative count %d or metadata length %d", ErrCorruptIndex, count, metaLen)
	}
	want := indexFixedSize + metaLen + indexEntrySize*count
	if want != int64(len(b)) {
		return nil, fmt.Errorf("%w: count %d and metadata length %d need %d bytes, object has %d", ErrCorruptIndex, count, metaLen, want, len(b))
	}
	if declared != want {
		return nil, fmt.Errorf("%w: index length field %d, object has %d bytes", ErrCorruptIndex, declared, len(b))
	}
	ix.Metadata = new(bkproto.LedgerMetadataFormat)
	// proto2 required fields are checked, as Java's build() does.
	if err := proto.Unmarshal(b[indexFixedSize:indexFixedSize+metaLen], ix.Metadata); err != nil {
		return nil, fmt.Errorf("%w: ledger metadata: %v", ErrCorruptIndex, err)
	}
	ix.Blocks = make([]IndexEntry, count)
	p := indexFixedSize + int(metaLen)
	for i := range ix.Blocks {
		ix.Blocks[i] = IndexEntry{
			FirstEntryID: int64(binary.BigEndian.Uint64(b[p:])),
			PartID:       int32(binary.BigEndian.Uint32(b[p+8:])),
			Offset:       int64(binary.BigEndian.Uint64(b[p+12:])),
		}
		p += indexEntrySize
	}
	if err := ix.Validate(); err != nil {
		return nil, err
	}
	return ix, nil
}

// Validate checks what a reader relies on: header length 128; at least one
// block; the first at entry 0 and offset 0; entry ids and offsets strictly
// ascending; part ids 1..N; every block at least a header and a record long
// and inside the data object; metadata CLOSED with required fields, a
// lastEntryId >= every block's first entry id.
func (ix *Index) Validate() error {
	md := ix.Metadata
	switch {
	case md == nil:
		return fmt.Errorf("%w: no ledger metadata", ErrCorruptIndex)
	case md.QuorumSize == nil || md.EnsembleSize == nil || md.Length == nil || md.State == nil:
		return fmt.Errorf("%w: ledger metadata lacks a required field", ErrCorruptIndex)
	case md.GetState() != bkproto.LedgerMetadataFormat_CLOSED:
		return fmt.Errorf("%w: ledger state %v, want CLOSED", ErrCorruptIndex, md.GetState())
	case md.LastEntryId == nil || md.GetLastEntryId() < 0:
		return fmt.Errorf("%w: ledger metadata has no last entry id", ErrCorruptIndex)
	case md.GetLength() < 0:
		return fmt.Errorf("%w: negative ledger length %d", ErrCorruptIndex, md.GetLength())
	case ix.DataHeaderLength != BlockHeaderSize:
		return fmt.Errorf("%w: data header length %d, want %d", ErrCorruptIndex, ix.DataHeaderLength, BlockHeaderSize)
	case len(ix.Blocks) == 0:
		return fmt.Errorf("%w: no blocks", ErrCorruptIndex)
	case ix.Blocks[0].FirstEntryID != 0 || ix.Blocks[0].Offset != 0:
		return fmt.Errorf("%w: first block starts at entry %d offset %d, want 0 and 0", ErrCorruptIndex, ix.Blocks[0].FirstEntryID, ix.Blocks[0].Offset)
	}
	last := md.GetLastEntryId()
	for i, e := range ix.Blocks {
		if e.PartID != int32(i+1) {
			return fmt.Errorf("%w: block %d has part id %d, want %d", ErrCorruptIndex, i, e.PartID, i+1)
		}
		if e.FirstEntryID > last {
			return fmt.Errorf("%w: block %d starts at entry %d past the last entry %d", ErrCorruptIndex, i, e.FirstEntryID, last)
		}
		end := ix.DataObjectLength
		if i+1 < len(ix.Blocks) {
			next := ix.Blocks[i+1]
			if next.FirstEntryID <= e.FirstEntryID {
				return fmt.Errorf("%w: block %d first entry %d not after block %d's %d", ErrCorruptIndex, i+1, next.FirstEntryID, i, e.FirstEntryID)
			}
			end = next.Offset
		}
		if end-e.Offset < minBlockSize || end > ix.DataObjectLength || end-e.Offset > MaxBlockSizeLimit {
			return fmt.Errorf("%w: block %d spans [%d,%d) in a %d-byte object", ErrCorruptIndex, i, e.Offset, end, ix.DataObjectLength)
		}
	}
	return nil
}

// Lookup returns the position in Blocks of the block holding entryID (the
// last block whose first entry id is <= entryID), or ErrEntryRange.
func (ix *Index) Lookup(entryID int64) (int, error) {
	if entryID < 0 || entryID > ix.LastEntryID() {
		return 0, fmt.Errorf("%w: entry %d, ledger has 0..%d", ErrEntryRange, entryID, ix.LastEntryID())
	}
	i := sort.Search(len(ix.Blocks), func(i int) bool { return ix.Blocks[i].FirstEntryID > entryID })
	return i - 1, nil
}

// BlockRange returns the byte range [start, end) of block i in the data object.
func (ix *Index) BlockRange(i int) (start, end int64) {
	start = ix.Blocks[i].Offset
	end = ix.DataObjectLength
	if i+1 < len(ix.Blocks) {
		end = ix.Blocks[i+1].Offset
	}
	return start, end
}

// IndexMetadata builds the ledger metadata Pulsar stores in the index from
// the ledger's BookKeeper metadata, field for field as
// OffloadUtils.buildLedgerMetadataFormat does: quorum, ack quorum (the write
// quorum when absent, as BookKeeper reads it), ensemble size, length, state
// CLOSED, last entry id, ctime, digest type, custom metadata and ensembles in
// the given order; password and cToken are dropped. The ledger must be
// closed with at least one entry and a positive length.
//
// bk.Ctime must be the creation time as BookKeeper's client reports it
// (LedgerMetadata.getCtime): the stored ctime, or — when the znode stores
// none, which is BookKeeper's default — the znode's creation time
// (Stat.ctime). Pulsar writes that value, so without it the index differs
// from the broker's (checked against Pulsar in test/compat).
func IndexMetadata(bk *bkproto.LedgerMetadataFormat) (*bkproto.LedgerMetadataFormat, error) {
	switch {
	case bk == nil:
		return nil, fmt.Errorf("%w: no metadata", ErrInvalidLedger)
	case bk.GetState() != bkproto.LedgerMetadataFormat_CLOSED:
		return nil, fmt.Errorf("%w: state %v, want CLOSED", ErrInvalidLedger, bk.GetState())
	case bk.LastEntryId == nil || bk.GetLastEntryId() < 0:
		return nil, fmt.Errorf("%w: no entries (last entry id %d)", ErrInvalidLedger, bk.GetLastEntryId())
	case bk.GetLength() <= 0:
		return nil, fmt.Errorf("%w: length %d", ErrInvalidLedger, bk.GetLength())
	case bk.DigestType == nil:
		return nil, fmt.Errorf("%w: metadata has no digest type", ErrInvalidLedger)
	case bk.QuorumSize == nil || bk.EnsembleSize == nil:
		return nil, fmt.Errorf("%w: metadata lacks quorum or ensemble size", ErrInvalidLedger)
	}
	ack := bk.GetQuorumSize()
	if bk.AckQuorumSize != nil {
		ack = bk.GetAckQuorumSize()
	}
	md := &bkproto.LedgerMetadataFormat{
		QuorumSize:    proto.Int32(bk.GetQuorumSize()),
		EnsembleSize:  proto.Int32(bk.GetEnsembleSize()),
		Length:        proto.Int64(bk.GetLength()),
		LastEntryId:   proto.Int64(bk.GetLastEntryId()),
		State:         bkproto.LedgerMetadataFormat_CLOSED.Enum(),
		DigestType:    bk.GetDigestType().Enum(),
		AckQuorumSize: proto.Int32(ack),
		Ctime:         proto.Int64(bk.GetCtime()),
	}
	for _, s := range bk.GetSegment() {
		md.Segment = append(md.Segment, &bkproto.LedgerMetadataFormat_Segment{
			EnsembleMember: append([]string(nil), s.GetEnsembleMember()...),
			FirstEntryId:   proto.Int64(s.GetFirstEntryId()),
		})
	}
	for _, c := range bk.GetCustomMetadata() {
		md.CustomMetadata = append(md.CustomMetadata, &bkproto.LedgerMetadataFormatCMetadataMapEntry{
			Key:   proto.String(c.GetKey()),
			Value: append([]byte{}, c.GetValue()...),
		})
	}
	return md, nil
}
