package diskbench

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// writeParams is the common shape of the journal and entry-log sweeps.
type writeParams struct {
	workload   Workload
	writers    []int
	blockSizes []int64
	syncEvery  int   // journal: fdatasync every N writes
	flushEvery int64 // entrylog: fdatasync every N bytes
	fileSize   int64
	prealloc   Prealloc
	// journal model and its BookKeeper settings
	model    JournalModel
	settings JournalSettings
	inFlight int
	// alternate runs the writer counts as one alternating point per block
	// size.
	alternate *Alternation
}

func (p JournalParams) resolve() writeParams {
	wp := writeParams{workload: WorkloadJournal, writers: p.Writers, blockSizes: p.BlockSizes,
		syncEvery: p.SyncEvery, fileSize: p.FileSize, prealloc: p.Prealloc, model: p.Model, inFlight: p.InFlight}
	if wp.model == "" {
		wp.model = JournalModelBookKeeper
	}
	if p.Alternate != nil {
		a := p.Alternate.resolve()
		wp.alternate = &a
	}
	wp.settings = DefaultJournalSettings()
	if p.Settings != nil {
		wp.settings = *p.Settings
	}
	if len(wp.writers) == 0 {
		wp.writers = []int{1, 2, 4, 8}
	}
	if len(wp.blockSizes) == 0 {
		wp.blockSizes = []int64{4 * KiB, 16 * KiB, 64 * KiB}
	}
	if wp.syncEvery == 0 {
		wp.syncEvery = 1
	}
	if wp.prealloc == PreallocDefault {
		wp.prealloc = PreallocFallocate
	}
	return wp
}

// bookkeeper reports whether wp is the BookKeeper journal model.
func (wp writeParams) bookkeeper() bool {
	return wp.workload == WorkloadJournal && wp.model == JournalModelBookKeeper
}

func (p EntryLogParams) resolve() writeParams {
	wp := writeParams{workload: WorkloadEntryLog, writers: p.Writers, blockSizes: p.BlockSizes,
		flushEvery: p.FlushEveryBytes, fileSize: p.FileSize, prealloc: p.Prealloc}
	if len(wp.writers) == 0 {
		wp.writers = []int{1}
	}
	if len(wp.blockSizes) == 0 {
		wp.blockSizes = []int64{64 * KiB, 1 * MiB, 8 * MiB}
	}
	if wp.flushEvery == 0 {
		wp.flushEvery = DefaultFlushEvery
	}
	if p.Alternate != nil {
		a := p.Alternate.resolve()
		wp.alternate = &a
	}
	if wp.prealloc == PreallocDefault {
		wp.prealloc = PreallocNone
	}
	return wp
}

func (wp writeParams) validate() error {
	for _, w := range wp.writers {
		if w < 1 || w > 1024 {
			return fmt.Errorf("%w: %s writers %d (want 1..1024)", ErrInvalidOptions, wp.workload, w)
		}
	}
	for _, bs := range wp.blockSizes {
		if bs < 512 || bs > 256*MiB {
			return fmt.Errorf("%w: %s block size %d (want 512 B .. 256 MiB)", ErrInvalidOptions, wp.workload, bs)
		}
	}
	if wp.syncEvery < 0 {
		return fmt.Errorf("%w: sync-every %d", ErrInvalidOptions, wp.syncEvery)
	}
	if wp.flushEvery < 0 {
		return fmt.Errorf("%w: flush-every %d", ErrInvalidOptions, wp.flushEvery)
	}
	if wp.fileSize < 0 {
		return fmt.Errorf("%w: file size %d", ErrInvalidOptions, wp.fileSize)
	}
	if wp.alternate != nil {
		if err := wp.alternate.validate(wp.writers); err != nil {
			return err
		}
	}
	if wp.workload == WorkloadJournal {
		switch wp.model {
		case JournalModelBookKeeper:
			if wp.inFlight < 0 || wp.inFlight > bkMaxQueue {
				return fmt.Errorf("%w: in-flight %d (want 1..%d, journalQueueSize)", ErrInvalidOptions, wp.inFlight, bkMaxQueue)
			}
			return wp.settings.validate()
		case JournalModelPlain:
		default:
			return fmt.Errorf("%w: journal model %q (want bookkeeper or plain)", ErrInvalidOptions, wp.model)
		}
	}
	return nil
}

// points is how many points the sweep runs: one per (writers, block
// size), or one per block size when the counts alternate.
func (wp writeParams) points() int { return wp.counts() * len(wp.blockSizes) }

// counts is how many points each block size gets.
func (wp writeParams) counts() int {
	if wp.alternate != nil {
		return 1
	}
	return len(wp.writers)
}

// byteWeight is a write point's weight when a byte budget is shared out:
// small-block points (fdatasync-bound) write little in their time, large
// ones a lot, so a 64 KiB point gets 4× the share of a 4 KiB one and a
// 128 KiB-or-larger one 8×.
func byteWeight(bs int64) int { return int(min(max(bs/(16*KiB), 1), 8)) }

// pointWeight is a point's byte weight: the plain model's and the entry
// log's by write size; the BookKeeper model's by the size its writes
// reach, the group (journalBufferedWritesThreshold) or the entry if
// larger — small entries are grouped, so they move as many bytes as large
// ones.
func (wp writeParams) pointWeight(bs int64) int {
	if wp.bookkeeper() {
		return byteWeight(max(bs, wp.settings.JournalBufferedWritesThreshold))
	}
	return byteWeight(bs)
}

// weight is the sum of the sweep's point weights.
func (wp writeParams) weight() int {
	n := 0
	for _, bs := range wp.blockSizes {
		n += wp.pointWeight(bs)
	}
	return n * wp.counts()
}

// RunJournal measures the bookie journal pattern for every (writers, block
// size) pair: by default N journals written the way BookKeeper's journal
// writes them (JournalModelBookKeeper, entries of BlockSize bytes), or with
// JournalModelPlain each writer appending BlockSize writes to its own file
// and calling fdatasync after every SyncEvery writes. Results come in sweep
// order (writers outer, block size inner); with Alternate, per block size
// the counts in the order given, each with its batches in order. On error
// the results measured so far are returned with it; every file is removed
// either way.
func RunJournal(ctx context.Context, o JournalOptions) ([]Result, error) {
	wp := o.JournalParams.resolve()
	return runWriteSweep(ctx, o.Options, wp)
}

// RunEntryLog measures the entry-log pattern: each writer appends BlockSize
// buffered writes and calls fdatasync every FlushEveryBytes.
func RunEntryLog(ctx context.Context, o EntryLogOptions) ([]Result, error) {
	wp := o.EntryLogParams.resolve()
	return runWriteSweep(ctx, o.Options, wp)
}

func runWriteSweep(ctx context.Context, o Options, wp writeParams) (res []Result, err error) {
	if err := wp.validate(); err != nil {
		return nil, err
	}
	r, err := newRunner(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() { err = joinCleanup(err, r.cleanup()) }()
	d, w := resolveTiming(o)
	r.points = wp.points()
	r.estimate = time.Duration(r.points) * (d + w)
	weightLeft := wp.weight()
	if wp.alternate != nil {
		for _, bs := range wp.blockSizes {
			share := r.budget.Load() * int64(wp.pointWeight(bs)) / int64(weightLeft)
			weightLeft -= wp.pointWeight(bs)
			rs, err := r.runAlternation(ctx, wp, bs, d, w, share)
			if err != nil {
				return res, err
			}
			res = append(res, rs...)
		}
		return res, nil
	}
	for _, writers := range wp.writers {
		for _, bs := range wp.blockSizes {
			share := r.budget.Load() * int64(wp.pointWeight(bs)) / int64(weightLeft)
			weightLeft -= wp.pointWeight(bs)
			one, err := r.runWritePoint(ctx, wp, writers, bs, d, w, share)
			if err != nil {
				return res, err
			}
			res = append(res, one)
		}
	}
	return res, nil
}

func joinCleanup(err, cerr error) error {
	if cerr == nil {
		return err
	}
	if err == nil {
		return fmt.Errorf("cleanup: %w", cerr)
	}
	return fmt.Errorf("%w; cleanup also failed: %v", err, cerr)
}

// runWritePoint runs one (writers, block size) point of a write workload.
func (r *runner) runWritePoint(ctx context.Context, wp writeParams, writers int, bs int64,
	d, warm time.Duration, share int64) (Result, error) {
	if wp.bookkeeper() {
		return r.runBKJournalPoint(ctx, wp, writers, bs, d, warm, share)
	}
	rs, err := r.runWrite(ctx, wp, writers, bs, d, warm, share, nil)
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// runAlternation runs the counts of wp.writers as one alternating point
// (Alternation) at block size bs and returns a Result per count and batch,
// counts in the order given, batches in order.
func (r *runner) runAlternation(ctx context.Context, wp writeParams, bs int64, d, warm time.Duration, share int64) ([]Result, error) {
	al := newAlternation(*wp.alternate, wp.writers, d)
	if wp.bookkeeper() {
		return r.runBKJournal(ctx, wp, al.lanes, bs, al.duration(), warm, share, al)
	}
	return r.runWrite(ctx, wp, al.lanes, bs, al.duration(), warm, share, al)
}

// runWrite runs writers plain-journal or entry-log writers: one point, or
// with al the alternating point (a Result per count and batch).
func (r *runner) runWrite(ctx context.Context, wp writeParams, writers int, bs int64,
	d, warm time.Duration, share int64, al *alternation) ([]Result, error) {
	label := fmt.Sprintf("writers=%d bs=%s", writers, units.FormatBytes(bs))
	if al != nil {
		label = fmt.Sprintf("writers=%s alternating bs=%s", CountsLabel(al.counts), units.FormatBytes(bs))
	}
	syncBytes := wp.flushEvery
	if wp.workload == WorkloadJournal {
		syncBytes = int64(wp.syncEvery) * bs
	}
	fileSize := wp.fileSize
	if fileSize == 0 {
		// Room for 1.5× a writer's fair share, so a writer faster than the
		// others does not fill its file before the point's share is spent.
		fileSize = min(share/int64(writers)*3/2, MaxFileSize)
	}
	fileSize -= fileSize % bs
	if fileSize < bs {
		return nil, fmt.Errorf("%w: %s %s: byte budget share %s is less than one block per writer",
			ErrBudgetExhausted, wp.workload, label, units.HumanBytes(share))
	}
	if need := uint64(writers) * uint64(fileSize); wp.prealloc == PreallocFallocate &&
		need+uint64(ReserveBytes) > r.target.FreeBytes {
		return nil, fmt.Errorf("%w: %s %s needs %s of files, %s is free", ErrInsufficientSpace,
			wp.workload, label, units.HumanBytes(need), units.HumanBytes(r.target.FreeBytes))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// The files keep their names while measured, as fio's and a bookie's
	// do (an unlinked inode could take other paths in the filesystem);
	// they are unlinked and closed when the point ends, and by cleanup on
	// every error path.
	files := make([]File, writers)
	paths := make([]string, writers)
	defer func() {
		for i, f := range files {
			if f != nil {
				_ = r.unlink(paths[i])
				f.Close()
			}
		}
	}()
	prealloc := wp.prealloc
	var warnings []string
	for i := range files {
		f, path, err := r.createFile(fmt.Sprintf("%s-%d.dat", wp.workload, i))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", wp.workload, label, err)
		}
		files[i], paths[i] = f, path

		if prealloc == PreallocSparse {
			if err := f.Truncate(fileSize); err != nil {
				return nil, fmt.Errorf("%s %s: %w", wp.workload, label, ioError("ftruncate", path, err))
			}
		}
		if prealloc == PreallocFallocate {
			if err := f.Allocate(0, fileSize); err != nil {
				if errors.Is(err, syscall.EOPNOTSUPP) {
					prealloc = PreallocNone
					warnings = append(warnings, "fallocate is not supported here: files were not preallocated")
				} else {
					return nil, fmt.Errorf("%s %s: %w", wp.workload, label, ioError("fallocate", path, err))
				}
			}
		}
	}

	bufs := make([][]byte, writers)
	for i := range bufs {
		bufs[i] = alignedBuf(bs, 4096)
	}
	spec := &pointSpec{
		workload: wp.workload,
		label:    label,
		duration: d,
		warmup:   warm,
		maxBytes: share,
		workers:  writers,
		// A warm-up may spend at most a fifth of what the point can write
		// (its byte share, or its files' room).
		warmupBytes: min(share, int64(writers)*fileSize) / 5,
		alt:         al,
	}
	if al != nil {
		// The turns and their batches need the whole measured time.
		spec.warmupBytes = 0
	}
	spec.work = func(w *worker) error {
		buf := bufs[w.id]
		for i := 0; i+8 <= len(buf); i += 8 {
			v := w.rng.Uint64()
			for j := 0; j < 8; j++ {
				buf[i+j] = byte(v >> (8 * j))
			}
		}
		return writeLoop(w, files[w.id], paths[w.id], buf, fileSize, syncBytes)
	}
	res, err := r.runPoint(ctx, spec)
	if err != nil {
		return nil, err
	}
	res.Writers = writers
	res.BlockSize = bs
	res.FileSize = fileSize
	res.Prealloc = prealloc.String()
	if wp.workload == WorkloadJournal {
		res.SyncEvery = wp.syncEvery
		res.Model = JournalModelPlain
	} else {
		res.FlushEveryBytes = wp.flushEvery
	}
	res.Warnings = append(warnings, res.Warnings...)
	r.progress(ProgressEvent{Workload: wp.workload, Point: r.pointNum, Label: label, Phase: PhaseDone, Result: &res})
	if al == nil {
		return []Result{res}, nil
	}
	return al.results(res, r.opts.LatencyBuckets)
}

// writeLoop is one writer: sequential writes of buf, fdatasync whenever
// syncBytes have been written since the last one. A writer whose file is
// full stops the point ("file full"): overwriting data still in the page
// cache would measure memory, not the disk (fio's time_based wrap does that).
//
//	|<- group: writes ... ->|<- fdatasync ->|
//	^ group start                           ^ commit (CommitLatency)
func writeLoop(w *worker, f File, path string, buf []byte, fileSize, syncBytes int64) error {
	p := w.p
	bs := int64(len(buf))
	var off, pending, groupStart int64
	var timer *time.Timer
	sync := func(from int64) error {
		t1 := p.now()
		if err := f.Datasync(); err != nil {
			return syncError(path, err)
		}
		t2 := p.now()
		w.done(opSync, t1, t2, 0)
		w.altSync(t1, t2)
		w.done(opCommit, from, t2, 0)
		pending = 0
		return nil
	}
	for !w.stopped() {
		if al := p.alt; al != nil && !al.active(w.id, p.now()) {
			// Not this writer's turn: its unsynced bytes are made durable
			// first (as an entry logger's flush), then it waits.
			if pending > 0 {
				if err := sync(groupStart); err != nil {
					return err
				}
			}
			if !al.wait(w, w.id, &timer) {
				break
			}
		}
		if off+bs > fileSize {
			p.halt("file full", nil)
			break
		}
		if !w.take(bs) {
			break
		}
		t1 := p.now()
		if pending == 0 {
			groupStart = t1
		}
		if err := writeFull(f, path, buf, off); err != nil {
			return err
		}
		t2 := p.now()
		w.done(opWrite, t1, t2, bs)
		w.altWrite(t2, bs)
		off += bs
		pending += bs
		if syncBytes > 0 && pending >= syncBytes {
			if err := sync(groupStart); err != nil {
				return err
			}
		}
	}
	return nil
}
