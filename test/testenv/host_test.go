package testenv

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
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

// WaitProgressing gives up on a process that neither uses CPU nor logs
// (sleep) after the stall, keeps waiting for one that logs until the
// limit, returns when ready, and reports an exit at once.
func TestWaitProgressing(t *testing.T) {
	never := func() (bool, error) { return false, nil }
	idle := Start(t, "idle", t.TempDir(), exec.Command("sleep", "60"))
	start := time.Now()
	err := idle.WaitProgressing("ready", 300*time.Millisecond, time.Minute, never)
	if err == nil || !strings.Contains(err.Error(), "no progress") || time.Since(start) > 30*time.Second {
		t.Errorf("idle process: %v after %s, want no progress after 300 ms", err, time.Since(start))
	}
	busy := Start(t, "busy", t.TempDir(), exec.Command("sh", "-c", "while :; do echo starting; sleep 0.05; done"))
	err = busy.WaitProgressing("ready", 300*time.Millisecond, time.Second, never)
	if err == nil || !strings.Contains(err.Error(), "after the 1s limit") {
		t.Errorf("logging process: %v, want the 1 s limit (its log grows: never a stall)", err)
	}
	n := 0
	if err := busy.WaitProgressing("ready", 300*time.Millisecond, time.Minute, func() (bool, error) { n++; return n == 3, nil }); err != nil {
		t.Errorf("ready at the third poll: %v", err)
	}
	gone := Start(t, "gone", t.TempDir(), exec.Command("sh", "-c", "echo bye; exit 3"))
	err = gone.WaitProgressing("ready", time.Minute, time.Minute, never)
	if err == nil || !strings.Contains(err.Error(), "exited before ready") {
		t.Errorf("exited process: %v", err)
	}
}
