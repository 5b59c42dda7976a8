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

// journalConfig identifies a journal measurement apart from what a sweep
// varies: the model, the write (plain) or entry (bookkeeper) size, the
// plain model's group size in writes, the bookkeeper model's settings and
// in-flight entries.
type journalConfig struct {
	model    diskbench.JournalModel
	bs       int64
	sync     int
	settings diskbench.JournalSettings
	inFlight int
}

func journalConfigOf(r diskbench.Result) journalConfig {
	if bkResult(r) {
		return journalConfig{model: diskbench.JournalModelBookKeeper, bs: r.BlockSize, settings: *r.JournalSettings, inFlight: r.InFlight}
	}
	return journalConfig{model: diskbench.JournalModelPlain, bs: r.BlockSize, sync: syncEvery(r)}
}

// group is the configuration's group size in bytes: the plain model's
// writes per fdatasync × write size, the bookkeeper model's
// journalBufferedWritesThreshold.
func (k journalConfig) group() int64 {
	if k.model == diskbench.JournalModelBookKeeper {
		return k.settings.JournalBufferedWritesThreshold
	}
	return k.bs * int64(k.sync)
}

// describe names the configuration in evidence.
func (k journalConfig) describe() string {
	if k.model == diskbench.JournalModelBookKeeper {
		return fmt.Sprintf("%s entries, BookKeeper journal model (journalBufferedWritesThreshold %s, journalWriteBufferSizeKB %d, journalMaxGroupWaitMSec %d), %d in flight per journal",
			units.FormatBytes(k.bs), units.FormatBytes(k.settings.JournalBufferedWritesThreshold), k.settings.JournalWriteBufferSizeKB,
			k.settings.JournalMaxGroupWaitMSec, k.inFlight)
	}
	return fmt.Sprintf("%s writes, fdatasync every %d", units.FormatBytes(k.bs), k.sync)
}

// bkResult reports whether r was measured with diskbench's BookKeeper
// journal model (older reports, and the plain model, lack its settings).
func bkResult(r diskbench.Result) bool {
	return r.Workload == diskbench.WorkloadJournal && r.Model == diskbench.JournalModelBookKeeper && r.JournalSettings != nil
}

func syncEvery(r diskbench.Result) int { return max(1, r.SyncEvery) }

// journalWritersSweep picks the journal configuration measured at the most
// writer counts (ties: the bookkeeper model, then the smallest group) and
// returns its results per writer count, every round.
func journalWritersSweep(rs []diskbench.Result) map[int][]diskbench.Result {
	by := map[journalConfig]map[int][]diskbench.Result{}
	for _, r := range rs {
		if r.Workload != diskbench.WorkloadJournal || !usable(r) || r.Writers < 1 {
			continue
		}
		k := journalConfigOf(r)
		if by[k] == nil {
			by[k] = map[int][]diskbench.Result{}
		}
		by[k][r.Writers] = append(by[k][r.Writers], r)
	}
	var best journalConfig
	bestN := 0
	better := func(k journalConfig) bool {
		if (k.model == diskbench.JournalModelBookKeeper) != (best.model == diskbench.JournalModelBookKeeper) {
			return k.model == diskbench.JournalModelBookKeeper
		}
		if k.group() != best.group() {
			return k.group() < best.group()
		}
		return k.bs < best.bs
	}
	for k, m := range by {
		if len(m) > bestN || (len(m) == bestN && better(k)) {
			best, bestN = k, len(m)
		}
	}
	return by[best]
}

// commitP99 is the p99 latency a bookie add waits for in the journal: the
// bookkeeper model's add latency (queued → acknowledged), else the plain
// model's group commit (writes + fdatasync).
func commitP99(r diskbench.Result) (int64, bool) {
	switch {
	case r.AddLatency != nil && r.AddLatency.Count > 0:
		return r.AddLatency.P99Ns, true
	case r.CommitLatency != nil && r.CommitLatency.Count > 0:
		return r.CommitLatency.P99Ns, true
	case r.SyncLatency != nil && r.SyncLatency.Count > 0:
		w := int64(0)
		if r.WriteLatency != nil {
			w = r.WriteLatency.P99Ns
		}
		return r.SyncLatency.P99Ns + w, true
	}
	return 0, false
}

// p99Rounds is the rounds of commitP99 (results without one left out).
func p99Rounds(rs []diskbench.Result) rounds {
	var v rounds
	for _, r := range rs {
		if p, ok := commitP99(r); ok {
			v.add(float64(p))
		}
	}
	return v
}

// medianP99 is the (lower) median over rounds of commitP99.
func medianP99(rs []diskbench.Result) (float64, bool) {
	v := p99Rounds(rs)
	return v.lowMedian(), v.n() > 0
}

// rateRounds is the rounds of the results' sustained rates.
func rateRounds(rs []diskbench.Result) rounds {
	var v rounds
	for _, r := range rs {
		v.add(sustainedRate(r))
	}
	return v
}

// pickJournalCount applies the journalDirectories rule to a writers sweep
// of one disk: the p99 budget, then pickCount against base. A count is over
// the budget only when it clearly is: its fastest round's p99 add latency
// above both JournalP99Factor × the slowest 1-journal round's p99 and
// JournalP99Floor (10 ms: far inside what a broker waits for an add, and
// at 1–2 ms a 2× rule would decide on fractions of a millisecond).
func pickJournalCount(sweep map[int][]diskbench.Result, base int) (int, string) {
	counts := slices.Sorted(maps.Keys(sweep))
	by := map[int]rounds{}
	p99 := map[int]rounds{}
	var parts []string
	for _, c := range counts {
		by[c] = rateRounds(sweep[c])
		lat := "p99 n/a"
		if v := p99Rounds(sweep[c]); v.n() > 0 {
			p99[c] = v
			kind := "commit"
			if sweep[c][0].AddLatency != nil {
				kind = "add"
			}
			lat = fmt.Sprintf("p99 %s %s", kind, fmtNs(v.median()))
			if v.n() > 1 {
				lat += fmt.Sprintf(" (%s–%s)", fmtNs(v.lo()), fmtNs(v.hi()))
			}
		}
		parts = append(parts, fmt.Sprintf("N=%d %s %s", c, by[c].describe(), lat))
	}
	one, hasOne := p99[1]
	budget := 0.0
	if hasOne {
		budget = max(JournalP99Factor*one.hi(), float64(JournalP99Floor))
	}
	ok := func(c int) bool {
		if c > MaxJournalDirsPerDisk {
			return false
		}
		v, has := p99[c]
		return !hasOne || !has || v.lo() <= budget
	}
	n, note := pickCount(by, ok, base, JournalDirGain)
	for _, c := range counts {
		if !ok(c) && c <= MaxJournalDirsPerDisk {
			note = strings.TrimPrefix(note+fmt.Sprintf("; N=%d is over the p99 budget (its fastest round above max(%.0f× the slowest 1-journal round's p99, %s) = %s)", c, JournalP99Factor, fmtNs(float64(JournalP99Floor)), fmtNs(budget)), "; ")
		}
	}
	ev := fmt.Sprintf("%s: %s → N=%d", journalConfigOf(sweep[counts[0]][0]).describe(), strings.Join(parts, ", "), n)
	if note != "" {
		ev += " (" + note + ")"
	}
	return n, ev
}

// syncP50 returns the 1-writer p50 fdatasync latency of a writers sweep
// (lower median over rounds).
func syncP50(sweep map[int][]diskbench.Result) (float64, bool) {
	var v rounds
	for _, r := range sweep[1] {
		switch {
		case r.SyncLatency != nil && r.SyncLatency.Count > 0:
			v.add(float64(r.SyncLatency.P50Ns))
		case r.CommitLatency != nil && r.CommitLatency.Count > 0:
			v.add(float64(r.CommitLatency.P50Ns))
		}
	}
	return v.lowMedian(), v.n() > 0
}

// pickGroupThreshold applies the journalBufferedWritesThreshold rule to the
// 1-writer journal results: the median MB/s per group size; the smallest
// group reaching LevelOff of the best; Pulsar's 512 KiB kept unless the
// choice clearly beats it.
func pickGroupThreshold(rs []diskbench.Result) (int64, string) {
	if slices.ContainsFunc(rs, bkResult) {
		return pickGroupThresholdBK(rs)
	}
	// The write size measured at the most group sizes (ties: the smaller).
	groups := map[int64]map[int64]rounds{} // bs -> group -> MB/s
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadJournal && usable(r) && r.Writers == 1 {
			if groups[r.BlockSize] == nil {
				groups[r.BlockSize] = map[int64]rounds{}
			}
			g := r.BlockSize * int64(syncEvery(r))
			v := groups[r.BlockSize][g]
			v.add(sustainedRate(r))
			groups[r.BlockSize][g] = v
		}
	}
	var wbs int64 = -1
	for bs, m := range groups {
		if wbs < 0 || len(m) > len(groups[wbs]) || (len(m) == len(groups[wbs]) && bs < wbs) {
			wbs = bs
		}
	}
	by := groups[wbs]
	if len(by) < 2 {
		return JournalThresholdMin, "fewer than 2 group sizes measured; Pulsar default kept"
	}
	v, ev := levelOff(by, JournalThresholdMin)
	return v, fmt.Sprintf("%s writes, group size → MB/s (1 writer): %s", units.FormatBytes(wbs), ev)
}

// levelOff picks the smallest key whose median reaches LevelOff of the
// best, clamped to the threshold range, and keeps def unless the pick
// clearly beats it.
func levelOff(by map[int64]rounds, def int64) (int64, string) {
	ks := slices.Sorted(maps.Keys(by))
	best := 0.0
	for _, k := range ks {
		best = max(best, by[k].median())
	}
	var parts []string
	level := ks[len(ks)-1]
	found := false
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %s", units.FormatBytes(k), by[k].describe()))
		if !found && by[k].median() >= LevelOff*best {
			level, found = k, true
		}
	}
	v := min(JournalThresholdMax, max(JournalThresholdMin, level))
	still := ""
	if level == ks[len(ks)-1] && len(ks) > 1 && by[ks[len(ks)-2]].median() < LevelOff*best {
		still = " (still rising at the largest measured)"
	}
	ev := fmt.Sprintf("%s; levels off at %s%s", strings.Join(parts, ", "), units.FormatBytes(level), still)
	if v != def && by[v].n() < 2 {
		return def, ev + fmt.Sprintf("; %s measured in a single round: one round does not show that a gain repeats, %s kept", units.FormatBytes(v), units.FormatBytes(def))
	}
	if d, ok := by[def]; ok && v != def && !by[v].beats(d, 1/LevelOff) {
		return def, ev + fmt.Sprintf("; %s: the evidence does not separate them, %s kept",
			notSeparated(units.FormatBytes(v), by[v], units.FormatBytes(def), d, 1/LevelOff), units.FormatBytes(def))
	}
	if d, ok := by[def]; ok && v != def {
		ev += fmt.Sprintf("; %s ÷ %s = %s: above %.2f×", units.FormatBytes(v), units.FormatBytes(def), pairedRatio(by[v], d), 1/LevelOff)
	}
	return v, ev + " → " + units.FormatBytes(v)
}

// bkSweep groups the 1-journal bookkeeper-model results by their
// configuration apart from one setting, which vary reads and clears: the
// rounds per value of that setting.
func bkSweep(rs []diskbench.Result, vary func(*diskbench.JournalSettings) int64) map[journalConfig]map[int64]rounds {
	by := map[journalConfig]map[int64]rounds{}
	for _, r := range rs {
		if bkResult(r) && usable(r) && r.Writers == 1 {
			k := journalConfigOf(r)
			x := vary(&k.settings)
			if by[k] == nil {
				by[k] = map[int64]rounds{}
			}
			v := by[k][x]
			v.add(sustainedRate(r))
			by[k][x] = v
		}
	}
	return by
}

// pickGroupThresholdBK is pickGroupThreshold for bookkeeper-model results:
// 1-journal points that differ only in journalBufferedWritesThreshold
// (the configuration measured at the most thresholds).
func pickGroupThresholdBK(rs []diskbench.Result) (int64, string) {
	by := bkSweep(rs, func(s *diskbench.JournalSettings) int64 {
		th := s.JournalBufferedWritesThreshold
		s.JournalBufferedWritesThreshold = 0
		return th
	})
	var key journalConfig
	n := 0
	for k, m := range by {
		if len(m) > n || (len(m) == n && (k.bs < key.bs || (k.bs == key.bs && k.inFlight > key.inFlight))) {
			key, n = k, len(m)
		}
	}
	if n < 2 {
		return JournalThresholdMin, "fewer than 2 journalBufferedWritesThreshold values measured; Pulsar default kept"
	}
	v, ev := levelOff(by[key], JournalThresholdMin)
	return v, fmt.Sprintf("%s entries, %d in flight, journalWriteBufferSizeKB %d: journalBufferedWritesThreshold → MB/s (1 journal): %s",
		units.FormatBytes(key.bs), key.inFlight, key.settings.JournalWriteBufferSizeKB, ev)
}

// pickBuffer is the journalWriteBufferSizeKB rule on sizes (KiB) → rounds:
// 64 unless a larger size clearly beats 64 by JournalWriteBufferGain; then
// the smallest within LevelOff of the best (≤ 1024).
func pickBuffer(m map[int64]rounds, ev string) (int64, string) {
	kbs := slices.Sorted(maps.Keys(m))
	best := 0.0
	for _, kb := range kbs {
		best = max(best, m[kb].median())
	}
	base, ok := m[64]
	if !ok {
		return 64, ev + "; 64 KiB not measured, default kept"
	}
	for _, kb := range kbs {
		if kb > 64 && m[kb].median() >= LevelOff*best {
			if !m[kb].beats(base, JournalWriteBufferGain) {
				return 64, ev + fmt.Sprintf("; %s: the evidence does not separate them, 64 kept", notSeparated(fmt.Sprintf("%d KiB", kb), m[kb], "64 KiB", base, JournalWriteBufferGain))
			}
			v := min(1024, kb)
			return v, ev + fmt.Sprintf("; %d KiB is within %.0f%% of the best and %d KiB ÷ 64 KiB = %s: above %.2f× → %d", kb, (1-LevelOff)*100, kb, pairedRatio(m[kb], base), JournalWriteBufferGain, v)
		}
	}
	return 64, ev + fmt.Sprintf("; best is within %.0f%% of 64 KiB → keep 64", (JournalWriteBufferGain-1)*100)
}

// pickJournalWriteBufferBK is pickJournalWriteBuffer for bookkeeper-model
// results: 1-journal points that differ only in journalWriteBufferSizeKB
// (the largest threshold measured with at least two buffer sizes).
func pickJournalWriteBufferBK(rs []diskbench.Result) (int64, string) {
	by := bkSweep(rs, func(s *diskbench.JournalSettings) int64 {
		kb := int64(s.JournalWriteBufferSizeKB)
		s.JournalWriteBufferSizeKB = 0
		return kb
	})
	var key journalConfig
	found := false
	for k, m := range by {
		if len(m) >= 2 && (!found || k.group() > key.group() || (k.group() == key.group() && k.bs < key.bs)) {
			key, found = k, true
		}
	}
	if !found {
		return 64, "journalWriteBufferSizeKB not compared at equal settings; Pulsar default kept"
	}
	m := by[key]
	var parts []string
	for _, kb := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d KiB %s", kb, m[kb].describe()))
	}
	return pickBuffer(m, fmt.Sprintf("%s entries, %d in flight, journalBufferedWritesThreshold %s: journalWriteBufferSizeKB → MB/s (1 journal): %s",
		units.FormatBytes(key.bs), key.inFlight, units.FormatBytes(key.settings.JournalBufferedWritesThreshold), strings.Join(parts, ", ")))
}

// pickJournalWriteBuffer compares write sizes at one group size (the
// largest group measured with at least two write sizes, 1 writer).
func pickJournalWriteBuffer(rs []diskbench.Result) (int64, string) {
	if slices.ContainsFunc(rs, bkResult) {
		return pickJournalWriteBufferBK(rs)
	}
	by := map[int64]map[int64]rounds{} // group -> KiB -> MB/s
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadJournal && usable(r) && r.Writers == 1 {
			g := r.BlockSize * int64(syncEvery(r))
			if by[g] == nil {
				by[g] = map[int64]rounds{}
			}
			kb := max(1, r.BlockSize/KiB)
			v := by[g][kb]
			v.add(sustainedRate(r))
			by[g][kb] = v
		}
	}
	var group int64 = -1
	for g, m := range by {
		if len(m) >= 2 && g > group {
			group = g
		}
	}
	if group < 0 {
		return 64, "write sizes not compared at equal group size; Pulsar default kept"
	}
	m := by[group]
	var parts []string
	for _, kb := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %s", units.FormatBytes(kb*KiB), m[kb].describe()))
	}
	return pickBuffer(m, fmt.Sprintf("group %s, write size → MB/s: %s", units.FormatBytes(group), strings.Join(parts, ", ")))
}

// journalRules sets the journal settings: per journal disk the journal
// count (pickJournalCount), the group-commit threshold and write buffer
// (largest over the disks) and the group wait (slowest disk's fdatasync),
// and the alignment (largest physical block).
func (rc *recommender) journalRules() error {
	in, r := rc.in, rc.r
	var jDirs, jEv, jLatP50, threshEv, wbEv []string
	gw := GroupWaitMinMs
	thresh := int64(JournalThresholdMin)
	wbKB := int64(64)
	for i, d := range in.JournalDisks {
		sum := summarize("journal", d, rc.all)
		sweep := journalWritersSweep(d.Results)
		if len(sweep) == 0 {
			return fmt.Errorf("%w: journal disk %s has no journal results", ErrNoMeasurements, d.Dir)
		}
		base := 1
		if rc.jCookie != nil {
			base = max(1, countOnDisk(rc.jCookie.JournalDirs, d.Dir, len(in.JournalDisks)))
		}
		n, ev := pickJournalCount(sweep, base)
		jEv = append(jEv, fmt.Sprintf("%s: %s", diskLabel(d), ev))
		sum.RecommendedDirs = n
		dirs := subDirs(d.Dir, n)
		jDirs = append(jDirs, dirs...)
		r.Layout.Journal = append(r.Layout.Journal, DiskDirs{Disk: d.Dir, Device: sum.Device, TotalBytes: d.TotalBytes, Recommended: dirs})
		// What the bookie's journals on this disk accept: at the count it
		// runs (the cookie's on a live bookie).
		runN := n
		if rc.jCookie != nil {
			runN = base
		}
		acc := rateRounds(sweep[runN]).median()
		if acc == 0 {
			acc = rateRounds(sweep[n]).median()
		}
		rc.jAgg += acc
		nr := rateRounds(sweep[n])
		rc.jAggNew += nr.median()
		// Per round, summed over the journal disks (the rounds every
		// disk has): the ledger rule caps each of its rounds with the
		// journals' rate of the same round.
		if i == 0 {
			rc.jNewRounds = newRounds(nr.v...)
		} else {
			rc.jNewRounds.v = rc.jNewRounds.v[:min(rc.jNewRounds.n(), nr.n())]
			for k := range rc.jNewRounds.v {
				rc.jNewRounds.v[k] += nr.v[k]
			}
		}
		if sum.Device != "" {
			rc.jAggDevice[sum.Device] += acc
		}
		for _, rs := range sweep {
			sum.PeakBytesPerSec = math.Max(sum.PeakBytesPerSec, rateRounds(rs).median())
		}
		p50, ok := syncP50(sweep)
		basis := "1 journal alone"
		for k := range in.LedgerDisks {
			if m, has := rc.mixed[diskPair{i, k}]; has && m.syncP50Mixed > p50 {
				p50, ok, basis = m.syncP50Mixed, true, fmt.Sprintf("1 journal while ledger %s on the same device is written", in.LedgerDisks[k].Dir)
			}
		}
		if ok {
			ms := int(math.Ceil(p50 / 1e6))
			gw = max(gw, min(GroupWaitMaxMs, max(GroupWaitMinMs, ms)))
			jLatP50 = append(jLatP50, fmt.Sprintf("%s: p50 fdatasync %s (%s)", diskLabel(d), fmtNs(p50), basis))
		}
		t, tev := pickGroupThreshold(d.Results)
		threshEv = append(threshEv, fmt.Sprintf("%s: %s", diskLabel(d), tev))
		thresh = max(thresh, t)
		kb, wev := pickJournalWriteBuffer(d.Results)
		wbEv = append(wbEv, fmt.Sprintf("%s: %s", diskLabel(d), wev))
		wbKB = max(wbKB, kb)
		r.Disks = append(r.Disks, sum)
	}
	jEv = append(jEv, fmt.Sprintf("%d CPUs (%s): each journal dir adds a journal and a force-write thread, which mostly wait on fdatasync, so the count is not capped by CPUs", rc.cpus, orDefault(in.CPUsSource, "as given")))
	if n := len(jDirs); n > 2*rc.cpus {
		jEv = append(jEv, fmt.Sprintf("%d journal dirs on %d CPUs: watch the bookie's CPU use under load", n, rc.cpus))
	}
	js := Setting{
		File: FileBookKeeper, Key: "journalDirectories", Value: strings.Join(jDirs, ","),
		PulsarDefault: "data/bookkeeper/journal (1 dir)",
		Rule: fmt.Sprintf("per journal disk, among the counts within the p99 budget (a count's fastest round at most max(%.0f× the slowest 1-journal round's p99 add latency, %s)): from the current count (cookie, else Pulsar's 1) one measured count at a time, up to the next larger while it clearly beats the current by >%.0f%% %s (else down to the next smaller while the current does not beat it by that much); at most %d per disk; N>1 → N sub-directories",
			JournalP99Factor, fmtNs(JournalP99Floor), (JournalDirGain-1)*100, moveRule(), MaxJournalDirsPerDisk),
		Evidence:       jEv,
		NewBookiesOnly: true,
	}
	if rc.jCookie != nil {
		js.Current = strings.Join(rc.jCookie.JournalDirs, ",")
		js.Evidence = append(js.Evidence, fmt.Sprintf("live bookie: cookie %s fixes %d journal dir(s): %s", rc.jCookie.Path, len(rc.jCookie.JournalDirs), js.Current))
		for i := range r.Layout.Journal {
			r.Layout.Journal[i].Current = rc.jCookie.JournalDirs
		}
	}
	if len(jLatP50) == 0 {
		jLatP50 = append(jLatP50, "no sync latency measured; Pulsar default kept")
	}
	align := int64(4096)
	var alEv []string
	for _, d := range in.JournalDisks {
		if d.Device != nil && d.Device.PhysicalBlockSize > 0 {
			align = max(align, d.Device.PhysicalBlockSize)
			alEv = append(alEv, fmt.Sprintf("%s: sysfs physical_block_size %d", diskLabel(d), d.Device.PhysicalBlockSize))
		} else {
			alEv = append(alEv, fmt.Sprintf("%s: physical_block_size unknown", diskLabel(d)))
		}
	}
	alEv = append(alEv, "takes effect with journalFormatVersionToWrite ≥ 5 (Pulsar ships 5)")
	rc.add(js, Setting{
		File: FileBookKeeper, Key: "journalWriteBufferSizeKB", Value: strconv.FormatInt(wbKB, 10), PulsarDefault: "64",
		Rule:     fmt.Sprintf("raise from 64 only if a larger write buffer (BookKeeper journal model; plain model: write size) clearly beats 64 KiB by >%.0f%% at the same group threshold, %s; then the smallest size within %.0f%% of the best, 64–1024", (JournalWriteBufferGain-1)*100, moveRule(), (1-LevelOff)*100),
		Evidence: wbEv,
	}, Setting{
		File: FileBookKeeper, Key: "journalBufferedWritesThreshold", Value: strconv.FormatInt(thresh, 10), PulsarDefault: "524288",
		Rule:     fmt.Sprintf("smallest journalBufferedWritesThreshold (BookKeeper journal model; plain model: group size) reaching %.0f%% of the best MB/s with 1 journal, clamped to %s–%s (largest over journal disks); Pulsar's 512 KiB changed for the choice %s", LevelOff*100, units.FormatBytes(JournalThresholdMin), units.FormatBytes(JournalThresholdMax), moveRule()),
		Evidence: threshEv,
	}, Setting{
		File: FileBookKeeper, Key: "journalMaxGroupWaitMSec", Value: strconv.Itoa(gw), PulsarDefault: "1",
		Rule:     fmt.Sprintf("≈ the device's p50 fdatasync latency (under the mixed load when journal and ledgers share a device), rounded up to whole ms, clamped to %d–%d (slowest journal disk)", GroupWaitMinMs, GroupWaitMaxMs),
		Evidence: jLatP50,
	}, Setting{
		File: FileBookKeeper, Key: "journalAlignmentSize", Value: strconv.FormatInt(align, 10), PulsarDefault: "4096",
		Rule:     "max(4096, sysfs physical_block_size of the journal disks)",
		Evidence: alEv,
	})
	return nil
}
