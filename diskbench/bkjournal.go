package diskbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// The BookKeeper journal model (JournalModelBookKeeper). Each journal of a
// point runs three goroutines, as BookKeeper 4.17.2 runs two threads per
// journal directory plus its clients:
//
//	client      keeps InFlight entries outstanding: a new add for every ack
//	journal     Journal.run: drains the queue into the write buffer, decides
//	            when a group is complete, pads it, writes it, hands it on
//	force-write ForceWriteThread: fdatasync for the batch of groups waiting,
//	            then acknowledges their entries
//
// docs/diskbench.md ("The BookKeeper journal model") lists the source lines
// of BookKeeper each step follows; the comments below name the method.

// Journal format constants (JournalChannel).
const (
	bkHeaderSize        = 512       // HEADER_SIZE (formats ≥ 5)
	bkVersionHeaderSize = 8         // VERSION_HEADER_SIZE (format 4)
	bkPaddingMask       = -0x100    // Journal.PADDING_MASK
	bkCacheDropLag      = 8 * MiB   // JournalChannel.cacheDropLagBytes
	bkMaxQueue          = 10_000    // journalQueueSize: the most entries in flight
	bkMaxWriteBuffer    = 64 * 1024 // journalWriteBufferSizeKB upper bound accepted (64 MiB)
	bkMaxAlign          = 1 << 20   // journalAlignmentSize upper bound accepted
)

// validate checks settings BookKeeper would run with (or fail on).
func (s JournalSettings) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, a...))
	}
	switch {
	case s.JournalWriteBufferSizeKB < 1 || s.JournalWriteBufferSizeKB > bkMaxWriteBuffer:
		return bad("journalWriteBufferSizeKB %d (want 1..%d)", s.JournalWriteBufferSizeKB, bkMaxWriteBuffer)
	case s.JournalMaxGroupWaitMSec < 0 || s.JournalMaxGroupWaitMSec > 10_000:
		return bad("journalMaxGroupWaitMSec %d (want 0..10000)", s.JournalMaxGroupWaitMSec)
	case s.JournalBufferedWritesThreshold < 0:
		return bad("journalBufferedWritesThreshold %d (want ≥ 0)", s.JournalBufferedWritesThreshold)
	case s.JournalBufferedEntriesThreshold < 0:
		return bad("journalBufferedEntriesThreshold %d (want ≥ 0)", s.JournalBufferedEntriesThreshold)
	case s.JournalAlignmentSize < 512 || s.JournalAlignmentSize > bkMaxAlign || s.JournalAlignmentSize&(s.JournalAlignmentSize-1) != 0:
		return bad("journalAlignmentSize %d (want a power of two, 512 B .. 1 MiB)", s.JournalAlignmentSize)
	case s.JournalFormatVersionToWrite < 4 || s.JournalFormatVersionToWrite > 6:
		return bad("journalFormatVersionToWrite %d (BookKeeper writes 4..6)", s.JournalFormatVersionToWrite)
	case s.JournalPreAllocSizeMB < 1 || s.JournalPreAllocSizeMB > 1024:
		return bad("journalPreAllocSizeMB %d (want 1..1024)", s.JournalPreAllocSizeMB)
	case s.JournalMaxSizeMB < 1:
		return bad("journalMaxSizeMB %d (want ≥ 1)", s.JournalMaxSizeMB)
	}
	return nil
}

// preAllocSize is JournalChannel's window: journalPreAllocSizeMB rounded
// down to the alignment.
func (s JournalSettings) preAllocSize() int64 {
	p := int64(s.JournalPreAllocSizeMB) * MiB
	return p - p%int64(s.JournalAlignmentSize)
}

// DefaultInFlight is the entries a journal's client keeps outstanding when
// JournalParams.InFlight is 0: enough for twice
// journalBufferedWritesThreshold (at least 1, at most journalQueueSize).
func DefaultInFlight(s JournalSettings, entrySize int64) int {
	n := (2*max(s.JournalBufferedWritesThreshold, 1) + entrySize - 1) / max(entrySize, 1)
	return int(max(1, min(n, bkMaxQueue)))
}

// bkQueue is a blocking queue drained whole (BatchedArrayBlockingQueue's
// takeAll and pollAll): put never blocks, drain waits for something to
// take, a timeout or the point's stop.
type bkQueue[T any] struct {
	mu     sync.Mutex
	items  []T
	signal chan struct{} // one pending wake-up
}

func newBKQueue[T any]() *bkQueue[T] { return &bkQueue[T]{signal: make(chan struct{}, 1)} }

func (q *bkQueue[T]) put(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// drain appends everything queued to dst[:0] and returns it. With nothing
// queued it waits: forever when timeout < 0, not at all when it is 0, else
// up to timeout. It returns an empty slice on timeout or stop.
func (q *bkQueue[T]) drain(dst []T, timeout time.Duration, stop <-chan struct{}, timer *time.Timer) []T {
	dst = dst[:0]
	armed := false
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			dst = append(dst, q.items...)
			clear(q.items)
			q.items = q.items[:0]
			q.mu.Unlock()
			if armed {
				timer.Stop()
			}
			return dst
		}
		q.mu.Unlock()
		if timeout == 0 {
			return dst
		}
		if timeout < 0 {
			select {
			case <-q.signal:
			case <-stop:
				return dst
			}
			continue
		}
		if !armed {
			timer.Reset(timeout)
			armed = true
		}
		select {
		case <-q.signal:
		case <-timer.C:
			return dst
		case <-stop:
			timer.Stop()
			return dst
		}
	}
}

// bkFile is one journal file (JournalChannel + its BufferedChannel's file
// position).
type bkFile struct {
	f    File
	path string
	// filePos is where the next write(2) goes: BufferedChannel's
	// writeBufferStartPosition, read by the force-write goroutine.
	filePos atomic.Int64
	// lastDrop is JournalChannel.lastDropPosition.
	lastDrop int64
	closed   bool
}

// bkGroup is one flushed group on its way to the force-write goroutine
// (Journal.ForceWriteRequest).
type bkGroup struct {
	file       *bkFile
	enqueued   []int64 // the group's entries' queue times
	flushStart int64
	close      bool // the journal rolled: sync and close the file
	flushed    bool
}

// bkLane is one journal of a point.
type bkLane struct {
	idx    int
	queue  *bkQueue[int64] // entry queue times (ns since the point's base)
	fwq    *bkQueue[*bkGroup]
	tokens chan struct{} // the client's free in-flight slots
	// files are every journal file this lane created, for cleanup.
	mu    sync.Mutex
	files []*bkFile
	io    JournalIO
	// groupEntries/groupBytes sum the window's groups (for the means).
	groupEntries, groupBytes int64
}

// bkPoint is a running bookkeeper-model point.
type bkPoint struct {
	r         *runner
	s         JournalSettings
	entrySize int64
	inFlight  int
	lanes     []*bkLane
	seq       atomic.Int64 // journal file sequence
	zeros     []byte       // one alignment block of zeros
}

// inWindow reports whether an event at t (ns since base) falls in the
// measured window.
func (p *point) inWindow(t int64) bool {
	if t < p.measureNs.Load() {
		return false
	}
	return !p.stop.Load() || t <= p.endNs.Load()
}

// lat records one latency sample of kind (no op or byte counted) when it
// started in the window, as done does.
func (w *worker) lat(kind int, t1, t2 int64) {
	p := w.p
	if t1 < p.measureNs.Load() || (p.stop.Load() && t2 > p.endNs.Load()) {
		return
	}
	w.hists[kind].record(t2 - t1)
}

// runBKJournalPoint runs one (journals, entry size) point of the
// BookKeeper journal model. Every journal file it creates keeps its name
// until the point ends (as a bookie's do until a checkpoint), then all are
// closed and removed, also on error.
func (r *runner) runBKJournalPoint(ctx context.Context, wp writeParams, writers int, es int64,
	d, warm time.Duration, share int64) (Result, error) {
	rs, err := r.runBKJournal(ctx, wp, writers, es, d, warm, share, nil)
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// runBKJournal runs writers journals of the BookKeeper model: one point,
// or with al the alternating point (a Result per count and batch).
func (r *runner) runBKJournal(ctx context.Context, wp writeParams, writers int, es int64,
	d, warm time.Duration, share int64, al *alternation) (out []Result, err error) {
	s := wp.settings
	bp := &bkPoint{r: r, s: s, entrySize: es, inFlight: wp.inFlight,
		zeros: alignedBuf(int64(s.JournalAlignmentSize), 4096)}
	if bp.inFlight == 0 {
		bp.inFlight = DefaultInFlight(s, es)
	}
	for i := 0; i < writers; i++ {
		l := &bkLane{idx: i, queue: newBKQueue[int64](), fwq: newBKQueue[*bkGroup](),
			tokens: make(chan struct{}, bp.inFlight)}
		for k := 0; k < bp.inFlight; k++ {
			l.tokens <- struct{}{}
		}
		bp.lanes = append(bp.lanes, l)
	}
	defer func() {
		if cerr := bp.cleanup(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	label := fmt.Sprintf("writers=%d bs=%s in-flight=%d", writers, units.FormatBytes(es), bp.inFlight)
	if al != nil {
		label = fmt.Sprintf("writers=%s alternating bs=%s in-flight=%d", CountsLabel(al.counts), units.FormatBytes(es), bp.inFlight)
	}
	spec := &pointSpec{
		alt:         al,
		workload:    WorkloadJournal,
		label:       label,
		duration:    d,
		warmup:      warm,
		maxBytes:    share,
		workers:     3 * writers,
		warmupBytes: share / 5,
	}
	if al != nil {
		// The warm-up is not ended early by its bytes (Options.Settle may
		// end it): the turns and their batches need the whole measured time.
		spec.warmupBytes = 0
	}
	spec.work = func(w *worker) error {
		l := bp.lanes[w.id/3]
		switch w.id % 3 {
		case 0:
			bp.client(w, l)
			return nil
		case 1:
			return bp.journal(w, l)
		default:
			return bp.forceWriter(w, l)
		}
	}
	res, err := r.runPoint(ctx, spec)
	if err != nil {
		return nil, err
	}
	res.Writers = writers
	res.BlockSize = es
	res.Model = JournalModelBookKeeper
	st := s
	res.JournalSettings = &st
	res.InFlight = bp.inFlight
	res.Prealloc = "bookkeeper"
	var io JournalIO
	var ge, gb int64
	for _, l := range bp.lanes {
		io.Groups += l.io.Groups
		io.Writes += l.io.Writes
		io.WriteBytes += l.io.WriteBytes
		io.FullBufferWrites += l.io.FullBufferWrites
		io.PaddingBytes += l.io.PaddingBytes
		io.PreallocWrites += l.io.PreallocWrites
		io.FlushedByWait += l.io.FlushedByWait
		io.FlushedBySize += l.io.FlushedBySize
		io.FlushedEmpty += l.io.FlushedEmpty
		io.Files += int64(len(l.files))
		ge += l.groupEntries
		gb += l.groupBytes
	}
	if io.Groups > 0 {
		io.MeanGroupEntries = float64(ge) / float64(io.Groups)
		io.MeanGroupBytes = float64(gb) / float64(io.Groups)
	}
	res.JournalIO = &io
	r.progress(ProgressEvent{Workload: WorkloadJournal, Point: r.pointNum, Label: label, Phase: PhaseDone, Result: &res})
	if al == nil {
		return []Result{res}, nil
	}
	// The journal I/O of an alternating point is the whole point's, every
	// count's turns together.
	return al.results(res, r.opts.LatencyBuckets)
}

// CountsLabel renders the counts of an alternating point as its label
// shows them: "1/2/4".
func CountsLabel(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, "/")
}

// cleanup closes and removes every journal file of the point.
func (bp *bkPoint) cleanup() error {
	var errs []error
	for _, l := range bp.lanes {
		for _, f := range l.files {
			if err := bp.r.unlink(f.path); err != nil {
				errs = append(errs, err)
			}
			if !f.closed {
				f.closed = true
				f.f.Close()
			}
		}
	}
	return errors.Join(errs...)
}

// client is the lane's bookie client: it queues an entry whenever one of
// its InFlight slots is free (Journal.logAddEntry puts it on the queue).
// In an alternating point it adds only during the turns of counts that
// include its journal.
func (bp *bkPoint) client(w *worker, l *bkLane) {
	stop := w.p.stopCh
	al := w.p.alt
	var timer *time.Timer
	for {
		select {
		case <-l.tokens:
		case <-stop:
			return
		}
		if al != nil && !al.wait(w, l.idx, &timer) {
			return
		}
		if w.stopped() {
			return
		}
		l.queue.put(w.p.now())
	}
}

// bkWriter is the journal goroutine's state: the current file and
// BufferedChannel.
type bkWriter struct {
	bp   *bkPoint
	w    *worker
	l    *bkLane
	file *bkFile
	buf  []byte // the write buffer (journalWriteBufferSizeKB)
	n    int    // bytes in buf
	// pos is BufferedChannel.position(): filePos + n.
	pos          int64
	nextPrealloc int64
	payload      []byte
	lenBuf       [4]byte
	pad          []byte
}

// write is one write(2) of b at off, charged to the byte budget.
func (jw *bkWriter) write(f *bkFile, b []byte, off int64) error {
	w := jw.w
	n := int64(len(b))
	if !w.take(n) {
		return errBKStop
	}
	t1 := w.p.now()
	if err := writeFull(f.f, f.path, b, off); err != nil {
		return err
	}
	t2 := w.p.now()
	w.lat(opWrite, t1, t2)
	w.p.moved.Add(n)
	if w.p.inWindow(t1) {
		jw.l.io.Writes++
		jw.l.io.WriteBytes += n
		if len(b) == len(jw.buf) {
			jw.l.io.FullBufferWrites++
		}
	}
	return nil
}

// errBKStop ends a journal goroutine when the byte budget is spent (the
// point is already halted).
var errBKStop = errors.New("diskbench: journal stopped")

// flush writes what the buffer holds at the file position
// (BufferedChannel.flush).
func (jw *bkWriter) flush() error {
	if jw.n == 0 {
		return nil
	}
	off := jw.file.filePos.Load()
	if err := jw.write(jw.file, jw.buf[:jw.n], off); err != nil {
		return err
	}
	jw.file.filePos.Store(off + int64(jw.n))
	jw.n = 0
	return nil
}

// bufWrite copies src into the buffer, writing it out whenever it is full
// (BufferedChannel.write).
func (jw *bkWriter) bufWrite(src []byte) error {
	total := int64(len(src))
	for len(src) > 0 {
		c := copy(jw.buf[jw.n:], src)
		jw.n += c
		src = src[c:]
		if jw.n == len(jw.buf) {
			if err := jw.flush(); err != nil {
				return err
			}
		}
	}
	jw.pos += total
	return nil
}

// preAllocIfNeeded extends the file by one window when size more bytes
// would cross its end: one alignment block of zeros at the next window's
// end (JournalChannel.preAllocIfNeeded).
func (jw *bkWriter) preAllocIfNeeded(size int64) error {
	if jw.pos+size <= jw.nextPrealloc {
		return nil
	}
	jw.nextPrealloc += jw.bp.s.preAllocSize()
	off := jw.nextPrealloc - int64(len(jw.bp.zeros))
	t := jw.w.p.now()
	if err := jw.write(jw.file, jw.bp.zeros, off); err != nil {
		return err
	}
	if jw.w.p.inWindow(t) {
		jw.l.io.PreallocWrites++
	}
	return nil
}

// newFile starts a journal file: header, force(true), the first window's
// zero block (JournalChannel's constructor and writeHeader).
func (jw *bkWriter) newFile() error {
	bp, r := jw.bp, jw.bp.r
	f, path, err := r.createFile(fmt.Sprintf("journal-%d-%d.dat", jw.l.idx, bp.seq.Add(1)))
	if err != nil {
		return err
	}
	jf := &bkFile{f: f, path: path}
	jw.l.mu.Lock()
	jw.l.files = append(jw.l.files, jf)
	jw.l.mu.Unlock()
	hs := bkHeaderSize
	if bp.s.JournalFormatVersionToWrite == 4 {
		hs = bkVersionHeaderSize
	}
	hdr := make([]byte, hs)
	copy(hdr, "BKLG")
	binary.BigEndian.PutUint32(hdr[4:], uint32(bp.s.JournalFormatVersionToWrite))
	if err := jw.write(jf, hdr, 0); err != nil {
		return err
	}
	jf.filePos.Store(int64(hs))
	jw.file, jw.n, jw.pos = jf, 0, int64(hs)
	if err := bp.force(jw.w, jf, true); err != nil {
		return err
	}
	jw.nextPrealloc = bp.s.preAllocSize()
	return jw.write(jf, bp.zeros, jw.nextPrealloc-int64(len(bp.zeros)))
}

// padding writes the alignment padding record that ends a group on a
// multiple of journalAlignmentSize (Journal.writePaddingBytes).
func (jw *bkWriter) padding() error {
	align := int64(jw.bp.s.JournalAlignmentSize)
	rem := jw.pos % align
	if rem == 0 {
		return nil
	}
	pad := align - rem
	if pad < 8 {
		pad = align - (8 - pad)
	} else {
		pad -= 8
	}
	rec := jw.pad[:8+pad]
	mask := int32(bkPaddingMask)
	binary.BigEndian.PutUint32(rec[0:], uint32(mask))
	binary.BigEndian.PutUint32(rec[4:], uint32(pad))
	clear(rec[8:])
	if err := jw.preAllocIfNeeded(int64(len(rec))); err != nil {
		return err
	}
	if jw.w.p.inWindow(jw.w.p.now()) {
		jw.l.io.PaddingBytes += int64(len(rec))
	}
	return jw.bufWrite(rec)
}

// journal is the journal goroutine (Journal.run with journalSyncData on).
func (bp *bkPoint) journal(w *worker, l *bkLane) error {
	s := bp.s
	jw := &bkWriter{bp: bp, w: w, l: l,
		buf:     alignedBuf(int64(s.JournalWriteBufferSizeKB)*KiB, 4096),
		payload: make([]byte, bp.entrySize),
		pad:     make([]byte, 2*s.JournalAlignmentSize)}
	for i := range jw.payload {
		jw.payload[i] = byte(w.rng.Uint32())
	}
	binary.BigEndian.PutUint32(jw.lenBuf[:], uint32(bp.entrySize))
	maxWait := time.Duration(s.JournalMaxGroupWaitMSec) * time.Millisecond
	flushWhenEmpty := maxWait <= 0 || s.JournalFlushWhenQueueEmpty
	maxSize := s.JournalMaxSizeMB * MiB
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	stop := w.p.stopCh
	p := w.p

	var (
		local            []int64 // entries taken from the queue, not yet written
		idx              int
		toFlush          []int64
		lastFlush        int64
		groupWhenTimeout bool
		groupStart       int64 // position at the group's start
	)
	err := func() error {
		for !w.stopped() {
			if jw.file == nil {
				if err := jw.newFile(); err != nil {
					return err
				}
				lastFlush = jw.pos
				groupStart = jw.pos
			}
			// The next entry to write, taking the queue when the local
			// batch is used up.
			have := idx < len(local)
			if !have {
				if len(toFlush) == 0 {
					local = l.queue.drain(local, -1, stop, timer)
				} else {
					wait := maxWait - time.Duration(p.now()-toFlush[0])
					if flushWhenEmpty || wait < 0 {
						wait = 0
					}
					local = l.queue.drain(local, wait, stop, timer)
				}
				idx = 0
				have = len(local) > 0
			}
			if len(toFlush) > 0 {
				now := p.now()
				flush := false
				var cause *int64
				switch {
				case maxWait > 0 && !groupWhenTimeout && time.Duration(now-toFlush[0]) > maxWait:
					// The oldest entry waited its time: look once more
					// for entries that waited as long.
					groupWhenTimeout = true
				case maxWait > 0 && groupWhenTimeout && (!have || time.Duration(now-local[idx]) < maxWait):
					groupWhenTimeout, flush, cause = false, true, &l.io.FlushedByWait
				case have && ((s.JournalBufferedEntriesThreshold > 0 && len(toFlush) > s.JournalBufferedEntriesThreshold) ||
					jw.pos > lastFlush+s.JournalBufferedWritesThreshold):
					groupWhenTimeout, flush, cause = false, true, &l.io.FlushedBySize
				case !have && flushWhenEmpty:
					groupWhenTimeout, flush, cause = false, true, &l.io.FlushedEmpty
				}
				if flush {
					start := p.now()
					if s.JournalFormatVersionToWrite >= 5 {
						if err := jw.padding(); err != nil {
							return err
						}
					}
					if err := jw.flush(); err != nil {
						return err
					}
					lastFlush = jw.pos
					if p.inWindow(start) {
						l.io.Groups++
						*cause++
						l.groupEntries += int64(len(toFlush))
						l.groupBytes += jw.pos - groupStart
					}
					groupStart = jw.pos
					roll := lastFlush > maxSize
					l.fwq.put(&bkGroup{file: jw.file, enqueued: toFlush, flushStart: start, close: roll})
					toFlush = make([]int64, 0, cap(toFlush))
					if roll {
						jw.file = nil
						continue
					}
				}
			}
			if w.stopped() || !have {
				continue
			}
			enq := local[idx]
			idx++
			if err := jw.preAllocIfNeeded(4 + bp.entrySize); err != nil {
				return err
			}
			if err := jw.bufWrite(jw.lenBuf[:]); err != nil {
				return err
			}
			if err := jw.bufWrite(jw.payload); err != nil {
				return err
			}
			toFlush = append(toFlush, enq)
		}
		return nil
	}()
	if err == errBKStop {
		return nil
	}
	return err
}

// force makes f durable up to what was written (JournalChannel.forceWrite
// → BufferedChannel.forceWrite → FileChannel.force): fsync when meta, else
// fdatasync, then posix_fadvise(DONTNEED) from the last drop position to
// 8 MiB behind the synced position.
func (bp *bkPoint) force(w *worker, f *bkFile, meta bool) error {
	synced := f.filePos.Load()
	t1 := w.p.now()
	var err error
	if meta {
		err = f.f.Sync()
	} else {
		err = f.f.Datasync()
	}
	if err != nil {
		return syncError(f.path, err)
	}
	t2 := w.p.now()
	w.done(opSync, t1, t2, 0)
	w.altSync(t1, t2)
	if bp.s.JournalRemoveFromPageCache {
		drop := synced - bkCacheDropLag
		if f.lastDrop < drop {
			// Best effort, as PageCacheUtil's: the result is ignored
			// (the first call after a file's creation has a negative offset).
			_ = f.f.Fadvise(f.lastDrop, drop-f.lastDrop, unix.FADV_DONTNEED)
		}
		f.lastDrop = drop
	}
	return nil
}

// syncGroup is ForceWriteRequest.flushFileToDisk: one force per request.
func (bp *bkPoint) syncGroup(w *worker, g *bkGroup) error {
	if g.flushed {
		return nil
	}
	if err := bp.force(w, g.file, false); err != nil {
		return err
	}
	g.flushed = true
	return nil
}

// forceWriter is the force-write goroutine (Journal.ForceWriteThread.run):
// it takes every group waiting, syncs the last one's file, closes rolled
// files after syncing them, and acknowledges the entries in order.
func (bp *bkPoint) forceWriter(w *worker, l *bkLane) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var batch []*bkGroup
	stop := w.p.stopCh
	for !w.stopped() {
		batch = l.fwq.drain(batch, -1, stop, timer)
		if len(batch) == 0 {
			continue
		}
		if err := bp.syncGroup(w, batch[len(batch)-1]); err != nil {
			return err
		}
		for i, g := range batch {
			if g.close {
				if err := bp.syncGroup(w, g); err != nil {
					return err
				}
				if !g.file.closed {
					g.file.closed = true
					if err := g.file.f.Close(); err != nil {
						return fmt.Errorf("close %s: %w", g.file.path, err)
					}
				}
			}
			for _, enq := range g.enqueued {
				ack := w.p.now()
				w.done(opAdd, enq, ack, bp.entrySize)
				w.altAdd(enq, ack, bp.entrySize)
				l.tokens <- struct{}{}
			}
			w.done(opCommit, g.flushStart, w.p.now(), 0)
			batch[i] = nil
		}
	}
	return nil
}
