package format

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/crc32c"
)

// Ledger is what the encoder must know up front, all from the ledger's
// BookKeeper metadata: Pulsar sizes each block from the number of entries
// and payload bytes still to come.
type Ledger struct {
	// ID is the ledger id.
	ID int64
	// LastEntryID is the last entry id (LAC); entries 0..LastEntryID are
	// encoded. Must be >= 0.
	LastEntryID int64
	// Length is the ledger length in BookKeeper metadata: the sum of the
	// entry payload sizes. Must be > 0 (Pulsar refuses empty ledgers).
	Length int64
}

func (l Ledger) validate() error {
	switch {
	case l.ID < 0:
		return fmt.Errorf("%w: ledger id %d", ErrInvalidLedger, l.ID)
	case l.LastEntryID < 0:
		return fmt.Errorf("%w: ledger %d has no entries", ErrInvalidLedger, l.ID)
	case l.Length <= 0:
		return fmt.Errorf("%w: ledger %d has length %d", ErrInvalidLedger, l.ID, l.Length)
	}
	return nil
}

// EncoderOptions configure an Encoder.
type EncoderOptions struct {
	// MaxBlockSize is the size of every block but the last, in bytes
	// (Pulsar's managedLedgerOffloadMaxBlockSizeInBytes). Zero means
	// DefaultMaxBlockSize. It must hold a header and a record; an upload to
	// S3 also needs it >= MinPartSize (the upload package checks that).
	MaxBlockSize int
	// NoCRC32C leaves Block.CRC32C zero: no block header, record header,
	// payload or padding is hashed. For stores that do not use a part
	// CRC-32C (blob.UsesPartCRC32C false: Content-MD5, COS, fs).
	NoCRC32C bool
}

// Block is one encoded data block, handed to the emit function.
type Block struct {
	// PartNumber is the 1-based block number: the multipart part number and
	// the partId in the index.
	PartNumber int
	// FirstEntryID and LastEntryID are the first and last entry ids in the
	// block.
	FirstEntryID int64
	LastEntryID  int64
	// Offset is where the block starts in the data object.
	Offset int64
	// Data is the whole block, header and padding included. The emit
	// function owns it and must return it to the BufferSource when done.
	Data []byte
	// PayloadBytes is the sum of the payload sizes in the block.
	PayloadBytes int64
	// CRC32C is the CRC-32C of Data: the block header, record headers and
	// padding hashed in the block, every payload either hashed in the block
	// after its copy (Add) or combined from the CRC its caller vouched for
	// (AddSummed: the bookie's, whose digest was checked). A store that
	// verifies it (S3's x-amz-checksum-crc32c) thus also checks the copy.
	// Zero with EncoderOptions.NoCRC32C.
	CRC32C uint32
}

// Layout is the result of encoding a ledger: where the blocks are.
type Layout struct {
	Blocks           []IndexEntry
	DataObjectLength int64
}

// Index returns the V1 index for the layout with the given ledger metadata
// (see IndexMetadata).
func (l Layout) Index(md *bkproto.LedgerMetadataFormat) *Index {
	return &Index{
		DataObjectLength: l.DataObjectLength,
		DataHeaderLength: BlockHeaderSize,
		Metadata:         md,
		Blocks:           append([]IndexEntry(nil), l.Blocks...),
	}
}

// Encoder turns entries 0..LastEntryID into V1 data blocks, streaming: it
// holds one block buffer at a time and hands each finished block to emit.
// Block sizes follow Pulsar exactly (see BlockSize), so the output is byte
// for byte what Pulsar's offloader writes for the same ledger. Not safe for
// concurrent use.
type Encoder struct {
	ledger   Ledger
	maxBlock int
	crc      bool // compute Block.CRC32C (not NoCRC32C)
	bufs     BufferSource
	emit     func(context.Context, Block) error

	cur     Block // cur.Data == nil: no block open
	pos     int
	next    int64
	written int64
	offset  int64
	blocks  []IndexEntry
	err     error
	done    bool
}

// NewEncoder returns an encoder for ledger l. Buffers come from bufs (nil:
// allocate each block); emit receives every finished block, in order, and
// owns its Data from then on. An error from emit stops the encoder.
func NewEncoder(l Ledger, opts EncoderOptions, bufs BufferSource, emit func(context.Context, Block) error) (*Encoder, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	maxBlock := opts.MaxBlockSize
	if maxBlock == 0 {
		maxBlock = DefaultMaxBlockSize
	}
	if maxBlock < minBlockSize || maxBlock > MaxBlockSizeLimit {
		return nil, fmt.Errorf("format: max block size %d out of range [%d, %d]", maxBlock, minBlockSize, MaxBlockSizeLimit)
	}
	if bufs == nil {
		bufs = heapBuffers{}
	}
	if emit == nil {
		return nil, errors.New("format: NewEncoder needs an emit function")
	}
	return &Encoder{ledger: l, maxBlock: maxBlock, crc: !opts.NoCRC32C, bufs: bufs, emit: emit}, nil
}

// MaxPayload is the largest entry payload the encoder accepts.
func (e *Encoder) MaxPayload() int { return e.maxBlock - BlockHeaderSize - RecordHeaderSize }

// Add appends the next entry. Entries must come as 0, 1, 2, ... LastEntryID.
// The payload is copied; the caller may reuse it when Add returns. Add may
// block in the BufferSource waiting for a free block buffer.
func (e *Encoder) Add(ctx context.Context, entryID int64, payload []byte) error {
	return e.add(ctx, entryID, payload, 0, false)
}

// AddSummed is Add for a payload whose CRC-32C the caller knows (from the
// digest the bookie stored with it): the block's CRC32C combines it instead
// of hashing the copied payload again. A wrong crc gives a block whose
// CRC32C is not that of its bytes, which a store verifying it refuses.
func (e *Encoder) AddSummed(ctx context.Context, entryID int64, payload []byte, crc uint32) error {
	return e.add(ctx, entryID, payload, crc, true)
}

func (e *Encoder) add(ctx context.Context, entryID int64, payload []byte, crc uint32, summed bool) error {
	if e.err != nil {
		return e.err
	}
	if e.done {
		return fmt.Errorf("%w: Add after Finish", ErrEntrySequence)
	}
	switch {
	case entryID != e.next:
		return e.fail(fmt.Errorf("%w: got entry %d, want %d", ErrEntrySequence, entryID, e.next))
	case entryID > e.ledger.LastEntryID:
		return e.fail(fmt.Errorf("%w: entry %d is past the last entry %d", ErrEntrySequence, entryID, e.ledger.LastEntryID))
	case len(payload) > e.MaxPayload():
		return e.fail(fmt.Errorf("%w: entry %d has %d bytes, at most %d fit a %d-byte block", ErrRecordTooLarge, entryID, len(payload), e.MaxPayload(), e.maxBlock))
	case e.written+int64(len(payload)) > e.ledger.Length:
		return e.fail(fmt.Errorf("%w: entry %d brings the payload to %d bytes, ledger length is %d", ErrLengthMismatch, entryID, e.written+int64(len(payload)), e.ledger.Length))
	}
	rec := RecordHeaderSize + len(payload)
	if e.cur.Data != nil && e.pos+rec > len(e.cur.Data) {
		if err := e.flush(ctx); err != nil {
			return e.fail(err)
		}
	}
	if e.cur.Data == nil {
		size := BlockSize(e.maxBlock, e.ledger.LastEntryID, entryID, e.ledger.Length, e.written)
		buf, err := e.bufs.Get(ctx, size)
		if err != nil {
			return e.fail(fmt.Errorf("format: block buffer: %w", err))
		}
		putBlockHeader(buf, size, entryID)
		e.cur = Block{PartNumber: len(e.blocks) + 1, FirstEntryID: entryID, Offset: e.offset, Data: buf}
		if e.crc {
			e.cur.CRC32C = crc32c.Checksum(buf[:BlockHeaderSize])
		}
		e.pos = BlockHeaderSize
		if e.pos+rec > size {
			// Only reachable if the declared length is wrong.
			return e.fail(fmt.Errorf("%w: entry %d (%d bytes) does not fit the %d-byte block sized from the ledger length", ErrLengthMismatch, entryID, len(payload), size))
		}
	}
	b := e.cur.Data[e.pos:]
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	binary.BigEndian.PutUint64(b[4:], uint64(entryID))
	copy(b[RecordHeaderSize:], payload)
	if e.crc {
		e.cur.CRC32C = crc32c.Update(e.cur.CRC32C, b[:RecordHeaderSize])
		if summed {
			e.cur.CRC32C = crc32c.Combine(e.cur.CRC32C, crc, int64(len(payload)))
		} else {
			e.cur.CRC32C = crc32c.Update(e.cur.CRC32C, b[RecordHeaderSize:rec])
		}
	}
	e.pos += rec
	e.cur.LastEntryID = entryID
	e.cur.PayloadBytes += int64(len(payload))
	e.written += int64(len(payload))
	e.next++
	if e.pos == len(e.cur.Data) {
		if err := e.flush(ctx); err != nil {
			return e.fail(err)
		}
	}
	return nil
}

// Finish emits the last block and returns the layout. It fails if entries
// are missing or their sizes do not add up to the ledger length.
func (e *Encoder) Finish(ctx context.Context) (Layout, error) {
	if e.err != nil {
		return Layout{}, e.err
	}
	if e.done {
		return Layout{}, fmt.Errorf("%w: Finish called twice", ErrEntrySequence)
	}
	if e.next != e.ledger.LastEntryID+1 {
		return Layout{}, e.fail(fmt.Errorf("%w: got entries 0..%d, ledger has 0..%d", ErrEntrySequence, e.next-1, e.ledger.LastEntryID))
	}
	if e.written != e.ledger.Length {
		return Layout{}, e.fail(fmt.Errorf("%w: entries hold %d bytes, ledger length is %d", ErrLengthMismatch, e.written, e.ledger.Length))
	}
	if e.cur.Data != nil {
		if err := e.flush(ctx); err != nil {
			return Layout{}, e.fail(err)
		}
	}
	e.done = true
	return Layout{Blocks: append([]IndexEntry(nil), e.blocks...), DataObjectLength: e.offset}, nil
}

// Abort releases the block being filled. Call it when giving up before
// Finish; it is safe to call at any time and more than once.
func (e *Encoder) Abort() {
	if e.err == nil {
		e.err = errors.New("format: encoder aborted")
	}
	e.release()
}

func (e *Encoder) release() {
	if e.cur.Data != nil {
		e.bufs.Put(e.cur.Data)
		e.cur = Block{}
	}
}

func (e *Encoder) fail(err error) error {
	e.err = err
	e.release()
	return err
}

// flush pads the current block and hands it to emit.
func (e *Encoder) flush(ctx context.Context) error {
	blk := e.cur
	fillPadding(blk.Data[e.pos:])
	if e.crc {
		blk.CRC32C = crc32c.Update(blk.CRC32C, blk.Data[e.pos:])
	}
	e.cur = Block{}
	e.blocks = append(e.blocks, IndexEntry{FirstEntryID: blk.FirstEntryID, PartID: int32(blk.PartNumber), Offset: blk.Offset})
	e.offset += int64(len(blk.Data))
	if err := e.emit(ctx, blk); err != nil {
		return fmt.Errorf("format: block %d: %w", blk.PartNumber, err)
	}
	return nil
}

// Encode encodes a whole ledger held in memory and returns the data object
// bytes and the layout. Meant for tests and small tools; offloads stream
// through an Encoder.
func Encode(l Ledger, opts EncoderOptions, payloads [][]byte) ([]byte, Layout, error) {
	var data []byte
	enc, err := NewEncoder(l, opts, nil, func(_ context.Context, b Block) error {
		data = append(data, b.Data...)
		return nil
	})
	if err != nil {
		return nil, Layout{}, err
	}
	ctx := context.Background()
	for i, p := range payloads {
		if err := enc.Add(ctx, int64(i), p); err != nil {
			return nil, Layout{}, err
		}
	}
	layout, err := enc.Finish(ctx)
	if err != nil {
		return nil, Layout{}, err
	}
	return data, layout, nil
}

// LedgerOf returns the Ledger describing payloads as entries 0..n-1.
func LedgerOf(id int64, payloads [][]byte) Ledger {
	var n int64
	for _, p := range payloads {
		n += int64(len(p))
	}
	return Ledger{ID: id, LastEntryID: int64(len(payloads)) - 1, Length: n}
}
