package bookieagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// loopFS makes a sparse ext4 image of size bytes (no root reserve, so the
// usage arithmetic is exact), mounts it on a loop device and returns the
// mount point; it is unmounted at the end of the test. It skips the test,
// saying why, only where loop devices cannot be used (not root, no
// /dev/loop-control, mount refused).
func loopFS(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a loop device (mount -o loop)")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("loop devices unavailable in this sandbox: %v", err)
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.CommandContext(t.Context(), "mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4 unavailable: %v: %s", err, out)
	}
	if out, err := exec.CommandContext(t.Context(), "mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("loop devices unavailable in this sandbox: mount -o loop: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// bookieDirs makes a journal and a ledger directory on mnt.
func bookieDirs(t *testing.T, mnt string) (string, string) {
	t.Helper()
	j, l := filepath.Join(mnt, "journal"), filepath.Join(mnt, "ledgers")
	for _, d := range []string{j, l} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return j, l
}

// usageOf is BookKeeper's usage figure of path's filesystem.
func usageOf(t *testing.T, path string) float64 {
	t.Helper()
	u, err := GopsutilStatfs(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return 1 - float64(u.Avail)/float64(u.Size)
}

// fillTo allocates (fallocate: real blocks, no data written) a file until
// the filesystem of dir is at usage u.
func fillTo(t *testing.T, dir string, u float64) {
	t.Helper()
	st, err := GopsutilStatfs(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	grow(t, filepath.Join(dir, "bookie-data.fill"), int64(u*float64(st.Size))-int64(st.Size-st.Avail))
}

// grow extends path by n allocated bytes.
func grow(t *testing.T, path string, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(f.Fd()), 0, st.Size(), n); err != nil {
		t.Fatalf("fallocate %s: %v", path, err)
	}
}

// writeGuardConf writes a bookkeeper.conf with the Pulsar chart's
// thresholds and returns the guard read from it (ceiling 0.83).
func writeGuardConf(t *testing.T) DiskGuard {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bookkeeper.conf")
	body := "diskUsageThreshold=0.95\ndiskUsageWarnThreshold=0.90\ndiskUsageLwmThreshold=0.85\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ParseConf(p, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	g, err := DiskGuardFromConf(c, DefaultDiskMargin)
	if err != nil {
		t.Fatal(err)
	}
	if c := g.Ceiling(); c < 0.829 || c > 0.831 {
		t.Fatalf("ceiling %v, want 0.83", c)
	}
	return g
}

// TestBenchGuardRefusesNearlyFullDisk: a filesystem already within 1 MiB
// of the ceiling is refused before anything is written, and the error
// names the usage and the bookie's thresholds.
func TestBenchGuardRefusesNearlyFullDisk(t *testing.T) {
	mnt := loopFS(t, 1<<30)
	g := writeGuardConf(t)
	j, l := bookieDirs(t, mnt)
	fillTo(t, mnt, 0.825)
	f := &fakeSweep{rate: 150e6}
	_, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: []string{j}, LedgerDirs: []string{l}, Guard: &g, Sweep: f.sweep})
	if !errors.Is(err, ErrDiskNearFull) {
		t.Fatalf("err = %v, want ErrDiskNearFull", err)
	}
	for _, want := range []string{"usage 82.", "diskUsageLwmThreshold 0.85", "bookkeeper.conf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if len(f.plans) != 0 {
		t.Errorf("%d runs started on a refused disk", len(f.plans))
	}
}

// TestBenchGuardShrinksRunsBesideGrowingBookie: on a 10 GiB filesystem at
// 80 % (the ceiling 83 % leaves ~300 MiB, well under the 1.25 GiB the
// free-space reserve alone would allow) every run really allocates what it
// was given, while a "bookie" keeps writing 32 MiB between runs. No run may
// take the filesystem past the ceiling; runs are made smaller, then left
// out, and the result and the recommendation say so.
func TestBenchGuardShrinksRunsBesideGrowingBookie(t *testing.T) {
	mnt := loopFS(t, 10<<30)
	g := writeGuardConf(t)
	j, l := bookieDirs(t, mnt)
	fillTo(t, mnt, 0.80)
	var mu sync.Mutex
	peak := 0.0
	journals := 0
	f := &fakeSweep{rate: 150e6}
	sweep := func(ctx context.Context, p diskbench.Plan) (*diskbench.Report, error) {
		if p.Journal != nil {
			mu.Lock()
			journals++
			mu.Unlock()
		}
		// The run's bytes, really allocated in its scratch directory.
		size := p.MaxBytes
		if p.RandRead != nil {
			size = p.RandRead.FileSize
		}
		path := filepath.Join(p.Dir, "run.dat")
		grow(t, path, size)
		u := usageOf(t, p.Dir)
		mu.Lock()
		peak = max(peak, u)
		mu.Unlock()
		if err := os.Remove(path); err != nil {
			return nil, err
		}
		return f.sweep(ctx, p)
	}
	// The live bookie writes between runs: just before the agent looks at
	// the filesystem for the next one (one statfs per filesystem per run;
	// the two halves of a mixed run share it).
	looks := 0
	statfs := func(ctx context.Context, path string) (FSUsage, error) {
		mu.Lock()
		if journals >= 2 {
			looks++
		}
		n := looks
		mu.Unlock()
		// Once the journal block has begun (the entry-log block, every run
		// of it bounded by the ~300 MiB of room, ran before it), 768 MiB in
		// all: the room runs out during the journals' round 1, after its
		// first run (the probes are no round, so a recommendation needs a
		// round of its own).
		if n > 0 && n <= 24 {
			grow(t, filepath.Join(mnt, "bookie-data.fill"), 32<<20)
		}
		return GopsutilStatfs(ctx, path)
	}
	p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: []string{j}, LedgerDirs: []string{l}, Guard: &g, Sweep: sweep, Statfs: statfs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if peak > g.Ceiling()+1e-4 {
		t.Errorf("a run took the filesystem to %.4f, past the ceiling %.2f", peak, g.Ceiling())
	}
	if peak < 0.80 {
		t.Errorf("peak usage %.4f: the runs allocated nothing", peak)
	}
	gr := res.Plan.Guard
	if gr == nil || len(gr.Disks) != 2 {
		t.Fatalf("plan's guard record %+v", gr)
	}
	shrunk, skipped := 0, 0
	for _, d := range gr.Disks {
		shrunk += d.Shrunk
		skipped += d.Skipped
		if d.UsageAtStart < 0.79 || d.UsageAtStart > 0.81 {
			t.Errorf("%s: usage at start %.3f, want 0.80", d.Dir, d.UsageAtStart)
		}
	}
	if shrunk == 0 || skipped == 0 {
		t.Errorf("shrunk %d, skipped %d runs: want both (the room shrinks below a run as the bookie grows)", shrunk, skipped)
	}
	say := func(where string, ws []string) {
		t.Helper()
		for _, w := range ws {
			if strings.Contains(w, "left out so the filesystem stays at or below 83%") && strings.Contains(w, "diskUsageLwmThreshold 0.85") {
				return
			}
		}
		t.Errorf("%s does not report the guard: %q", where, ws)
	}
	say("the benchmark's warnings", res.Warnings)
	rec, err := Recommend(Input{JournalDisks: res.JournalDisks, LedgerDisks: res.LedgerDisks, Bench: &res.Plan, CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	say("the recommendation's warnings", rec.Warnings)
}

// TestDiskGuardFromRealBookie reads the thresholds a real BookKeeper 4.17
// bookie runs with from its HTTP admin server (GET
// /api/v1/config/server_config), as --bookie-http does; a bookie without
// the server is an error that says what was asked.
func TestDiskGuardFromRealBookie(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	port := testenv.FreePort(t)
	testenv.StartBookiesWith(t, z, 1, testenv.BookieOptions{Extra: []string{
		"httpServerEnabled=true", fmt.Sprintf("httpServerPort=%d", port), "httpServerHost=127.0.0.1",
		"httpServerClass=org.apache.bookkeeper.http.vertx.VertxHttpServer",
		"diskUsageThreshold=0.97", "diskUsageWarnThreshold=0.93", "diskUsageLwmThreshold=0.88",
	}})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	// The bookie registers before its HTTP component listens.
	var cfg map[string]string
	var err error
	testenv.WaitFor(t, "the bookie's HTTP admin server", 60*time.Second, 500*time.Millisecond, func() bool {
		cfg, err = FetchServerConfig(t.Context(), nil, base, 5*time.Second)
		return err == nil
	})
	g, err := DiskGuardFromServerConfig(cfg, DefaultDiskMargin, base)
	if err != nil {
		t.Fatal(err)
	}
	if g.Threshold != 0.97 || g.WarnThreshold != 0.93 || g.LwmThreshold != 0.88 || math.Abs(g.Ceiling()-0.86) > 1e-9 {
		t.Errorf("guard %+v (ceiling %v), want 0.97 / 0.93 / 0.88 → 0.86", g, g.Ceiling())
	}
	closed := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
	if _, err := FetchServerConfig(t.Context(), nil, closed, 2*time.Second); err == nil || !strings.Contains(err.Error(), "/api/v1/config/server_config") {
		t.Errorf("no server: %v", err)
	}
}

// TestServerConfigKeys: the running configuration's values are spelled as
// bookkeeper.conf spells them, so the fleet view compares them with the
// recommendation as text (a JSON number 1000000 is "1000000", not "1e+06").
func TestServerConfigKeys(t *testing.T) {
	var raw map[string]any
	if err := json.Unmarshal([]byte(`{"compactionRateByBytes":1000000,"diskUsageThreshold":0.95,
		"ledgerDirectories":["/a","/b"],"journalDirectory":"/j","unset":null,"isThrottleByBytes":true}`), &raw); err != nil {
		t.Fatal(err)
	}
	got := ServerConfigKeys(raw)
	want := map[string]string{"compactionRateByBytes": "1000000", "diskUsageThreshold": "0.95",
		"ledgerDirectories": "/a,/b", "journalDirectory": "/j", "unset": "", "isThrottleByBytes": "true"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
