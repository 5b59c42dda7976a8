package stats

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{-1, 5}, 2},
	} {
		in := append([]float64(nil), c.in...)
		if got := Median(in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Median modified its input: %v, was %v", in, c.in)
			}
		}
	}
}

func TestMeanCI95(t *testing.T) {
	// 1, 2, 3: mean 2, sd 1, half-width 4.303 / √3.
	m, h := MeanCI95([]float64{1, 2, 3})
	if m != 2 || math.Abs(h-4.303/math.Sqrt(3)) > 1e-9 {
		t.Errorf("MeanCI95(1,2,3) = %v ± %v", m, h)
	}
	if _, h := MeanCI95([]float64{5}); !math.IsInf(h, 1) {
		t.Errorf("one value: half-width %v, want +Inf", h)
	}
	if _, h := MeanCI95([]float64{4, 4, 4}); h != 0 {
		t.Errorf("equal values: half-width %v, want 0", h)
	}
	// The table and the expansion meet near 30 degrees of freedom, and
	// the quantile falls towards the normal 1.96.
	if a, b := T975(30), T975(31); b > a || a-b > 0.01 || T975(1000) < 1.96 || T975(1000) > 1.963 {
		t.Errorf("T975(30) %v, T975(31) %v, T975(1000) %v", a, b, T975(1000))
	}
}

func TestBootstrapInterval(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	mean := func(idx []int) float64 {
		s := 0.0
		for _, i := range idx {
			s += v[i]
		}
		return s / float64(len(idx))
	}
	lo, hi := BootstrapInterval(len(v), 2000, 0.9, 1, mean)
	// The mean's standard error is 0.91: a 90% interval is about 5.5 ± 1.5.
	if !(lo < 5.5 && hi > 5.5) || lo < 3.5 || hi > 7.5 || hi-lo < 2 || hi-lo > 4 {
		t.Errorf("90%% interval of the mean of 1..10: [%v, %v]", lo, hi)
	}
	if lo2, hi2 := BootstrapInterval(len(v), 2000, 0.9, 1, mean); lo2 != lo || hi2 != hi {
		t.Errorf("same seed, another interval: [%v, %v] vs [%v, %v]", lo2, hi2, lo, hi)
	}
	if lo, hi := BootstrapInterval(1, 100, 0.9, 1, mean); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("one unit: [%v, %v], want NaN", lo, hi)
	}
	if lo, hi := BootstrapInterval(5, 100, 0.9, 1, func([]int) float64 { return math.NaN() }); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("all NaN: [%v, %v], want NaN", lo, hi)
	}
	// A constant statistic has a zero-width interval.
	if lo, hi := BootstrapInterval(5, 100, 0.9, 1, func([]int) float64 { return 2 }); lo != 2 || hi != 2 {
		t.Errorf("constant: [%v, %v]", lo, hi)
	}
}
