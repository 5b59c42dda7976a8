package testenv

import (
	"strconv"
	"strings"
	"testing"
)

func TestCPUTimeAndLoadAvg(t *testing.T) {
	b0, t0 := CPUTime()
	for i := 0; i < 1e7; i++ { // some CPU time to see
		_ = strconv.Itoa(i)
	}
	b1, t1 := CPUTime()
	if t0 <= 0 || b0 > t0 || b1 <= b0 || t1 <= t0 || b1 > t1 {
		t.Fatalf("CPU time busy/total %v/%v then %v/%v", b0, t0, b1, t1)
	}
	f := strings.Fields(LoadAvg())
	if len(f) != 3 {
		t.Fatalf("load average %q", LoadAvg())
	}
	for _, v := range f {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			t.Fatalf("load average %q: %v", LoadAvg(), err)
		}
	}
}
