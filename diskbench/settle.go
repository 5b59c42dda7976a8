package diskbench

import (
	"slices"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/stats"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Settle defaults (Options.Settle fields left at zero).
const (
	DefaultSettleMinWarmup = 2 * time.Second
	DefaultSettleWindow    = 3
	DefaultSettleTolerance = 0.10
	DefaultSettleMaxShare  = 0.6
)

// Settle makes every point's warm-up last until its throughput has settled
// instead of a fixed time: past the page cache, a virtual disk's host cache
// and an SSD's fast (SLC) region, which make the first seconds of a
// buffered write run look several times faster than the disk sustains.
//
// The engine keeps one throughput sample per second of the warm-up. The
// warm-up ends at the first second n ≥ MinWarmup at which at least
// MinBytes have been written and the median of the last Window samples is
// within Tolerance of the median of the Window samples before them (the
// rate has stopped falling or rising; once it has fallen below the knee,
// both windows past the knee), the latest sample is not above
// MaxRate and, when no knee has been seen, n ≥ NoKneeMinWarmup. The point's Options.Warmup (or the
// Sweep's computed one) is the longest a warm-up may last, and it may spend
// at most MaxShare of the point's byte share; a warm-up ended by either cap
// is reported as not settled, with a warning. The measured window (Duration)
// starts when the warm-up ends. Result.Settle describes the warm-up: its
// per-second rates, the burst rate of its first two seconds and the second
// at which the rate fell (the knee), if it did.
type Settle struct {
	// MinWarmup is the shortest warm-up. Default 2 s.
	MinWarmup time.Duration
	// Window is the number of one-second samples compared. Default 3 (so
	// at least 6 s of warm-up).
	Window int
	// Tolerance is the largest relative change between the two windows'
	// medians that counts as settled. Default 0.10.
	Tolerance float64
	// MinBytes must be written before the warm-up may end (a known cache
	// size to get past). Default 0.
	MinBytes int64
	// MaxShare is the largest share of the point's byte budget the warm-up
	// may spend. Default 0.6.
	MaxShare float64
	// MaxRate, when set, keeps the warm-up going while its latest
	// one-second sample is above it (bytes/s): a rate that far above what
	// the disk is known to sustain is a cache's burst, however flat it is.
	// A warm-up that reaches its cap above MaxRate is not settled.
	MaxRate float64
	// NoKneeMinWarmup, when set, is the shortest warm-up of one whose rate
	// has not fallen yet (no knee): a burst can be flat for seconds, and a
	// warm-up that settles on it measures the cache, not the disk.
	NoKneeMinWarmup time.Duration
}

func (s Settle) withDefaults() Settle {
	if s.MinWarmup <= 0 {
		s.MinWarmup = DefaultSettleMinWarmup
	}
	if s.Window <= 0 {
		s.Window = DefaultSettleWindow
	}
	if s.Tolerance <= 0 {
		s.Tolerance = DefaultSettleTolerance
	}
	if s.MaxShare <= 0 || s.MaxShare > 0.95 {
		s.MaxShare = DefaultSettleMaxShare
	}
	return s
}

// SettleInfo describes a warm-up run under Options.Settle.
type SettleInfo struct {
	// Settled is false when the warm-up ended at its time cap or byte share
	// with the rate still changing.
	Settled bool `json:"settled"`
	// WarmupBytes is what the warm-up wrote (or read).
	WarmupBytes int64 `json:"warmup_bytes"`
	// BurstBytesPerSec is the mean rate of the warm-up's first two seconds.
	BurstBytesPerSec float64 `json:"burst_bytes_per_sec"`
	// KneeSec is the second of the warm-up at which the rate first fell
	// below (1 − 2 × Tolerance) of the burst rate; 0 when it never did.
	KneeSec float64 `json:"knee_sec,omitempty"`
	// SamplesBytesPerSec are the warm-up's per-second rates.
	SamplesBytesPerSec []float64 `json:"samples_bytes_per_sec,omitempty"`
}

// settler watches a warm-up's throughput for Settle.
type settler struct {
	s          Settle
	samples    []float64
	lastSec    int
	lastMoved  int64
	ended      bool
	settled    bool
	endWritten int64
}

func newSettler(s Settle) *settler { return &settler{s: s.withDefaults()} }

// observe takes the bytes moved so far at elapsed and reports whether the
// warm-up may end now. Samples are taken at the first observation after
// each whole second.
func (st *settler) observe(elapsed time.Duration, moved int64) bool {
	sec := int(elapsed / time.Second)
	if sec <= st.lastSec {
		return false
	}
	// Spread what moved since the last sample over the seconds it covers.
	n := sec - st.lastSec
	per := float64(moved-st.lastMoved) / float64(n)
	for range n {
		st.samples = append(st.samples, per)
	}
	st.lastSec, st.lastMoved = sec, moved
	if st.aboveMax() {
		return false
	}
	if elapsed < st.s.NoKneeMinWarmup && st.knee() == 0 {
		return false
	}
	return elapsed >= st.s.MinWarmup && moved >= st.s.MinBytes && st.stable()
}

// aboveMax reports whether the latest sample is above MaxRate.
func (st *settler) aboveMax() bool {
	return st.s.MaxRate > 0 && len(st.samples) > 0 && st.samples[len(st.samples)-1] > st.s.MaxRate
}

// burst is the mean rate of the first two samples.
func (st *settler) burst() float64 {
	n := min(2, len(st.samples))
	if n == 0 {
		return 0
	}
	return mean(st.samples[:n])
}

// knee is the second at which the rate first fell below (1 − 2 ×
// Tolerance) of the burst rate; 0 while it has not.
func (st *settler) knee() float64 {
	b := st.burst()
	for i, v := range st.samples {
		if v < (1-2*st.s.Tolerance)*b {
			return float64(i + 1)
		}
	}
	return 0
}

// stable compares the medians of the last two windows of samples.
func (st *settler) stable() bool {
	w := st.s.Window
	if len(st.samples) < 2*w {
		return false
	}
	// Once the rate has fallen, both windows must lie past the fall: a
	// window holding the last burst second and the first slow one
	// averages to the window before it (on this project's VM a probe
	// "settled" on 369, 436 | 503, 268 MB/s, at the knee).
	if k := int(st.knee()); k > 0 && len(st.samples)-(k-1) < 2*w {
		return false
	}
	last := stats.Median(st.samples[len(st.samples)-w:])
	prev := stats.Median(st.samples[len(st.samples)-2*w : len(st.samples)-w])
	if prev <= 0 {
		return false
	}
	d := last/prev - 1
	return d <= st.s.Tolerance && d >= -st.s.Tolerance
}

func (st *settler) info() *SettleInfo {
	in := &SettleInfo{Settled: st.settled, WarmupBytes: st.endWritten, SamplesBytesPerSec: slices.Clone(st.samples)}
	in.BurstBytesPerSec, in.KneeSec = st.burst(), st.knee()
	return in
}

func fmtRates(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = units.DecimalRate(x)
	}
	if len(parts) > 12 {
		parts = append(parts[:4], append([]string{"…"}, parts[len(parts)-6:]...)...)
	}
	return strings.Join(parts, ", ")
}
