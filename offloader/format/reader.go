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

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// ReaderOptions configure a Reader. The zero value gives the defaults.
type ReaderOptions struct {
	// ReadAhead is the buffer, in bytes, kept in front of the read position
	// of the open data stream (default 1 MiB, like Pulsar's
	// managedLedgerOffloadReadBufferSizeInBytes). It is also how far forward
	// the reader skips inside the open stream rather than issuing a new
	// ranged GET.
	ReadAhead int
	// LearnInterval is the spacing, in bytes, of the entry offsets the reader
	// remembers as it passes records, so a later random read can start near
	// its entry instead of at the block start (default 256 KiB).
	LearnInterval int
	// MaxLearned bounds the remembered offsets (default 65536, 24 bytes each).
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
		r.LearnInterval = 256 << 10
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
// s3managedledgeroffloaderformatversion=1.
//
// # Requests
//
// A Read opens at most one ranged GET (from the best known offset at or
// before the first entry to the end of the object) and keeps that stream open
// with ReadAhead bytes buffered, so sequential Reads continue on the same
// request. A random entry costs the index GET at Open plus one data GET; the
// stream is reopened at the exact byte only when it breaks (Retries).
//
// Every record is checked while streaming: entry ids in sequence, lengths
// inside their block, block headers and padding as Pulsar writes them.
// Methods are safe for concurrent use; Reads are serialized.
type Reader struct {
	store    blob.Reader
	dataKey  string
	indexKey string
	index    *Index
	opts     ReaderOptions

	requests atomic.Int64

	mu      sync.Mutex
	src     *stream
	learned []mark
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
	var lastErr error
	for attempt := 0; attempt <= retries; attempt++ {
		raw, err := getIndex(ctx, store, indexKey)
		if err == nil {
			ix, err := ParseIndex(raw)
			if err != nil {
				return nil, nil, fmt.Errorf("index %s: %w", indexKey, err)
			}
			return ix, raw, nil
		}
		if !retryable(ctx, err) {
			return nil, nil, err
		}
		lastErr = err
	}
	return nil, nil, lastErr
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

// readOp is one Read call.
type readOp struct {
	r       *Reader
	ctx     context.Context
	retries int
	lastOff int64 // offset of the last learned mark

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
	start := r.nearest(blk, first)
	id := start.id
	// Continue on the open stream when it is before the first entry and
	// either past the best known position or at most ReadAhead short of it;
	// otherwise start a new GET at the best known position.
	if s := r.src; s != nil && s.ok && s.id <= first &&
		(s.off >= start.off || start.off-s.off <= int64(r.opts.ReadAhead)) {
		id, blk = s.id, s.blk
	} else {
		r.dropStream()
		if err := o.open(start.off); err != nil {
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
	var h [BlockHeaderSize]byte
	if err := o.readFull(h[:]); err != nil {
		return err
	}
	bh, err := ParseBlockHeader(h[:])
	if err != nil {
		return fmt.Errorf("%s: block %d at offset %d: %w", r.dataKey, blk+1, nb.Offset, err)
	}
	start, end := ix.BlockRange(blk + 1)
	if bh.FirstEntryID != nb.FirstEntryID || bh.BlockLength != end-start {
		return fmt.Errorf("%s: %w: block %d header says entry %d, %d bytes; index says entry %d, %d bytes",
			r.dataKey, ErrCorruptBlock, blk+1, bh.FirstEntryID, bh.BlockLength, nb.FirstEntryID, end-start)
	}
	r.learn(nextID, start+BlockHeaderSize)
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

// open starts a ranged GET of the data object from off to its end.
func (o *readOp) open(off int64) error {
	r := o.r
	objLen := r.index.DataObjectLength
	// The stream outlives this call (sequential reads continue on it); its
	// context is cancelled by Reader.Close, a seek, or the caller's ctx
	// through the AfterFunc in Read.
	sctx, cancel := context.WithCancel(context.WithoutCancel(o.ctx))
	r.requests.Add(1)
	rc, attrs, err := r.store.GetRange(sctx, r.dataKey, off, objLen-off)
	if err != nil {
		cancel()
		return fmt.Errorf("get %s range %d-%d: %w", r.dataKey, off, objLen-1, err)
	}
	if err := CheckVersion(r.dataKey, attrs.Metadata); err != nil {
		cancel()
		_ = rc.Close()
		return err
	}
	r.src = &stream{rc: rc, br: bufio.NewReaderSize(rc, r.opts.ReadAhead), off: off, cancel: cancel}
	o.mu.Lock()
	o.cur = cancel
	if o.aborted {
		cancel()
	}
	o.mu.Unlock()
	r.opts.Logger.Debug("data stream opened", "key", r.dataKey, "offset", off)
	return nil
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

// reopen replaces a broken stream by a new GET at the same offset.
func (o *readOp) reopen(cause error) error {
	r := o.r
	off := r.src.off
	if errors.Is(cause, io.EOF) || errors.Is(cause, io.ErrUnexpectedEOF) {
		if off >= r.index.DataObjectLength {
			return fmt.Errorf("%s: %w: data object ends at %d before the entries do", r.dataKey, ErrCorruptBlock, off)
		}
	}
	if o.ctx.Err() != nil {
		return fmt.Errorf("read %s at offset %d: %w", r.dataKey, off, cause)
	}
	if o.retries <= 0 {
		return fmt.Errorf("read %s at offset %d: %w", r.dataKey, off, cause)
	}
	o.retries--
	r.opts.Logger.Debug("data stream broke; reopening", "key", r.dataKey, "offset", off, "err", cause)
	id, blk, ok := r.src.id, r.src.blk, r.src.ok
	r.dropStream()
	if err := o.open(off); err != nil {
		return fmt.Errorf("%w (after the stream broke: %v)", err, cause)
	}
	r.src.id, r.src.blk, r.src.ok = id, blk, ok
	return nil
}
