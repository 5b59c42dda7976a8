package bookieagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeProcStat writes a /proc/stat with 2 CPUs whose total busy time is
// busyTicks (USER_HZ 100) and returns its root.
func fakeProcStat(t *testing.T, root string, busyTicks int) string {
	t.Helper()
	stat := fmt.Sprintf("cpu  %d 0 %d 5000 10 0 %d 0 0 0\ncpu0 0 0 0 2500 5 0 0 0 0 0\ncpu1 0 0 0 2500 5 0 0 0 0 0\n"+
		"intr 0\nctxt 0\nbtime 1700000000\nprocesses 1\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
		busyTicks/2, busyTicks/4, busyTicks-busyTicks/2-busyTicks/4)
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestRunLoad: other processes' CPU use during a run is the machine's busy
// time from /proc/stat less this process's, per second of the run; a
// recommendation measured on a busy machine says so.
func TestRunLoad(t *testing.T) {
	root := t.TempDir()
	h := HostFS{ProcPath: fakeProcStat(t, root, 1000)}
	a := markLoad(h)
	if !a.ok || a.cpus != 2 || a.busy != 10 {
		t.Fatalf("mark %+v: want 2 CPUs, 10 s busy", a)
	}
	fakeProcStat(t, root, 1000+300) // 3 CPU seconds more
	b := markLoad(h)
	b.at = a.at.Add(2 * time.Second)
	l, ok := loadSince(a, b, "run")
	want := (3 - (b.self - a.self)) / 2
	if !ok || l.OtherCPUs < want-0.01 || l.OtherCPUs > want+0.01 || l.Seconds != 2 {
		t.Errorf("load %+v, want %.2f other CPUs over 2 s", l, want)
	}
	if _, ok := loadSince(loadMark{}, b, "run"); ok {
		t.Error("an unreadable mark gave a load")
	}
	if m := markLoad(HostFS{ProcPath: filepath.Join(root, "missing")}); m.ok {
		t.Error("a missing /proc/stat gave a mark")
	}

	in := loadProfile(t, "vm-virtio-recorded")
	in.Bench = &BenchPlan{MachineCPUs: 2, Load: []RunLoad{{Run: "a", OtherCPUs: 1.6}, {Run: "b", OtherCPUs: 1.8}, {Run: "c", OtherCPUs: 0.1}}}
	r, err := Recommend(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "busy machine: other processes kept 1.6 of 2 CPUs busy (median over 3 runs, at most 1.8; 2 runs above 0.5)") {
		t.Errorf("busy machine not said first: %q", r.Warnings)
	}
	in.Bench.Load = []RunLoad{{Run: "a", OtherCPUs: 0.2}, {Run: "b", OtherCPUs: 0.9}, {Run: "c", OtherCPUs: 0.1}}
	if r, _ = Recommend(in); strings.Contains(strings.Join(r.Warnings, " "), "busy machine") {
		t.Errorf("quiet machine (median 0.2 CPUs) warned: %q", r.Warnings)
	}
}
