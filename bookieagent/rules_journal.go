package bookieagent

import (
	"fmt"
	"maps"
	"slices"
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
// the budget only when it clearly is: its best round's p99 add latency
// above JournalP99Factor × the worst 1-journal round's, and above
// JournalP99Floor (sub-10 ms journal latencies are far inside any add
// budget, and their p99 moves by a third from run to run).
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
			note = strings.TrimPrefix(note+fmt.Sprintf("; N=%d is over the p99 budget (max(%.0f× the 1-journal p99, %s) = %s)", c, JournalP99Factor, fmtNs(float64(JournalP99Floor)), fmtNs(budget)), "; ")
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
	if d, ok := by[def]; ok && v != def && !by[v].beats(d, 1/LevelOff) {
		return def, ev + fmt.Sprintf("; %s does not clearly beat %s by >%.0f%%: the evidence does not separate them, %s kept",
			units.FormatBytes(v), units.FormatBytes(def), (1/LevelOff-1)*100, units.FormatBytes(def))
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
				return 64, ev + fmt.Sprintf("; %d KiB does not clearly beat 64 KiB by >%.0f%%: the evidence does not separate them, 64 kept", kb, (JournalWriteBufferGain-1)*100)
			}
			v := min(1024, kb)
			return v, ev + fmt.Sprintf("; %d KiB is within %.0f%% of the best and beats 64 KiB by %.0f%% → %d", kb, (1-LevelOff)*100, (m[kb].median()/base.median()-1)*100, v)
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
