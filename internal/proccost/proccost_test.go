package proccost

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

var sink []byte

func TestCostCountsCPUAndAllocations(t *testing.T) {
	start := Now()
	// Spin until the process clock has moved by 20 ticks (200 ms at
	// USER_HZ=100), bounded by wall time. The kernel splits a process's
	// time into user and system by the ticks it sampled in each: over two
	// ticks one interrupt's worth of system time on a loaded machine
	// reads as half of it (user 10 ms + system 20 ms was seen), over
	// twenty a spin is clearly user time.
	deadline := time.Now().Add(10 * time.Second)
	x := uint64(1)
	for Now().CPU-start.CPU < 200*time.Millisecond && time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	spun := Now().Since(start)
	for i := 0; i < 16; i++ {
		sink = make([]byte, 1<<20)
	}
	c := Now().Since(start)
	if c.CPUErr != nil {
		t.Fatal(c.CPUErr)
	}
	if c.CPU < 200*time.Millisecond || c.CPU > c.Wall*4 {
		t.Errorf("CPU %s over wall %s (x=%d)", c.CPU, c.Wall, x)
	}
	// The spin is user time (measured before the allocations, whose page
	// faults are system time); the split adds up.
	if spun.User+spun.System != spun.CPU || spun.User < spun.CPU*3/4 {
		t.Errorf("spin: user %s + system %s, CPU %s", spun.User, spun.System, spun.CPU)
	}
	if c.User+c.System != c.CPU {
		t.Errorf("user %s + system %s, CPU %s", c.User, c.System, c.CPU)
	}
	if c.AllocBytes < 16<<20 || c.Allocs < 16 {
		t.Errorf("allocated %d bytes in %d objects, want >= 16 MiB in >= 16", c.AllocBytes, c.Allocs)
	}
}

// 100 writes and 100 reads through a pipe are counted as at least that
// many system calls, and no more than they plus what the runtime made
// meanwhile.
func TestCostCountsSystemCalls(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	start := Now()
	buf := make([]byte, 64)
	for range 100 {
		if _, err := w.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	c := Now().Since(start)
	if c.IOErr != nil {
		t.Fatal(c.IOErr)
	}
	if c.WriteCalls < 100 || c.ReadCalls < 100 || c.WriteCalls > 1000 || c.ReadCalls > 1000 {
		t.Errorf("%d read and %d write calls counted for 100 of each", c.ReadCalls, c.WriteCalls)
	}
}

func TestProfileWritesEveryKind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "prof")
	p, err := StartProfile(dir, "copy-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StartProfile(dir, "copy-2"); err == nil {
		t.Error("a second CPU profile started while one runs")
	}
	files, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("files %v", files)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (size %v)", f, err, st)
		}
	}
}

func TestCostCountsPageFaults(t *testing.T) {
	const pages = 1024
	size := pages * os.Getpagesize()
	m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	// Not backed by huge pages, so every page is its own fault.
	if err := syscall.Madvise(m, syscall.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	start := Now()
	for off := 0; off < size; off += os.Getpagesize() {
		m[off] = 1
	}
	c := Now().Since(start)
	if c.CPUErr != nil {
		t.Fatal(c.CPUErr)
	}
	// Every first touch faults; the runtime may add a few of its own.
	if c.PageFaults < pages || c.PageFaults > 4*pages {
		t.Errorf("%d page faults for touching %d fresh pages", c.PageFaults, pages)
	}
	again := Now()
	for off := 0; off < size; off += os.Getpagesize() {
		m[off] = 2
	}
	if n := Now().Since(again).PageFaults; n >= pages/2 {
		t.Errorf("%d page faults for touching %d mapped pages again", n, pages)
	}
}
