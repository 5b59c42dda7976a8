package bookieagent

import (
	"fmt"
	"math"
	"strconv"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Pulsar's shipped GC and compaction settings (conf/bookkeeper.conf), and
// the bounds the agent puts on one compaction pass.
const (
	GCWaitTimeMs          = 900000
	MinorCompactionSec    = 3600
	MajorCompactionSec    = 86400
	MinorCompactionThresh = 0.2
	MajorCompactionThresh = 0.5
	// MinorCompactionMaxMs / MajorCompactionMaxMs bound one pass (Heur.):
	// while a pass runs, the dir's GC thread neither deletes the indexes of
	// deleted ledgers nor removes entry logs that hold nothing live, so a
	// pass is bounded to one gcWaitTime cycle (minor) and four (major).
	MinorCompactionMaxMs = GCWaitTimeMs
	MajorCompactionMaxMs = 4 * GCWaitTimeMs
)

// compactionRules sets the GC cycle, the compaction throttle, intervals,
// pass bounds and thresholds, for the ledger dirs the bookie runs.
func (rc *recommender) compactionRules() error {
	rate := math.Inf(1)
	var compEv []string
	for _, lp := range rc.ledgers {
		io := lp.left * CompactionShare
		cr := io / CompactionIOPerByte / float64(lp.run)
		compEv = append(compEv, fmt.Sprintf("%s: %s %s × %.0f%% = %s of compaction I/O for the disk; compaction reads each live entry and writes it again (%d bytes of I/O per byte re-added), ÷ %d and ÷ %d dirs = %s per dir",
			diskLabel(lp.disk), units.DecimalRate(lp.left), lp.basis, CompactionShare*100, units.DecimalRate(io), CompactionIOPerByte, CompactionIOPerByte, lp.run, units.DecimalRate(cr)))
		rate = math.Min(rate, cr)
	}
	compBytes := min(int64(math.MaxInt32), max(int64(1000000), int64(rate)/MiB*MiB))
	compEv = append(compEv, "each ledger dir compacts on its own GC thread with its own rate limiter (GarbageCollectorThread's Throttler), so the dirs of a disk share its budget",
		fmt.Sprintf("Pulsar's 1000000 B/s would take %.0f h to rewrite one dir's worth of 1 GiB entry logs at the minor threshold (%d logs per 100 GiB)", 0.2*100*float64(GiB)/1e6/3600, 100), "slowest disk; at least Pulsar's 1000000, at most 2^31 − 1 (an int in ServerConfiguration)")
	g := planGC(rc.ledgers, compBytes)
	rc.add(Setting{
		File: FileBookKeeper, Key: "isThrottleByBytes", Value: "true", PulsarDefault: "false",
		Rule:     "throttle compaction by bytes, so its rate is a share of the measured disk bandwidth",
		Evidence: []string{"compaction rewrites live entries; an entry-count limit means nothing in bytes when entry sizes vary"},
	}, Setting{
		File: FileBookKeeper, Key: "compactionRateByBytes", Value: strconv.FormatInt(compBytes, 10), PulsarDefault: "1000000",
		Rule: fmt.Sprintf("%.0f%% of the ledger disk's sustained write bandwidth (lower median of the point's rounds, lowered to the entry-log probe's rate past its knee when the 1-writer rounds are above it) left after the journal — on a shared device × the entry log's rate beside the journal ÷ alone (lower medians), at most 1 — as compaction I/O: the compactor takes each live entry's bytes from its dir's rate limiter before re-adding it, and reads it first (%d × the rate); divided among the dirs the bookie runs on that disk, rounded down to MiB/s, slowest disk",
			CompactionShare*100, CompactionIOPerByte),
		Evidence: compEv,
	}, Setting{
		File: FileBookKeeper, Key: "gcWaitTime", Value: strconv.FormatInt(g.gcWaitMs, 10), PulsarDefault: "900000",
		Rule:     "the GC cycle: keep Pulsar's 15 min",
		Evidence: g.gcEv,
	}, Setting{
		File: FileBookKeeper, Key: "minorCompactionInterval", Value: strconv.FormatInt(g.minorSec, 10), PulsarDefault: "3600",
		Rule:     "keep Pulsar's 3600 s: the interval counts from the end of the last pass, so a longer one only delays reclaiming space",
		Evidence: g.intervalEv,
	}, Setting{
		File: FileBookKeeper, Key: "minorCompactionMaxTimeMillis", Value: strconv.FormatInt(MinorCompactionMaxMs, 10), PulsarDefault: "-1 (unbounded; not in Pulsar's conf)",
		Rule:     "bound a minor pass to one gcWaitTime cycle, so the dir's GC thread returns to deleting garbage",
		Evidence: g.minorEv,
	}, Setting{
		File: FileBookKeeper, Key: "minorCompactionThreshold", Value: strconv.FormatFloat(MinorCompactionThresh, 'f', -1, 64), PulsarDefault: "0.2",
		Rule:     "keep Pulsar's 0.2: minor compaction only picks nearly empty entry logs, cheap to rewrite",
		Evidence: []string{compactionThresholdEvidence(MinorCompactionThresh), "must stay below majorCompactionThreshold (GarbageCollectorThread refuses to start otherwise)"},
	}, Setting{
		File: FileBookKeeper, Key: "majorCompactionInterval", Value: strconv.FormatInt(g.majorSec, 10), PulsarDefault: "86400",
		Rule:     "keep Pulsar's 86400 s: counted from the end of the last pass, like minor; > minorCompactionInterval, as GarbageCollectorThread requires",
		Evidence: append(g.intervalEv[:1:1], "major compaction is suspended above diskUsageWarnThreshold (unless isForceGCAllowWhenNoSpace): it has to run while the disk is below it"),
	}, Setting{
		File: FileBookKeeper, Key: "majorCompactionMaxTimeMillis", Value: strconv.FormatInt(MajorCompactionMaxMs, 10), PulsarDefault: "-1 (unbounded; not in Pulsar's conf)",
		Rule:     "bound a major pass to four gcWaitTime cycles (1 h): a major pass also resets the minor interval, and the dir's GC thread does nothing else while it runs",
		Evidence: g.majorEv,
	}, Setting{
		File: FileBookKeeper, Key: "majorCompactionThreshold", Value: strconv.FormatFloat(MajorCompactionThresh, 'f', -1, 64), PulsarDefault: "0.5",
		Rule:     "keep Pulsar's 0.5: above it a compaction rewrites more bytes than it frees",
		Evidence: []string{compactionThresholdEvidence(MajorCompactionThresh)},
	})
	return nil
}

// autoRecoveryRules sets what the AutoRecovery process reads.
func (rc *recommender) autoRecoveryRules() error {
	rc.add(Setting{
		File: FileBookKeeper, Scope: ScopeAutoRecovery, Key: "rereplicationEntryBatchSize", Value: strconv.Itoa(RereplicationBatch), PulsarDefault: "100",
		Rule:     "100 entries in parallel per ledger being re-replicated (BK code default 10); read by the AutoRecovery process",
		Evidence: []string{"Pulsar's shipped value; the WeChat deployment used 100 to speed up recovery"},
	})
	return nil
}

// gcPlan is the GC schedule's evidence for the ledger dirs.
type gcPlan struct {
	gcWaitMs, minorSec, majorSec       int64
	gcEv, intervalEv, minorEv, majorEv []string
}

// planGC explains the GC cycle, the intervals and the pass bounds.
// BookKeeper 4.17's GarbageCollectorThread runs with fixed-delay
// scheduling (scheduleWithFixedDelay, gcWaitTime after the previous run
// ends) and sets lastMinor/MajorCompactionTime when a pass ends, so a long
// pass never overlaps the next and a longer interval only delays
// reclaiming space: Pulsar's intervals are kept. What a long pass does
// cost is the dir's GC thread: the deletion of deleted ledgers' indexes
// and of entry logs with nothing live waits for it, so the passes are
// bounded (…CompactionMaxTimeMillis, checked between entry logs; the logs
// left over are compacted by the next passes).
func planGC(ledgers []ledgerPlan, rate int64) gcPlan {
	g := gcPlan{gcWaitMs: GCWaitTimeMs, minorSec: MinorCompactionSec, majorSec: MajorCompactionSec}
	cycle := int64(GCWaitTimeMs / 1000)
	g.gcEv = []string{
		"each ledger dir's GC thread runs every gcWaitTime after its previous run ends (the dirs staggered by gcWaitTime ÷ dirs); a run deletes what the metadata store no longer lists, removes entry logs with nothing live, then may compact — its cost grows with the number of ledgers, not with the disk",
		fmt.Sprintf("Pulsar's 900000 ms (%d s) kept; the compaction intervals are checked once per run and must be ≥ gcWaitTime (BookKeeper refuses to start otherwise)", cycle),
	}
	g.intervalEv = []string{
		"GarbageCollectorThread is scheduled with a fixed delay and sets the last compaction time when a pass ends, so a long pass never overlaps the next: lengthening the interval for a long pass would only delay reclaiming space",
		"minor < major interval and ≥ gcWaitTime, as GarbageCollectorThread requires",
	}
	pass := func(maxMs int64, thresh float64, name string) []string {
		var ev []string
		perPass := float64(rate) * float64(maxMs) / 1000
		ev = append(ev, fmt.Sprintf("at compactionRateByBytes %s a %s pass of %d s re-adds at most %s of live entries per dir and frees at least %s (logs at a live share ≤ %.1f)",
			units.DecimalRate(float64(rate)), name, maxMs/1000, units.HumanBytes(perPass), units.HumanBytes(perPass*(1-thresh)/thresh), thresh))
		for _, lp := range ledgers {
			if lp.disk.TotalBytes == 0 {
				ev = append(ev, fmt.Sprintf("%s: capacity unknown (measurement recorded without it)", diskLabel(lp.disk)))
				continue
			}
			c := float64(lp.disk.TotalBytes) / float64(lp.run)
			full := thresh * c / float64(rate)
			ev = append(ev, fmt.Sprintf("%s: %s per dir; a pass over every log just under %.1f would re-add %s and take %s unbounded: the bound leaves the rest to the next passes",
				diskLabel(lp.disk), units.HumanBytes(c), thresh, units.HumanBytes(thresh*c), fmtDuration(full)))
		}
		ev = append(ev, "the bound is checked between entry logs: a pass may overrun by one log's live bytes ÷ the rate (logSizeLimit 1 GiB × threshold)")
		return ev
	}
	g.minorEv = pass(MinorCompactionMaxMs, MinorCompactionThresh, "minor")
	g.majorEv = pass(MajorCompactionMaxMs, MajorCompactionThresh, "major")
	return g
}

// fmtDuration renders seconds as s, min, h or days.
func fmtDuration(sec float64) string {
	switch {
	case sec >= 2*86400:
		return fmt.Sprintf("%.1f days", sec/86400)
	case sec >= 3600:
		return fmt.Sprintf("%.1f h", sec/3600)
	case sec >= 60:
		return fmt.Sprintf("%.0f min", sec/60)
	default:
		return fmt.Sprintf("%.0f s", sec)
	}
}

// compactionThresholdEvidence explains the thresholds by write
// amplification: compacting an entry log whose live share is f rewrites f
// to free 1 − f.
func compactionThresholdEvidence(t float64) string {
	return fmt.Sprintf("an entry log compacted at a live share of %.0f%% rewrites %.2f bytes per byte it frees (f ÷ (1 − f)); the chart's 0.8 would rewrite 4", t*100, t/(1-t))
}
