package bookieagent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/diskbench"
)

func mkdirs(t *testing.T, names ...string) []string {
	t.Helper()
	root := t.TempDir()
	var out []string
	for _, n := range names {
		p := filepath.Join(root, n)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func writeCookie(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "current"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "current", "VERSION"), []byte(cookieV5), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPrepareBenchRefusals(t *testing.T) {
	ctx := context.Background()
	d := mkdirs(t, "j", "l")
	file := filepath.Join(d[0], "file")
	os.WriteFile(file, nil, 0o644)
	cases := []struct {
		name string
		o    BenchOptions
		want error
	}{
		{"missing", BenchOptions{JournalDirs: []string{d[0] + "/nope"}, LedgerDirs: d[1:]}, fs.ErrNotExist},
		{"file", BenchOptions{JournalDirs: []string{file}, LedgerDirs: d[1:]}, ErrNoDirectory},
		{"tmpfs", BenchOptions{JournalDirs: d[:1], LedgerDirs: []string{"/dev/shm"}}, ErrUnsupportedFS},
		{"tiny time", BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], TimeBudget: 2 * time.Second}, ErrBudgetTooSmall},
		{"tiny bytes", BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], MaxBytes: 10 * MiB}, ErrBudgetTooSmall},
		// Negative budgets are errors, not the defaults (issue 11, bug 8).
		{"negative bytes", BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], MaxBytes: -1}, ErrBudgetTooSmall},
		{"negative time", BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], TimeBudget: -time.Second}, ErrBudgetTooSmall},
	}
	for _, tc := range cases {
		if tc.name == "tmpfs" {
			if _, err := os.Stat("/dev/shm"); err != nil {
				continue
			}
		}
		_, err := PrepareBench(ctx, tc.o)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	// Nothing was created by any refusal.
	ents, _ := os.ReadDir(filepath.Dir(d[0]))
	if len(ents) != 2 {
		t.Errorf("refusals left files: %v", ents)
	}
}

func TestPrepareBenchTiers(t *testing.T) {
	d := mkdirs(t, "j", "l")
	full, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], CPUs: 16})
	if err != nil {
		t.Fatal(err)
	}
	small, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], TimeBudget: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if full.points() <= small.points() || small.points() != 5 || len(small.Dropped) == 0 {
		t.Errorf("60 s plan %d points, 6 s plan %d points (dropped %d); want the small plan to keep only the 5 essential points",
			full.points(), small.points(), len(small.Dropped))
	}
}

// TestBenchLiveBookieUsesScratch runs a real (short) benchmark on
// directories that hold a bookie cookie: the measurements must come from a
// scratch directory, and the bookie's directories must be left exactly as
// they were.
func TestBenchLiveBookieUsesScratch(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~128 MiB")
	}
	root := t.TempDir()
	j, l := filepath.Join(root, "journal"), filepath.Join(root, "ledgers")
	for _, d := range []string{j, l} {
		os.MkdirAll(d, 0o755)
		writeCookie(t, d)
	}
	before := snapshot(t, root)
	var sweeps []string
	p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: []string{j}, LedgerDirs: []string{l},
		TimeBudget: 6 * time.Second, MaxBytes: 128 * MiB,
		Sweep: func(ctx context.Context, plan diskbench.Plan) (*diskbench.Report, error) {
			sweeps = append(sweeps, plan.Dir)
			if _, err := os.Stat(plan.Dir); err != nil {
				t.Errorf("scratch dir %s not created: %v", plan.Dir, err)
			}
			return diskbench.Sweep(ctx, plan)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Disks {
		if !d.Scratch || !strings.HasPrefix(filepath.Base(d.Disk.BenchDir), ScratchPrefix) || filepath.Dir(d.Disk.BenchDir) != root {
			t.Fatalf("%s: bench dir %s, scratch %v; want a scratch sibling", d.Disk.Dir, d.Disk.BenchDir, d.Scratch)
		}
	}
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sweeps) != 2 || res.BytesWritten <= 0 || res.BytesWritten > 128*MiB {
		t.Errorf("sweeps %v, bytes %d", sweeps, res.BytesWritten)
	}
	for _, s := range sweeps {
		if strings.HasPrefix(s, j) || strings.HasPrefix(s, l) {
			t.Errorf("benchmark ran inside a live bookie dir: %s", s)
		}
	}
	if len(res.JournalDisks[0].Results) != 3 || len(res.LedgerDisks[0].Results) != 2 {
		t.Errorf("results: %d journal, %d ledger", len(res.JournalDisks[0].Results), len(res.LedgerDisks[0].Results))
	}
	if len(res.JournalDisks[0].Cookies) != 1 {
		t.Error("cookie not carried into the input")
	}
	if after := snapshot(t, root); after != before {
		t.Errorf("tree changed:\nbefore %s\nafter  %s", before, after)
	}
	rec, err := Recommend(Input{JournalDisks: res.JournalDisks, LedgerDisks: res.LedgerDisks, CPUs: 2, DirectMemoryBytes: 2 * GiB, DirectMemorySource: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := rec.Setting("journalDirectories"); s.Effective() != strings.Join(res.JournalDisks[0].Cookies[0].JournalDirs, ",") {
		t.Errorf("live bookie's journalDirectories not kept: %+v", s)
	}
}

// TestBenchRunFailureCleansScratch injects a failing sweep: the error is
// returned and the scratch directory is still removed.
func TestBenchRunFailureCleansScratch(t *testing.T) {
	root := t.TempDir()
	j, l := filepath.Join(root, "j"), filepath.Join(root, "l")
	os.MkdirAll(j, 0o755)
	os.MkdirAll(l, 0o755)
	writeCookie(t, j)
	boom := errors.New("injected: device error")
	p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: []string{j}, LedgerDirs: []string{l},
		Sweep: func(context.Context, diskbench.Plan) (*diskbench.Report, error) { return nil, boom }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ScratchPrefix) {
			t.Errorf("scratch dir left behind: %s", e.Name())
		}
	}
}

// snapshot lists every path under root with its size.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		b.WriteString(strings.TrimPrefix(p, root))
		if !d.IsDir() {
			b.WriteString(":" + strconv.FormatInt(info.Size(), 10))
		}
		b.WriteString(" ")
		return nil
	})
	return b.String()
}
