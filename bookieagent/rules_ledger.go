package bookieagent

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// entryLogSizes returns the 1-writer entry-log rounds per write size.
func entryLogSizes(rs []diskbench.Result) map[int64]rounds {
	by := map[int64]rounds{}
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadEntryLog && usable(r) && max(1, r.Writers) == 1 && r.Alternation == nil {
			v := by[r.BlockSize]
			v.add(sustainedRate(r))
			by[r.BlockSize] = v
		}
	}
	return by
}

// entryLogWriters returns the entry-log rounds per writer count at the
// write size measured with the most counts (ties: the larger size). When
// the disk has results of writer counts in turns (an alternating point,
// whose batches pair every count in the same seconds), only those count:
// separate runs' rounds would pair with batches of another time.
func entryLogWriters(rs []diskbench.Result) (int64, map[int]rounds) {
	alt := slices.ContainsFunc(rs, func(r diskbench.Result) bool {
		return r.Workload == diskbench.WorkloadEntryLog && r.Alternation != nil && usable(r)
	})
	by := map[int64]map[int]rounds{}
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadEntryLog && usable(r) && (r.Alternation != nil) == alt {
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
// LevelOff margin) by moveOff — the 95% lower bound of the paired ratio
// above 1/LevelOff on at least MinMoveRounds rounds; then the smallest
// size within 5% of the best.
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
		for _, sz := range sizes {
			if sz != def {
				ev += fmt.Sprintf("; %s ÷ 64KiB = %s", units.FormatBytes(sz), pairedRatio(by[sz], d))
			}
		}
		return def, ev + " → 64KiB"
	case by[chosen].n() < 2:
		return def, ev + fmt.Sprintf("; %s measured in a single round: one round does not show that a gain repeats, Pulsar's 64KiB kept", units.FormatBytes(chosen))
	case !hasDef:
		return chosen, ev + "; 64KiB not measured → " + units.FormatBytes(chosen)
	case chosen > def && !by[chosen].beats(d, 1/LevelOff):
		return def, ev + fmt.Sprintf("; %s: the evidence does not separate them, Pulsar's 64KiB kept",
			notSeparated(units.FormatBytes(chosen), by[chosen], "64KiB", d, 1/LevelOff))
	case chosen > def:
		return chosen, ev + fmt.Sprintf("; %s ÷ 64KiB = %s: above %.2f× → %s", units.FormatBytes(chosen), pairedRatio(by[chosen], d), 1/LevelOff, units.FormatBytes(chosen))
	}
	// A smaller size than 64 KiB within 5% of the best: 64 KiB must be
	// shown not to beat it (moveOff, the rule of every kept value).
	if ok, c := moveOff(d, by[chosen], false, 1/LevelOff); !ok {
		return def, ev + fmt.Sprintf("; 64KiB ÷ %s = %s: not shown below %.2f× on %d or more paired rounds, Pulsar's 64KiB kept", units.FormatBytes(chosen), c, 1/LevelOff, MinMoveRounds)
	}
	return chosen, ev + fmt.Sprintf("; 64KiB ÷ %s = %s: below %.2f× → %s", units.FormatBytes(chosen), pairedRatio(d, by[chosen]), 1/LevelOff, units.FormatBytes(chosen))
}

// pickLedgerCount applies the ledgerDirectories rule to one disk. For each
// measured entry-log writer count N (one entry logger and flush thread per
// ledger dir), what BookKeeper could write in round k is the rate measured
// in round k, at most N × FlushThreadBytesPerSec (one DbLedgerStorage flush
// thread's limit, BK PR #1289) and at most ingest's round k (the journals'
// sustained rate for this disk in the same interleaved round: every add
// passes the journal first; its median for a round it lacks; no rounds =
// unknown). The capped side thus keeps its own per-round noise: a cap
// taken as one constant made the N=2 side of every pair the same figure
// and the interval as narrow as the N=1 side alone. pickCount then
// picks on those figures against base: an extra dir must gain more than
// LedgerDirGain of what the bookie can really write. It returns the count,
// the disk's measured sustained rate at it as its rounds (peak1's when
// the writer counts were not measured: the sizes derived from it read a
// lower statistic of them), the measured counts and the evidence.
func pickLedgerCount(rs []diskbench.Result, base int, peak1 rounds, ingest rounds) (int, rounds, []int, string) {
	bs, by := entryLogWriters(rs)
	if len(by) < 2 {
		return base, peak1, []int{1}, fmt.Sprintf("writer counts not measured; %s (1 writer) → N=%d kept", units.DecimalRate(peak1.median()), base)
	}
	ws := slices.Sorted(maps.Keys(by))
	eff := map[int]rounds{}
	var parts []string
	for _, w := range ws {
		var e rounds
		for k, v := range by[w].v {
			in := ingest.median()
			if k < ingest.n() {
				in = ingest.v[k]
			}
			e.add(flushable(w, v, in))
		}
		eff[w] = e
		p := fmt.Sprintf("N=%d %s", w, by[w].describe())
		if e.median() < by[w].median() {
			p += fmt.Sprintf(" → BookKeeper %s", units.DecimalRate(e.median()))
		}
		parts = append(parts, p)
	}
	caps := fmt.Sprintf("N × %.0f MB/s flush threads", FlushThreadBytesPerSec/1e6)
	if ingest.n() > 0 {
		caps += fmt.Sprintf(", the journals' rate of the same round, %s", ingest.describe())
	}
	n, note := pickCount(eff, func(c int) bool { return c <= MaxLedgerDirsPerDisk }, base, LedgerDirGain)
	ev := fmt.Sprintf("%s writes, sustained (capped at %s): %s → N=%d", units.FormatBytes(bs), caps, strings.Join(parts, ", "), n)
	if note != "" {
		ev += " (" + note + ")"
	}
	if by[n].median() == 0 {
		return n, peak1, ws, ev
	}
	return n, by[n], ws, ev
}

// probePastKnee is the rate of d's 1-writer × 1 MiB entry-log probe past
// its burst: the median of its per-second samples from its knee on,
// warm-up and measurement (a probe without a knee that settled: its
// measured samples). false without such a probe. The probe's rounds
// never compare with anything (a probe is no round); this is the disk's
// level when written without a pause. On this project's VM the rounds,
// each after a second of files and cleanup and a fixed warm-up, measured
// 0.87–1.56× fio's 30 s figure (the host absorbs writes again in that
// second) while the probes past their knees measured 0.81–1.15×.
func probePastKnee(d Disk) (float64, bool) {
	for _, r := range d.ProbeResults {
		if r.Workload != diskbench.WorkloadEntryLog || max(1, r.Writers) != 1 || r.BlockSize != MiB || !usable(r) || r.Settle == nil {
			continue
		}
		var v rounds
		switch st := r.Settle; {
		case st.KneeSec > 0 && int(st.KneeSec) <= len(st.SamplesBytesPerSec):
			v.v = append(v.v, st.SamplesBytesPerSec[int(st.KneeSec)-1:]...)
		case !st.Settled:
			continue
		}
		v.v = append(v.v, r.SamplesBytesPerSec...)
		if v.n() == 0 {
			return r.BytesPerSec, true
		}
		return v.median(), true
	}
	return 0, false
}

// MinSustainedSec: an entry-log point measured for less than this measures
// caches (the page cache, a virtual disk's host cache), not the disk's
// sustained rate.
const MinSustainedSec = 1.0

// shortOnly reports whether every usable entry-log result with writers
// writers ran under MinSustainedSec, and then the slowest sustained figure
// of any entry-log result on the disk.
func shortOnly(rs []diskbench.Result, writers int) (float64, bool) {
	slow, any := math.Inf(1), false
	for _, r := range rs {
		if r.Workload != diskbench.WorkloadEntryLog || !usable(r) {
			continue
		}
		if max(1, r.Writers) == writers {
			// A count's batch of an alternating point is short, but the
			// run behind it is not: its turns follow each other without a
			// pause in which a cache could refill.
			if r.DurationSec >= MinSustainedSec || r.Alternation != nil {
				return 0, false
			}
			any = true
		}
		slow = min(slow, sustainedRate(r))
	}
	return slow, any
}

// flushable is what a bookie with dirs ledger dirs could write to a disk
// measured at v: one flush thread per dir, and no more than ingest.
func flushable(dirs int, v, ingest float64) float64 {
	f := min(v, float64(dirs)*FlushThreadBytesPerSec)
	if ingest > 0 {
		f = min(f, ingest)
	}
	return f
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

// ledgerDirRules sets ledgerDirectories: per ledger disk the entry-log
// writer count BookKeeper can use (pickLedgerCount), bounded by what the
// extra directories cost in memory; it also picks each disk's entry-log
// write size and finds the bandwidth ledger writes get beside the journal,
// which the entry-log and compaction rules size from.
func (rc *recommender) ledgerDirRules() error {
	in, r := rc.in, rc.r
	var lEv []string
	rc.wb = 64 * KiB
	measured := make([][]int, len(in.LedgerDisks))
	// Ingest per ledger disk, per round: every add passes the journal.
	var ingest rounds
	for _, v := range rc.jNewRounds.v {
		ingest.add(v / float64(len(in.LedgerDisks)))
	}
	for k, d := range in.LedgerDisks {
		sum := summarize("ledger", d, rc.all)
		if sum.Class == "hdd" {
			rc.anyHDD = true
		}
		sizes := entryLogSizes(d.Results)
		if len(sizes) == 0 {
			return fmt.Errorf("%w: ledger disk %s has no entrylog results", ErrNoMeasurements, d.Dir)
		}
		bs, bev := pickEntryLogBuffer(sizes)
		rc.bufEv = append(rc.bufEv, fmt.Sprintf("%s: %s", diskLabel(d), bev))
		rc.wb = max(rc.wb, bs)
		for s := range sizes {
			rc.bufCands = append(rc.bufCands, s)
		}
		base := 1
		if rc.lCookie != nil {
			base = max(1, countOnDisk(rc.lCookie.LedgerDirs, d.Dir, len(in.LedgerDisks)))
		}
		n, bwRounds, counts, lev := pickLedgerCount(d.Results, base, sizes[bs], ingest)
		diskBW := bwRounds.median()
		// The sizes derived below (flushEntrylogBytes,
		// compactionRateByBytes) take the lower median of the point's
		// rounds: one round in a cache's burst does not lift them.
		low := min(diskBW, bwRounds.lowMedian())
		measured[k] = counts
		lEv = append(lEv, fmt.Sprintf("%s: %s", diskLabel(d), lev))
		sum.TotalBytes = d.TotalBytes
		for _, v := range sizes {
			sum.PeakBytesPerSec = math.Max(sum.PeakBytesPerSec, v.median())
		}
		sum.PeakBytesPerSec = math.Max(sum.PeakBytesPerSec, diskBW)
		if slow, ok := shortOnly(d.Results, n); ok && slow < diskBW {
			lEv = append(lEv, fmt.Sprintf("%s: every %d-writer entry-log point ran under %.0f s (a cache's speed, not the disk's): the sizes below use the slowest entry-log figure measured on the disk, %s, not %s",
				diskLabel(d), n, MinSustainedSec, units.DecimalRate(slow), units.DecimalRate(diskBW)))
			diskBW = slow
			low = min(low, slow)
		}
		of := "lower median of its rounds"
		if ps, ok := probePastKnee(d); ok {
			if one := sizes[MiB]; one.n() > 0 && ps < one.lowMedian() {
				of = fmt.Sprintf("lower median of its rounds × %.2f, the probe past its knee ÷ the 1-writer rounds", ps/one.lowMedian())
				f := ps / one.lowMedian()
				lEv = append(lEv, fmt.Sprintf("%s: the 1-writer × 1MiB rounds (lower median %s) are %.2f× the probe's rate past its knee, %s (rounds after a fixed warm-up start where a cache absorbs writes again): the sizes below use the rounds' %s × %.2f = %s",
					diskLabel(d), units.DecimalRate(one.lowMedian()), 1/f, units.DecimalRate(ps), units.DecimalRate(low), f, units.DecimalRate(low*f)))
				low *= f
			}
		}
		run := n
		if rc.lCookie != nil {
			run = base
		}
		lp := ledgerPlan{disk: d, recommended: n, run: run, sustained: low, summary: len(r.Disks)}
		lp.left, lp.basis = rc.leftAfterJournal(k, sum.Device, low, of)
		rc.ledgers = append(rc.ledgers, lp)
		r.Disks = append(r.Disks, sum)
	}
	lEv = append(lEv, rc.gateLedgerDirs(measured)...)
	for _, lp := range rc.ledgers {
		r.Disks[lp.summary].RecommendedDirs = lp.recommended
		dirs := subDirs(lp.disk.Dir, lp.recommended)
		rc.lDirs = append(rc.lDirs, dirs...)
		r.Layout.Ledgers = append(r.Layout.Ledgers, DiskDirs{Disk: lp.disk.Dir, Device: r.Disks[lp.summary].Device, TotalBytes: lp.disk.TotalBytes, Recommended: dirs})
		rc.runDirs += lp.run
	}
	ls := Setting{
		File: FileBookKeeper, Key: "ledgerDirectories", Value: strings.Join(rc.lDirs, ","),
		PulsarDefault: "data/bookkeeper/ledgers (1 dir)",
		Rule: fmt.Sprintf("per ledger disk: what BookKeeper can write at each measured entry-log writer count N (one entry logger and flush thread per dir) is, round by round, the measured rate, at most N × %.0f MB/s (one flush thread's limit, BK PR #1289) and at most the journals' sustained rate in the same round (ingest passes the journal first); from the current count (cookie, else Pulsar's 1) one measured count at a time, up to the next larger while it clearly beats the current by >%.0f%% %s; fewer when the extra dirs' RocksDB indexes or cache split do not fit the memory; at most %d; N>1 → N sub-directories",
			FlushThreadBytesPerSec/1e6, (LedgerDirGain-1)*100, moveRule(), MaxLedgerDirsPerDisk),
		Evidence:       lEv,
		NewBookiesOnly: true,
	}
	if rc.lCookie != nil {
		ls.Current = strings.Join(rc.lCookie.LedgerDirs, ",")
		rc.runDirs = len(rc.lCookie.LedgerDirs)
		ls.Evidence = append(ls.Evidence, fmt.Sprintf("live bookie: cookie %s fixes %d ledger dir(s): %s (ledger dirs may only grow, with allowStorageExpansion; ledgerId mod N placement makes any change unsafe for existing data); every size below is for the %d dir(s) it runs",
			rc.lCookie.Path, rc.runDirs, ls.Current, rc.runDirs))
		for i := range r.Layout.Ledgers {
			r.Layout.Ledgers[i].Current = rc.lCookie.LedgerDirs
		}
	}
	rc.add(ls)
	return nil
}

// leftAfterJournal is the write bandwidth ledger disk k gets while a
// journal on the same device writes too: bw × the measured factor (one
// entry-log writer with the journal beside it ÷ alone, the lower medians
// of their rounds), capped at 1 — an entry log measured no slower beside
// the journal keeps bw, so the result follows the factor continuously
// (no switch of formula at 1) and one burst round on either side does
// not lift it. Only when no journal on the device was measured at once,
// an estimate from the journals' own rate.
func (rc *recommender) leftAfterJournal(k int, device string, bw float64, of string) (float64, string) {
	left, basis := bw, "sustained, "+of+" (no journal on this device)"
	shared, measured := false, false
	for i, j := range rc.in.JournalDisks {
		if !sameDevice(j, rc.in.LedgerDisks[k]) {
			continue
		}
		shared = true
		m, ok := rc.mixed[diskPair{i, k}]
		if !ok || m.logAlone.lowMedian() <= 0 {
			continue
		}
		raw := m.logMixed.lowMedian() / m.logAlone.lowMedian()
		f := min(1, raw)
		if !measured || bw*f < left {
			left = bw * f
			basis = fmt.Sprintf("= %s sustained (%s) × %.2f (1 writer with journal %s written at once ÷ alone, lower medians of the rounds: %s ÷ %s",
				units.DecimalRate(bw), of, f, j.Dir, units.DecimalRate(m.logMixed.lowMedian()), units.DecimalRate(m.logAlone.lowMedian()))
			if raw > 1 {
				basis += fmt.Sprintf(" = %.2f, capped at 1", raw)
			}
			basis += ")"
		}
		measured = true
	}
	if shared && !measured {
		if jr := rc.jAggDevice[device]; jr > 0 {
			left = max(bw-jr, bw/4)
			basis = fmt.Sprintf("= %s sustained (%s) − the journals' %s on the same device (estimate: not measured at once; at least a quarter)", units.DecimalRate(bw), of, units.DecimalRate(jr))
		}
	}
	return left, basis
}

// gateLedgerDirs lowers the recommended counts (the disk with the most
// dirs first, to its next smaller measured count) while the directories
// cost more memory than the node has: every ledger dir runs its own
// DbLedgerStorage with an entry-location and a ledger-metadata RocksDB
// (native memory: block cache + memtables), a GC and a flush thread, and
// takes an equal split of the write and read caches.
func (rc *recommender) gateLedgerDirs(measured [][]int) []string {
	in := rc.in
	perDirNative := int64(RocksBlockCacheDefault + RocksMaxWriteBufferCount*RocksWriteBufferDefault)
	limit, why := math.MaxInt, ""
	if l := in.MemoryLimitBytes; l > 0 {
		if n := int(float64(l) * RocksShareMax / float64(perDirNative)); n < limit {
			limit = max(1, n)
			why = fmt.Sprintf("%d dirs × ~%s of RocksDB native memory (block cache + %d × 64 MiB memtables) fit in %.0f%% of the %s container limit",
				limit, units.HumanBytes(float64(perDirNative)), RocksMaxWriteBufferCount, RocksShareMax*100, units.FormatBytes(l))
		}
	}
	if d := in.DirectMemoryBytes; d > 0 {
		perDir := int64(MinWriteCachePerDir + MinReadCachePerDir)
		if n := int(int64(float64(d)*CacheShare) / perDir); n < limit {
			limit = max(1, n)
			why = fmt.Sprintf("%d dirs fit the %s direct memory at the minimum caches (%s write + %s read per dir)", limit, units.FormatBytes(d),
				units.FormatBytes(MinWriteCachePerDir), units.FormatBytes(MinReadCachePerDir))
		}
	}
	total := func() int {
		t := 0
		for _, lp := range rc.ledgers {
			t += lp.recommended
		}
		return t
	}
	var ev []string
	if t := total(); t > 1 {
		ev = append(ev, fmt.Sprintf("cost of %d ledger dirs: %d DbLedgerStorage instances, each with 2 RocksDB (entry locations: ~%s native at Pulsar's block cache and 4 × 64 MiB memtables; ledger metadata), a GC thread and a flush thread (%d CPUs), and 1/%d of the write and read caches",
			t, t, units.HumanBytes(float64(perDirNative)), rc.cpus, t))
	}
	for total() > limit {
		big := -1
		for i, lp := range rc.ledgers {
			if lp.recommended > 1 && (big < 0 || lp.recommended > rc.ledgers[big].recommended) {
				big = i
			}
		}
		if big < 0 {
			break
		}
		lp := &rc.ledgers[big]
		next := 1
		for _, c := range measured[big] {
			if c < lp.recommended {
				next = max(next, c)
			}
		}
		ev = append(ev, fmt.Sprintf("%s: %d → %d dirs: only %s", diskLabel(lp.disk), lp.recommended, next, why))
		lp.recommended = next
		if rc.lCookie == nil {
			lp.run = next
		}
	}
	return ev
}

// entryLogRules sets writeBufferSizeBytes (bounded by the memory plan),
// readBufferSizeBytes and flushEntrylogBytes.
func (rc *recommender) entryLogRules() error {
	in := rc.in
	bufEv := rc.bufEv
	if rc.haveMem {
		if per := rc.mp.EntryLogBufBytes / int64(EntryLogBuffersPerDir*rc.runDirs); per < rc.wb {
			bufEv = append(bufEv, fmt.Sprintf("memory-limited: %d × %d dirs × %s > %.0f%% of direct memory %s; reduced to %s",
				EntryLogBuffersPerDir, rc.runDirs, units.FormatBytes(rc.wb), EntryLogBufferShare*100, units.FormatBytes(rc.mp.DirectBytes), units.FormatBytes(per)))
			rc.wb = per
		}
	} else {
		bufEv = append(bufEv, fmt.Sprintf("direct memory unknown: %d × %d dirs × %s of direct buffers (current, preallocated next and compaction entry log) not checked against -XX:MaxDirectMemorySize",
			EntryLogBuffersPerDir, rc.runDirs, units.FormatBytes(rc.wb)))
	}
	var flushEv []string
	var flushBytes int64
	for _, lp := range rc.ledgers {
		perDir := lp.left / float64(lp.run)
		fb := roundUp(int64(perDir*FlushEntrylogSeconds), MiB)
		fb = min(FlushEntrylogMax, max(FlushEntrylogMin, fb))
		flushEv = append(flushEv, fmt.Sprintf("%s: %s %s ÷ %d dirs = %s per dir × %.0f ms = %s", diskLabel(lp.disk), units.DecimalRate(lp.left), lp.basis, lp.run,
			units.DecimalRate(perDir), FlushEntrylogSeconds*1000, units.HumanBytes(perDir*FlushEntrylogSeconds)))
		flushBytes = max(flushBytes, fb)
	}
	flushBytes = max(flushBytes, rc.wb)
	rb := int64(ReadBufferDefault)
	rbEv := []string{"entry size unknown: Pulsar's 4096"}
	if in.EntrySizeBytes > 0 {
		rb = min(ReadBufferMax, max(ReadBufferDefault, roundUp(in.EntrySizeBytes, 4*KiB)))
		rbEv = []string{fmt.Sprintf("median entry size %d B: rounded up to 4 KiB, at most %s (a larger entry is read through the buffer in several preads of the page cache)", in.EntrySizeBytes, units.FormatBytes(ReadBufferMax))}
	}
	threads := ReadThreads + rc.runDirs
	rbEv = append(rbEv, fmt.Sprintf("heap allocated between two GCs: one buffer per reading thread per entry log it reads (DefaultEntryLogger's thread-local BufferedReadChannel map holds them weakly: a GC frees them and the next read of the log allocates a new one), at most %d threads (numReadWorkerThreads 8 + numHighPriorityWorkerThreads 8 + %d GC threads) × %d entry logs of a catch-up burst × %s = %s",
		threads, rc.runDirs, CatchUpLogs, units.FormatBytes(rb), units.HumanBytes(float64(int64(threads)*CatchUpLogs*rb))))
	rc.add(Setting{
		File: FileBookKeeper, Key: "writeBufferSizeBytes", Value: strconv.FormatInt(rc.wb, 10), PulsarDefault: "65536",
		Rule: fmt.Sprintf("the entry logger's write(2) size into the page cache (the disk I/O size is set by writeback and the fdatasync every flushEntrylogBytes): Pulsar's 64 KiB unless a larger size clearly beats it by >%.0f%% in the sustained sweep, %s (then the smallest within %.0f%% of the best, largest over ledger disks); %d buffers per ledger dir (current, preallocated next and compaction log) × dirs × size ≤ %.0f%% of direct memory",
			(1/LevelOff-1)*100, moveRule(), (1-LevelOff)*100, EntryLogBuffersPerDir, EntryLogBufferShare*100),
		Evidence: append(bufEv, "one data point: WeChat runs 64 MiB in production (its disks, not this one)"),
	}, Setting{
		File: FileBookKeeper, Key: "readBufferSizeBytes", Value: strconv.FormatInt(rb, 10), PulsarDefault: "4096",
		Rule:     fmt.Sprintf("kept small, allocated per reading thread per entry log: Pulsar's 4096, or the median entry size rounded up to 4 KiB when given, at most %s", units.FormatBytes(ReadBufferMax)),
		Evidence: rbEv,
	}, Setting{
		File: FileBookKeeper, Key: "flushEntrylogBytes", Value: strconv.FormatInt(flushBytes, 10), PulsarDefault: "33554432",
		Rule:     fmt.Sprintf("≈ %.0f ms of the per-dir write bandwidth ledger writes get (lower median of the point's rounds, lowered to the entry-log probe's rate past its knee when the 1-writer rounds are above it; on a shared device × the rate beside the journal ÷ alone, at most 1), over the dirs the bookie runs, rounded up to MiB, clamped to %s–%s, ≥ writeBufferSizeBytes (largest over ledger disks)", FlushEntrylogSeconds*1000, units.FormatBytes(FlushEntrylogMin), units.FormatBytes(FlushEntrylogMax)),
		Evidence: flushEv,
	})
	return nil
}
