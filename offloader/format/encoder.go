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
	// Gather leaves the payloads given with AddKept where they are: the
	// block refers to them (Block.Vector) instead of holding a copy, and
	// the encoder's own buffer holds only the headers and the payloads of
	// Add and AddSummed. For a store that sends a part as a gather list
	// (blob.UploadsVectors): the payloads then go from the bookie frames
	// they were read into to the socket with no copy of ours.
	Gather bool
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
	// With EncoderOptions.Gather it holds only the encoder's own bytes
	// (headers and copied payloads; the block is Vector) and is still
	// returned to the BufferSource.
	Data []byte
	// Vector, with EncoderOptions.Gather, is the whole block as slices:
	// its bytes are their concatenation (Size bytes). They refer to Data,
	// the payloads given with AddKept and a shared read-only padding
	// pattern; the emit function must call ReleaseKept once the block has
	// been consumed (or given up), after which the kept payloads may be
	// reused. Nil without Gather.
	Vector [][]byte
	// Size is the block's length in bytes (len(Data) without Gather).
	Size int
	kept []func() // releases of the payloads the block refers to
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

// ReleaseKept calls the releases of the payloads given with AddKept that
// the block refers to (Gather). Call it exactly once per block, after the
// block's bytes have been sent or when giving them up.
func (b Block) ReleaseKept() {
	for _, f := range b.kept {
		f()
	}
}

// Bytes returns the block's bytes in one slice: Data without Gather, else
// a copy joined from Vector. For tests and tools.
func (b Block) Bytes() []byte {
	if b.Vector == nil {
		return b.Data
	}
	out := make([]byte, 0, b.Size)
	for _, v := range b.Vector {
		out = append(out, v...)
	}
	return out
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
	gather   bool // EncoderOptions.Gather
	bufs     BufferSource
	emit     func(context.Context, Block) error

	cur     Block // cur.Data == nil: no block open
	pos     int   // bytes of the block written (cur.Size when full)
	segs    []seg // Gather: the open block's pieces, in order
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
	return &Encoder{ledger: l, maxBlock: maxBlock, crc: !opts.NoCRC32C, gather: opts.Gather, bufs: bufs, emit: emit}, nil
}

// seg is a piece of a gathered block: n bytes of the encoder's own buffer
// at off, or ref (a kept payload or padding).
type seg struct {
	off, n int
	ref    []byte
}

// MaxPayload is the largest entry payload the encoder accepts.
func (e *Encoder) MaxPayload() int { return e.maxBlock - BlockHeaderSize - RecordHeaderSize }

// Add appends the next entry. Entries must come as 0, 1, 2, ... LastEntryID.
// The payload is copied; the caller may reuse it when Add returns. Add may
// block in the BufferSource waiting for a free block buffer.
func (e *Encoder) Add(ctx context.Context, entryID int64, payload []byte) error {
	return e.add(ctx, entryID, payload, 0, false, nil)
}

// AddSummed is Add for a payload whose CRC-32C the caller knows (from the
// digest the bookie stored with it): the block's CRC32C combines it instead
// of hashing the copied payload again. A wrong crc gives a block whose
// CRC32C is not that of its bytes, which a store verifying it refuses.
func (e *Encoder) AddSummed(ctx context.Context, entryID int64, payload []byte, crc uint32) error {
	return e.add(ctx, entryID, payload, crc, true, nil)
}

// AddKept is AddSummed for a payload that stays where it is until release
// is called: with EncoderOptions.Gather the block refers to it instead of
// copying it, and release is called once the block has been consumed
// (Block.ReleaseKept) or dropped (Abort, an error); without Gather it is
// copied and release called before AddKept returns. release is called
// exactly once in every case, errors included.
func (e *Encoder) AddKept(ctx context.Context, entryID int64, payload []byte, crc uint32, release func()) error {
	if !e.gather {
		err := e.add(ctx, entryID, payload, crc, true, nil)
		release()
		return err
	}
	return e.add(ctx, entryID, payload, crc, true, release)
}

func (e *Encoder) add(ctx context.Context, entryID int64, payload []byte, crc uint32, summed bool, release func()) (err error) {
	if release != nil {
		// Until the block holds it, an error gives the payload back here.
		defer func() {
			if release != nil {
				release()
			}
		}()
	}
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
	if e.cur.Data != nil && e.pos+rec > e.cur.Size {
		if err := e.flush(ctx); err != nil {
			return e.fail(err)
		}
	}
	if e.cur.Data == nil {
		if err := e.open(ctx, entryID); err != nil {
			return e.fail(err)
		}
		if e.pos+rec > e.cur.Size {
			// Only reachable if the declared length is wrong.
			return e.fail(fmt.Errorf("%w: entry %d (%d bytes) does not fit the %d-byte block sized from the ledger length", ErrLengthMismatch, entryID, len(payload), e.cur.Size))
		}
	}
	var hdr []byte
	if e.gather {
		// The record header in the own buffer; the payload copied after
		// it, or referred to when kept.
		own := len(e.cur.Data)
		if release != nil {
			e.cur.Data = e.grow(RecordHeaderSize)
			e.addOwn(own, RecordHeaderSize)
			e.segs = append(e.segs, seg{ref: payload})
			e.cur.kept = append(e.cur.kept, release)
			release = nil // the block holds it now
		} else {
			e.cur.Data = e.grow(rec)
			copy(e.cur.Data[own+RecordHeaderSize:], payload)
			e.addOwn(own, rec)
		}
		hdr = e.cur.Data[own:]
	} else {
		hdr = e.cur.Data[e.pos:]
		copy(hdr[RecordHeaderSize:], payload)
	}
	binary.BigEndian.PutUint32(hdr, uint32(len(payload)))
	binary.BigEndian.PutUint64(hdr[4:], uint64(entryID))
	if e.crc {
		e.cur.CRC32C = crc32c.Update(e.cur.CRC32C, hdr[:RecordHeaderSize])
		if summed {
			e.cur.CRC32C = crc32c.Combine(e.cur.CRC32C, crc, int64(len(payload)))
		} else {
			e.cur.CRC32C = crc32c.Update(e.cur.CRC32C, payload)
		}
	}
	e.pos += rec
	e.cur.LastEntryID = entryID
	e.cur.PayloadBytes += int64(len(payload))
	e.written += int64(len(payload))
	e.next++
	if e.pos == e.cur.Size {
		if err := e.flush(ctx); err != nil {
			return e.fail(err)
		}
	}
	return nil
}

// open starts the block whose first entry is entryID: its buffer (with
// Gather, an empty one that grows with the own bytes) and header.
func (e *Encoder) open(ctx context.Context, entryID int64) error {
	size := BlockSize(e.maxBlock, e.ledger.LastEntryID, entryID, e.ledger.Length, e.written)
	want := size
	if e.gather {
		// The slot alone (a buffer the pool has free is used as it is).
		want = 0
	}
	buf, err := e.bufs.Get(ctx, want)
	if err != nil {
		return fmt.Errorf("format: block buffer: %w", err)
	}
	e.cur = Block{PartNumber: len(e.blocks) + 1, FirstEntryID: entryID, Offset: e.offset, Data: buf, Size: size}
	if e.gather {
		e.segs = e.segs[:0]
		e.cur.Data = e.grow(BlockHeaderSize)
		e.addOwn(0, BlockHeaderSize)
	}
	putBlockHeader(e.cur.Data, size, entryID)
	if e.crc {
		e.cur.CRC32C = crc32c.Checksum(e.cur.Data[:BlockHeaderSize])
	}
	e.pos = BlockHeaderSize
	return nil
}

// grow extends the open block's own buffer by n bytes (Gather), moving it
// to a larger array when full: doubling, at most to the block size (the
// own bytes never exceed it).
func (e *Encoder) grow(n int) []byte {
	b := e.cur.Data
	if need := len(b) + n; need > cap(b) {
		c := min(max(2*cap(b), need, 4<<10), max(e.cur.Size, need))
		nb := make([]byte, len(b), c)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// addOwn appends n own bytes at off to the open block's pieces, merged
// with the piece before when that is own bytes ending at off.
func (e *Encoder) addOwn(off, n int) {
	if k := len(e.segs) - 1; k >= 0 && e.segs[k].ref == nil && e.segs[k].off+e.segs[k].n == off {
		e.segs[k].n += n
		return
	}
	e.segs = append(e.segs, seg{off: off, n: n})
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
		e.cur.ReleaseKept()
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
	if e.gather {
		for n := blk.Size - e.pos; n > 0; {
			p := gatherPadding[:min(n, len(gatherPadding))]
			e.segs = append(e.segs, seg{ref: p})
			if e.crc {
				blk.CRC32C = crc32c.Update(blk.CRC32C, p)
			}
			n -= len(p)
		}
		blk.Vector = make([][]byte, len(e.segs))
		for i, sg := range e.segs {
			if sg.ref != nil {
				blk.Vector[i] = sg.ref
			} else {
				blk.Vector[i] = blk.Data[sg.off : sg.off+sg.n : sg.off+sg.n]
			}
		}
	} else {
		fillPadding(blk.Data[e.pos:])
		if e.crc {
			blk.CRC32C = crc32c.Update(blk.CRC32C, blk.Data[e.pos:])
		}
	}
	e.cur = Block{}
	e.blocks = append(e.blocks, IndexEntry{FirstEntryID: blk.FirstEntryID, PartID: int32(blk.PartNumber), Offset: blk.Offset})
	e.offset += int64(blk.Size)
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
