package compat

// BenchmarkJournalVsBookKeeper (`make bench-journal`): diskbench's
// BookKeeper journal model against BookKeeper 4.17.2's own Journal class
// on the same directory, in the same run.
//
//   - Java: the compat tool's journal-bench (test/compat/java,
//     JournalBench.java) starts N org.apache.bookkeeper.bookie.Journal
//     instances on N sub-directories, each fed by a client thread keeping
//     the default in-flight entries outstanding, and reports acknowledged
//     MB/s and add latency (logAddEntry → callback), in a JVM set up like a
//     bookie's (fixed 512 MiB heap, G1, 10 ms pause goal).
//   - Go: `diskbench journal --writers N --block-size S --output json`, the
//     same settings (Pulsar's bookkeeper.conf defaults), the same in-flight
//     rule, in its own process.
//   - Cases: 1/2/4 journals × 4 KiB/64 KiB entries
//     (TIERKEEPER_BENCH_JOURNAL_CASES="1x4k,4x64k" picks some); each case
//     runs TIERKEEPER_BENCH_JOURNAL_ROUNDS rounds (default 6) of one run of
//     each tool, alternating which goes first (BookKeeper, diskbench |
//     diskbench, BookKeeper | ...: an ABBA order), for
//     TIERKEEPER_BENCH_JOURNAL_DURATION (default 2s) after a 1 s warm-up
//     (the JVM 3 s, TIERKEEPER_BENCH_JOURNAL_JAVA_WARMUP: a bookie runs
//     JIT-compiled code). Many short alternating runs sample the disk's
//     state (its fdatasync tail varies over seconds) alike for both tools.
//   - Reported per case, pooled over the rounds: each tool's MiB/s (bytes
//     over seconds of all its runs) and p50/p99 add latency of its pooled
//     latency histogram (both tools record into diskbench's buckets,
//     diskbench.PoolLatencies), the ratios diskbench/BookKeeper with a 90%
//     bootstrap interval over rounds (a round's two runs resampled
//     together), and beside the p99 ratio the ratio of the two tools' own
//     pooled fdatasync p99 — a p99 ratio that follows it is the disk's
//     tail, not the model. A round is run again (up to rounds times per
//     case) when, during either run, other processes read or wrote more
//     than 15% of the run's own writes on the disk (/proc/diskstats
//     against the children's rusage) or used more than half a core
//     (/proc/stat against the children's CPU time); each round prints both
//     figures. It fails when a pooled throughput ratio is outside
//     [0.9, 1.1] or a pooled p99 ratio outside [0.75, 1.25]
//     (TIERKEEPER_BENCH_JOURNAL_NOFAIL=1 only reports).
//   - TIERKEEPER_BENCH_JOURNAL_CPU_MATCH=1 adds a third run to every round:
//     diskbench again, beside a burner process that keeps busy the CPU
//     BookKeeper's JVM used beyond the model in that round's runs (its
//     cores minus diskbench's, spread over whole-core threads, each busy
//     that share of every 10 ms). A p99 gap that the burner closes is the
//     JVM's CPU competing with its own force-write thread on the
//     machine's cores, not a difference in the journal's pattern.
//
// Runs only with -bench; `make test` does not run it. The machine's other
// load shows in the figures: the 1-minute load average is printed before
// and after.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/hostfs"
	"github.com/tierkeeper/tierkeeper/internal/stats"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// javaJournalResult is journal-bench's JSON (with --latency-buckets).
type javaJournalResult struct {
	Journals    int               `json:"journals"`
	EntrySize   int64             `json:"entrySize"`
	InFlight    int               `json:"inFlight"`
	Fadvise     *bool             `json:"fadvise"`
	DurationSec float64           `json:"durationSec"`
	StopReason  string            `json:"stopReason"`
	Entries     int64             `json:"entries"`
	BytesPerSec float64           `json:"bytesPerSec"`
	AddLatency  diskbench.Latency `json:"addLatency"`
	// BookKeeperStats is what BookKeeper's Journal itself recorded in the
	// measured window (its StatsLogger): op latencies by name (in
	// diskbench's histogram, with buckets), counters.
	BookKeeperStats map[string]json.RawMessage `json:"bookkeeperStats"`
	PerJournal      []struct {
		Dir   string `json:"dir"`
		Files []struct {
			Name string `json:"name"`
			Size int64  `json:"size"`
		} `json:"files"`
	} `json:"perJournal"`
}

type journalCase struct {
	writers int
	entry   int64
}

func (c journalCase) String() string {
	return fmt.Sprintf("%d × %s", c.writers, units.FormatBytes(c.entry))
}

// journalRun is one run of one tool.
type journalRun struct {
	bytes, sec float64            // acknowledged bytes, measured seconds
	add, sync  *diskbench.Latency // add latency; the tool's own fdatasync timings
	group      float64            // diskbench: mean group bytes
	// Groups flushed because the oldest entry waited
	// journalMaxGroupWaitMSec or the group passed
	// journalBufferedWritesThreshold.
	byWait, bySize float64
	// BookKeeper's own op latencies (JOURNAL_ADD_ENTRY: enqueue → callback
	// on its clock; JOURNAL_SYNC: its timer around force(false), ...).
	bkOps map[string]*diskbench.Latency
	// The tool's process: CPU time in cores and involuntary context
	// switches per second over the whole run (start-up and warm-up
	// included).
	cores, preempt float64
}

func (r journalRun) mbps() float64 { return r.bytes / r.sec / float64(units.MiB) }

// ms is a latency quantile in milliseconds, 0 for none.
func ms(l *diskbench.Latency, q float64) float64 {
	switch {
	case l == nil:
		return 0
	case q == 0.5:
		return float64(l.P50Ns) / 1e6
	default:
		return float64(l.P99Ns) / 1e6
	}
}

// journalPool is one tool's runs of a case pooled: bytes over seconds,
// latency histograms merged.
type journalPool struct {
	mbps           float64
	add, sync      *diskbench.Latency
	byWait, bySize float64 // per second
	group          float64 // median over the runs
	bkOps          map[string]*diskbench.Latency
	cores, preempt float64 // means over the runs
}

func poolRuns(b *testing.B, runs []journalRun) journalPool {
	var p journalPool
	var bytes, sec, wait, size float64
	var adds, syncs []*diskbench.Latency
	var groups []float64
	ops := map[string][]*diskbench.Latency{}
	for _, r := range runs {
		bytes, sec = bytes+r.bytes, sec+r.sec
		wait, size = wait+r.byWait, size+r.bySize
		adds, syncs = append(adds, r.add), append(syncs, r.sync)
		groups = append(groups, r.group)
		p.cores += r.cores / float64(len(runs))
		p.preempt += r.preempt / float64(len(runs))
		for k, l := range r.bkOps {
			ops[k] = append(ops[k], l)
		}
	}
	if sec > 0 {
		p.mbps, p.byWait, p.bySize = bytes/sec/float64(units.MiB), wait/sec, size/sec
	}
	p.group = stats.Median(groups)
	var err error
	if p.add, err = diskbench.PoolLatencies(adds...); err != nil {
		b.Fatalf("pooling add latencies: %v", err)
	}
	if p.sync, err = diskbench.PoolLatencies(syncs...); err != nil {
		b.Fatalf("pooling fdatasync latencies: %v", err)
	}
	p.bkOps = map[string]*diskbench.Latency{}
	for k, ls := range ops {
		if p.bkOps[k], err = diskbench.PoolLatencies(ls...); err != nil {
			b.Fatalf("pooling BookKeeper's %s: %v", k, err)
		}
	}
	return p
}

// bkOps reads BookKeeper's op latencies from its stats: the entries that
// are histograms of times (not its counters, nor the histograms of values
// such as JOURNAL_FORCE_WRITE_BATCH_BYTES, which journal-bench marks).
func bkOps(st map[string]json.RawMessage) map[string]*diskbench.Latency {
	m := map[string]*diskbench.Latency{}
	for k, raw := range st {
		var l struct {
			diskbench.Latency
			Values bool `json:"values"`
		}
		if json.Unmarshal(raw, &l) == nil && l.Count > 0 && !l.Values {
			m[k] = &l.Latency
		}
	}
	return m
}

// bkCount reads one of BookKeeper's counters.
func bkCount(st map[string]json.RawMessage, name string) float64 {
	var n int64
	if raw, ok := st[name]; ok && json.Unmarshal(raw, &n) == nil {
		return float64(n)
	}
	return 0
}

func journalCases(b *testing.B) []journalCase {
	spec := os.Getenv("TIERKEEPER_BENCH_JOURNAL_CASES")
	if spec == "" {
		spec = "1x4k,1x64k,2x4k,2x64k,4x4k,4x64k"
	}
	var cs []journalCase
	for _, p := range strings.Split(spec, ",") {
		w, s, ok := strings.Cut(strings.TrimSpace(p), "x")
		n, err := strconv.Atoi(w)
		sz, serr := units.ParseSize(s)
		if !ok || err != nil || serr != nil || n < 1 || sz < 1 {
			b.Fatalf("TIERKEEPER_BENCH_JOURNAL_CASES: bad case %q (want WRITERSxSIZE, e.g. 2x64k)", p)
		}
		cs = append(cs, journalCase{n, sz})
	}
	return cs
}

// sectorsIO is the device's 512-byte sectors read and written so far.
func sectorsIO(dev string) (rd, wr int64, err error) {
	if dev == "" {
		return 0, 0, nil
	}
	ds, err := hostfs.FS{}.Diskstats()
	if err != nil {
		return 0, 0, err
	}
	for _, d := range ds {
		if d.Name == dev {
			return int64(d.ReadBytes / 512), int64(d.WrittenBytes / 512), nil
		}
	}
	return 0, 0, fmt.Errorf("%s not in /proc/diskstats", dev)
}

// childUsage is what the waited-for children read and wrote (512-byte
// blocks), their CPU time and their involuntary context switches (a thread
// preempted while runnable: the tool's own threads waiting for a CPU).
func childUsage() (in, out int64, cpu time.Duration, preempted int64) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err != nil {
		return 0, 0, 0, 0
	}
	return ru.Inblock, ru.Oublock, time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nivcsw
}

// interval renders a bootstrap interval.
func interval(lo, hi float64) string {
	if math.IsNaN(lo) {
		return "[   -      -  ]"
	}
	return fmt.Sprintf("[%.2f–%.2f]", lo, hi)
}

func BenchmarkJournalVsBookKeeper(b *testing.B) {
	rounds := testenv.EnvInt(b, "TIERKEEPER_BENCH_JOURNAL_ROUNDS", 6)
	dur := 2 * time.Second
	if v := os.Getenv("TIERKEEPER_BENCH_JOURNAL_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("TIERKEEPER_BENCH_JOURNAL_DURATION=%q: %v", v, err)
		}
		dur = d
	}
	warm := time.Second
	// The JVM gets a longer warm-up: a bookie's journal runs JIT-compiled
	// code; the first seconds of a fresh JVM measure its compiler.
	javaWarm := 3 * time.Second
	if v := os.Getenv("TIERKEEPER_BENCH_JOURNAL_JAVA_WARMUP"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			b.Fatalf("TIERKEEPER_BENCH_JOURNAL_JAVA_WARMUP=%q: %v", v, err)
		}
		javaWarm = d
	}
	cases := journalCases(b)
	ctx := context.Background()
	java := testenv.Java(b)
	java.Timeout = dur + 2*time.Minute
	// A bookie's JVM rather than the harness's small one: a fixed heap and
	// G1 with a 10 ms pause goal (Pulsar's bookie GC settings), so young
	// collections of a 16 MiB start heap do not pause the journal.
	java.Heap = "512m"
	java.JVMArgs = append(java.JVMArgs, "-Xms512m", "-XX:-UseSerialGC", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=10")

	root := os.Getenv("TIERKEEPER_BENCH_JOURNAL_DIR")
	if root == "" {
		root = filepath.Join(testenv.RepoRoot(), ".cache", "diskbench")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp(root, "bkjournal.")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })

	bin := testenv.BuiltCommand(b, "diskbench")
	// Each run may write what the disk takes in the window; neither tool
	// may stop on a byte budget the other does not have.
	maxBytes := int64(24) << 30

	fadvise := true
	runJava := func(c journalCase) journalRun {
		var r javaJournalResult
		err := java.RunJSON(ctx, &r, "journal-bench", "--dir", dir, "--journals", fmt.Sprint(c.writers),
			"--entry-size", fmt.Sprint(c.entry), "--duration-ms", fmt.Sprint(dur.Milliseconds()),
			"--warmup-ms", fmt.Sprint(javaWarm.Milliseconds()), "--max-bytes", fmt.Sprint(maxBytes), "--latency-buckets")
		if err != nil {
			b.Fatal(err)
		}
		if r.Entries == 0 || r.StopReason != "duration" || r.DurationSec <= 0 {
			b.Fatalf("journal-bench %s: %d entries in %.2f s, stopped by %s", c, r.Entries, r.DurationSec, r.StopReason)
		}
		if r.Fadvise != nil && !*r.Fadvise {
			fadvise = false // BookKeeper's native-io is unavailable: compare without fadvise
		}
		add := r.AddLatency
		f := journalRun{bytes: float64(r.Entries * r.EntrySize), sec: r.DurationSec, add: &add, bkOps: bkOps(r.BookKeeperStats)}
		f.sync = f.bkOps["JOURNAL_SYNC"]
		f.byWait = bkCount(r.BookKeeperStats, "JOURNAL_NUM_FLUSH_MAX_WAIT")
		f.bySize = bkCount(r.BookKeeperStats, "JOURNAL_NUM_FLUSH_MAX_OUTSTANDING_BYTES")
		return f
	}
	runGo := func(c journalCase) journalRun {
		args := []string{"journal", "--dir", dir, "--writers", fmt.Sprint(c.writers), "--block-size", fmt.Sprint(c.entry),
			"--duration", dur.String(), "--warmup", warm.String(), "--max-bytes", fmt.Sprint(maxBytes), "--output", "json",
			"--latency-buckets", "--journalRemoveFromPageCache=" + strconv.FormatBool(fadvise)}
		cmd := exec.Command(bin, args...)
		out, err := testenv.RunTool(ctx, dur+2*time.Minute, cmd)
		if err != nil {
			b.Fatalf("diskbench %s: %v", c, err)
		}
		var rep diskbench.Report
		if err := json.Unmarshal(out, &rep); err != nil || len(rep.Results) != 1 {
			b.Fatalf("diskbench %s: output %.300q: %v", c, out, err)
		}
		r := rep.Results[0]
		if r.AddLatency == nil || r.StopReason != "duration" || r.DurationSec <= 0 {
			b.Fatalf("diskbench %s: stopped by %s after %.2f s, add latency %v", c, r.StopReason, r.DurationSec, r.AddLatency)
		}
		f := journalRun{bytes: float64(r.Bytes), sec: r.DurationSec, add: r.AddLatency, sync: r.SyncLatency}
		if r.JournalIO != nil {
			f.group = r.JournalIO.MeanGroupBytes
			f.byWait, f.bySize = float64(r.JournalIO.FlushedByWait), float64(r.JournalIO.FlushedBySize)
		}
		return f
	}

	type row struct {
		c              journalCase
		java, db       []journalRun
		loaded         []journalRun // diskbench beside a burner of BookKeeper's extra CPU
		burn           []float64    // the burner's cores per loaded run
		jp, dp         journalPool
		thr, r50, r99  float64 // pooled ratios diskbench/BookKeeper
		s99            float64 // pooled fdatasync p99 ratio
		thrLo, thrHi   float64 // 90% bootstrap intervals over rounds
		r99Lo, r99Hi   float64
		s99Lo, s99Hi   float64
		roundThr       []float64
		outThr, outP99 bool
		discarded      int
	}
	// Others' load during a run: what the disk holding dir read and wrote
	// beyond what the run's own process did (the children's rusage, as the
	// kernel counts their I/O), as a share of the run's writes; and the CPU
	// time others used (/proc/stat busy time minus the children's), in
	// cores.
	bd, err := hostfs.FS{}.DeviceOf(dir)
	dev := bd.Name
	if err != nil {
		b.Logf("cannot watch the disk for other processes' I/O: %v", err)
	}
	const disturbedIO, disturbedCPU = 0.15, 0.5
	type disturbance struct{ io, cpu float64 }
	measured := func(run func() journalRun) (journalRun, disturbance) {
		rd0, wr0, _ := sectorsIO(dev)
		in0, out0, cpu0, ivc0 := childUsage()
		busy0, _ := testenv.CPUTime()
		t0 := time.Now()
		f := run()
		rd1, wr1, _ := sectorsIO(dev)
		in1, out1, cpu1, ivc1 := childUsage()
		busy1, _ := testenv.CPUTime()
		el := time.Since(t0)
		own := max(out1-out0, 1)
		foreign := float64((wr1-wr0)-(out1-out0)+(rd1-rd0)-(in1-in0)) / float64(own)
		others := ((busy1 - busy0) - (cpu1 - cpu0)).Seconds() / el.Seconds()
		if dev == "" {
			foreign = 0
		}
		f.cores, f.preempt = (cpu1-cpu0).Seconds()/el.Seconds(), float64(ivc1-ivc0)/el.Seconds()
		return f, disturbance{max(foreign, 0), max(others, 0)}
	}
	disturbed := func(d disturbance) bool { return d.io > disturbedIO || d.cpu > disturbedCPU }
	cpuMatch := os.Getenv("TIERKEEPER_BENCH_JOURNAL_CPU_MATCH") == "1"
	// runLoaded is runGo beside a burner of cores CPUs (a child process,
	// so measured counts its CPU as the run's own, not another's).
	runLoaded := func(c journalCase, cores float64) journalRun {
		stop := startBurner(b, cores)
		defer stop()
		return runGo(c)
	}
	// pooled is the pooled ratios diskbench/BookKeeper of the rounds idx
	// (a bootstrap resample, or every round).
	ratio := func(d, j float64) float64 {
		if j <= 0 {
			return math.NaN()
		}
		return d / j
	}
	pick := func(runs []journalRun, idx []int) []journalRun {
		out := make([]journalRun, len(idx))
		for k, i := range idx {
			out[k] = runs[i]
		}
		return out
	}
	fmt.Printf("\nload average before: %s; disk %s\n", testenv.LoadAvg(), dev)
	start := time.Now()
	var rows []row
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows = rows[:0]
		for _, c := range cases {
			rw := row{c: c}
			for r, tries := 0, 0; r < rounds; {
				var j, d journalRun
				var fj, fd disturbance
				if r%2 == 0 {
					j, fj = measured(func() journalRun { return runJava(c) })
					d, fd = measured(func() journalRun { return runGo(c) })
				} else {
					d, fd = measured(func() journalRun { return runGo(c) })
					j, fj = measured(func() journalRun { return runJava(c) })
				}
				// Another process used the disk or the CPUs during a run: the
				// pair measured the neighbour, not the tools. Run it again (at
				// most rounds more times per case, then keep it).
				note := fmt.Sprintf("others: I/O +%.0f%% / +%.0f%% of the runs' writes, CPU %.2f / %.2f cores", 100*fj.io, 100*fd.io, fj.cpu, fd.cpu)
				if (disturbed(fj) || disturbed(fd)) && tries < rounds {
					tries++
					rw.discarded++
					fmt.Printf("       %s round %d: BookKeeper %.1f MiB/s, diskbench %.1f MiB/s (%s): disturbed, again\n", c, r+1, j.mbps(), d.mbps(), note)
					continue
				}
				if cpuMatch {
					// The model again, beside what BookKeeper's JVM used
					// beyond it in this round.
					extra := min(max(j.cores-d.cores, 0), 2)
					l, fl := measured(func() journalRun { return runLoaded(c, extra) })
					// The burner is this run's own CPU; only I/O counts as
					// another's here.
					if fl.io > disturbedIO && tries < rounds {
						tries++
						rw.discarded++
						fmt.Printf("       %s round %d: loaded run disturbed (I/O +%.0f%%), again\n", c, r+1, 100*fl.io)
						continue
					}
					rw.loaded, rw.burn = append(rw.loaded, l), append(rw.burn, extra)
					fmt.Printf("       %s round %d: diskbench beside a burner of %.2f cores: %.1f MiB/s, p99 add %.2f ms (%.2f of BookKeeper's), fdatasync %.2f ms\n",
						c, r+1, extra, l.mbps(), ms(l.add, 0.99), ratio(ms(l.add, 0.99), ms(j.add, 0.99)), ms(l.sync, 0.99))
				}
				r++
				fmt.Printf("       %s round %d: BookKeeper %.1f MiB/s, diskbench %.1f MiB/s; p99 add %.2f / %.2f ms (%.2f), fdatasync %.2f / %.2f ms (%.2f); own CPU %.2f / %.2f cores, preempted %.0f / %.0f /s (%s)\n",
					c, r, j.mbps(), d.mbps(), ms(j.add, 0.99), ms(d.add, 0.99), ratio(ms(d.add, 0.99), ms(j.add, 0.99)),
					ms(j.sync, 0.99), ms(d.sync, 0.99), ratio(ms(d.sync, 0.99), ms(j.sync, 0.99)), j.cores, d.cores, j.preempt, d.preempt, note)
				rw.java, rw.db = append(rw.java, j), append(rw.db, d)
				rw.roundThr = append(rw.roundThr, d.mbps()/j.mbps())
			}
			all := make([]int, len(rw.java))
			for k := range all {
				all[k] = k
			}
			rw.jp, rw.dp = poolRuns(b, rw.java), poolRuns(b, rw.db)
			rw.thr = ratio(rw.dp.mbps, rw.jp.mbps)
			rw.r50 = ratio(ms(rw.dp.add, 0.5), ms(rw.jp.add, 0.5))
			rw.r99 = ratio(ms(rw.dp.add, 0.99), ms(rw.jp.add, 0.99))
			rw.s99 = ratio(ms(rw.dp.sync, 0.99), ms(rw.jp.sync, 0.99))
			// 90% intervals: resample whole rounds (both tools' runs of a
			// round together, so the pairing in time is kept), pool, take
			// the ratio.
			const resamples = 1000
			boot := func(get func(j, d journalPool) float64) (float64, float64) {
				return stats.BootstrapInterval(len(all), resamples, 0.9, uint64(len(rows)+1), func(idx []int) float64 {
					return get(poolRuns(b, pick(rw.java, idx)), poolRuns(b, pick(rw.db, idx)))
				})
			}
			rw.thrLo, rw.thrHi = boot(func(j, d journalPool) float64 { return ratio(d.mbps, j.mbps) })
			rw.r99Lo, rw.r99Hi = boot(func(j, d journalPool) float64 { return ratio(ms(d.add, 0.99), ms(j.add, 0.99)) })
			rw.s99Lo, rw.s99Hi = boot(func(j, d journalPool) float64 { return ratio(ms(d.sync, 0.99), ms(j.sync, 0.99)) })
			rw.outThr = !(rw.thr >= 0.9 && rw.thr <= 1.1)
			rw.outP99 = !(rw.r99 >= 0.75 && rw.r99 <= 1.25)
			rows = append(rows, rw)
			fmt.Printf("[%d/%d] %-12s BookKeeper %7.1f MiB/s  diskbench %7.1f MiB/s  ratio %.2f %s  p99 ratio %.2f %s  fdatasync p99 ratio %.2f %s\n",
				len(rows), len(cases), c, rw.jp.mbps, rw.dp.mbps, rw.thr, interval(rw.thrLo, rw.thrHi),
				rw.r99, interval(rw.r99Lo, rw.r99Hi), rw.s99, interval(rw.s99Lo, rw.s99Hi))
		}
	}
	b.StopTimer()

	fmt.Printf("\nBookKeeper 4.17.2 Journal vs diskbench journal (bookkeeper model), %s, Pulsar's bookkeeper.conf journal settings,\n", dir)
	fmt.Printf("default in-flight (2 × journalBufferedWritesThreshold per journal), %v per run after a warm-up of %v (diskbench) / %v (JVM),\n%d alternating rounds (ABBA), pooled per tool, [90%% bootstrap interval over rounds], fadvise %v\n",
		dur, warm, javaWarm, rounds, fadvise)
	fmt.Printf("%-12s %9s %9s %-17s  %8s %8s %5s  %8s %8s %-17s  %-17s %s\n", "journals × entry", "BK MiB/s", "db MiB/s", "ratio",
		"BK p50", "db p50", "ratio", "BK p99", "db p99", "ratio", "fdatasync p99", "db group")
	var bad []string
	worstThr, worstP99 := 1.0, 1.0
	for _, rw := range rows {
		mark := ""
		if rw.outThr || rw.outP99 {
			mark = "  <- outside target"
			bad = append(bad, fmt.Sprintf("%s (throughput %.2f, p99 %.2f)", rw.c, rw.thr, rw.r99))
		}
		fmt.Printf("%-16s %8.1f %9.1f %4.2f %-12s  %6.2fms %6.2fms %5.2f  %6.2fms %6.2fms %4.2f %-12s  %4.2f %-12s %s%s\n", rw.c,
			rw.jp.mbps, rw.dp.mbps, rw.thr, interval(rw.thrLo, rw.thrHi),
			ms(rw.jp.add, 0.5), ms(rw.dp.add, 0.5), rw.r50,
			ms(rw.jp.add, 0.99), ms(rw.dp.add, 0.99), rw.r99, interval(rw.r99Lo, rw.r99Hi),
			rw.s99, interval(rw.s99Lo, rw.s99Hi), units.HumanBytes(rw.dp.group), mark)
		if d := rw.thr - 1; d*d > (worstThr-1)*(worstThr-1) {
			worstThr = rw.thr
		}
		if d := rw.r99 - 1; d*d > (worstP99-1)*(worstP99-1) {
			worstP99 = rw.r99
		}
	}
	// Where the add latency's tail comes from: each tool's own fdatasync
	// timings (BookKeeper's JOURNAL_SYNC stat around force(false), the
	// model's around fdatasync), BookKeeper's own add latency, and why
	// BookKeeper flushed its groups.
	fmt.Printf("\nown timings (pooled): fdatasync p50 / p99 of each tool, BookKeeper's JOURNAL_ADD_ENTRY p99,\ngroups flushed per second by journalMaxGroupWaitMSec / by journalBufferedWritesThreshold, BookKeeper's and the model's,\neach tool's CPU (cores, whole run) and involuntary context switches per second\n")
	fmt.Printf("%-16s %9s %9s %9s %9s   %11s   %-14s %-14s %-12s %s\n", "journals × entry", "BK s.p50", "db s.p50", "BK s.p99", "db s.p99", "BK add p99",
		"BK wait / size", "db wait / size", "CPU BK / db", "preempted BK / db")
	for _, rw := range rows {
		fmt.Printf("%-16s %7.2fms %7.2fms %7.2fms %7.2fms   %9.2fms   %-14s %-14s %-12s %.0f / %.0f\n", rw.c,
			ms(rw.jp.sync, 0.5), ms(rw.dp.sync, 0.5), ms(rw.jp.sync, 0.99), ms(rw.dp.sync, 0.99),
			ms(rw.jp.bkOps["JOURNAL_ADD_ENTRY"], 0.99), fmt.Sprintf("%.0f / %.0f", rw.jp.byWait, rw.jp.bySize),
			fmt.Sprintf("%.0f / %.0f", rw.dp.byWait, rw.dp.bySize), fmt.Sprintf("%.2f / %.2f", rw.jp.cores, rw.dp.cores), rw.jp.preempt, rw.dp.preempt)
	}
	// BookKeeper's stages, each of its op latencies pooled (p50 / p99 ms):
	// where in its journal an add's time goes.
	fmt.Printf("\nBookKeeper's own op latencies (pooled, p50 / p99 ms)\n")
	for _, rw := range rows {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range rw.jp.bkOps {
				if !yield(k) {
					return
				}
			}
		})
		var parts []string
		for _, k := range names {
			l := rw.jp.bkOps[k]
			parts = append(parts, fmt.Sprintf("%s %.2f/%.2f", strings.TrimPrefix(k, "JOURNAL_"), ms(l, 0.5), ms(l, 0.99)))
		}
		fmt.Printf("%-16s %s\n", rw.c, strings.Join(parts, ", "))
	}
	if cpuMatch {
		// The model with BookKeeper's extra CPU taken by a burner: does
		// the p99 gap close?
		fmt.Printf("\nthe model beside a burner of the CPU BookKeeper's JVM used beyond it (pooled over the rounds; ratios to BookKeeper's runs)\n")
		fmt.Printf("%-16s %9s %8s %9s %9s %8s %10s %12s\n", "journals × entry", "burner", "MiB/s", "ratio", "p99 add", "ratio", "alone", "fdatasync p99")
		for _, rw := range rows {
			if len(rw.loaded) == 0 {
				continue
			}
			lp := poolRuns(b, rw.loaded)
			var burn float64
			for _, v := range rw.burn {
				burn += v / float64(len(rw.burn))
			}
			fmt.Printf("%-16s %5.2f cores %8.1f %9.2f %7.2fms %8.2f %10.2f %7.2fms (%.2f)\n", rw.c, burn, lp.mbps, ratio(lp.mbps, rw.jp.mbps),
				ms(lp.add, 0.99), ratio(ms(lp.add, 0.99), ms(rw.jp.add, 0.99)), rw.r99, ms(lp.sync, 0.99), ratio(ms(lp.sync, 0.99), ms(rw.jp.sync, 0.99)))
		}
	}
	fmt.Printf("per-round throughput ratios: ")
	for _, rw := range rows {
		fmt.Printf("%s %.2f ", rw.c, rw.roundThr)
	}
	discarded := 0
	for _, rw := range rows {
		discarded += rw.discarded
	}
	fmt.Printf("\nrounds run again because other processes did more than %.0f%% of a run's I/O or used more than %.1f cores: %d",
		100*disturbedIO, disturbedCPU, discarded)
	fmt.Printf("\nload average after: %s (%s)\n\n", testenv.LoadAvg(), time.Since(start).Round(time.Second))
	b.ReportMetric(worstThr, "worst-throughput-ratio")
	b.ReportMetric(worstP99, "worst-p99-ratio")
	if len(bad) > 0 && os.Getenv("TIERKEEPER_BENCH_JOURNAL_NOFAIL") != "1" {
		b.Errorf("outside [0.9, 1.1] throughput / [0.75, 1.25] p99 (pooled ratios): %s", strings.Join(bad, ", "))
	}
}

// startBurner starts a child process (this test binary, TestJournalBurner)
// that keeps cores CPUs busy: ceil(cores) threads, each spinning its share
// of every 10 ms and sleeping the rest. stop kills and reaps it, so its CPU
// time counts as a child's. Nothing is started for cores ≤ 0.01.
func startBurner(b *testing.B, cores float64) (stop func()) {
	if cores <= 0.01 {
		return func() {}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournalBurner$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("TIERKEEPER_BURN_CORES=%.3f", cores))
	if err := cmd.Start(); err != nil {
		b.Fatalf("burner: %v", err)
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// TestJournalBurner is startBurner's child: it runs only with
// TIERKEEPER_BURN_CORES set, and burns until it is killed (at most 10
// minutes).
func TestJournalBurner(t *testing.T) {
	v := os.Getenv("TIERKEEPER_BURN_CORES")
	if v == "" {
		t.Skip("the CPU burner of BenchmarkJournalVsBookKeeper (TIERKEEPER_BENCH_JOURNAL_CPU_MATCH=1)")
	}
	cores, err := strconv.ParseFloat(v, 64)
	if err != nil || cores <= 0 || cores > 8 {
		t.Fatalf("TIERKEEPER_BURN_CORES=%q: want 0 < cores <= 8", v)
	}
	threads := int(math.Ceil(cores))
	duty := cores / float64(threads)
	const period = 10 * time.Millisecond
	deadline := time.Now().Add(10 * time.Minute)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			x := 1.0
			for time.Now().Before(deadline) {
				start := time.Now()
				for time.Since(start) < time.Duration(duty*float64(period)) {
					x = x*1.0000001 + 1e-9
				}
				if rest := period - time.Since(start); rest > 0 {
					time.Sleep(rest)
				}
			}
			_ = x
		}()
	}
	wg.Wait()
}
