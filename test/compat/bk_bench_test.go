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
//     (`offloader ledger read --verify-only`: digests and cumulative
//     lengths verified, default window) over v2 (its default) and over v3
//     (`--bk-wire v3`), each in its own process, so its peak RSS and CPU
//     time are the reader's alone.
//   - Reported: the median MB/s (10^6 payload bytes/s) of each, Go/Java
//     ratios, Go's peak RSS and CPU seconds, and for every reader the CPU
//     seconds the three bookie processes used per GiB it read (from
//     /proc/PID/stat over the reader's run: what a reader costs the
//     bookies, which share their cores with the offloader).
//
// TIERKEEPER_BENCH_BK_CONF adds bookie settings (key=value,...; e.g.
// readBufferSizeBytes=4096, Pulsar's bookkeeper.conf value).
// TK_BENCH_BOOKIE_PULSAR_JVM (default 1) runs the bookies in Pulsar's JVM
// settings (testenv.BookieOptions.PulsarJVM), and every reader reads the
// ledger twice before the rounds so that the bookies have compiled its
// path; 0 gives them the test suite's quick-start JVM and one warm-up read.
//
// Runs only with -bench; `make test` does not run it. The machine's other
// load shows in the figures: compare within one run.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
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
	// BookieCPUPerGiB is the bookies' CPU seconds over the run per GiB
	// read (Java's: over the whole process, both of its reads).
	BookieCPUPerGiB float64 `json:"-"`
}

func BenchmarkBKLedgerRead(b *testing.B) {
	mib := testenv.EnvInt(b, "TIERKEEPER_BENCH_BK_MIB", 512)
	rounds := testenv.EnvInt(b, "TIERKEEPER_BENCH_BK_ROUNDS", 3)
	ctx := context.Background()
	zkSrv := testenv.StartZooKeeper(b)
	bo := testenv.BenchBookieOptions(b)
	if !bo.PulsarJVM {
		bo.Heap = "256m"
	}
	if conf := os.Getenv("TIERKEEPER_BENCH_BK_CONF"); conf != "" {
		bo.Extra = strings.Split(conf, ",")
		b.Logf("bookie settings: %s", conf)
	}
	cluster := testenv.StartBookiesWith(b, zkSrv, 3, bo)
	java := testenv.Java(b)
	java.Timeout = 30 * time.Minute

	bin := testenv.BuiltCommand(b, "offloader")

	start := time.Now()
	man := java.WriteLedgers(b, cluster, testenv.WriteLedgersOptions{Digests: []string{"CRC32C"}, BigMiB: mib})
	w := man.Ledgers[0]
	b.Logf("Java wrote ledger %d: %d entries, %d bytes in %s", w.LedgerID, w.EntryCount, w.Length, time.Since(start).Round(time.Second))

	runJava := func(proto ...string) bkBenchRun {
		var r bkBenchRun
		before := cluster.BookiesCPU(b)
		args := append([]string{"--metadata-uri", cluster.MetadataServiceURI(), "--ledger", fmt.Sprint(w.LedgerID),
			"--repeat", "2", "--batch", "16", "--outstanding", "4"}, proto...)
		if err := java.RunJSON(ctx, &r, "read-ledger-bench", args...); err != nil {
			b.Fatal(err)
		}
		if r.Entries != w.EntryCount || r.Bytes != w.Length || r.Seconds <= 0 {
			b.Fatalf("Java read %d entries, %d bytes in %f s; ledger has %d entries, %d bytes", r.Entries, r.Bytes, r.Seconds, w.EntryCount, w.Length)
		}
		r.MBPerSec = float64(r.Bytes) / 1e6 / r.Seconds
		r.BookieCPUPerGiB = (cluster.BookiesCPU(b) - before) / (2 * float64(r.Bytes) / (1 << 30)) // --repeat 2
		return r
	}
	runGo := func(wire string) bkBenchRun {
		cmd := exec.Command(bin, "ledger", "read", "--zk", cluster.MetadataServiceURI(), "--ledger", fmt.Sprint(w.LedgerID),
			"--verify-only", "--bk-wire", wire, "-o", "json")
		before := cluster.BookiesCPU(b)
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
		r.BookieCPUPerGiB = (cluster.BookiesCPU(b) - before) / (float64(r.Bytes) / (1 << 30))
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.RSSMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
			r.CPUSec = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
		return r
	}

	b.ResetTimer()
	var jv2, jv3, gmb, g3mb, grss, gcpu, g3cpu []float64
	var bkj2, bkj3, bkg, bkg3 []float64
	for i := 0; i < b.N; i++ {
		// Warm the page cache and the bookies' read paths like Java's
		// first run does. Bookies in Pulsar's JVM compile each path
		// again with C2 (the Java client's batched v2 reads take one of
		// their own), which takes a few reads of each reader.
		runGo("v2")
		if bo.PulsarJVM {
			// Until the bookies' CPU per GiB settles (C2 compiles their
			// read path over ~20 GiB of reads).
			wr := testenv.WarmBookieReads(b, cluster, testenv.WarmReads{}, func() int64 { return runGo("v2").Bytes })
			b.Logf("bookies warmed with the Go reader: %s", wr)
			for range 2 {
				runJava()
				runJava("--v3")
				runGo("v2")
				runGo("v3")
			}
		}
		for r := 0; r < rounds; r++ {
			j := runJava()
			jv2, bkj2 = append(jv2, j.MBPerSec), append(bkj2, j.BookieCPUPerGiB)
			j = runJava("--v3")
			jv3, bkj3 = append(jv3, j.MBPerSec), append(bkj3, j.BookieCPUPerGiB)
			// Go over v2 and v3, in turns first.
			wires := []string{"v2", "v3"}
			if r%2 == 1 {
				wires = []string{"v3", "v2"}
			}
			for _, wire := range wires {
				g := runGo(wire)
				if wire == "v2" {
					gmb, grss, gcpu, bkg = append(gmb, g.MBPerSec), append(grss, g.RSSMiB), append(gcpu, g.CPUSec), append(bkg, g.BookieCPUPerGiB)
				} else {
					g3mb, g3cpu, bkg3 = append(g3mb, g.MBPerSec), append(g3cpu, g.CPUSec), append(bkg3, g.BookieCPUPerGiB)
				}
			}
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
	b.ReportMetric(stats.Median(g3mb), "go-v3-MB/s")
	b.ReportMetric(stats.Median(bkg), "bookie-cpu-s/GiB-go-v2")
	b.ReportMetric(stats.Median(bkg3), "bookie-cpu-s/GiB-go-v3")
	fmt.Printf("\nBookKeeper ledger read: %d MiB ledger (%d entries of %d B, CRC32C, E3/W2/A2), 3 local bookies, median of %d rounds\n",
		mib, w.EntryCount, w.Length/max(w.EntryCount, 1), len(gmb))
	line := func(name string, mb, bk []float64) {
		fmt.Printf("  %-36s %8.1f MB/s   runs %.0f   bookies %.2f CPU-s/GiB (runs %.2f)\n", name, stats.Median(mb), mb, stats.Median(bk), bk)
	}
	line("Java BookKeeper client, v2 wire", jv2, bkj2)
	line("Java BookKeeper client, v3 wire", jv3, bkj3)
	line("Go tierkeeper reader, v2 wire", gmb, bkg)
	line("Go tierkeeper reader, v3 wire", g3mb, bkg3)
	fmt.Printf("  ratio Go v2 / Java: %.2f vs v2, %.2f vs v3; Go peak RSS %.0f MiB, Go CPU %.2f s per read (v3: %.2f)\n\n",
		g/j2, g/j3, rss, stats.Median(gcpu), stats.Median(g3cpu))
}
