package diskbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

type readParams struct {
	blockSizes []int64
	depths     []int
	fileSize   int64
}

func (p RandReadParams) resolve() readParams {
	rp := readParams{blockSizes: p.BlockSizes, depths: p.Depths, fileSize: p.FileSize}
	if len(rp.blockSizes) == 0 {
		rp.blockSizes = []int64{4 * KiB, 64 * KiB, 1 * MiB}
	}
	if len(rp.depths) == 0 {
		rp.depths = []int{1, 16}
	}
	return rp
}

func (rp readParams) validate() error {
	for _, d := range rp.depths {
		if d < 1 || d > 1024 {
			return fmt.Errorf("%w: randread depth %d (want 1..1024)", ErrInvalidOptions, d)
		}
	}
	for _, bs := range rp.blockSizes {
		if bs < 512 || bs > 256*MiB || bs%512 != 0 {
			return fmt.Errorf("%w: randread block size %d (want a multiple of 512 B up to 256 MiB)", ErrInvalidOptions, bs)
		}
	}
	if rp.fileSize < 0 {
		return fmt.Errorf("%w: file size %d", ErrInvalidOptions, rp.fileSize)
	}
	return nil
}

func (rp readParams) points() int { return len(rp.blockSizes) * len(rp.depths) }

// RunRandRead measures catch-up reads: it lays out one file of FileSize
// bytes (written sequentially, synced and dropped from the page cache),
// then for every (block size, depth) pair runs Depth goroutines each
// issuing pread at random block-aligned offsets on an O_DIRECT descriptor.
// Where O_DIRECT is refused it reads buffered and drops each block from the
// page cache after reading it, and says so in every Result's Warnings.
func RunRandRead(ctx context.Context, o RandReadOptions) (res []Result, err error) {
	rp := o.RandReadParams.resolve()
	if err := rp.validate(); err != nil {
		return nil, err
	}
	r, err := newRunner(ctx, o.Options)
	if err != nil {
		return nil, err
	}
	defer func() { err = joinCleanup(err, r.cleanup()) }()
	d, w := resolveTiming(o.Options)
	r.points = rp.points()
	size := rp.fileSize
	if size == 0 {
		size = min(1*GiB, r.budget.Load()/2)
	}
	r.estimate = time.Duration(r.points)*(d+w) + time.Duration(float64(size)/(200e6)*float64(time.Second))
	rf, err := r.layoutReadFile(ctx, size, maxBlock(rp.blockSizes))
	if err != nil {
		return nil, err
	}
	defer rf.f.Close()
	for _, bs := range rp.blockSizes {
		for _, depth := range rp.depths {
			one, err := r.runReadPoint(ctx, rf, bs, depth, d, w)
			if err != nil {
				return res, err
			}
			res = append(res, one)
		}
	}
	return res, nil
}

func maxBlock(bs []int64) int64 {
	m := int64(0)
	for _, b := range bs {
		m = max(m, b)
	}
	return m
}

// readFile is the laid-out file random reads use.
type readFile struct {
	f         File
	path      string
	size      int64
	direct    bool
	memAlign  int
	offAlign  int64
	warnings  []string
	layoutSec float64
	// counted is set once the layout's bytes went into a Result.
	counted bool
}

// layoutReadFile writes size bytes sequentially (buffered, 1 MiB writes),
// fdatasyncs, drops the cache and reopens the file for O_DIRECT reads.
func (r *runner) layoutReadFile(ctx context.Context, size, maxBS int64) (*readFile, error) {
	size -= size % (1 * MiB)
	if size < max(maxBS, 1*MiB) {
		return nil, fmt.Errorf("%w: randread file of %s is smaller than a block (%s) or 1 MiB; raise --max-bytes or --file-size",
			ErrBudgetExhausted, units.FormatBytes(size), units.FormatBytes(maxBS))
	}
	if uint64(size)+uint64(ReserveBytes) > r.target.FreeBytes {
		return nil, fmt.Errorf("%w: randread file of %s, %s free", ErrInsufficientSpace, units.FormatBytes(size), units.HumanBytes(r.target.FreeBytes))
	}
	wf, path, err := r.createFile("randread.dat")
	if err != nil {
		return nil, fmt.Errorf("randread layout: %w", err)
	}
	defer wf.Close()
	rf := &readFile{path: path, size: size, memAlign: 4096, offAlign: 4096}
	var stx unix.Statx_t
	dioOK := true
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_DIOALIGN, &stx); err == nil && stx.Mask&unix.STATX_DIOALIGN != 0 {
		if stx.Dio_offset_align == 0 {
			dioOK = false
		} else {
			rf.memAlign = int(max(stx.Dio_mem_align, 512))
			rf.offAlign = int64(stx.Dio_offset_align)
			if stx.Dio_read_offset_align != 0 {
				rf.offAlign = int64(stx.Dio_read_offset_align)
			}
		}
	}
	r.log.Debug("randread layout start", "path", path, "size", size)
	start := time.Now()
	buf := alignedBuf(1*MiB, 4096)
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	last := time.Now()
	r.progress(ProgressEvent{Workload: WorkloadRandRead, Point: r.pointNum + 1, Label: "layout " + units.FormatBytes(size), Phase: PhaseLayout})
	for off := int64(0); off < size; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("randread layout: %w", err)
		}
		if !r.take(int64(len(buf))) {
			return nil, fmt.Errorf("%w: randread layout of %s", ErrBudgetExhausted, units.FormatBytes(size))
		}
		if err := writeFull(wf, path, buf, off); err != nil {
			return nil, fmt.Errorf("randread layout: %w", err)
		}
		if time.Since(last) > 250*time.Millisecond {
			last = time.Now()
			r.progress(ProgressEvent{Workload: WorkloadRandRead, Point: r.pointNum + 1, Label: "layout " + units.FormatBytes(size),
				Phase: PhaseLayout, BytesPerSec: float64(off) / time.Since(start).Seconds()})
		}
	}
	if err := wf.Datasync(); err != nil {
		return nil, fmt.Errorf("randread layout: %w", syncError(path, err))
	}
	if err := wf.Fadvise(0, size, unix.FADV_DONTNEED); err != nil {
		r.log.Warn("fadvise DONTNEED failed", "path", path, "err", err)
	}
	rf.layoutSec = time.Since(start).Seconds()

	if dioOK {
		f, err := r.open(path, os.O_RDONLY|unix.O_DIRECT, 0)
		switch {
		case err == nil:
			rf.f, rf.direct = f, true
		case errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP):
			dioOK = false
		default:
			return nil, fmt.Errorf("randread open: %w", ioError("open", path, err))
		}
	}
	if !dioOK {
		f, err := r.open(path, os.O_RDONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("randread open: %w", ioError("open", path, err))
		}
		rf.f = f
		msg := fmt.Sprintf("O_DIRECT is not supported on %s (%s): reads are buffered with fadvise(DONTNEED) after each block, so figures may include page-cache effects", r.target.Dir, r.target.FSType)
		rf.warnings = append(rf.warnings, msg)
		r.log.Warn("buffered fallback", "dir", r.target.Dir, "fs", r.target.FSType)
	}
	if err := r.unlink(path); err != nil {
		rf.f.Close()
		return nil, err
	}
	return rf, nil
}

// runReadPoint runs one (block size, depth) random-read point.
func (r *runner) runReadPoint(ctx context.Context, rf *readFile, bs int64, depth int, d, warm time.Duration) (Result, error) {
	label := fmt.Sprintf("depth=%d bs=%s", depth, units.FormatBytes(bs))
	if rf.direct && bs%rf.offAlign != 0 {
		return Result{}, fmt.Errorf("%w: randread block size %s is not a multiple of the direct-I/O alignment %d", ErrInvalidOptions, units.FormatBytes(bs), rf.offAlign)
	}
	if bs > rf.size {
		return Result{}, fmt.Errorf("%w: randread block size %s exceeds the file size %s", ErrInvalidOptions, units.FormatBytes(bs), units.FormatBytes(rf.size))
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	blocks := rf.size / bs
	bufs := make([][]byte, depth)
	for i := range bufs {
		bufs[i] = alignedBuf(bs, max(rf.memAlign, 4096))
	}
	spec := &pointSpec{workload: WorkloadRandRead, label: label, duration: d, warmup: warm, workers: depth}
	spec.work = func(w *worker) error {
		p := w.p
		buf := bufs[w.id]
		for !w.stopped() {
			off := w.rng.Int64N(blocks) * bs
			t1 := p.now()
			if err := readFull(rf.f, rf.path, buf, off); err != nil {
				return err
			}
			t2 := p.now()
			w.done(opRead, t1, t2, bs)
			if !rf.direct {
				_ = rf.f.Fadvise(off, bs, unix.FADV_DONTNEED)
			}
		}
		return nil
	}
	res, err := r.runPoint(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	res.Depth = depth
	res.BlockSize = bs
	res.FileSize = rf.size
	res.DirectIO = rf.direct
	if !rf.counted {
		res.BytesWritten = rf.size // the layout is charged to the first read point
		rf.counted = true
	}
	res.Warnings = append(append([]string(nil), rf.warnings...), res.Warnings...)
	r.progress(ProgressEvent{Workload: WorkloadRandRead, Point: r.pointNum, Label: label, Phase: PhaseDone, Result: &res})
	return res, nil
}
