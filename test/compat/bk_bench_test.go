package compat

// BenchmarkBKLedgerRead (BK-client engineer; `make bench-bk`): the Go
// reader against BookKeeper's own Java client, reading the same large
// ledger from the same real bookies in the same run.
//
//   - BookKeeper's Java client writes one ledger of TIERKEEPER_BENCH_BK_MIB
//     MiB (default 512; 1 MiB entries, CRC32C, E=3 W=2 A=2) into 3 fresh
//     bookies (Pulsar's DbLedgerStorage).
//   - Then TIERKEEPER_BENCH_BK_ROUNDS rounds (default 3), each:
//     Java read-ledger-bench over the v2 protocol (Pulsar's default) and
//     over v3 (openLedgerNoRecovery + readAsync batches of 16, 4 batches
//     outstanding = 64 entries in flight, digests verified; two reads per
//     JVM, the second, warm one counts), then the Go reader
//     (`offloader ledger read --verify-only`: v3, digests and cumulative
//     lengths verified, default window) in its own process, so its peak RSS
//     and CPU time are the reader's alone.
//   - Reported: the median MB/s (10^6 payload bytes/s) of each, Go/Java
//     ratios, Go's peak RSS and CPU seconds.
//
// Runs only with -bench; `make test` does not run it. The machine's other
// load shows in the figures: compare within one run.

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/stats"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

type bkBenchRun struct {
	Entries  int64   `json:"entries"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	MBPerSec float64 `json:"mbPerSec"`
	RSSMiB   float64 `json:"-"`
	CPUSec   float64 `json:"-"`
}

func BenchmarkBKLedgerRead(b *testing.B) {
	mib := testenv.EnvInt(b, "TIERKEEPER_BENCH_BK_MIB", 512)
	rounds := testenv.EnvInt(b, "TIERKEEPER_BENCH_BK_ROUNDS", 3)
	ctx := context.Background()
	zkSrv := testenv.StartZooKeeper(b)
	cluster := testenv.StartBookiesWith(b, zkSrv, 3, testenv.BookieOptions{Heap: "256m"})
	java := testenv.Java(b)
	java.Timeout = 30 * time.Minute

	bin := testenv.BuiltCommand(b, "offloader")

	start := time.Now()
	man := java.WriteLedgers(b, cluster, testenv.WriteLedgersOptions{Digests: []string{"CRC32C"}, BigMiB: mib})
	w := man.Ledgers[0]
	b.Logf("Java wrote ledger %d: %d entries, %d bytes in %s", w.LedgerID, w.EntryCount, w.Length, time.Since(start).Round(time.Second))

	runJava := func(proto ...string) bkBenchRun {
		var r bkBenchRun
		args := append([]string{"--metadata-uri", cluster.MetadataServiceURI(), "--ledger", fmt.Sprint(w.LedgerID),
			"--repeat", "2", "--batch", "16", "--outstanding", "4"}, proto...)
		if err := java.RunJSON(ctx, &r, "read-ledger-bench", args...); err != nil {
			b.Fatal(err)
		}
		if r.Entries != w.EntryCount || r.Bytes != w.Length || r.Seconds <= 0 {
			b.Fatalf("Java read %d entries, %d bytes in %f s; ledger has %d entries, %d bytes", r.Entries, r.Bytes, r.Seconds, w.EntryCount, w.Length)
		}
		r.MBPerSec = float64(r.Bytes) / 1e6 / r.Seconds
		return r
	}
	runGo := func() bkBenchRun {
		cmd := exec.Command(bin, "ledger", "read", "--zk", cluster.MetadataServiceURI(), "--ledger", fmt.Sprint(w.LedgerID),
			"--verify-only", "-o", "json")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("go reader: %v", err)
		}
		var r bkBenchRun
		if err := json.Unmarshal(out, &r); err != nil {
			b.Fatalf("go reader output %q: %v", out, err)
		}
		if r.Bytes != w.Length || r.Entries != w.EntryCount {
			b.Fatalf("Go read %d entries %d bytes, ledger has %d / %d", r.Entries, r.Bytes, w.EntryCount, w.Length)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.RSSMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
			r.CPUSec = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
		return r
	}

	b.ResetTimer()
	var jv2, jv3, gmb, grss, gcpu []float64
	for i := 0; i < b.N; i++ {
		runGo() // warm the page cache and the bookies' read paths like Java's first run does
		for r := 0; r < rounds; r++ {
			jv2 = append(jv2, runJava().MBPerSec)
			jv3 = append(jv3, runJava("--v3").MBPerSec)
			g := runGo()
			gmb, grss, gcpu = append(gmb, g.MBPerSec), append(grss, g.RSSMiB), append(gcpu, g.CPUSec)
		}
	}
	b.StopTimer()
	j2, j3, g := stats.Median(jv2), stats.Median(jv3), stats.Median(gmb)
	rss := slices.Max(grss)
	b.ReportMetric(g, "go-MB/s")
	b.ReportMetric(j2, "java-v2-MB/s")
	b.ReportMetric(j3, "java-v3-MB/s")
	b.ReportMetric(g/j2, "go/java-v2")
	b.ReportMetric(g/j3, "go/java-v3")
	b.ReportMetric(rss, "go-peak-RSS-MiB")
	b.ReportMetric(stats.Median(gcpu), "go-cpu-s")
	fmt.Printf("\nBookKeeper ledger read: %d MiB ledger (%d entries of %d B, CRC32C, E3/W2/A2), 3 local bookies, median of %d rounds\n",
		mib, w.EntryCount, w.Length/max(w.EntryCount, 1), len(gmb))
	fmt.Printf("  %-36s %8.1f MB/s   runs %.0f\n", "Java BookKeeper client, v2 wire", j2, jv2)
	fmt.Printf("  %-36s %8.1f MB/s   runs %.0f\n", "Java BookKeeper client, v3 wire", j3, jv3)
	fmt.Printf("  %-36s %8.1f MB/s   runs %.0f\n", "Go tierkeeper reader, v3 wire", g, gmb)
	fmt.Printf("  ratio Go/Java: %.2f vs v2, %.2f vs v3; Go peak RSS %.0f MiB, Go CPU %.2f s per read\n\n",
		g/j2, g/j3, rss, stats.Median(gcpu))
}
