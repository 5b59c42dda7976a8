package diskbench

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// Alternation runs several writer counts (JournalParams.Writers,
// EntryLogParams.Writers) in one point instead of one point each. The
// point starts the largest count of writers (journals, entry-log files),
// all of which run through the warm-up; from the measured window on, the
// counts take turns, in the order given, over and over: during count N's
// turn the first N writers write and the others do not (a journal with
// nothing queued writes nothing, as a bookie's idle journal; an entry-log
// writer first makes its unsynced bytes durable, as an entry logger's
// flush does). One cycle gives every count one turn.
//
// Separate points of each count, run one after the other, measure each
// count in its own seconds of the disk: a virtual disk's host cache that
// fills and drains over seconds, or an SSD's garbage collection, then
// decides their ratio as much as the count does (on this project's VM the
// paired ratio of two separate 1.5 s runs of 2 and 4 journals moved between
// 1.11 and 1.47 within one minute). Turns of a fraction of a second put
// every count in the same seconds, so such drift hits all alike, and the
// measured cycles give many paired figures instead of a few.
type Alternation struct {
	// Turn is each count's time per cycle. Default 250 ms.
	Turn time.Duration
	// Settle is the start of every turn left out of its figures: the
	// previous turn's entries are still being acknowledged and the new
	// turn's queues fill. Default Turn/5.
	Settle time.Duration
	// Batches splits the measured cycles into this many consecutive
	// batches of whole cycles; each count gets one Result per batch (a
	// round of a paired comparison). Default 8.
	Batches int
}

// Alternation defaults.
const (
	DefaultAlternationTurn    = 250 * time.Millisecond
	DefaultAlternationBatches = 8
)

// AlternationInfo marks a Result measured in an alternating point: one
// count's figures over one batch of cycles. Every Result of one point has
// the same Counts, TurnSec, SettleSec, Batches and CyclesPerBatch.
type AlternationInfo struct {
	// Counts are the writer counts that took turns, in their order.
	Counts []int `json:"counts"`
	// TurnSec is each count's turn per cycle; SettleSec its start left
	// out of the figures.
	TurnSec   float64 `json:"turn_sec"`
	SettleSec float64 `json:"settle_sec"`
	// Batch is this Result's batch (1-based) of Batches.
	Batch   int `json:"batch"`
	Batches int `json:"batches"`
	// CyclesPerBatch is how many cycles each batch holds.
	CyclesPerBatch int `json:"cycles_per_batch"`
}

// resolve fills in the defaults.
func (a Alternation) resolve() Alternation {
	if a.Turn == 0 {
		a.Turn = DefaultAlternationTurn
	}
	if a.Settle == 0 {
		a.Settle = a.Turn / 5
	}
	if a.Batches == 0 {
		a.Batches = DefaultAlternationBatches
	}
	return a
}

// validate checks an alternation of counts.
func (a Alternation) validate(counts []int) error {
	if len(counts) < 2 {
		return fmt.Errorf("%w: alternating counts need at least two writer counts, got %v", ErrInvalidOptions, counts)
	}
	seen := map[int]bool{}
	for _, c := range counts {
		if seen[c] {
			return fmt.Errorf("%w: writer count %d listed twice in an alternation", ErrInvalidOptions, c)
		}
		seen[c] = true
	}
	if a.Turn < 10*time.Millisecond || a.Settle < 0 || a.Settle >= a.Turn {
		return fmt.Errorf("%w: alternation turn %v, settle %v (want a turn of at least 10ms and 0 <= settle < turn)", ErrInvalidOptions, a.Turn, a.Settle)
	}
	if a.Batches < 1 || a.Batches > 1000 {
		return fmt.Errorf("%w: alternation batches %d (want 1..1000)", ErrInvalidOptions, a.Batches)
	}
	return nil
}

// alternation is a running alternating point's schedule and bucket
// layout. Times are ns since the point's base. During the warm-up every
// lane runs (the largest count: a cache's burst is spent at the highest
// rate); the turns start when the measured window does (origin, the
// point's measureNs: the warm-up's end, which Options.Settle may bring
// forward).
type alternation struct {
	a        Alternation
	counts   []int
	turn     int64
	settle   int64
	cycle    int64
	cpb      int // cycles per batch
	lanes    int // the largest count
	batchLen int64
	origin   *atomic.Int64 // the point's measureNs, set by runPoint
	// Set by collect when the point has ended: the workers' buckets
	// merged, and the end of the measured window.
	merged []altBucket
	end    int64
}

// newAlternation lays out the cycles: the measured time d split into
// a.Batches batches of whole cycles (at least one cycle each).
func newAlternation(a Alternation, counts []int, d time.Duration) *alternation {
	al := &alternation{a: a, counts: counts, turn: int64(a.Turn), settle: int64(a.Settle), lanes: slices.Max(counts)}
	al.cycle = al.turn * int64(len(counts))
	al.cpb = max(1, int(int64(d)/al.cycle/int64(a.Batches)))
	al.batchLen = al.cycle * int64(al.cpb)
	return al
}

// duration is the point's measured time.
func (al *alternation) duration() time.Duration {
	return time.Duration(al.batchLen * int64(al.a.Batches))
}

// start is where the turns start (the measured window's start).
func (al *alternation) start() int64 { return al.origin.Load() }

// turnAt is the index into counts of the turn running at t ≥ start.
func (al *alternation) turnAt(t int64) int {
	return int(((t - al.start()) / al.turn) % int64(len(al.counts)))
}

// active reports whether lane runs at t: always during the warm-up, then
// in the turns of the counts that include it.
func (al *alternation) active(lane int, t int64) bool {
	return t < al.start() || lane < al.counts[al.turnAt(t)]
}

// nextActive is the start of lane's next turn after t (t ≥ start; lane
// runs in at least one count's turn).
func (al *alternation) nextActive(lane int, t int64) int64 {
	o := al.start()
	next := o + ((t-o)/al.turn+1)*al.turn
	for range len(al.counts) {
		if al.active(lane, next) {
			return next
		}
		next += al.turn
	}
	return next
}

// bucket returns the (batch, turn) bucket index of an event at t, or -1
// when t lies in the warm-up, in a turn's settle time or after the last
// batch.
func (al *alternation) bucket(t int64) int {
	o := al.start()
	if t < o {
		return -1
	}
	rel := t - o
	if rel%al.turn < al.settle {
		return -1
	}
	b := int(rel / al.batchLen)
	if b >= al.a.Batches {
		return -1
	}
	return b*len(al.counts) + al.turnAt(t)
}

// buckets is how many (batch, turn) buckets there are.
func (al *alternation) buckets() int { return al.a.Batches * len(al.counts) }

// wait blocks lane's worker until its next turn; false when the point
// stopped meanwhile.
func (al *alternation) wait(w *worker, lane int, timer **time.Timer) bool {
	for !w.stopped() {
		now := w.p.now()
		if al.active(lane, now) {
			return true
		}
		if *timer == nil {
			*timer = time.NewTimer(time.Hour)
		}
		(*timer).Reset(time.Duration(al.nextActive(lane, now) - now))
		select {
		case <-(*timer).C:
		case <-w.p.stopCh:
			return false
		}
	}
	return false
}

// altBucket is one worker's figures for one (batch, turn).
type altBucket struct {
	ops, bytes int64
	add, sync  *hist
}

// altBuckets is the worker's buckets, made on first use: what an
// alternating point records per worker besides the point's own figures.
// An acknowledged entry or a completed write goes to the bucket of its
// completion (throughput), an entry's latency to the bucket it was queued
// in, an fdatasync to the bucket it started in.
func (w *worker) altBuckets() []altBucket {
	if w.alt == nil {
		w.alt = make([]altBucket, w.p.alt.buckets())
	}
	return w.alt
}

// altAdd records a journal entry of n bytes queued at enq and
// acknowledged at ack.
func (w *worker) altAdd(enq, ack, n int64) {
	al := w.p.alt
	if al == nil || w.p.stop.Load() && ack > w.p.endNs.Load() {
		return
	}
	w.altWrite(ack, n)
	if b := al.bucket(enq); b >= 0 {
		bs := w.altBuckets()
		if bs[b].add == nil {
			bs[b].add = new(hist)
		}
		bs[b].add.record(ack - enq)
	}
}

// altWrite records n bytes (an entry-log or plain write, or an
// acknowledged journal entry) that completed at t2.
func (w *worker) altWrite(t2, n int64) {
	al := w.p.alt
	if al == nil || w.p.stop.Load() && t2 > w.p.endNs.Load() {
		return
	}
	if b := al.bucket(t2); b >= 0 {
		bs := w.altBuckets()
		bs[b].ops++
		bs[b].bytes += n
	}
}

// altSync records an fdatasync from t1 to t2.
func (w *worker) altSync(t1, t2 int64) {
	al := w.p.alt
	if al == nil || w.p.stop.Load() && t2 > w.p.endNs.Load() {
		return
	}
	if b := al.bucket(t1); b >= 0 {
		bs := w.altBuckets()
		if bs[b].sync == nil {
			bs[b].sync = new(hist)
		}
		bs[b].sync.record(t2 - t1)
	}
}

// collect merges the workers' buckets once the point has ended at end.
func (al *alternation) collect(workers []*worker, end int64) {
	al.merged, al.end = make([]altBucket, al.buckets()), end
	for _, w := range workers {
		for i, b := range w.alt {
			m := &al.merged[i]
			m.ops += b.ops
			m.bytes += b.bytes
			for _, pair := range [][2]**hist{{&m.add, &b.add}, {&m.sync, &b.sync}} {
				if *pair[1] == nil {
					continue
				}
				if *pair[0] == nil {
					*pair[0] = new(hist)
				}
				(*pair[0]).merge(*pair[1])
			}
		}
	}
}

// results turns the collected buckets into one Result per (count, batch)
// — only batches that ran to their end — from the point's common result
// (settings, warm-up, journal I/O). It fails when no batch completed.
func (al *alternation) results(base Result, withBuckets bool) ([]Result, error) {
	n := len(al.counts)
	complete := int(max(0, al.end-al.start()) / al.batchLen)
	complete = min(complete, al.a.Batches)
	if complete == 0 {
		return nil, fmt.Errorf("%w: alternation of %v writers stopped before its first batch of %v", ErrBudgetExhausted, al.counts, time.Duration(al.batchLen))
	}
	// Each count's measured time in one batch: its turns less their settle.
	sec := (time.Duration(al.turn-al.settle) * time.Duration(al.cpb)).Seconds()
	var out []Result
	for ti, c := range al.counts {
		for b := range complete {
			m := al.merged[b*n+ti]
			r := base
			r.Writers = c
			r.Ops, r.Bytes, r.Syncs = m.ops, m.bytes, 0
			r.DurationSec = sec
			r.BytesPerSec = float64(m.bytes) / sec
			r.IOPS = float64(m.ops) / sec
			r.SamplesBytesPerSec, r.StdevOverMean = nil, 0
			r.AddLatency, r.SyncLatency, r.CommitLatency, r.WriteLatency = nil, nil, nil, nil
			if m.add != nil {
				r.AddLatency = m.add.latency(withBuckets)
			}
			if m.sync != nil {
				r.SyncLatency = m.sync.latency(withBuckets)
				r.Syncs = m.sync.n
			}
			r.Alternation = &AlternationInfo{Counts: slices.Clone(al.counts), TurnSec: time.Duration(al.turn).Seconds(),
				SettleSec: time.Duration(al.settle).Seconds(), Batch: b + 1, Batches: al.a.Batches, CyclesPerBatch: al.cpb}
			r.Warnings = slices.Clone(base.Warnings)
			if complete < al.a.Batches && b == complete-1 {
				r.Warnings = append(r.Warnings, fmt.Sprintf("the alternation stopped (%s) after %d of %d batches", base.StopReason, complete, al.a.Batches))
			}
			out = append(out, r)
		}
	}
	return out, nil
}
