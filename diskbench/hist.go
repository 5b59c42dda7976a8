package diskbench

import (
	"fmt"
	"math"
	"math/bits"
)

// hist is a log-linear latency histogram in nanoseconds, HDR-like: values
// below 2^(subBits+1) have their own bucket, and every power-of-two range
// above is split into 2^subBits equal buckets, so a bucket's width is at
// most 1/64 (1.6%) of its value. 64-bit values fit in histBuckets buckets.
//
//	value v, shift = max(0, bitlen(v) - subBits - 1)
//	index  = shift<<subBits + v>>shift
//	bucket covers [ (v>>shift)<<shift , ((v>>shift)+1)<<shift )
type hist struct {
	counts [histBuckets]uint64
	n      int64
	sum    float64
	min    int64
	max    int64
}

const (
	subBits     = 6
	histBuckets = (64-subBits)<<subBits + 1<<(subBits+1)
)

func histIndex(v int64) int {
	if v < 0 {
		v = 0
	}
	u := uint64(v)
	shift := bits.Len64(u) - subBits - 1
	if shift < 0 {
		shift = 0
	}
	return shift<<subBits + int(u>>uint(shift))
}

// histLow returns the lowest value of bucket i and its width.
func histLow(i int) (low, width int64) {
	if i < 1<<(subBits+1) {
		return int64(i), 1
	}
	shift := i>>subBits - 1
	mant := i - shift<<subBits
	return int64(mant) << uint(shift), int64(1) << uint(shift)
}

func (h *hist) record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

func (h *hist) merge(o *hist) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// quantile returns the value at quantile q (0..1): the midpoint of the
// bucket holding the ceil(q·n)-th smallest value, clamped to [min, max].
func (h *hist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			low, w := histLow(i)
			v := low + (w-1)/2
			return max(h.min, min(h.max, v))
		}
	}
	return h.max
}

// latency summarises h, with its non-empty buckets when withBuckets, or
// returns nil when it is empty.
func (h *hist) latency(withBuckets bool) *Latency {
	if h.n == 0 {
		return nil
	}
	l := &Latency{
		Count:  h.n,
		MinNs:  h.min,
		MeanNs: h.sum / float64(h.n),
		P50Ns:  h.quantile(0.50),
		P90Ns:  h.quantile(0.90),
		P99Ns:  h.quantile(0.99),
		P999Ns: h.quantile(0.999),
		MaxNs:  h.max,
	}
	if withBuckets {
		for i, c := range h.counts {
			if c > 0 {
				low, _ := histLow(i)
				l.Buckets = append(l.Buckets, [2]int64{low, int64(c)})
			}
		}
	}
	return l
}

// PoolLatencies pools latency distributions that carry their buckets
// (Options.LatencyBuckets) into one, as if every value had been recorded
// in one histogram: counts add up, min and max are the extremes, the mean
// is weighted, and the quantiles are computed again from the pooled
// buckets. The buckets are diskbench's log-linear ones — values below 128
// ns exact, every power of two above split into 64 equal buckets — and a
// quantile is the midpoint of the bucket holding the ceil(q·n)-th value,
// clamped to [min, max]; another tool that records into the same buckets
// (the compat tool's journal-bench) can be pooled with diskbench's runs.
// Nil and empty entries are skipped; it returns nil when nothing is left,
// and ErrInvalidOptions when a non-empty Latency has no buckets or a
// bucket's lowest value is not one of these buckets'.
func PoolLatencies(ls ...*Latency) (*Latency, error) {
	var h hist
	for k, l := range ls {
		if l == nil || l.Count == 0 {
			continue
		}
		var n int64
		for _, b := range l.Buckets {
			i := histIndex(b[0])
			if low, _ := histLow(i); low != b[0] || b[1] < 0 {
				return nil, fmt.Errorf("%w: latency %d: bucket [%d, %d] is not a histogram bucket", ErrInvalidOptions, k, b[0], b[1])
			}
			h.counts[i] += uint64(b[1])
			n += b[1]
		}
		if n != l.Count {
			return nil, fmt.Errorf("%w: latency %d: buckets hold %d values, count is %d (recorded without LatencyBuckets?)", ErrInvalidOptions, k, n, l.Count)
		}
		if h.n == 0 || l.MinNs < h.min {
			h.min = l.MinNs
		}
		h.max = max(h.max, l.MaxNs)
		h.n += l.Count
		h.sum += l.MeanNs * float64(l.Count)
	}
	return h.latency(true), nil
}
