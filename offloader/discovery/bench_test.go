package discovery

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// procStatusKB reads a "VmRSS"/"VmHWM" line of /proc/self/status in KiB.
func procStatusKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// BenchmarkScan builds TIERKEEPER_BENCH_SCAN_MLS managed ledgers (default
// 10 000, in 100 namespaces) with TIERKEEPER_BENCH_SCAN_LEDGERS ledgers
// each (default 10: 100 000 ledgers, each also with a BookKeeper metadata
// znode) in a real ZooKeeper, then measures a cold full scan (every value
// read, watches armed) and a warm rescan (stat only), with the process's
// peak RSS over the scans. `make bench-scan` runs it.
func BenchmarkScan(b *testing.B) {
	nML := testenv.EnvInt(b, "TIERKEEPER_BENCH_SCAN_MLS", 10000)
	perML := testenv.EnvInt(b, "TIERKEEPER_BENCH_SCAN_LEDGERS", 10)
	z := testenv.StartZooKeeperWith(b, testenv.ZooKeeperOptions{Heap: "1g"})
	s := z.Session(b, tzk.Options{ConnectTimeout: 10 * time.Second})
	c := mltest.NewCreator(s.Conn)
	ctx := context.Background()
	start := time.Now()
	now := time.Now()
	err := mltest.Parallel(ctx, nML, 64, func(i int) error {
		ml := fmt.Sprintf("tenant-%d/ns-%d/persistent/topic-%d", i%10, (i/10)%10, i)
		first := int64(i*perML + 1)
		if err := c.CreateML(ml, mltest.Info(mltest.Closed(first, perML-1, 64<<20, now)...)); err != nil {
			return err
		}
		for j := 0; j < perML; j++ {
			if err := c.BookKeeperLedger(first+int64(j), "b1:3181", "b2:3181", "b3:3181"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	runtime.GC()
	rssBefore := procStatusKB("VmRSS")
	// Reset the peak RSS (VmHWM) to the current RSS, so it measures the scans.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	b.ResetTimer()
	var cold, warm ScanStats
	for i := 0; i < b.N; i++ {
		d := New(s, Options{})
		if cold, err = d.Scan(ctx); err != nil {
			b.Fatal(err)
		}
		if warm, err = d.Scan(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	hwm := procStatusKB("VmHWM")
	if cold.Listed != nML || cold.Ledgers != nML*perML || cold.Errors != 0 {
		b.Fatalf("cold scan saw %+v, want %d managed ledgers and %d ledgers", cold, nML, nML*perML)
	}
	b.ReportMetric(cold.Took.Seconds(), "cold-scan-s")
	b.ReportMetric(warm.Took.Seconds(), "warm-scan-s")
	b.ReportMetric(float64(hwm)/1024, "peak-RSS-MiB")
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("bench-scan: %d managed ledgers, %d ledgers (+%d BookKeeper ledger znodes) built in %s\n",
		nML, nML*perML, nML*perML, build.Round(time.Millisecond))
	fmt.Printf("bench-scan: cold full scan %s (%d values read, watches armed), warm rescan %s (%d stat-only, %d read)\n",
		cold.Took.Round(time.Millisecond), cold.Read, warm.Took.Round(time.Millisecond), warm.Statted, warm.Read)
	fmt.Printf("bench-scan: RSS %.1f MiB before the scans, peak %.1f MiB during them (goal: scan ≤ 30 s, RSS ≤ 256 MiB); loadavg %s",
		float64(rssBefore)/1024, float64(hwm)/1024, load)
}
