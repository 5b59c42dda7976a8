package bookieagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/hostfs"
)

// TestPrepareBenchUsesSharedSafety: PrepareBench applies bookiedir's
// detector (what diskbench.Check refuses), its filesystem check and the one
// device lookup through the configured sysfs root.
func TestPrepareBenchUsesSharedSafety(t *testing.T) {
	ctx := context.Background()
	// Bookie data the agent's own detector missed: a hex journal at the top
	// of the directory, a lastMark alone. Both must send the benchmark to a
	// scratch directory instead of next to the bookie's files.
	for _, f := range []string{"17.txn", "current/lastMark"} {
		root := t.TempDir()
		j, l := filepath.Join(root, "j"), filepath.Join(root, "l")
		os.MkdirAll(j, 0o755)
		os.MkdirAll(filepath.Dir(filepath.Join(l, f)), 0o755)
		if err := os.WriteFile(filepath.Join(l, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := PrepareBench(ctx, BenchOptions{JournalDirs: []string{j}, LedgerDirs: []string{l}}); !errors.Is(err, ErrLiveBookie) {
			t.Errorf("%s: %v, want ErrLiveBookie", f, err)
		}
		p, err := PrepareBench(ctx, BenchOptions{JournalDirs: []string{j}, LedgerDirs: []string{l}, AllowLiveBookie: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d := p.Disks[1]; !d.Live || strings.HasPrefix(d.Disk.BenchDir, l) {
			t.Errorf("%s: ledger dir benchmarked inside the bookie's tree (%+v)", f, d)
		}
		if d := p.Disks[0]; d.Live || filepath.Dir(d.Disk.BenchDir) != j {
			t.Errorf("%s: the empty journal dir should get a scratch dir inside it: %+v", f, d)
		}
	}
	d := mkdirs(t, "j", "l")
	if _, err := PrepareBench(ctx, BenchOptions{JournalDirs: []string{"/proc"}, LedgerDirs: d[1:]}); !errors.Is(err, ErrUnsupportedFS) || !strings.Contains(err.Error(), "not a disk") {
		t.Errorf("/proc: %v", err)
	}
	h, err := hostfs.FakeSysfs(t.TempDir(), d[0], "fakedisk0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PrepareBench(ctx, BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], Host: h})
	if err != nil {
		t.Fatal(err)
	}
	if dev := p.Disks[0].Disk.Device; dev == nil || dev.Name != "fakedisk0" || dev.PhysicalBlockSize != 4096 {
		t.Errorf("device %+v, want fakedisk0 from the configured sysfs root", dev)
	}
}

func newTestServer(t *testing.T, dirs ...string) *Server {
	t.Helper()
	var roles []DirRole
	for _, d := range dirs {
		roles = append(roles, DirRole{Dir: d, Role: RoleLedger})
	}
	s, err := NewSampler(SamplerOptions{Dirs: roles, Host: HostFS{ProcPath: t.TempDir(), SysPath: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerOptions{Sampler: s})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestBenchOnStartLifecycle: skipped on a live bookie without touching it,
// failed with the reason, done with a recommendation; "running" meanwhile.
func TestBenchOnStartLifecycle(t *testing.T) {
	ctx := context.Background()
	t.Run("live bookie skipped", func(t *testing.T) {
		d := mkdirs(t, "j", "l")
		writeCookie(t, d[1])
		before := snapshot(t, filepath.Dir(d[0]))
		srv := newTestServer(t, d...)
		srv.BenchOnStart(ctx, BenchOnStartOptions{DirectMemoryBytes: 2 * GiB, Bench: BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:],
			Sweep: func(context.Context, diskbench.Plan) (*diskbench.Report, error) {
				t.Error("a benchmark ran next to a live bookie")
				return nil, errors.New("no")
			}}})
		st := srv.Bench()
		if st.Status != "skipped" || !strings.Contains(st.Reason, "live bookie") || !strings.Contains(st.Reason, "VERSION") {
			t.Errorf("state %+v", st)
		}
		if after := snapshot(t, filepath.Dir(d[0])); after != before {
			t.Errorf("tree changed:\n%s\n%s", before, after)
		}
	})
	t.Run("failure recorded", func(t *testing.T) {
		d := mkdirs(t, "j", "l")
		srv := newTestServer(t, d...)
		boom := errors.New("injected: device error")
		srv.BenchOnStart(ctx, BenchOnStartOptions{DirectMemoryBytes: 2 * GiB, Bench: BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:],
			Sweep: func(context.Context, diskbench.Plan) (*diskbench.Report, error) {
				if st := srv.Bench(); st.Status != "running" || st.StartedAt == nil {
					t.Errorf("state during the run: %+v", st)
				}
				return nil, boom
			}}})
		st := srv.Bench()
		if st.Status != "failed" || !strings.Contains(st.Reason, "injected: device error") || st.FinishedAt == nil || st.Recommendation != nil {
			t.Errorf("state %+v", st)
		}
	})
	t.Run("done", func(t *testing.T) {
		d := mkdirs(t, "j", "l")
		srv := newTestServer(t, d...)
		f := &fakeSweep{rate: 150e6}
		srv.BenchOnStart(ctx, BenchOnStartOptions{DirectMemoryBytes: 2 * GiB, DirectMemorySource: "test",
			Bench: BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], CPUs: 2, Sweep: f.sweep}})
		st := srv.Bench()
		if st.Status != "done" || st.Recommendation == nil || st.FinishedAt == nil || st.FinishedAt.Before(*st.StartedAt) {
			t.Fatalf("state %+v", st)
		}
		if _, ok := st.Recommendation.Setting("journalDirectories"); !ok {
			t.Error("recommendation lacks journalDirectories")
		}
		for _, dir := range d {
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("%s: benchmark files left: %v", dir, ents)
			}
		}
	})
}
