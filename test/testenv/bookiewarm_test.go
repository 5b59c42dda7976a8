package testenv

import "testing"

func TestSettled(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want bool
	}{
		{[]float64{2.1, 1.8, 0.84, 0.85, 0.85, 0.99, 0.99}, false}, // 0.99 is 16 % over 0.85
		{[]float64{2.1, 0.93, 0.91, 0.87, 0.84, 0.81}, true},       // within 10 % of 0.87
		{[]float64{0.9, 0.9, 0.9, 0.9}, false},                     // too few
	} {
		if got := settled(c.v, 5, 0.10); got != c.want {
			t.Errorf("settled(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}
