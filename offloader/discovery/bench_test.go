package discovery

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/internal/units"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
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

// countingConn counts the requests a Discovery makes by kind.
type countingConn struct {
	Conn
	list, stat, get atomic.Int64
}

func (c *countingConn) Children(p string) ([]string, *gozk.Stat, error) {
	c.list.Add(1)
	return c.Conn.Children(p)
}

func (c *countingConn) ChildrenW(p string) ([]string, *gozk.Stat, <-chan gozk.Event, error) {
	c.list.Add(1)
	return c.Conn.ChildrenW(p)
}

func (c *countingConn) Exists(p string) (bool, *gozk.Stat, error) {
	c.stat.Add(1)
	return c.Conn.Exists(p)
}

func (c *countingConn) ExistsW(p string) (bool, *gozk.Stat, <-chan gozk.Event, error) {
	c.stat.Add(1)
	return c.Conn.ExistsW(p)
}

func (c *countingConn) Get(p string) ([]byte, *gozk.Stat, error) {
	c.get.Add(1)
	return c.Conn.Get(p)
}

func (c *countingConn) GetW(p string) ([]byte, *gozk.Stat, <-chan gozk.Event, error) {
	c.get.Add(1)
	return c.Conn.GetW(p)
}

// takeAll returns the requests of own and more since the last call,
// summed, and resets the counts.
func takeAll(own *countingConn, more []*countingConn) string {
	l, st, g := own.list.Swap(0), own.stat.Swap(0), own.get.Swap(0)
	for _, m := range more {
		l, st, g = l+m.list.Swap(0), st+m.stat.Swap(0), g+m.get.Swap(0)
	}
	return fmt.Sprintf("%d listings, %d stats, %d value reads", l, st, g)
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ScaleFigures are what BenchScale measured.
type ScaleFigures struct {
	// StatusRender is one GET /status of a service on the tree (after its
	// first scan and evaluation, ServiceReady after its start), its body
	// StatusBytes long, listing StatusTopics topics.
	StatusRender, ServiceReady time.Duration
	// ServiceScan is the service's own first scan (part of ServiceReady).
	ServiceScan  time.Duration
	StatusBytes  int64
	StatusTopics int
	// Leases counts the leases (jobs) each replica took in LeaseWindow.
	Leases      []int64
	LeaseWindow time.Duration
}

// BenchScale is set by scale_bench_test.go (an external test package: it
// runs the offload service, which imports this package); BenchmarkScan
// calls it with the tree's ZooKeeper and the policy's candidates.
var BenchScale func(b *testing.B, zkAddr string, cands policy.Candidates) ScaleFigures

// BenchmarkScan builds TIERKEEPER_BENCH_SCAN_MLS managed ledgers (default
// 10 000) spread over TIERKEEPER_BENCH_SCAN_NAMESPACES namespaces (default
// 100; 1 puts every topic in one namespace's listing) with
// TIERKEEPER_BENCH_SCAN_LEDGERS ledgers in all (default 100 000, shared
// evenly; each also with a BookKeeper metadata znode) in a real
// ZooKeeper, written in multi batches, then measures a cold full scan
// (every value read, watches armed), a warm rescan (stat only) with the
// ZooKeeper requests it made, one policy evaluation of the cached view,
// and the process's peak RSS over them. TIERKEEPER_BENCH_SCAN_CPUPROFILE
// names a file for a CPU profile of the scans;
// TIERKEEPER_BENCH_SCAN_NOWATCHES=1 scans without watches;
// TIERKEEPER_BENCH_SCAN_CONCURRENCY sets the requests in flight per
// session (default the package's 32); TIERKEEPER_BENCH_SCAN_SESSIONS the
// sessions the rescan's stats go through (default 2, as the service's
// discovery.sessions). The ZooKeeper server runs with the JVM's optimising
// compiler, as in production (TIERKEEPER_BENCH_SCAN_C1=1: the quick first
// tier only, as the tests' servers and this benchmark before 2026-12-06).
// Then (unless
// TIERKEEPER_BENCH_SCAN_SCALE=0) three replicas' schedulers share the
// topic leases over the candidates for 20 s, and an offload service scans
// and evaluates the tree and renders one /status (BenchScale). `make
// bench-scan` runs it.
func BenchmarkScan(b *testing.B) {
	nML := testenv.EnvInt(b, "TIERKEEPER_BENCH_SCAN_MLS", 10000)
	nLedgers := testenv.EnvInt(b, "TIERKEEPER_BENCH_SCAN_LEDGERS", 100000)
	nNS := testenv.EnvInt(b, "TIERKEEPER_BENCH_SCAN_NAMESPACES", 100)
	sessions := testenv.EnvInt(b, "TIERKEEPER_BENCH_SCAN_SESSIONS", 2)
	if nML < 1 || nNS < 1 || nLedgers < nML {
		b.Fatalf("want at least one managed ledger and namespace, and a ledger per managed ledger: %d, %d, %d", nML, nNS, nLedgers)
	}
	perML := nLedgers / nML
	heap := "1g"
	if nML+2*perML*nML > 300000 {
		heap = "3g"
	}
	z := testenv.StartZooKeeperWith(b, testenv.ZooKeeperOptions{Heap: heap, FullJIT: os.Getenv("TIERKEEPER_BENCH_SCAN_C1") != "1"})
	s := z.Session(b, tzk.Options{ConnectTimeout: 10 * time.Second})
	c := mltest.NewCreator(s.Conn)
	ctx := context.Background()
	start := time.Now()
	now := time.Now()
	// Multi batches of about 300 znodes (≈ 60–100 KB, well below the
	// server's 1 MiB jute.maxbuffer), 16 in flight.
	per := max(1, 300/(perML+1))
	err := mltest.Parallel(ctx, (nML+per-1)/per, 16, func(batch int) error {
		var nodes []mltest.Node
		for i := batch * per; i < min(nML, (batch+1)*per); i++ {
			ns := i % nNS
			ml := fmt.Sprintf("tenant-%d/ns-%d/persistent/topic-%d", ns%10, ns/10, i)
			first := int64(i*perML + 1)
			nodes = append(nodes, mltest.Node{Path: mledger.Path(ml), Data: mltest.Encode(mltest.Info(mltest.Closed(first, perML-1, 64<<20, now.Add(-2*time.Hour))...))})
			for j := 0; j < perML; j++ {
				n, err := mltest.BookKeeperLedgerNode(first+int64(j), "b1:3181", "b2:3181", "b3:3181")
				if err != nil {
					return err
				}
				nodes = append(nodes, n)
			}
		}
		return c.CreateAll(nodes)
	})
	if err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	runtime.GC()
	rssBefore := procStatusKB("VmRSS")
	// Reset the peak RSS (VmHWM) to the current RSS, so it measures the scans.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	if p := os.Getenv("TIERKEEPER_BENCH_SCAN_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	var cold, warm ScanStats
	var evalTook, evalCPU, snapTook time.Duration
	var res policy.Result
	var scanHWM int64
	var coldReqs, warmReqs string
	var goroutines int
	for i := 0; i < b.N; i++ {
		cc := &countingConn{Conn: s}
		var more []*countingConn
		var stats []Statter
		for range sessions - 1 {
			m := &countingConn{Conn: z.Session(b, tzk.Options{ConnectTimeout: 10 * time.Second})}
			more, stats = append(more, m), append(stats, m)
		}
		d := New(cc, Options{NoWatches: os.Getenv("TIERKEEPER_BENCH_SCAN_NOWATCHES") == "1",
			Concurrency: testenv.EnvInt(b, "TIERKEEPER_BENCH_SCAN_CONCURRENCY", 0), StatConns: stats})
		if cold, err = d.Scan(ctx); err != nil {
			b.Fatal(err)
		}
		coldReqs = takeAll(cc, more)
		if warm, err = d.Scan(ctx); err != nil {
			b.Fatal(err)
		}
		warmReqs = takeAll(cc, more)
		scanHWM, goroutines = procStatusKB("VmHWM"), runtime.NumGoroutine()
		_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		t0, cpu0 := time.Now(), cpuTime()
		topics, errs := d.Snapshot()
		snapTook = time.Since(t0)
		if len(errs) != 0 {
			b.Fatalf("%d managed ledgers unreadable", len(errs))
		}
		res = policy.Evaluate(policy.Snapshot{Topics: topics}, time.Now(), policy.Rules{
			Default: policy.Rule{Name: "default", Offload: true, After: time.Hour, KeepBytes: -1, KeepLedgers: -1}})
		evalTook, evalCPU = time.Since(t0), cpuTime()-cpu0
	}
	b.StopTimer()
	hwm := procStatusKB("VmHWM")
	if cold.Listed != nML || cold.Ledgers != nML*perML || cold.Errors != 0 {
		b.Fatalf("cold scan saw %+v, want %d managed ledgers and %d ledgers", cold, nML, nML*perML)
	}
	// Every closed ledger is two hours old: the one-hour age rule selects
	// all of them.
	if len(res.Topics) != nML || res.Candidates.Len() != nML*(perML-1) {
		b.Fatalf("policy planned %d topics and %d candidates, want %d and %d", len(res.Topics), res.Candidates.Len(), nML, nML*(perML-1))
	}
	var scale ScaleFigures
	if BenchScale != nil && os.Getenv("TIERKEEPER_BENCH_SCAN_SCALE") != "0" {
		scale = BenchScale(b, z.Addr, res.Candidates)
	}
	b.ReportMetric(cold.Took.Seconds(), "cold-scan-s")
	b.ReportMetric(warm.Took.Seconds(), "warm-scan-s")
	b.ReportMetric(evalTook.Seconds(), "policy-eval-s")
	b.ReportMetric(float64(scanHWM)/1024, "scan-peak-RSS-MiB")
	b.ReportMetric(float64(hwm)/1024, "eval-peak-RSS-MiB")
	load, _ := os.ReadFile("/proc/loadavg")
	// A rescan lists the root, each tenant and each namespace node (and
	// its persistent node) and stats each known managed ledger.
	fmt.Printf("bench-scan: %d managed ledgers in %d namespaces, %d ledgers (+%d BookKeeper ledger znodes), built in %s (multi batches)\n",
		nML, cold.Namespaces, nML*perML, nML*perML, build.Round(time.Millisecond))
	fmt.Printf("bench-scan: %-26s %10s %12s %12s %10s\n", "", "took", "value reads", "stat-only", "goal")
	fmt.Printf("bench-scan: %-26s %10s %12d %12d %10s\n", "cold full scan", cold.Took.Round(time.Millisecond), cold.Read, cold.Statted, "≤ 30 s")
	fmt.Printf("bench-scan: %-26s %10s %12d %12d %10s\n", "warm rescan", warm.Took.Round(time.Millisecond), warm.Read, warm.Statted, "≤ 10 s")
	fmt.Printf("bench-scan: %-26s %10s %12s %12s %10s  (%d candidates, %s CPU; the snapshot of the view %s of it)\n", "policy evaluation", evalTook.Round(time.Millisecond), "-", "-", "≤ 1 s",
		res.Candidates.Len(), evalCPU.Round(time.Millisecond), snapTook.Round(time.Millisecond))
	fmt.Printf("bench-scan: ZooKeeper requests of the cold scan: %s; of the warm rescan: %s\n", coldReqs, warmReqs)
	if len(scale.Leases) > 0 {
		var sum int64
		for _, n := range scale.Leases {
			sum += n
		}
		mean := float64(sum) / float64(len(scale.Leases))
		dev := 0.0
		for _, n := range scale.Leases {
			dev = max(dev, math.Abs(float64(n)-mean)/mean)
		}
		fmt.Printf("bench-scan: %-26s %10s %12s %12s %10s  (%s)\n", "/status render", scale.StatusRender.Round(time.Millisecond), "-", "-", "≤ 1 s",
			fmt.Sprintf("%d topics, %s of JSON, service ready %s after its start, its first scan %s", scale.StatusTopics, units.HumanBytes(scale.StatusBytes), scale.ServiceReady.Round(time.Millisecond), scale.ServiceScan.Round(time.Millisecond)))
		fmt.Printf("bench-scan: three replicas' leases in %s: %v (largest deviation from the mean %.1f %%, goal ≤ 20 %%)\n",
			scale.LeaseWindow, scale.Leases, dev*100)
		b.ReportMetric(scale.StatusRender.Seconds(), "status-render-s")
		b.ReportMetric(dev*100, "lease-share-dev-%")
	}
	fmt.Printf("bench-scan: RSS %.1f MiB before the scans, peak %.1f MiB during them (goal ≤ 512 MiB; %d goroutines after them), peak %.1f MiB during the evaluation; loadavg %s",
		float64(rssBefore)/1024, float64(scanHWM)/1024, goroutines, float64(hwm)/1024, load)
}
