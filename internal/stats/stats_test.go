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
