package diskbench

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

func TestHistIndexRoundTrip(t *testing.T) {
	vals := []int64{0, 1, 2, 63, 64, 127, 128, 129, 255, 256, 1000, 4095, 4096, 123456789, math.MaxInt64 / 3, math.MaxInt64}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		vals = append(vals, int64(r.Uint64()>>uint(1+r.IntN(63))))
	}
	for _, v := range vals {
		i := histIndex(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("index %d of %d out of range", i, v)
		}
		low, w := histLow(i)
		if v < low || v-low >= w {
			t.Fatalf("value %d not in bucket %d [%d, %d+%d)", v, i, low, low, w)
		}
		if v >= 128 && float64(w)/float64(low) > 1.0/64+1e-12 {
			t.Fatalf("bucket %d too wide: %d at %d", i, w, low)
		}
		if i+1 < histBuckets {
			nlow, _ := histLow(i + 1)
			if nlow != low+w {
				t.Fatalf("buckets %d and %d not contiguous: %d+%d != %d", i, i+1, low, w, nlow)
			}
		}
	}
}

func TestHistQuantilesMatchExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var h hist
	var all []int64
	for i := 0; i < 200000; i++ {
		// Log-normal around 200 µs with a long tail, like fdatasync.
		v := int64(math.Exp(r.NormFloat64()*1.2 + math.Log(200e3)))
		h.record(v)
		all = append(all, v)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := all[int(math.Ceil(q*float64(len(all))))-1]
		got := h.quantile(q)
		if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.016 {
			t.Errorf("q%.3f: got %d, exact %d (%.2f%% off)", q, got, exact, 100*rel)
		}
	}
	l := h.latency(false)
	if l.MinNs != all[0] || l.MaxNs != all[len(all)-1] || l.Count != int64(len(all)) {
		t.Errorf("min/max/count %d/%d/%d, want %d/%d/%d", l.MinNs, l.MaxNs, l.Count, all[0], all[len(all)-1], len(all))
	}
}

func TestHistMerge(t *testing.T) {
	var a, b, all hist
	for i := int64(1); i <= 1000; i++ {
		all.record(i * 1000)
		if i%2 == 0 {
			a.record(i * 1000)
		} else {
			b.record(i * 1000)
		}
	}
	var m hist
	m.merge(&a)
	m.merge(&b)
	if !reflect.DeepEqual(m.latency(true), all.latency(true)) {
		t.Errorf("merged %+v, want %+v", *m.latency(false), *all.latency(false))
	}
	var empty hist
	if empty.latency(true) != nil {
		t.Error("empty histogram should summarise to nil")
	}
}

func TestPoolLatencies(t *testing.T) {
	var a, b, all hist
	for i := int64(1); i <= 5000; i++ {
		v := i * i * 37 // spread over many powers of two
		all.record(v)
		if i%3 == 0 {
			a.record(v)
		} else {
			b.record(v)
		}
	}
	if got := a.latency(false); got.Buckets != nil {
		t.Fatalf("buckets without withBuckets: %d", len(got.Buckets))
	}
	got, err := PoolLatencies(a.latency(true), nil, b.latency(true))
	if err != nil {
		t.Fatal(err)
	}
	want := all.latency(true)
	if math.Abs(got.MeanNs-want.MeanNs) > 1e-6*want.MeanNs {
		t.Errorf("pooled mean %v, want %v", got.MeanNs, want.MeanNs)
	}
	got.MeanNs = want.MeanNs
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pooled %+v\nwant %+v", *got, *want)
	}
	// A pooled Latency pools again (its buckets are kept).
	again, err := PoolLatencies(got)
	if err != nil || again.P99Ns != want.P99Ns || again.Count != want.Count {
		t.Errorf("pooling the pool: %+v, %v", again, err)
	}
	if l, err := PoolLatencies(nil, &Latency{}); l != nil || err != nil {
		t.Errorf("nothing to pool: %v, %v; want nil, nil", l, err)
	}
	if _, err := PoolLatencies(a.latency(false)); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("no buckets: %v, want ErrInvalidOptions", err)
	}
	bad := a.latency(true)
	bad.Buckets[len(bad.Buckets)-1][0]++
	if _, err := PoolLatencies(bad); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("a value that is no bucket's lowest: %v, want ErrInvalidOptions", err)
	}
}
