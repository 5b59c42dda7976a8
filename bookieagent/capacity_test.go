package bookieagent

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFitGrowth(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var ts []time.Time
	var used []float64
	for i := 0; i < 60; i++ {
		ts = append(ts, t0.Add(time.Duration(i)*time.Minute))
		noise := float64((i*7919)%11) - 5 // deterministic ±5 bytes
		used = append(used, 1e9+1000*float64(i*60)+noise)
	}
	g, ok := FitGrowth(ts, used)
	if !ok || math.Abs(g-1000) > 0.01 {
		t.Errorf("growth = %v, %v; want ≈1000 B/s", g, ok)
	}
	if _, ok := FitGrowth(ts[:1], used[:1]); ok {
		t.Error("one sample: want no fit")
	}
	if _, ok := FitGrowth([]time.Time{t0, t0}, []float64{1, 2}); ok {
		t.Error("zero time span: want no fit")
	}
}

func TestSecondsTo(t *testing.T) {
	// 1000 B disk, 200 B avail (usage 0.80), growing 1 B/s: warn (0.90)
	// at avail 100 → 100 s; read-only (0.95) at avail 50 → 150 s.
	if v, ok := SecondsTo(1000, 200, 1, 0.90); !ok || math.Abs(v-100) > 1e-9 {
		t.Errorf("to warn = %v %v", v, ok)
	}
	if v, ok := SecondsTo(1000, 200, 1, 0.95); !ok || math.Abs(v-150) > 1e-9 {
		t.Errorf("to read-only = %v %v", v, ok)
	}
	if v, ok := SecondsTo(1000, 40, 0, 0.95); !ok || v != 0 {
		t.Errorf("already past: %v %v", v, ok)
	}
	if _, ok := SecondsTo(1000, 200, -5, 0.95); ok {
		t.Error("shrinking: want no time")
	}
}

// fakeFS is fault injection for statfs: scripted usage over a fake clock.
type fakeFS struct {
	mu    sync.Mutex
	size  uint64 // default 1e6
	avail uint64
	err   error
	block chan struct{}
}

func (f *fakeFS) statfs(ctx context.Context, _ string) (FSUsage, error) {
	f.mu.Lock()
	b, err, avail := f.block, f.err, f.avail
	f.mu.Unlock()
	if b != nil {
		select {
		case <-b:
		case <-ctx.Done():
			return FSUsage{}, ctx.Err()
		}
	}
	if err != nil {
		return FSUsage{}, err
	}
	size := f.size
	if size == 0 {
		size = 1_000_000
	}
	return FSUsage{Size: size, Avail: avail, FSType: "xfs"}, nil
}

func TestSamplerGrowthAndFaults(t *testing.T) {
	dir := t.TempDir()
	j, l := filepath.Join(dir, "j"), filepath.Join(dir, "l")
	os.Mkdir(j, 0o755)
	os.Mkdir(l, 0o755)
	now := time.Unix(1_700_000_000, 0)
	ffs := &fakeFS{avail: 300_000}
	s, err := NewSampler(SamplerOptions{
		Dirs:     []DirRole{{Dir: j, Role: RoleJournal}, {Dir: l, Role: RoleLedger}, {Dir: l, Role: RoleLedger}},
		Host:     HostFS{ProcPath: "../internal/hostfs/testdata/proc", SysPath: "../internal/hostfs/testdata/sys"},
		Interval: time.Minute, Window: 10 * time.Minute, MaxSamples: 8,
		Statfs: ffs.statfs, Now: func() time.Time { return now }, StatfsTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// 100 bytes/s of growth for 12 minutes: the window keeps 8 samples.
	for i := 0; i < 12; i++ {
		ffs.avail = uint64(300_000 - 6000*i)
		if err := s.Sample(ctx); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	r := s.Report()
	if len(r.Mounts) != 1 {
		t.Fatalf("both dirs are on one mount in the fixture-less view; got %d mounts", len(r.Mounts))
	}
	m := r.Mounts[0]
	if m.Samples != 8 || len(m.Dirs) != 2 {
		t.Errorf("samples %d dirs %d; want 8 (MaxSamples) and 2 (deduplicated)", m.Samples, len(m.Dirs))
	}
	wantAvail := 300_000 - 6000*11
	if m.AvailBytes != uint64(wantAvail) || math.Abs(m.Usage-(1-float64(wantAvail)/1e6)) > 1e-12 {
		t.Errorf("avail %d usage %v", m.AvailBytes, m.Usage)
	}
	if m.GrowthBytesPerSec == nil || math.Abs(*m.GrowthBytesPerSec-100) > 1e-6 {
		t.Fatalf("growth %v, want 100 B/s", m.GrowthBytesPerSec)
	}
	// avail 234000; read-only at avail 50000: 1840 s; warn at 100000: 1340 s.
	if math.Abs(*m.SecondsToReadOnly-1840) > 1e-6 || math.Abs(*m.SecondsToWarn-1340) > 1e-6 {
		t.Errorf("to read-only %v, to warn %v", *m.SecondsToReadOnly, *m.SecondsToWarn)
	}
	if r.SecondsToReadOnly == nil || math.Abs(*r.SecondsToReadOnly-1840) > 1e-6 {
		t.Errorf("bookie to read-only %v", r.SecondsToReadOnly)
	}
	// A failing statfs keeps old samples and reports the error.
	ffs.mu.Lock()
	ffs.err = errors.New("input/output error")
	ffs.mu.Unlock()
	if err := s.Sample(ctx); err == nil {
		t.Fatal("want statfs error")
	}
	r = s.Report()
	if r.Mounts[0].Error == "" || r.Mounts[0].Samples != 8 || len(r.SampleErrors) == 0 {
		t.Errorf("after a failure: %+v", r.Mounts[0])
	}
	// A hung statfs times out instead of blocking.
	ffs.mu.Lock()
	ffs.err, ffs.block = nil, make(chan struct{})
	ffs.mu.Unlock()
	start := time.Now()
	if err := s.Sample(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung statfs: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Error("hung statfs blocked the sample")
	}
	close(ffs.block)
	if n, e, _ := s.Stats(); n != 14 || e != 2 {
		t.Errorf("stats %d samples %d errors", n, e)
	}
}

func TestSamplerRealStatfs(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSampler(SamplerOptions{Dirs: []DirRole{{Dir: dir, Role: RoleLedger}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := s.Report().Mounts[0]
	if m.SizeBytes == 0 || m.AvailBytes > m.SizeBytes || m.UsedBytes+m.AvailBytes != m.SizeBytes || m.Usage < 0 || m.Usage > 1 {
		t.Errorf("real statfs: %+v", m)
	}
	if _, err := NewSampler(SamplerOptions{Dirs: []DirRole{{Dir: filepath.Join(dir, "missing"), Role: RoleLedger}}}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
}

// pathFS is statfs by path prefix: one fakeFS per mount.
type pathFS map[string]*fakeFS

func (p pathFS) statfs(ctx context.Context, path string) (FSUsage, error) {
	for pre, f := range p {
		if strings.HasPrefix(path, pre) {
			u, err := f.statfs(ctx, path)
			u.Size = f.size
			return u, err
		}
	}
	return FSUsage{}, errors.New("no such mount")
}

// TestCapacityPerLedgerDir: the bookie's time to read-only is the minimum
// over its ledger dirs (not total headroom ÷ total growth, which with
// unequal disks is optimistic — DbLedgerStorage pins a ledger to dir
// ledgerId mod N); a bookie with every ledger dir past the threshold is
// read-only and turns writable only below the low-water mark over all
// ledger filesystems.
func TestCapacityPerLedgerDir(t *testing.T) {
	root := t.TempDir()
	l1, l2, j := filepath.Join(root, "l1"), filepath.Join(root, "l2"), filepath.Join(root, "j")
	for _, d := range []string{l1, l2, j} {
		os.Mkdir(d, 0o755)
	}
	big, small, jfs := &fakeFS{avail: 300_000, size: 1_000_000}, &fakeFS{avail: 30_000, size: 100_000}, &fakeFS{avail: 10, size: 1_000_000}
	now := time.Unix(1_700_000_000, 0)
	s, err := NewSampler(SamplerOptions{
		Dirs: []DirRole{{Dir: j, Role: RoleJournal}, {Dir: l1, Role: RoleLedger}, {Dir: l2, Role: RoleLedger}},
		// No mountinfo under an empty procfs root: each dir is its own mount.
		Host:   HostFS{ProcPath: t.TempDir(), SysPath: t.TempDir()},
		Statfs: pathFS{l1: big, l2: small, j: jfs}.statfs, Now: func() time.Time { return now },
		Interval: time.Minute, Window: time.Hour, LWMThreshold: 0.85,
	})
	if err != nil {
		t.Fatal(err)
	}
	step := func(dBig, dSmall int64) {
		big.avail = uint64(int64(big.avail) + dBig)
		small.avail = uint64(int64(small.avail) + dSmall)
		s.Sample(context.Background())
		now = now.Add(time.Minute)
	}
	for i := 0; i < 10; i++ {
		step(-6000, -1200) // 100 and 20 B/s
	}
	r := s.Report()
	// Last samples: big avail 240000 → RO at 50000: 1900 s; small avail
	// 18000 → RO at 5000: 650 s. The pooled figure would be
	// (190000+13000)/120 = 1692 s.
	if r.SecondsToReadOnly == nil || math.Abs(*r.SecondsToReadOnly-650) > 1e-6 {
		t.Errorf("bookie seconds to read-only %v, want 650 (the small dir's); dirs %+v", *r.SecondsToReadOnly, r.Mounts)
	}
	if len(r.LedgerDirs) != 2 || r.LedgerDirs[0].SecondsToReadOnly == nil {
		t.Fatalf("ledger dirs %+v", r.LedgerDirs)
	}
	for _, m := range r.Mounts {
		if m.Dirs[0].Role == RoleJournal && r.ReadOnly {
			t.Error("a full journal mount made the bookie read-only")
		}
	}
	// Both ledger dirs past 0.95: read-only; writable again below 0.85
	// over both: available must exceed 0.15 × 1.1e6 = 165000.
	big.avail, small.avail = 40_000, 4_000
	s.Sample(context.Background())
	r = s.Report()
	if !r.ReadOnly || math.Abs(r.WritableAgainBytes-(165_000-44_000)) > 1e-6 {
		t.Errorf("read-only %v, writable again after %v bytes; want true, 121000", r.ReadOnly, r.WritableAgainBytes)
	}
	// The journal mount past every threshold never makes it read-only.
	jfs.avail = 1
	big.avail = 600_000
	s.Sample(context.Background())
	if r = s.Report(); r.ReadOnly {
		t.Error("read-only with a ledger dir below the threshold")
	}
}

func TestCheckThresholds(t *testing.T) {
	for _, c := range []struct {
		full, warn, lwm float64
		ok              bool
	}{
		{0.95, 0.90, 0, true}, {0.95, 0.90, 0.85, true}, {0.95, 0.95, 0.95, true},
		{1.0, 0.90, 0, false}, // a threshold of 1.0 used to be accepted
		{0, 0.9, 0, false}, {0.95, 0.97, 0, false}, {0.95, 0.90, 0.96, false},
		{0.95, 0.90, 0.92, false}, {0.95, -0.1, 0, false}, {0.95, 0.9, 1.2, false},
	} {
		err := CheckThresholds(c.full, c.warn, c.lwm)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrBadThreshold)) {
			t.Errorf("CheckThresholds(%v, %v, %v) = %v, want ok=%v", c.full, c.warn, c.lwm, err, c.ok)
		}
	}
	if _, err := NewSampler(SamplerOptions{Dirs: []DirRole{{Dir: t.TempDir(), Role: RoleLedger}}, Threshold: 1}); !errors.Is(err, ErrBadThreshold) {
		t.Errorf("sampler with threshold 1: %v", err)
	}
}

// SampleFor samples at once and every interval for the span, so the report
// fits growth; without a span it takes one sample; a cancelled context
// stops it with the context's error.
func TestSamplerSampleFor(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSampler(SamplerOptions{Dirs: []DirRole{{Dir: dir, Role: RoleLedger}}, Interval: 10 * time.Millisecond, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SampleFor(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.Stats(); n != 1 {
		t.Errorf("%d samples without a span, want 1", n)
	}
	if err := s.SampleFor(t.Context(), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.Stats(); n < 3 {
		t.Errorf("%d samples after 50 ms at 10 ms, want several", n)
	}
	if m := s.Report().Mounts[0]; m.GrowthBytesPerSec == nil {
		t.Errorf("no growth fitted over the span: %+v", m)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.SampleFor(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
