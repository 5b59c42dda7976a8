package format

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/internal/retry"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// ReaderOptions configure a Reader. The zero value gives the defaults.
type ReaderOptions struct {
	// ReadAhead is the buffer, in bytes, kept in front of the read position
	// of the open data stream (default 1 MiB, like Pulsar's
	// managedLedgerOffloadReadBufferSizeInBytes); it never reaches past the
	// end of the GET's range. It is also how far forward the reader skips
	// inside the open stream rather than issuing a new ranged GET.
	ReadAhead int
	// LearnInterval is the spacing, in bytes, of the entry offsets the reader
	// remembers as it passes records, so a later random read can start near
	// its entry instead of at the block start (default 64 KiB; with the
	// default MaxLearned that covers 4 GiB of ledger).
	LearnInterval int
	// MaxLearned bounds the remembered offsets (default 65536, 16 bytes each).
	MaxLearned int
	// Retries is how many times a broken data stream is reopened at the
	// byte where it broke, per Read call (default 3; negative: none).
	Retries int
	// Logger receives debug messages; nil discards them.
	Logger *slog.Logger
}

func (o *ReaderOptions) withDefaults() ReaderOptions {
	var r ReaderOptions
	if o != nil {
		r = *o
	}
	if r.ReadAhead <= 0 {
		r.ReadAhead = 1 << 20
	}
	if r.ReadAhead < 16 {
		r.ReadAhead = 16 // bufio minimum
	}
	if r.LearnInterval <= 0 {
		r.LearnInterval = 64 << 10
	}
	if r.MaxLearned <= 0 {
		r.MaxLearned = 1 << 16
	}
	if r.Retries == 0 {
		r.Retries = 3
	} else if r.Retries < 0 {
		r.Retries = 0
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// Reader serves entries of one offloaded ledger, as Pulsar's
// BlobStoreBackedReadHandleImpl does: the index is read once at Open and
// kept; data comes from ranged GETs of the data object, each checked for
// s3managedledgeroffloaderformatversion=1 and for the object size the
// index gives.
//
// # Requests
//
// Every data GET is bounded: it ends at the end of the block holding the
// last entry asked for, so a random entry costs at most its block (and
// less once the reader knows where a later entry starts: a read that does
// not continue the previous one stops at the next remembered record
// offset). A Read opens at most one GET per block it needs, from the best
// known offset at or before its first entry, and keeps the stream open with
// ReadAhead bytes buffered, so sequential Reads continue on the same
// request until the block ends. Reading a whole ledger costs one GET; a
// random entry costs the index GET at Open plus one data GET. A stream that
// breaks is reopened at the exact byte (Retries).
//
// Every record is checked while streaming: block headers against the index
// (the first block's too), entry ids in sequence, lengths inside their
// block, padding as Pulsar writes it. Methods are safe for concurrent use;
// Reads are serialized.
type Reader struct {
	store    blob.Reader
	dataKey  string
	indexKey string
	index    *Index
	opts     ReaderOptions

	requests atomic.Int64
	fetched  atomic.Int64

	mu      sync.Mutex
	src     *stream
	learned []mark
	next    int64 // the entry after the last one a Read returned
	closed  bool
}

// mark is a known record position: entry id at data-object offset.
type mark struct {
	id, off int64
}

// stream is an open ranged GET of the data object, with the parser's
// position in it.
type stream struct {
	rc     io.ReadCloser
	br     *bufio.Reader
	off    int64 // offset of the next byte br returns
	end    int64 // end of the GET's range (exclusive)
	cancel context.CancelFunc
	// When ok, entry id is the next one, in block blk, and off is at its
	// record or at the end padding of blk.
	id  int64
	blk int
	ok  bool
}

func (s *stream) close() {
	s.cancel()
	_ = s.rc.Close()
}

// Open reads and validates the index of ledger ledgerID offloaded under id.
func Open(ctx context.Context, store blob.Reader, id uuid.UUID, ledgerID int64, opts *ReaderOptions) (*Reader, error) {
	return OpenKeys(ctx, store, DataKey(id, ledgerID), IndexKey(id, ledgerID), opts)
}

// OpenKeys is Open with explicit object keys.
func OpenKeys(ctx context.Context, store blob.Reader, dataKey, indexKey string, opts *ReaderOptions) (*Reader, error) {
	o := opts.withDefaults()
	ix, _, err := ReadIndex(ctx, store, indexKey, o.Retries)
	if err != nil {
		return nil, err
	}
	return &Reader{store: store, dataKey: dataKey, indexKey: indexKey, index: ix, opts: o}, nil
}

// ReadIndex GETs, version-checks and parses an index object, retrying up to
// retries more times when the transfer breaks (as Pulsar retries 3 times). It
// returns the index and its raw bytes. A missing object is blob.ErrNotFound.
func ReadIndex(ctx context.Context, store blob.Reader, indexKey string, retries int) (*Index, []byte, error) {
	pol := retry.Policy{Attempts: retries + 1, Retryable: func(err error) bool { return retryable(ctx, err) }}
	raw, err := retry.Do(ctx, pol, func(ctx context.Context) ([]byte, error) { return getIndex(ctx, store, indexKey) })
	if err != nil {
		return nil, nil, err
	}
	ix, err := ParseIndex(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("index %s: %w", indexKey, err)
	}
	return ix, raw, nil
}

func getIndex(ctx context.Context, store blob.Reader, key string) ([]byte, error) {
	rc, attrs, err := store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("get index %s: %w", key, err)
	}
	defer rc.Close()
	if err := CheckVersion(key, attrs.Metadata); err != nil {
		return nil, err
	}
	if attrs.Size < 0 || attrs.Size > MaxIndexSize {
		return nil, fmt.Errorf("index %s: %w: size %d out of range", key, ErrCorruptIndex, attrs.Size)
	}
	raw := make([]byte, attrs.Size)
	if _, err := io.ReadFull(rc, raw); err != nil {
		return nil, fmt.Errorf("read index %s: %w", key, err)
	}
	return raw, nil
}

// retryable tells whether a failed transfer is worth repeating: not when the
// caller gave up, the object is missing, or its content is wrong.
func retryable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, blob.ErrNotFound) && !errors.Is(err, ErrFormatVersion) &&
		!errors.Is(err, ErrCorruptIndex) && !errors.Is(err, ErrCorruptBlock) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// Index returns the ledger's index (do not modify it).
func (r *Reader) Index() *Index { return r.index }

// LastEntryID returns the ledger's last entry id.
func (r *Reader) LastEntryID() int64 { return r.index.LastEntryID() }

// Length returns the ledger length from the index metadata.
func (r *Reader) Length() int64 { return r.index.Metadata.GetLength() }

// Requests returns the number of ranged GETs of the data object so far.
func (r *Reader) Requests() int64 { return r.requests.Load() }

// BytesFetched returns the data-object body bytes read from the store so
// far (read-ahead included; the index excluded).
func (r *Reader) BytesFetched() int64 { return r.fetched.Load() }

// Close releases the open data stream. Reads after Close fail.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropStream()
	r.closed = true
	return nil
}

// ReadEntries returns the payloads of entries first..last.
func (r *Reader) ReadEntries(ctx context.Context, first, last int64) ([][]byte, error) {
	var out [][]byte
	if last >= first {
		out = make([][]byte, 0, min(last-first+1, 1<<16))
	}
	err := r.Read(ctx, first, last, func(_ int64, p []byte) error {
		out = append(out, p)
		return nil
	})
	return out, err
}

// Read calls fn with entries first..last in order. Each payload is a fresh
// slice fn may keep. An error from fn stops the read and is returned.
func (r *Reader) Read(ctx context.Context, first, last int64, fn func(entryID int64, payload []byte) error) error {
	if first < 0 || first > last || last > r.LastEntryID() {
		return fmt.Errorf("%w: %d..%d, ledger has 0..%d", ErrEntryRange, first, last, r.LastEntryID())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("format: read from a closed Reader")
	}
	rd := &readOp{r: r, ctx: ctx, retries: r.opts.Retries}
	if r.src != nil {
		rd.cur = r.src.cancel
	}
	// Unblock a body read when the caller gives up; the stream is dropped.
	stop := context.AfterFunc(ctx, rd.abort)
	defer stop()
	err := rd.run(first, last, fn)
	if err != nil {
		r.dropStream()
		if ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)) {
			return errors.Join(context.Cause(ctx), err)
		}
	}
	return err
}

func (r *Reader) dropStream() {
	if r.src != nil {
		r.src.close()
		r.src = nil
	}
}

// learn remembers that entry id starts at off.
func (r *Reader) learn(id, off int64) {
	n := len(r.learned)
	if n > 0 && r.learned[n-1].id >= id {
		i := sort.Search(n, func(i int) bool { return r.learned[i].id >= id })
		if i < n && r.learned[i].id == id {
			return
		}
		if n >= r.opts.MaxLearned {
			return
		}
		r.learned = append(r.learned, mark{})
		copy(r.learned[i+1:], r.learned[i:])
		r.learned[i] = mark{id, off}
		return
	}
	if n >= r.opts.MaxLearned {
		return
	}
	r.learned = append(r.learned, mark{id, off})
}

// nearest returns the best known record position at or before entry id
// inside block blk.
func (r *Reader) nearest(blk int, id int64) mark {
	b := r.index.Blocks[blk]
	best := mark{b.FirstEntryID, b.Offset + BlockHeaderSize}
	i := sort.Search(len(r.learned), func(i int) bool { return r.learned[i].id > id })
	if i > 0 && r.learned[i-1].id >= best.id {
		best = r.learned[i-1]
	}
	return best
}

// after returns the offset of the first known record after entry id inside
// block blk (end: the block's end when none is known), an upper bound of
// where entry id's record ends.
func (r *Reader) after(blk int, id int64) int64 {
	_, end := r.index.BlockRange(blk)
	i := sort.Search(len(r.learned), func(i int) bool { return r.learned[i].id > id })
	if i < len(r.learned) && r.learned[i].off < end {
		return r.learned[i].off
	}
	return end
}

// readOp is one Read call.
type readOp struct {
	r       *Reader
	ctx     context.Context
	retries int
	lastOff int64 // offset of the last learned mark
	end     int64 // where the GETs of this Read end: the end of last's block

	mu      sync.Mutex
	cur     context.CancelFunc // cancels the current stream's GET
	aborted bool
}

// abort runs when the caller's ctx ends: it cancels the stream's GET.
func (o *readOp) abort() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.aborted = true
	if o.cur != nil {
		o.cur()
	}
}

func (o *readOp) run(first, last int64, fn func(int64, []byte) error) error {
	r := o.r
	ix := r.index
	blk, err := ix.Lookup(first)
	if err != nil {
		return err
	}
	lastBlk, err := ix.Lookup(last)
	if err != nil {
		return err
	}
	_, o.end = ix.BlockRange(lastBlk)
	start := r.nearest(blk, first)
	id := start.id
	// Continue on the open stream when it is before the first entry, has
	// bytes left in its range, and is either past the best known position
	// (so inside first's block) or at most ReadAhead short of it within its
	// range; otherwise start a new GET at the best known position. A GET
	// that starts a block starts at its header, which is checked.
	if s := r.src; s != nil && s.ok && s.id <= first && s.off < s.end &&
		(s.off >= start.off || start.off-s.off <= int64(r.opts.ReadAhead) && start.off < s.end) {
		id, blk = s.id, s.blk
	} else {
		r.dropStream()
		end := o.end
		if first != r.next {
			// Not a continuation of the previous Read: stop at the next
			// known record after last, if any.
			end = r.after(lastBlk, last)
		}
		b := ix.Blocks[blk]
		if start.off == b.Offset+BlockHeaderSize {
			if err := o.open(b.Offset, end); err != nil {
				return err
			}
			if err := o.blockHeader(blk); err != nil {
				return err
			}
		} else if err := o.open(start.off, end); err != nil {
			return err
		}
	}
	o.lastOff = r.src.off
	_, blockEnd := ix.BlockRange(blk)
	var hdr [RecordHeaderSize]byte
	for {
		if err := context.Cause(o.ctx); err != nil {
			return err
		}
		s := r.src
		s.id, s.blk, s.ok = id, blk, true
		if blockEnd-s.off < 4 {
			if err := o.endOfBlock(blk, blockEnd, id); err != nil {
				return err
			}
			blk++
			_, blockEnd = ix.BlockRange(blk)
			continue
		}
		if err := o.readFull(hdr[:4]); err != nil {
			return err
		}
		n := int32(binary.BigEndian.Uint32(hdr[:4]))
		if n < 0 {
			if err := o.padding(hdr[:4], blockEnd); err != nil {
				return err
			}
			if err := o.endOfBlock(blk, blockEnd, id); err != nil {
				return err
			}
			blk++
			_, blockEnd = ix.BlockRange(blk)
			continue
		}
		recOff := r.src.off - 4
		if int64(n) > blockEnd-recOff-RecordHeaderSize {
			return fmt.Errorf("%s: %w: record at offset %d (length %d) overruns block %d ending at %d", r.dataKey, ErrCorruptBlock, recOff, n, blk, blockEnd)
		}
		r.src.ok = false
		if err := o.readFull(hdr[4:]); err != nil {
			return err
		}
		if got := int64(binary.BigEndian.Uint64(hdr[4:])); got != id {
			return fmt.Errorf("%s: %w: record at offset %d has entry %d, want %d", r.dataKey, ErrCorruptBlock, recOff, got, id)
		}
		if recOff-o.lastOff >= int64(r.opts.LearnInterval) {
			r.learn(id, recOff)
			o.lastOff = recOff
		}
		if id < first {
			if err := o.discard(int64(n)); err != nil {
				return err
			}
			id++
			continue
		}
		payload := make([]byte, n)
		if err := o.readFull(payload); err != nil {
			return err
		}
		r.src.id, r.src.ok = id+1, true
		r.next = id + 1
		if err := fn(id, payload); err != nil {
			return err
		}
		if id == last {
			if id == r.LastEntryID() {
				r.dropStream()
			}
			return nil
		}
		id++
	}
}

// endOfBlock moves from the end of block blk (its records ended; the stream
// is at or before blockEnd) into the header of block blk+1 and checks it.
func (o *readOp) endOfBlock(blk int, blockEnd, nextID int64) error {
	r := o.r
	ix := r.index
	if rest := blockEnd - r.src.off; rest > 0 {
		pad := make([]byte, rest)
		if err := o.readFull(pad); err != nil {
			return err
		}
		if err := o.padding(pad, blockEnd); err != nil {
			return err
		}
	}
	if blk+1 >= len(ix.Blocks) {
		return fmt.Errorf("%s: %w: data ends after entry %d, ledger has 0..%d", r.dataKey, ErrCorruptBlock, nextID-1, r.LastEntryID())
	}
	nb := ix.Blocks[blk+1]
	if nb.FirstEntryID != nextID {
		return fmt.Errorf("%s: %w: block %d ends before entry %d, next block starts at entry %d", r.dataKey, ErrCorruptBlock, blk, nextID, nb.FirstEntryID)
	}
	return o.blockHeader(blk + 1)
}

// blockHeader reads the header of block blk (the stream is at its start)
// and checks it against the index.
func (o *readOp) blockHeader(blk int) error {
	r := o.r
	ix := r.index
	b := ix.Blocks[blk]
	var h [BlockHeaderSize]byte
	if err := o.readFull(h[:]); err != nil {
		return err
	}
	bh, err := ParseBlockHeader(h[:])
	if err != nil {
		return fmt.Errorf("%s: block %d at offset %d: %w", r.dataKey, blk, b.Offset, err)
	}
	start, end := ix.BlockRange(blk)
	if bh.FirstEntryID != b.FirstEntryID || bh.BlockLength != end-start {
		return fmt.Errorf("%s: %w: block %d header says entry %d, %d bytes; index says entry %d, %d bytes",
			r.dataKey, ErrCorruptBlock, blk, bh.FirstEntryID, bh.BlockLength, b.FirstEntryID, end-start)
	}
	r.learn(b.FirstEntryID, start+BlockHeaderSize)
	return nil
}

// padding checks that b, read just before the stream position, is end
// padding, and reads and checks the rest of the padding up to blockEnd. The
// pattern restarts at FE after the last record, i.e. at off-len(b) when b is
// the first padding read.
func (o *readOp) padding(b []byte, blockEnd int64) error {
	r := o.r
	startOff := r.src.off - int64(len(b))
	check := func(b []byte, phase int) error {
		for i, c := range b {
			if c != padding[(phase+i)&3] {
				return fmt.Errorf("%s: %w: byte %#02x at offset %d is not end padding", r.dataKey, ErrCorruptBlock, c, startOff+int64(i))
			}
		}
		return nil
	}
	// Callers pass either the first 4 bytes after the records or the whole
	// remainder of the block; both start at phase 0.
	if err := check(b, 0); err != nil {
		return err
	}
	rest := blockEnd - r.src.off
	if rest <= 0 {
		return nil
	}
	phase := len(b)
	buf := make([]byte, min(rest, 64<<10))
	for rest > 0 {
		chunk := buf[:min(rest, int64(len(buf)))]
		startOff = r.src.off
		if err := o.readFull(chunk); err != nil {
			return err
		}
		if err := check(chunk, phase); err != nil {
			return err
		}
		phase += len(chunk)
		rest -= int64(len(chunk))
	}
	return nil
}

// open starts a ranged GET of the data object for [off, end).
func (o *readOp) open(off, end int64) error {
	r := o.r
	objLen := r.index.DataObjectLength
	// The stream outlives this call (sequential reads continue on it); its
	// context is cancelled by Reader.Close, a seek, or the caller's ctx
	// through the AfterFunc in Read.
	sctx, cancel := context.WithCancel(context.WithoutCancel(o.ctx))
	r.requests.Add(1)
	rc, attrs, err := r.store.GetRange(sctx, r.dataKey, off, end-off)
	if errors.Is(err, blob.ErrInvalidRange) {
		// Our ranges lie inside the size the index gives.
		cancel()
		return fmt.Errorf("%s: %w: range %d-%d refused: the data object has fewer bytes than dataObjectLength %d (%w)",
			r.dataKey, ErrCorruptBlock, off, end-1, objLen, err)
	}
	if err != nil {
		cancel()
		return fmt.Errorf("get %s range %d-%d: %w", r.dataKey, off, end-1, err)
	}
	if err := CheckVersion(r.dataKey, attrs.Metadata); err != nil {
		cancel()
		_ = rc.Close()
		return err
	}
	if attrs.Size != objLen {
		cancel()
		_ = rc.Close()
		what := "trailing bytes after"
		if attrs.Size < objLen {
			what = "fewer bytes than"
		}
		return fmt.Errorf("%s: %w: data object has %d bytes: %s dataObjectLength %d",
			r.dataKey, ErrCorruptBlock, attrs.Size, what, objLen)
	}
	body := &countingReader{r: rc, n: &r.fetched}
	r.src = &stream{rc: rc, br: bufio.NewReaderSize(body, r.opts.ReadAhead), off: off, end: end, cancel: cancel}
	o.mu.Lock()
	o.cur = cancel
	if o.aborted {
		cancel()
	}
	o.mu.Unlock()
	r.opts.Logger.Debug("data stream opened", "key", r.dataKey, "offset", off, "end", end)
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// readFull fills p from the stream, reopening it at the exact offset when a
// transfer breaks.
func (o *readOp) readFull(p []byte) error {
	for len(p) > 0 {
		n, err := io.ReadFull(o.r.src.br, p)
		o.r.src.off += int64(n)
		p = p[n:]
		if err == nil {
			return nil
		}
		if err := o.reopen(err); err != nil {
			return err
		}
	}
	return nil
}

// discard skips n bytes of the stream.
func (o *readOp) discard(n int64) error {
	for n > 0 {
		d, err := o.r.src.br.Discard(int(min(n, 1<<30)))
		o.r.src.off += int64(d)
		n -= int64(d)
		if err == nil {
			continue
		}
		if err := o.reopen(err); err != nil {
			return err
		}
	}
	return nil
}

// reopen replaces a stream that ended by a new GET at the same offset: up
// to the end of this Read's last block when the range was used up, or over
// the same range when the transfer broke.
func (o *readOp) reopen(cause error) error {
	r := o.r
	off, end := r.src.off, r.src.end
	if off >= end && (errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrUnexpectedEOF)) {
		// The range is used up; the Read needs more.
		if off >= o.end {
			return fmt.Errorf("%s: %w: entries run past offset %d, the end of their block", r.dataKey, ErrCorruptBlock, off)
		}
		id, blk, ok := r.src.id, r.src.blk, r.src.ok
		r.dropStream()
		if err := o.open(off, o.end); err != nil {
			return err
		}
		r.src.id, r.src.blk, r.src.ok = id, blk, ok
		return nil
	}
	if o.ctx.Err() != nil || o.retries <= 0 {
		return fmt.Errorf("read %s at offset %d: %w", r.dataKey, off, cause)
	}
	o.retries--
	r.opts.Logger.Debug("data stream broke; reopening", "key", r.dataKey, "offset", off, "err", cause)
	id, blk, ok := r.src.id, r.src.blk, r.src.ok
	r.dropStream()
	if err := o.open(off, end); err != nil {
		return fmt.Errorf("%w (after the stream broke: %v)", err, cause)
	}
	r.src.id, r.src.blk, r.src.ok = id, blk, ok
	return nil
}
