package diskbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// runner holds the state of one Run*/Sweep call: the budget, the files it
// created and the progress bookkeeping.
type runner struct {
	opts   Options
	target *Target
	log    *slog.Logger
	open   OpenFunc
	seed   uint64
	prefix string

	start    time.Time
	budget   atomic.Int64 // bytes that may still be written
	written  atomic.Int64 // bytes written so far
	points   int          // planned points
	pointNum int          // points started
	estimate time.Duration

	mu      sync.Mutex
	created map[string]bool // paths still linked, removed by cleanup
}

func newRunner(ctx context.Context, opts Options) (*runner, error) {
	t, err := Check(ctx, opts)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	open := opts.OpenFile
	if open == nil {
		open = OpenOSFile
		if opts.RaiseGOMAXPROCS {
			open = openRawFile
		}
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	r := &runner{
		opts:    opts,
		target:  t,
		log:     log.With("component", "diskbench"),
		open:    open,
		seed:    seed,
		prefix:  fmt.Sprintf(".diskbench-%d-%s-", os.Getpid(), strconv.FormatUint(rand.Uint64()&0xffffff, 36)),
		start:   time.Now(),
		created: map[string]bool{},
	}
	r.budget.Store(t.MaxBytes)
	r.removeStale()
	for _, w := range t.Warnings {
		r.log.Warn("target warning", "dir", t.Dir, "warning", w)
	}
	return r, nil
}

// staleRE matches the files of a diskbench (or its fio comparison) run:
// .diskbench-<pid>-... and .diskbench-fio-<pid>.<n>.
var staleRE = regexp.MustCompile(`^\.diskbench-(?:fio-)?([0-9]+)[-.]`)

// removeStale deletes benchmark files left by a diskbench process that no
// longer exists (killed with SIGKILL while measuring). Files of live
// processes are left alone.
func (r *runner) removeStale() {
	ents, err := os.ReadDir(r.target.Dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		m := staleRE.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // alive (or not ours to judge)
		}
		p := filepath.Join(r.target.Dir, e.Name())
		if err := os.Remove(p); err == nil {
			r.log.Warn("removed a file left by a killed diskbench run", "path", p, "pid", pid)
		}
	}
}

// createFile creates a new benchmark file and records its path for cleanup.
func (r *runner) createFile(name string) (File, string, error) {
	path := filepath.Join(r.target.Dir, r.prefix+name)
	f, err := r.open(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, path, ioError("create", path, err)
	}
	r.mu.Lock()
	r.created[path] = true
	r.mu.Unlock()
	return f, path, nil
}

// unlink removes a created path now; open descriptors keep the data until
// closed, so nothing is left even if the process is killed later.
func (r *runner) unlink(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.created[path] {
		return nil
	}
	delete(r.created, path)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// cleanup removes every path still linked. It is safe to call twice.
func (r *runner) cleanup() error {
	r.mu.Lock()
	paths := make([]string, 0, len(r.created))
	for p := range r.created {
		paths = append(paths, p)
	}
	r.mu.Unlock()
	var errs []error
	for _, p := range paths {
		if err := r.unlink(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// take reserves n bytes of the call's byte budget.
func (r *runner) take(n int64) bool {
	if r.budget.Add(-n) < 0 {
		r.budget.Add(n)
		return false
	}
	r.written.Add(n)
	return true
}

func (r *runner) progress(ev ProgressEvent) {
	if r.opts.Progress == nil {
		return
	}
	ev.Points = r.points
	ev.Elapsed = time.Since(r.start)
	ev.Estimate = max(r.estimate, ev.Elapsed)
	ev.BytesWritten = r.written.Load()
	r.opts.Progress(ev)
}

// ioError wraps a failed file operation, adding ErrNoSpace for ENOSPC.
func ioError(op, path string, err error) error {
	if isNoSpace(err) {
		return fmt.Errorf("%w: %s %s: %w", ErrNoSpace, op, path, err)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// syncError wraps a failed fdatasync: ErrNoSpace for ENOSPC (delayed
// allocation), ErrSync otherwise.
func syncError(path string, err error) error {
	if isNoSpace(err) {
		return ioError("fdatasync", path, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrSync, path, err)
}

// op kinds recorded by workers.
const (
	opWrite = iota
	opSync
	opCommit
	opRead
	opAdd // bookkeeper journal: one entry, queued → acknowledged
	numOps
)

// pointSpec is one measurement: workers goroutines each running work.
type pointSpec struct {
	workload Workload
	label    string
	duration time.Duration
	warmup   time.Duration
	// maxBytes is this point's share of the byte budget (0 = no own cap).
	maxBytes int64
	// warmupBytes ends the warm-up early once this many bytes are written
	// (0 = time only), so a fast disk under a small budget or file is still
	// measured.
	warmupBytes int64
	workers     int
	// work runs one worker until w.stopped(); it returns the first error.
	work func(w *worker) error
	// alt, for an alternating point, is its schedule; its turns start
	// with the measured window, and runPoint hands it the workers'
	// figures when the point ends (alternation.collect).
	alt *alternation
}

// point is the shared state of a running measurement.
type point struct {
	r          *runner
	spec       *pointSpec
	base       time.Time
	measureNs  atomic.Int64 // start of the measured window, ns since base
	endNs      atomic.Int64
	stop       atomic.Bool
	stopCh     chan struct{}
	stopOnce   sync.Once
	stopReason string
	stopErr    error
	written    atomic.Int64 // bytes written by this point (incl. warm-up)
	moved      atomic.Int64 // bytes moved (read or written) incl. warm-up, for progress
	secBytes   []atomic.Int64
	alt        *alternation // an alternating point's schedule, or nil
}

// worker is one goroutine's view of a point; its histograms are private and
// merged at the end.
type worker struct {
	p     *point
	id    int
	rng   *rand.Rand
	hists [numOps]*hist
	ops   int64
	bytes int64
	syncs int64
	// alt is an alternating point's (batch, turn) figures (altAdd, altSync).
	alt []altBucket
}

func (p *point) now() int64 { return int64(time.Since(p.base)) }

// halt stops the point; the first call wins and fixes the window's end.
func (p *point) halt(reason string, err error) {
	p.stopOnce.Do(func() {
		p.endNs.Store(p.now())
		p.stopReason = reason
		p.stopErr = err
		p.stop.Store(true)
		close(p.stopCh)
	})
}

// endWarmup starts the measured window now if the warm-up is still running.
func (p *point) endWarmup() {
	now := p.now()
	for {
		m := p.measureNs.Load()
		if m <= now || p.measureNs.CompareAndSwap(m, now) {
			return
		}
	}
}

func (w *worker) stopped() bool { return w.p.stop.Load() }

// take reserves n bytes of the point's share and the call's budget; when
// either is spent it halts the point and returns false.
func (w *worker) take(n int64) bool {
	p := w.p
	if p.spec.maxBytes > 0 && p.written.Add(n) > p.spec.maxBytes {
		p.written.Add(-n)
		p.halt("byte budget", nil)
		return false
	}
	if p.spec.maxBytes <= 0 {
		p.written.Add(n)
	}
	if p.spec.warmupBytes > 0 && p.written.Load() > p.spec.warmupBytes {
		p.endWarmup()
	}
	if !p.r.take(n) {
		p.written.Add(-n)
		p.halt("byte budget", nil)
		return false
	}
	return true
}

// done records one operation that ran from t1 to t2 (ns since base) and
// moved n bytes (0 for syncs). Operations that started in the warm-up or
// finished after the window closed are not counted.
func (w *worker) done(kind int, t1, t2 int64, n int64) {
	p := w.p
	if n > 0 {
		p.moved.Add(n)
	}
	ms := p.measureNs.Load()
	if t1 < ms {
		return
	}
	if p.stop.Load() && t2 > p.endNs.Load() {
		return
	}
	w.hists[kind].record(t2 - t1)
	switch kind {
	case opWrite, opRead, opAdd:
		w.ops++
		w.bytes += n
		if s := (t2 - ms) / int64(time.Second); s < int64(len(p.secBytes)) {
			p.secBytes[s].Add(n)
		}
	case opSync:
		w.syncs++
	}
}

// runPoint runs one measurement and returns its result (without the
// workload-specific fields, which the caller fills in).
func (r *runner) runPoint(ctx context.Context, spec *pointSpec) (Result, error) {
	r.pointNum++
	num := r.pointNum
	p := &point{
		r:      r,
		spec:   spec,
		stopCh: make(chan struct{}),
		alt:    spec.alt,
	}
	if spec.alt != nil {
		spec.alt.origin = &p.measureNs
	}
	p.secBytes = make([]atomic.Int64, int(spec.duration/time.Second)+2)
	workers := make([]*worker, spec.workers)
	for i := range workers {
		w := &worker{p: p, id: i, rng: rand.New(rand.NewPCG(r.seed, uint64(num)<<16|uint64(i)))}
		for k := range w.hists {
			w.hists[k] = new(hist)
		}
		workers[i] = w
	}
	r.log.Debug("point start", "workload", spec.workload, "point", spec.label,
		"duration", spec.duration, "warmup", spec.warmup, "max_bytes", spec.maxBytes)

	// With RaiseGOMAXPROCS every worker gets its own P: a goroutine blocked
	// in pread/fdatasync then gets its P straight back when the call
	// returns, instead of waiting for sysmon to hand one over (which on a
	// 2-core machine cost random reads at depth 16 a third of fio's IOPS and
	// 10× its p99). Off by default: GOMAXPROCS belongs to the program.
	if need := spec.workers + 2; r.opts.RaiseGOMAXPROCS && need > runtime.GOMAXPROCS(0) {
		prev := runtime.GOMAXPROCS(need)
		defer runtime.GOMAXPROCS(prev)
	}
	// Under Options.Settle the warm-up is the longest the point may take
	// to settle; it may also spend a larger share of the point's bytes.
	var st *settler
	if s := r.opts.Settle; s != nil && spec.warmup > 0 {
		st = newSettler(*s)
		if spec.maxBytes > 0 {
			spec.warmupBytes = int64(float64(spec.maxBytes) * st.s.MaxShare)
		}
	}
	p.base = time.Now()
	p.measureNs.Store(int64(spec.warmup))
	var wg sync.WaitGroup
	errc := make(chan error, len(workers))
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := spec.work(w); err != nil {
				errc <- err
				p.halt("error", err)
			}
		}()
	}
	// The controller: stop at the deadline, on cancel, or when a worker
	// halts the point; report progress meanwhile.
	deadline := time.NewTimer(spec.warmup + spec.duration)
	defer deadline.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastMoved, lastT := int64(0), time.Now()
	phase := PhaseWarmup
	if spec.warmup <= 0 {
		phase = PhaseMeasure
	}
	r.progress(ProgressEvent{Workload: spec.workload, Point: num, Label: spec.label, Phase: phase})
loop:
	for {
		select {
		case <-p.stopCh:
			break loop
		case <-deadline.C:
			p.halt("duration", nil)
			break loop
		case <-ctx.Done():
			p.halt("canceled", ctx.Err())
			break loop
		case now := <-tick.C:
			if st != nil && phase == PhaseWarmup && !st.ended {
				elapsed := p.now()
				if elapsed >= p.measureNs.Load() {
					// Warm-up ended by the time cap or the byte share.
					st.ended, st.endWritten = true, p.written.Load()
				} else if st.observe(time.Duration(elapsed), settleBytes(p)) {
					p.endWarmup()
					st.ended, st.settled, st.endWritten = true, true, p.written.Load()
					// Go ≥ 1.23 timers: Reset discards a pending expiry.
					deadline.Reset(spec.duration)
				}
			}
			if phase == PhaseWarmup && p.now() >= p.measureNs.Load() {
				phase = PhaseMeasure
			}
			m := p.moved.Load()
			rate := float64(m-lastMoved) / now.Sub(lastT).Seconds()
			lastMoved, lastT = m, now
			r.progress(ProgressEvent{Workload: spec.workload, Point: num, Label: spec.label, Phase: phase, BytesPerSec: rate})
		}
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	if p.stopReason == "canceled" {
		return Result{}, fmt.Errorf("%s %s: %w", spec.workload, spec.label, p.stopErr)
	}
	if len(errs) > 0 {
		return Result{}, fmt.Errorf("%s %s: %w", spec.workload, spec.label, errors.Join(errs...))
	}

	// Merge the workers.
	var hs [numOps]hist
	var res Result
	for _, w := range workers {
		for k := range hs {
			hs[k].merge(w.hists[k])
		}
		res.Ops += w.ops
		res.Bytes += w.bytes
		res.Syncs += w.syncs
	}
	measureNs := p.measureNs.Load()
	window := time.Duration(p.endNs.Load() - measureNs)
	if window <= 0 || res.Ops == 0 {
		return Result{}, fmt.Errorf("%w: %s %s stopped by %s after %v (warm-up %v)", ErrBudgetExhausted,
			spec.workload, spec.label, p.stopReason, time.Duration(p.endNs.Load()).Round(time.Millisecond), spec.warmup)
	}
	res.Workload = spec.workload
	res.DurationSec = window.Seconds()
	res.WarmupSec = time.Duration(measureNs).Seconds()
	res.BytesPerSec = float64(res.Bytes) / window.Seconds()
	res.IOPS = float64(res.Ops) / window.Seconds()
	res.BytesWritten = p.written.Load()
	res.StopReason = p.stopReason
	res.WriteLatency = hs[opWrite].latency(r.opts.LatencyBuckets)
	res.SyncLatency = hs[opSync].latency(r.opts.LatencyBuckets)
	res.CommitLatency = hs[opCommit].latency(r.opts.LatencyBuckets)
	res.ReadLatency = hs[opRead].latency(r.opts.LatencyBuckets)
	res.AddLatency = hs[opAdd].latency(r.opts.LatencyBuckets)

	full := int(window / time.Second)
	if full > len(p.secBytes) {
		full = len(p.secBytes)
	}
	for i := 0; i < full; i++ {
		res.SamplesBytesPerSec = append(res.SamplesBytesPerSec, float64(p.secBytes[i].Load()))
	}
	res.StdevOverMean = cv(res.SamplesBytesPerSec)
	if st != nil {
		res.Settle = st.info()
		if !st.settled {
			what := "throughput was still changing"
			if st.aboveMax() {
				what = fmt.Sprintf("throughput was still above %s (a cache's burst)", units.DecimalRate(st.s.MaxRate))
			}
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s when the %.1f s warm-up ended (per-second rates %s): the figure may include a cache or burst; give the point more time or bytes",
				what, time.Duration(measureNs).Seconds(), fmtRates(st.samples)))
		}
	}
	if p.stopReason == "byte budget" && window < spec.duration {
		res.Warnings = append(res.Warnings, fmt.Sprintf("stopped after %.1fs of %.1fs: byte budget spent (raise --max-bytes for a longer measurement)",
			window.Seconds(), spec.duration.Seconds()))
	}
	if p.stopReason == "file full" && window < spec.duration {
		res.Warnings = append(res.Warnings, fmt.Sprintf("stopped after %.1fs of %.1fs: a writer's file is full (raise --file-size)",
			window.Seconds(), spec.duration.Seconds()))
	}
	if res.StdevOverMean > 0.10 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("throughput varied: per-second stdev/mean %.0f%%", 100*res.StdevOverMean))
	}
	if n := len(res.SamplesBytesPerSec); n >= 4 {
		first := mean(res.SamplesBytesPerSec[:n/4])
		last := mean(res.SamplesBytesPerSec[n-n/4:])
		if first > 0 && last < 0.7*first {
			res.Warnings = append(res.Warnings, fmt.Sprintf("throughput fell from %s in the first quarter to %s in the last (burst credits, cache or thermal?)",
				units.HumanRate(first), units.HumanRate(last)))
		}
	}
	r.log.Debug("point done", "workload", spec.workload, "point", spec.label, "bytes_per_sec", res.BytesPerSec,
		"iops", res.IOPS, "stop", p.stopReason)
	if spec.alt != nil {
		spec.alt.collect(workers, p.endNs.Load())
	}
	return res, nil
}

// settleBytes is what Settle watches: the bytes written (what reaches the
// device; the BookKeeper journal's adds would count its entries twice in
// moved), or read for a read point.
func settleBytes(p *point) int64 {
	if p.spec.workload == WorkloadRandRead {
		return p.moved.Load()
	}
	return p.written.Load()
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// cv is the coefficient of variation (population stdev / mean).
func cv(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m := mean(v)
	if m == 0 {
		return 0
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/float64(len(v))) / m
}

// defaultWarmup is max(1 s, 5% of d).
func defaultWarmup(d time.Duration) time.Duration {
	return max(DefaultMinWarmup, d/20)
}

// resolveTiming applies the Duration and Warmup defaults.
func resolveTiming(o Options) (time.Duration, time.Duration) {
	d := o.Duration
	if d <= 0 {
		d = DefaultDuration
	}
	w := o.Warmup
	switch {
	case w < 0:
		w = 0
	case w == 0:
		w = defaultWarmup(d)
	}
	return d, w
}

// writeFull is f.WriteAt with the error wrapped.
func writeFull(f File, path string, b []byte, off int64) error {
	if _, err := f.WriteAt(b, off); err != nil {
		return ioError("write", path, err)
	}
	return nil
}

// readFull is f.ReadAt treating a short read as an error.
func readFull(f File, path string, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if err == io.EOF && n == len(b) {
		err = nil
	}
	if err != nil {
		return ioError("read", path, err)
	}
	return nil
}
