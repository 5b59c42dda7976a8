package bookieagent

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/diskbench/fiocmp"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// BenchmarkRecommendRepeat is the recommendation's repeatability check (`make
// bench-bookieagent-repeat`): BA_REPEAT_RUNS (3) recommendations with the
// default budget on BA_REPEAT_DIR/{journal,ledgers} (one disk), then fio
// runs of BA_FIO_SECONDS (30) of the same patterns on the same disk. It
// prints every numeric setting per run — directory counts and
// writeBufferSizeBytes must be identical, every other value within ±15% of
// the median — and the agent's sustained entry-log and journal throughput
// against fio's. It fails when a goal is missed, and prints the load
// average before and after (the figures mean something only on a quiet
// machine). The measurements are saved as
// BA_REPEAT_DIR/runs/<UTC start>/run-N.json (ReadInput reads them).
//
// With BA_REPEAT_FROM=<a runs/<stamp> directory> it measures nothing: it
// runs Recommend on that directory's saved run-N.json and prints the same
// table of settings, so a rule change is re-evaluated on measurements
// already taken.
func BenchmarkRecommendRepeat(b *testing.B) {
	if from := os.Getenv("BA_REPEAT_FROM"); from != "" {
		recs, err := recommendSaved(from)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Printf("Recommend on the %d runs saved in %s\n", len(recs), from)
		if printSettings(recs) {
			b.Error("a repeatability goal was missed (see above)")
		}
		return
	}
	dir := os.Getenv("BA_REPEAT_DIR")
	if dir == "" {
		b.Skip("set BA_REPEAT_DIR (make bench-bookieagent-repeat does) or BA_REPEAT_FROM")
	}
	saveDir := filepath.Join(dir, "runs", time.Now().UTC().Format("20060102T150405Z"))
	if err := os.MkdirAll(saveDir, 0o755); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("measurements saved in %s\n", saveDir)
	runs := testenv.EnvInt(b, "BA_REPEAT_RUNS", 3)
	fioSec := testenv.EnvInt(b, "BA_FIO_SECONDS", 30)
	budget := DefaultBenchTime
	if v := os.Getenv("BA_REPEAT_BUDGET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		budget = d
	}
	j, l := filepath.Join(dir, "journal"), filepath.Join(dir, "ledgers")
	for _, d := range []string{j, l} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	fmt.Printf("load average before: %s", loadavg())
	fio, err := exec.LookPath("fio")
	if err != nil {
		b.Fatalf("fio: %v (make deps installs it)", err)
	}
	var recs []*Recommendation
	var walls []time.Duration // each run's wall time (the benchmark, PrepareBench to the end of Run)
	type pair struct{ agent, fio float64 }
	var logPairs, sizePairs []pair
	journalPairs := map[int][]pair{}
	dur := time.Duration(max(20, fioSec)) * time.Second
	for i := 1; i <= runs; i++ {
		p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: []string{j}, LedgerDirs: []string{l},
			TimeBudget: budget, CPUs: runtime.NumCPU(), RaiseGOMAXPROCS: true})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := p.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		in := Input{JournalDisks: res.JournalDisks, LedgerDisks: res.LedgerDisks, Bench: &res.Plan, CPUs: runtime.NumCPU(),
			CPUsSource: "runtime.NumCPU", DirectMemoryBytes: 4 * GiB, DirectMemorySource: "--max-direct-memory 4g"}
		var js bytes.Buffer
		if err := WriteInput(&js, in); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(saveDir, fmt.Sprintf("run-%d.json", i)), js.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		rec, err := Recommend(in)
		if err != nil {
			b.Fatal(err)
		}
		med, most, _ := loadSummary(res.Plan.Load)
		took := time.Since(start)
		walls = append(walls, took)
		fmt.Printf("run %d: %.1f s, %s written, %.1f s per measurement, rounds %v, other processes' CPUs median %.1f (max %.1f) of %d, load %s", i, took.Seconds(),
			units.HumanBytes(res.BytesWritten), res.Plan.MeasureSec, res.Plan.Rounds, med, most, res.Plan.MachineCPUs, loadavg())
		recs = append(recs, rec)

		// fio right after the run, on the same disk: the host's caches
		// change over minutes, so each run is compared with its own fio.
		// fio's ramp (excluded from its figure) is the longest warm-up
		// the agent's 1 × 1 MiB runs needed to settle: both figures are
		// then past the disk's burst region, and fio measures dur after it.
		agentLog := entryLogSizes(in.LedgerDisks[0].Results)[MiB].median()
		ramp := 2 * time.Second
		for _, r := range in.LedgerDisks[0].Results {
			if r.Workload == diskbench.WorkloadEntryLog && r.Writers == 1 && r.BlockSize == MiB {
				ramp = max(ramp, time.Duration(r.WarmupSec*float64(time.Second)))
			}
		}
		el, elMedian, err := runFioCase(fio, l, fiocmp.Case{Workload: diskbench.WorkloadEntryLog, Writers: 1, BlockSize: MiB, FlushEvery: 32 * MiB,
			FileSize: int64(max(agentLog, 1e9)*(dur+ramp).Seconds()*2) + GiB}, dur, ramp)
		if err != nil {
			b.Fatal(err)
		}
		// The agent's figure is a median of per-second samples; so is the
		// reference (fio's mean is printed beside it).
		ref := elMedian
		if ref == 0 {
			ref = el.BytesPerSec
		}
		logPairs = append(logPairs, pair{agentLog, ref})
		// The figure the sizes use: the rounds' lower median, at most the
		// probe's rate past its knee (ledgerDirRules).
		sized := entryLogSizes(in.LedgerDisks[0].Results)[MiB].lowMedian()
		if ps, ok := probePastKnee(in.LedgerDisks[0]); ok {
			sized = min(sized, ps)
		}
		sizePairs = append(sizePairs, pair{sized, ref})
		fmt.Printf("  fio entry log after a %v ramp: per-second median %.0f MB/s, mean %.0f MB/s\n", ramp.Round(time.Second), elMedian/1e6, el.BytesPerSec/1e6)
		for _, n := range []int{1, 2, 4} {
			// The journal model's writes per fdatasync are its groups: fio
			// writes groups of the mean size the model wrote, one
			// fdatasync each, into sparse files (BookKeeper's files).
			var group, written rounds
			for _, r := range journalWritersSweep(in.JournalDisks[0].Results)[n] {
				switch {
				case r.Alternation != nil && r.JournalIO != nil && r.JournalIO.Groups > 0:
					// A count's turns: its acknowledged bytes per second
					// (the journal I/O is the whole alternating point's).
					group.add(r.JournalIO.MeanGroupBytes)
					written.add(r.BytesPerSec)
				case r.JournalIO != nil && r.JournalIO.Groups > 0 && r.DurationSec > 0:
					group.add(r.JournalIO.MeanGroupBytes)
					written.add(float64(r.JournalIO.WriteBytes) / r.DurationSec)
				}
			}
			if group.n() == 0 {
				continue
			}
			bs := max(4096, int64(group.median())/4096*4096)
			m, _, err := runFioCase(fio, j, fiocmp.Case{Workload: diskbench.WorkloadJournal, Writers: n, BlockSize: bs, SyncEvery: 1,
				FileSize: int64(max(written.median(), 1e9)*dur.Seconds()*2/float64(n)) + 256*MiB, Prealloc: diskbench.PreallocSparse}, dur, 2*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			journalPairs[n] = append(journalPairs[n], pair{written.median(), m.BytesPerSec})
		}
		fmt.Printf("  fio after run %d: load %s", i, loadavg())
	}

	// 1. The settings across runs, and the wall time against the budget.
	fail := printSettings(recs)
	line := fmt.Sprintf("%-38s", "wall time of the benchmark")
	over := false
	for _, w := range walls {
		line += fmt.Sprintf(" %-13s", fmt.Sprintf("%.1f s", w.Seconds()))
		over = over || w > budget+time.Second
	}
	if over {
		line, fail = line+fmt.Sprintf(" OVER the %v budget", budget), true
	} else {
		line += fmt.Sprintf(" ok (≤ %v)", budget)
	}
	fmt.Println(line)

	// 2. Sustained throughput against fio, each run against its own fio.
	fmt.Printf("\n%-44s %s\n", fmt.Sprintf("sustained MB/s, agent / fio %.0f s (ratio)", dur.Seconds()), strings.Repeat(fmt.Sprintf("%-24s", "run"), runs))
	row := func(name string, ps []pair, goal bool) {
		line := fmt.Sprintf("%-44s ", name)
		var ratios rounds
		for _, p := range ps {
			r := p.agent / p.fio
			ratios.add(r)
			line += fmt.Sprintf("%-24s", fmt.Sprintf("%.0f / %.0f (%.2f)", p.agent/1e6, p.fio/1e6, r))
		}
		// The reference's own repeatability: when fio's figures of the
		// same pattern differ by more than the goal's ±15% from run to
		// run, the disk (or the machine's load) moved under both.
		var agents, fios rounds
		for _, p := range ps {
			agents.add(p.agent)
			fios.add(p.fio)
		}
		mark := fmt.Sprintf("median ratio %.2f; spread agent %.0f%%, fio %.0f%%", ratios.median(), 100*agents.spread(), 100*fios.spread())
		if goal && (ratios.median() < 0.85 || ratios.median() > 1.15) {
			mark, fail = mark+" OUT OF ±15%", true
		}
		if fios.spread() > 0.30 {
			mark += " (fio itself not repeatable: the disk's rate moved between runs)"
		}
		fmt.Println(line + mark)
	}
	// The rounds' median (the paired comparisons read the rounds
	// against each other), and the figure the sizes use.
	row("entry log 1 writer × 1MiB, rounds' median", logPairs, false)
	row("entry log 1 writer × 1MiB, the sizes' figure", sizePairs, true)
	for _, n := range []int{1, 2, 4} {
		// fio writes, then syncs, in one job; BookKeeper's journal thread
		// writes the next group while its force-write thread syncs the
		// last, so the model may exceed fio (make bench-journal compares
		// it with BookKeeper's own Journal).
		row(fmt.Sprintf("journal %d (in its turns) vs fio %d job(s)", n, n), journalPairs[n], false)
	}
	fmt.Printf("load average after: %s", loadavg())
	if fail {
		b.Error("a repeatability or fio goal was missed (see above)")
	}
}

// recommendSaved runs Recommend on the run-N.json saved in dir, in run
// order.
func recommendSaved(dir string) ([]*Recommendation, error) {
	var recs []*Recommendation
	for i := 1; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("run-%d.json", i))
		if _, err := os.Stat(p); err != nil {
			if i == 1 {
				return nil, fmt.Errorf("no saved run: %w", err)
			}
			return recs, nil
		}
		in, err := ReadInput(p)
		if err != nil {
			return nil, err
		}
		rec, err := Recommend(in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		recs = append(recs, rec)
	}
}

// printSettings prints every setting per run with its check — directory
// counts and writeBufferSizeBytes identical, every other numeric value
// within ±15% of the median — and, for the directory counts, what decided
// them per run; it reports whether a check failed.
func printSettings(recs []*Recommendation) bool {
	runs := len(recs)
	fmt.Printf("\n%-38s %s  check\n", "setting", strings.Repeat(fmt.Sprintf("%-14s", "run"), runs))
	fail := false
	for _, s := range recs[0].Settings {
		var vals []string
		for _, r := range recs {
			v, _ := r.Setting(s.Key)
			vals = append(vals, v.Effective())
		}
		check := "ok"
		exact := s.NewBookiesOnly || s.Key == "writeBufferSizeBytes"
		if exact {
			for _, v := range vals {
				if countOrValue(v) != countOrValue(vals[0]) {
					check, fail = "DIFFERS (must be identical)", true
				}
			}
		} else if spread, ok := numSpread(vals); ok && spread > 0.15 {
			check, fail = fmt.Sprintf("SPREAD %.0f%% > 15%%", spread*100), true
		}
		line := fmt.Sprintf("%-38s ", s.Key)
		for _, v := range vals {
			line += fmt.Sprintf("%-14s", truncate(countOrValue(v), 13))
		}
		fmt.Println(line + " " + check)
	}
	for _, key := range []string{"journalDirectories", "ledgerDirectories", "writeBufferSizeBytes"} {
		for i, r := range recs {
			if s, ok := r.Setting(key); ok && len(s.Evidence) > 0 {
				fmt.Printf("  %s run %d: %s\n", key, i+1, s.Evidence[0])
			}
		}
	}
	return fail
}

// runFioCase runs one fio job file of c for d after ramp. For one job it
// also returns the median of fio's per-second bandwidth log after the
// ramp — the statistic the agent's figures are (sustainedRate) — else 0.
func runFioCase(fio, dir string, c fiocmp.Case, d, ramp time.Duration) (fiocmp.Metrics, float64, error) {
	jf, err := os.CreateTemp("", "ba-repeat-*.fio")
	if err != nil {
		return fiocmp.Metrics{}, 0, err
	}
	defer os.Remove(jf.Name())
	logDir, err := os.MkdirTemp("", "ba-repeat-bw-")
	if err != nil {
		return fiocmp.Metrics{}, 0, err
	}
	defer os.RemoveAll(logDir)
	jf.WriteString(fiocmp.JobFile(dir, c, d, ramp))
	fmt.Fprintf(jf, "write_bw_log=%s\nlog_avg_msec=1000\n", filepath.Join(logDir, "fio"))
	jf.Close()
	defer func() {
		m, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf(".diskbench-fio-%d.*", os.Getpid())))
		for _, f := range m {
			os.Remove(f)
		}
	}()
	// fio runs ramp + d; the rest is its setup (file layout) and exit.
	out, err := testenv.RunTool(context.Background(), ramp+d+2*time.Minute, exec.Command(fio, "--output-format=json", jf.Name()))
	if err != nil {
		return fiocmp.Metrics{}, 0, fmt.Errorf("fio: %w", err)
	}
	m, err := fiocmp.ParseFioJSON(out, c.Workload)
	if err != nil || max(1, c.Writers) > 1 {
		return m, 0, err
	}
	// fio_bw.1.log: "msec, KiB/s, direction, bs, offset[, prio]" per
	// second, the times counted from the end of the ramp (fio 3.33).
	logs, _ := filepath.Glob(filepath.Join(logDir, "fio_bw*.log"))
	var per rounds
	if len(logs) == 1 {
		b, _ := os.ReadFile(logs[0])
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Split(line, ",")
			if len(f) < 2 {
				continue
			}
			_, err1 := strconv.ParseFloat(strings.TrimSpace(f[0]), 64)
			kib, err2 := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
			if err1 == nil && err2 == nil {
				per.add(kib * 1024)
			}
		}
	}
	return m, per.median(), nil
}

// countOrValue renders directory lists as their count.
func countOrValue(v string) string {
	if strings.Contains(v, "/") {
		return fmt.Sprintf("%d dir(s)", len(strings.Split(v, ",")))
	}
	return v
}

// numSpread is (max − min) / median of numeric values.
func numSpread(vals []string) (float64, bool) {
	var f []float64
	for _, v := range vals {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false
		}
		f = append(f, x)
	}
	slices.Sort(f)
	m := f[len(f)/2]
	if m == 0 {
		return 0, true
	}
	return (f[len(f)-1] - f[0]) / math.Abs(m), true
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(bytes.TrimSpace(b)) + "\n"
}
