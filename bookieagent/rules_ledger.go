package bookieagent

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// entryLogSizes returns the 1-writer entry-log rounds per write size.
func entryLogSizes(rs []diskbench.Result) map[int64]rounds {
	by := map[int64]rounds{}
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadEntryLog && usable(r) && max(1, r.Writers) == 1 {
			v := by[r.BlockSize]
			v.add(sustainedRate(r))
			by[r.BlockSize] = v
		}
	}
	return by
}

// entryLogWriters returns the entry-log rounds per writer count at the
// write size measured with the most counts (ties: the larger size).
func entryLogWriters(rs []diskbench.Result) (int64, map[int]rounds) {
	by := map[int64]map[int]rounds{}
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadEntryLog && usable(r) {
			w := max(1, r.Writers)
			if by[r.BlockSize] == nil {
				by[r.BlockSize] = map[int]rounds{}
			}
			v := by[r.BlockSize][w]
			v.add(sustainedRate(r))
			by[r.BlockSize][w] = v
		}
	}
	var bs int64 = -1
	for b, m := range by {
		if _, ok := m[1]; !ok {
			continue
		}
		if bs < 0 || len(m) > len(by[bs]) || (len(m) == len(by[bs]) && b > bs) {
			bs = b
		}
	}
	if bs < 0 {
		return 0, nil
	}
	return bs, by[bs]
}

// pickEntryLogBuffer applies the writeBufferSizeBytes rule. BookKeeper's
// entry logger copies each entry into a direct buffer of
// writeBufferSizeBytes and write(2)s the buffer when it is full; the
// device's I/O size comes from the kernel's writeback and the fdatasync
// every flushEntrylogBytes, not from this buffer. So the sweep of
// buffered write sizes measures the syscall and copy overhead: Pulsar's
// 64 KiB is kept unless a larger size clearly beats it by >5% (the
// LevelOff margin); then the smallest size within 5% of the best.
func pickEntryLogBuffer(by map[int64]rounds) (int64, string) {
	sizes := slices.Sorted(maps.Keys(by))
	best := 0.0
	for _, s := range sizes {
		best = max(best, by[s].median())
	}
	var parts []string
	chosen := int64(0)
	for _, s := range sizes {
		parts = append(parts, fmt.Sprintf("%s %s", units.FormatBytes(s), by[s].describe()))
		if chosen == 0 && by[s].median() >= LevelOff*best {
			chosen = s
		}
	}
	ev := fmt.Sprintf("buffered write size → sustained MB/s (1 writer): %s; %.0f%% of the best first at %s",
		strings.Join(parts, ", "), LevelOff*100, units.FormatBytes(chosen))
	def := int64(64 * KiB)
	d, hasDef := by[def]
	switch {
	case chosen == def:
		return def, ev + " → 64KiB"
	case !hasDef:
		return chosen, ev + "; 64KiB not measured → " + units.FormatBytes(chosen)
	case chosen > def && (!by[chosen].repeatable() || !d.repeatable()):
		return def, ev + fmt.Sprintf("; the rounds of %s or 64KiB are not all within ±%.0f%% of their median (not repeatable): the evidence does not separate them, Pulsar's 64KiB kept",
			units.FormatBytes(chosen), 100*SpreadGate)
	case chosen > def && !by[chosen].beats(d, 1/LevelOff):
		return def, ev + fmt.Sprintf("; %s does not clearly beat 64KiB by >%.0f%%: the evidence does not separate them, Pulsar's 64KiB kept",
			units.FormatBytes(chosen), (1/LevelOff-1)*100)
	}
	return chosen, ev + " → " + units.FormatBytes(chosen)
}

// pickLedgerCount applies the ledgerDirectories rule to one disk: the
// writer counts measured (one entry logger and flush thread per ledger
// dir) through pickCount against base; then, when one flush thread's
// ~500 MB/s (BK PR #1289) is below the disk's rate, the count is raised
// only to a measured count that is not clearly slower — never to a count
// that was not measured. It returns the count and the disk's sustained
// aggregate MB/s at it.
func pickLedgerCount(rs []diskbench.Result, base int, peak1 float64) (int, float64, string) {
	bs, by := entryLogWriters(rs)
	if len(by) < 2 {
		n := base
		ev := fmt.Sprintf("writer counts not measured; %s (1 writer)", units.DecimalRate(peak1))
		if f := flushFloor(peak1); f > n {
			ev += fmt.Sprintf("; one flush thread sustains ~%.0f MB/s and this disk more, but %d dirs were not measured: N=%d kept", FlushThreadBytesPerSec/1e6, f, n)
		} else {
			ev += fmt.Sprintf(" → N=%d", n)
		}
		return n, peak1, ev
	}
	ws := slices.Sorted(maps.Keys(by))
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("N=%d %s", w, by[w].describe()))
	}
	n, note := pickCount(by, func(c int) bool { return c <= MaxLedgerDirsPerDisk }, base, LedgerDirGain)
	ev := fmt.Sprintf("%s writes, sustained: %s → N=%d", units.FormatBytes(bs), strings.Join(parts, ", "), n)
	if note != "" {
		ev += " (" + note + ")"
	}
	bw := by[n].median()
	if bw == 0 {
		bw = peak1
	}
	if f := flushFloor(bw); f > n {
		to := n
		for _, c := range ws {
			if c > n && c <= f && !by[n].beats(by[c], LedgerDirGain) && by[c].repeatable() {
				to = c
			}
		}
		ev += fmt.Sprintf("; %s needs ⌈%s ÷ %.0f MB/s⌉ = %d flush threads", units.DecimalRate(bw), units.DecimalRate(bw), FlushThreadBytesPerSec/1e6, f)
		if to > n {
			ev += fmt.Sprintf(" → raised to the measured N=%d", to)
			n, bw = to, max(bw, by[to].median())
		} else {
			ev += fmt.Sprintf(", but no measured count up to %d keeps the rate: N=%d kept", f, n)
		}
	}
	return n, bw, ev
}

func flushFloor(bw float64) int {
	return max(1, min(MaxLedgerDirsPerDisk, int(math.Ceil(bw/FlushThreadBytesPerSec))))
}

// mixedFigures are the shared-device measurements: the journal and the
// entry log alone (1 journal, 1 writer × 1 MiB) and at the same time.
type mixedFigures struct {
	journalAlone, journalMixed rounds // MB/s
	p99Alone, p99Mixed         float64
	syncP50Mixed               float64
	logAlone, logMixed         rounds
}

func mixedOf(j, l Disk) (mixedFigures, bool) {
	var m mixedFigures
	// Latencies are lower medians over the rounds: one round disturbed by
	// something else on the machine (which only adds latency) does not
	// decide, also when only 2 rounds fitted the budget.
	var p99, p50 rounds
	for _, r := range j.MixedResults {
		if r.Workload == diskbench.WorkloadJournal && usable(r) {
			m.journalMixed.add(sustainedRate(r))
			if p, ok := commitP99(r); ok {
				p99.add(float64(p))
			}
			if r.SyncLatency != nil && r.SyncLatency.Count > 0 {
				p50.add(float64(r.SyncLatency.P50Ns))
			}
		}
	}
	m.p99Mixed, m.syncP50Mixed = p99.lowMedian(), p50.lowMedian()
	for _, r := range l.MixedResults {
		if r.Workload == diskbench.WorkloadEntryLog && usable(r) {
			m.logMixed.add(sustainedRate(r))
		}
	}
	if m.journalMixed.n() == 0 || m.logMixed.n() == 0 {
		return m, false
	}
	sw := journalWritersSweep(j.Results)
	m.journalAlone = rateRounds(sw[1])
	m.p99Alone, _ = medianP99(sw[1])
	m.logAlone = entryLogSizes(l.Results)[MiB]
	return m, true
}

// gcPlan is the GC and compaction schedule for the ledger dirs.
type gcPlan struct {
	gcWaitMs, minorSec, majorSec int64
	minorEv, majorEv, gcEv       []string
}

// Pulsar's shipped GC and compaction settings (conf/bookkeeper.conf).
const (
	GCWaitTimeMs          = 900000
	MinorCompactionSec    = 3600
	MajorCompactionSec    = 86400
	MinorCompactionThresh = 0.2
	MajorCompactionThresh = 0.5
)

// planGC derives the compaction intervals from each ledger dir's capacity
// and its compaction throttle: one pass of minor (major) compaction
// rewrites at most threshold × the dir's capacity (every entry log just
// under the threshold), at compactionRateByBytes per dir; a pass that
// takes longer than its interval keeps the dir's single GC thread busy
// (minor compaction never runs while a major pass does), so the interval
// is raised to cover the worst-case pass, in whole gcWaitTime cycles
// (compaction starts only inside a GC cycle). Pulsar's intervals are kept
// when they already do.
func planGC(ledgers []Disk, dirsPerDisk []int, rate int64) gcPlan {
	g := gcPlan{gcWaitMs: GCWaitTimeMs, minorSec: MinorCompactionSec, majorSec: MajorCompactionSec}
	cycle := int64(GCWaitTimeMs / 1000)
	g.gcEv = []string{
		"each ledger dir's GC thread runs every gcWaitTime (the dirs staggered by gcWaitTime ÷ dirs); every cycle lists the ledgers in the metadata store and the dir's index and deletes what is gone, so its cost grows with the number of ledgers, not with the disk",
		fmt.Sprintf("compaction only starts inside a cycle: the intervals below are whole cycles of %d s; BookKeeper refuses to start when an interval is shorter than gcWaitTime", cycle),
		"Pulsar's 900000 ms (15 min) kept: disk speed does not change the cycle's cost",
	}
	roundCycles := func(sec int64) int64 { return (sec + cycle - 1) / cycle * cycle }
	var worstMinor, worstMajor float64
	var mEv, MEv []string
	for i, d := range ledgers {
		if d.TotalBytes == 0 || rate <= 0 || i >= len(dirsPerDisk) {
			mEv = append(mEv, fmt.Sprintf("%s: capacity unknown (measurement recorded without it)", diskLabel(d)))
			continue
		}
		c := float64(d.TotalBytes) / float64(dirsPerDisk[i])
		tm := MinorCompactionThresh * c / float64(rate)
		tM := MajorCompactionThresh * c / float64(rate)
		worstMinor, worstMajor = max(worstMinor, tm), max(worstMajor, tM)
		mEv = append(mEv, fmt.Sprintf("%s: %s per dir × %.1f ÷ %s = worst-case minor pass %.0f s", diskLabel(d), units.HumanBytes(c), MinorCompactionThresh, units.DecimalRate(float64(rate)), tm))
		MEv = append(MEv, fmt.Sprintf("%s: %s per dir × %.1f ÷ %s = worst-case major pass %.0f s", diskLabel(d), units.HumanBytes(c), MajorCompactionThresh, units.DecimalRate(float64(rate)), tM))
	}
	g.minorSec = max(MinorCompactionSec, roundCycles(int64(math.Ceil(worstMinor))))
	g.majorSec = max(MajorCompactionSec, roundCycles(int64(math.Ceil(worstMajor))))
	if g.majorSec <= g.minorSec {
		g.majorSec = roundCycles(g.minorSec + 1)
	}
	note := func(v, def int64) string {
		if v == def {
			return fmt.Sprintf("the worst-case pass fits: Pulsar's %d s kept", def)
		}
		return fmt.Sprintf("raised from Pulsar's %d s to %d s (whole %d s cycles) so a worst-case pass fits its interval", def, v, cycle)
	}
	g.minorEv = append(mEv, note(g.minorSec, MinorCompactionSec), "minor < major interval and ≥ gcWaitTime, as GarbageCollectorThread requires")
	g.majorEv = append(MEv, note(g.majorSec, MajorCompactionSec),
		"major compaction is suspended above diskUsageWarnThreshold (unless isForceGCAllowWhenNoSpace): it has to run while the disk is below it")
	return g
}

// compactionThresholdEvidence explains the thresholds by write
// amplification: compacting an entry log whose live share is f rewrites f
// to free 1 − f.
func compactionThresholdEvidence(t float64) string {
	return fmt.Sprintf("an entry log compacted at a live share of %.0f%% rewrites %.2f bytes per byte it frees (f ÷ (1 − f)); the chart's 0.8 would rewrite 4", t*100, t/(1-t))
}
