package testenv

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/tierkeeper/tierkeeper/internal/proccost"
	"github.com/tierkeeper/tierkeeper/internal/stats"
)

// BookiesCPU is the user + system CPU seconds the cluster's running
// bookie processes have used so far (from /proc).
func (c *BookKeeperCluster) BookiesCPU(tb testing.TB) float64 {
	tb.Helper()
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		tb.Fatal(err)
	}
	var sum time.Duration
	for _, bk := range c.Bookies() {
		if !bk.Running || bk.PID <= 0 {
			continue
		}
		u, s, err := proccost.ProcessCPU(fs, bk.PID)
		if err != nil {
			tb.Fatal(err)
		}
		sum += u + s
	}
	return sum.Seconds()
}

// WarmReads bounds WarmBookieReads.
type WarmReads struct {
	// Settled is how many reads in a row must cost the bookies within
	// Spread of their median CPU per GiB [5].
	Settled int
	// Spread is that band, a fraction of the median [0.10].
	Spread float64
	// MinBytes is the least it reads [24 GiB]: the bookies' CPU per GiB
	// falls in steps as the JIT compiles more of the path, and five
	// reads can agree on a step before the last one.
	MinBytes int64
	// MaxBytes and MaxTime bound the warm-up [48 GiB, 5 min]: it ends
	// there settled or not (the result says which).
	MaxBytes int64
	MaxTime  time.Duration
}

// WarmResult is what a warm-up did.
type WarmResult struct {
	// CPUPerGiB is the bookies' CPU seconds per GiB of every read, in order.
	CPUPerGiB []float64
	// Level is the median of the last WarmReads.Settled reads' figures:
	// what the bookies cost per GiB when the warm-up ended.
	Level   float64
	Bytes   int64
	Seconds float64
	Settled bool
}

// String is the warm-up in one line, e.g. "24 reads (24.0 GiB, 38 s),
// the bookies' CPU-s per GiB settled at 0.83: 2.10 1.82 ...".
func (w WarmResult) String() string {
	var per []string
	for _, v := range w.CPUPerGiB {
		per = append(per, fmt.Sprintf("%.2f", v))
	}
	state := "settled"
	if !w.Settled {
		state = "had not settled (bound reached)"
	}
	return fmt.Sprintf("%d reads (%.1f GiB, %.0f s), the bookies' CPU-s per GiB %s at %.2f: %s",
		len(w.CPUPerGiB), float64(w.Bytes)/(1<<30), w.Seconds, state, w.Level, strings.Join(per, " "))
}

// WarmBookieReads reads through read (one whole read of a ledger,
// returning the bytes it read) until the bookies serve a GiB for a
// steady CPU cost: bookies in Pulsar's JVM compile their read path with
// C2 only after many reads (1 MiB entries: the bookies' CPU per GiB
// fell from 2.1 to 0.8 over the first ~20 GiB on the project's 2-core
// VM, in steps), and a benchmark that measures before that measures the
// JIT, read by read, not the bookies a production cluster runs for days.
func WarmBookieReads(tb testing.TB, c *BookKeeperCluster, o WarmReads, read func() int64) WarmResult {
	tb.Helper()
	if o.Settled <= 0 {
		o.Settled = 5
	}
	if o.Spread <= 0 {
		o.Spread = 0.10
	}
	if o.MinBytes <= 0 {
		o.MinBytes = 24 << 30
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 48 << 30
	}
	if o.MaxTime <= 0 {
		o.MaxTime = 5 * time.Minute
	}
	var w WarmResult
	start := time.Now()
	for w.Bytes < o.MaxBytes && time.Since(start) < o.MaxTime {
		before := c.BookiesCPU(tb)
		n := read()
		if n <= 0 {
			tb.Fatalf("warm-up read returned %d bytes", n)
		}
		w.Bytes += n
		w.CPUPerGiB = append(w.CPUPerGiB, (c.BookiesCPU(tb)-before)/(float64(n)/(1<<30)))
		if w.Bytes >= o.MinBytes && settled(w.CPUPerGiB, o.Settled, o.Spread) {
			w.Settled = true
			break
		}
	}
	w.Seconds = time.Since(start).Seconds()
	w.Level = stats.Median(w.CPUPerGiB[max(len(w.CPUPerGiB)-o.Settled, 0):])
	return w
}

// settled reports whether the last n values lie within spread of their
// median.
func settled(v []float64, n int, spread float64) bool {
	if len(v) < n {
		return false
	}
	last := v[len(v)-n:]
	m := stats.Median(last) // does not reorder last
	for _, x := range last {
		if math.Abs(x-m) > spread*m {
			return false
		}
	}
	return true
}
