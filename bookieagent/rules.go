package bookieagent

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Rule constants. Each cites the row of disk-tuning.md §3 it implements;
// "Heur." marks our own choice where the document gives a range.
const (
	// JournalDirGain: a journal count qualifies when the best count does
	// not clearly beat it by more than 10% ("within ~5–10% of the best").
	JournalDirGain = 1.10
	// JournalP99Factor: ... and its p99 add latency is at most 2× the
	// single-journal p99 ("≤ 2× the N=1 p99"), or within JournalP99Floor.
	JournalP99Factor = 2.0
	// JournalP99Floor: a p99 add latency below 10 ms is within budget
	// whatever the 1-journal p99 (Heur.: far inside a bookie add's budget;
	// at 1–2 ms a 2× rule measures noise).
	JournalP99Floor = 10 * time.Millisecond
	// MaxJournalDirsPerDisk caps journal dirs per disk ("cap ... at 8").
	// There is no CPU cap: a journal's two threads (journal, force write)
	// mostly wait on fdatasync.
	MaxJournalDirsPerDisk = 8
	// LevelOff is the share of the peak at which a sweep counts as levelled
	// off (writeBufferSizeBytes: "~95% of peak"; journal group size).
	LevelOff = 0.95
	// JournalThresholdMin/Max bound journalBufferedWritesThreshold ("usually
	// 512 KiB–1 MiB"; never below Pulsar's 512 KiB default, Heur. max 4 MiB).
	JournalThresholdMin = 512 * KiB
	JournalThresholdMax = 4 * MiB
	// JournalWriteBufferGain: raise journalWriteBufferSizeKB only when a
	// larger write size beats 64 KiB by more than 10% at the same group size
	// (Heur.; "raise only if the bs sweep shows higher MB/s with sync").
	JournalWriteBufferGain = 1.10
	// GroupWaitMinMs/MaxMs bound journalMaxGroupWaitMSec ("≈ p50 sync
	// latency; 1–2 ms on NVMe; more only on high-latency disks").
	GroupWaitMinMs = 1
	GroupWaitMaxMs = 20
	// LedgerDirGain: a ledger-dir count qualifies while the next count
	// still gains more than 10% ("while (b) ... still gains >10%").
	LedgerDirGain = 1.10
	// FlushThreadBytesPerSec is what one DbLedgerStorage flush thread
	// sustains (BK PR #1289, ~500 MB/s); faster disks need more dirs.
	FlushThreadBytesPerSec = 500e6
	// MaxLedgerDirsPerDisk caps ledger dirs per disk (Heur.).
	MaxLedgerDirsPerDisk = 4
	// FlushEntrylogSeconds: flushEntrylogBytes ≈ 100 ms of sustained write
	// bandwidth, clamped to 32–64 MiB ("32–64 MiB, or ≈ 50–100 ms").
	FlushEntrylogSeconds = 0.1
	FlushEntrylogMin     = 32 * MiB
	FlushEntrylogMax     = 64 * MiB
	// CompactionShare: the ledger disk's compaction may take 10% of its
	// sustained write bandwidth, divided among the dirs on the disk (each
	// dir compacts on its own GC thread with its own rate limiter) — the
	// lower end of "10–20% of the measured ledger-disk write bandwidth left
	// over at peak ingest"; ingest is unknown to the agent.
	CompactionShare = 0.10
	// HDDMaxIOPS: a disk with fewer 4 KiB random-read IOPS is treated as a
	// spinning disk whatever sysfs says (Heur.; HDDs do 100–500).
	HDDMaxIOPS = 1000
	// JournalMemShare is journalMaxMemorySizeMb's default, 5% of direct
	// memory (disk-tuning §0.3).
	JournalMemShare = 0.05
	// HeadroomShare is direct memory left for Netty and in-flight requests
	// (Heur.; at least HeadroomMin).
	HeadroomShare = 0.20
	HeadroomMin   = 128 * MiB
	// EntryLogBufferShare caps 2 × ledgerDirs × writeBufferSizeBytes (entry
	// logger + compaction logger, both direct buffers) at 10% of direct
	// memory (Heur.).
	EntryLogBufferShare = 0.10
	// MinWriteCachePerDir: each write-cache half must hold ≥ 3 entries of
	// Pulsar's 5 MiB maxMessageSize, so ≥ 32 MiB per ledger dir (Heur.).
	MinWriteCachePerDir = 32 * MiB
	// MinReadCachePerDir is the smallest useful read-ahead cache per dir
	// (Heur.).
	MinReadCachePerDir = 16 * MiB
	// RocksDB entry-location index settings (Pulsar's
	// entry_location_rocksdb.conf defaults and the WeChat report's 128 MB).
	RocksWriteBufferSSD      = 128 * MiB
	RocksWriteBufferDefault  = 64 * MiB
	RocksMaxWriteBufferCount = 4
	RocksBlockCacheDefault   = 206150041
	// ReadBufferDefault is readBufferSizeBytes for unknown entry sizes
	// (Pulsar's value; WeChat report), ReadBufferMax its ceiling.
	ReadBufferDefault = 4096
	ReadBufferMax     = 1 * MiB
	// RereplicationBatch is rereplicationEntryBatchSize (Pulsar; WeChat).
	RereplicationBatch = 100
	// MixedP99Factor: a journal whose p99 add latency rises by more than
	// this under a concurrent entry-log writer on the same device is
	// reported as disturbed (Heur.).
	MixedP99Factor = 2.0
)

// Config file names a Setting belongs to.
const (
	FileBookKeeper = "bookkeeper.conf"
	FileRocksDB    = "entry_location_rocksdb.conf"
)

// Scopes: which process reads a bookkeeper.conf setting (the Pulsar chart
// gives each its own ConfigMap).
const (
	ScopeBookie       = "bookie"
	ScopeAutoRecovery = "autorecovery"
)

// NeedsDirectMemory is Setting.NeedsInput for the settings that are shares
// of the bookie JVM's direct memory.
const NeedsDirectMemory = "-XX:MaxDirectMemorySize (--max-direct-memory, or $BOOKIE_MEM / $PULSAR_MEM)"

// Disk is one directory given to the agent (--journal-dir / --ledger-dir),
// treated as one disk, with what was measured on it.
type Disk struct {
	// Dir is the configured directory.
	Dir string `json:"dir"`
	// FSType is the filesystem type (ext4, xfs).
	FSType string `json:"fs_type,omitempty"`
	// Device is the block device behind Dir, when sysfs could tell.
	Device *BlockDevice `json:"device,omitempty"`
	// TotalBytes is the filesystem's size (statfs), 0 when not recorded.
	TotalBytes uint64 `json:"total_bytes,omitempty"`
	// BenchDir is where the measurements ran (a scratch directory).
	BenchDir string `json:"bench_dir,omitempty"`
	// Cookies are the bookie cookies found in Dir or its sub-directories.
	Cookies []Cookie `json:"cookies,omitempty"`
	// Results are diskbench results measured on this disk; a point
	// measured in several rounds appears once per round.
	Results []diskbench.Result `json:"results"`
	// MixedResults were measured while the other role's disk on the same
	// device was written at the same time (journal and ledgers sharing a
	// device).
	MixedResults []diskbench.Result `json:"mixed_results,omitempty"`
}

// Input is everything Recommend needs. It is what `bookieagent recommend`
// measures and probes, and what the golden tests load from testdata.
type Input struct {
	JournalDisks []Disk `json:"journal_disks"`
	LedgerDisks  []Disk `json:"ledger_disks"`
	// CPUs is the number of CPUs the bookie may use.
	CPUs int `json:"cpus"`
	// CPUsSource says where CPUs came from.
	CPUsSource string `json:"cpus_source,omitempty"`
	// DirectMemoryBytes is the bookie JVM's -XX:MaxDirectMemorySize; 0
	// when unknown (the settings that depend on it then say so).
	DirectMemoryBytes int64 `json:"direct_memory_bytes"`
	// DirectMemorySource says where DirectMemoryBytes came from.
	DirectMemorySource string `json:"direct_memory_source"`
	// EntrySizeBytes is the median entry size, when known (0 = unknown).
	EntrySizeBytes int64 `json:"entry_size_bytes,omitempty"`
	// Bench is the plan the measurements were taken with, when recorded.
	Bench *BenchPlan `json:"bench,omitempty"`
}

// Setting is one recommended configuration value with its evidence.
type Setting struct {
	File string `json:"file"`
	// Scope is the process that reads it (bookie, autorecovery).
	Scope string `json:"scope,omitempty"`
	// Section is the RocksDB options-file section, e.g. `CFOptions "default"`.
	Section string `json:"section,omitempty"`
	Key     string `json:"key"`
	// Value is the recommendation; empty when NeedsInput is set.
	Value string `json:"value"`
	// PulsarDefault is the value Pulsar's shipped config uses.
	PulsarDefault string `json:"pulsar_default"`
	// Rule states how Value follows from the evidence.
	Rule string `json:"rule"`
	// Evidence lists the measurements and facts the rule used.
	Evidence []string `json:"evidence"`
	// NewBookiesOnly marks directory counts: the cookie fixes them, so they
	// apply only to new or re-formatted bookies.
	NewBookiesOnly bool `json:"new_bookies_only,omitempty"`
	// Current is the value a live bookie's cookie fixes, when one was found.
	// The rendered config keeps Current active and shows Value as a comment.
	Current string `json:"current,omitempty"`
	// NeedsInput names what the agent needs to give a value (the JVM's
	// direct memory); Value is then empty.
	NeedsInput string `json:"needs_input,omitempty"`
}

// Effective returns the value to put into a config applied to this node
// now: Current when a live bookie fixes it, else Value.
func (s Setting) Effective() string {
	if s.Current != "" {
		return s.Current
	}
	return s.Value
}

// DiskSummary is the per-disk digest of the measurements.
type DiskSummary struct {
	Role   string `json:"role"`
	Dir    string `json:"dir"`
	Device string `json:"device,omitempty"`
	// Class is "ssd" or "hdd" (from 4 KiB random-read IOPS, else sysfs).
	Class      string `json:"class"`
	ClassBasis string `json:"class_basis"`
	// LiveBookie is true when a cookie was found.
	LiveBookie bool `json:"live_bookie"`
	// RecommendedDirs is the number of bookie dirs for this disk.
	RecommendedDirs int `json:"recommended_dirs"`
	// PeakBytesPerSec is the best sustained write throughput measured on
	// the disk (median over rounds).
	PeakBytesPerSec float64 `json:"peak_bytes_per_sec"`
	// RandReadIOPS is the best small-block random-read IOPS (0 = not run).
	RandReadIOPS float64 `json:"randread_iops,omitempty"`
	// TotalBytes is the disk's size, when recorded.
	TotalBytes uint64 `json:"total_bytes,omitempty"`
}

// MemoryPlan is the direct-memory budget behind the cache sizes. All
// zero but DirectSource when direct memory is unknown.
type MemoryPlan struct {
	DirectBytes       int64  `json:"direct_bytes"`
	DirectSource      string `json:"direct_source"`
	JournalBytes      int64  `json:"journal_bytes"`
	HeadroomBytes     int64  `json:"headroom_bytes"`
	EntryLogBufBytes  int64  `json:"entrylog_buffer_bytes"`
	WriteCacheBytes   int64  `json:"write_cache_bytes"`
	ReadCacheBytes    int64  `json:"read_cache_bytes"`
	LedgerDirs        int    `json:"ledger_dirs"`
	RocksDBNative     int64  `json:"rocksdb_native_bytes"`
	MemoryLimitedNote string `json:"memory_limited,omitempty"`
}

// Recommendation is Recommend's result.
type Recommendation struct {
	Disks    []DiskSummary `json:"disks"`
	Memory   MemoryPlan    `json:"memory"`
	Settings []Setting     `json:"settings"`
	Warnings []string      `json:"warnings,omitempty"`
	// Layout is the recommended directory layout per disk, for the Helm
	// values (one volume per directory).
	Layout Layout `json:"layout"`
}

// Layout lists the bookie directories per disk: Recommended for new or
// re-formatted bookies, Current as a live bookie's cookie has them.
type Layout struct {
	Journal []DiskDirs `json:"journal"`
	Ledgers []DiskDirs `json:"ledgers"`
}

// DiskDirs is one disk's directories.
type DiskDirs struct {
	Disk        string   `json:"disk"`
	Device      string   `json:"device,omitempty"`
	TotalBytes  uint64   `json:"total_bytes,omitempty"`
	Recommended []string `json:"recommended"`
	Current     []string `json:"current,omitempty"`
}

// Setting returns the setting with key, or false.
func (r *Recommendation) Setting(key string) (Setting, bool) {
	for _, s := range r.Settings {
		if s.Key == key {
			return s, true
		}
	}
	return Setting{}, false
}

// Recommend derives bookie settings from measurements and node facts. It is
// a pure function: the same Input always gives the same Recommendation.
// It fails with ErrNoMeasurements when a disk lacks the results a rule
// needs and ErrDirectMemoryTooSmall when the minimum caches do not fit.
// Without a direct-memory size the settings that are shares of it carry
// NeedsInput instead of a value, and the rest are given.
func Recommend(in Input) (*Recommendation, error) {
	if len(in.JournalDisks) == 0 || len(in.LedgerDisks) == 0 {
		return nil, fmt.Errorf("%w: need at least one journal and one ledger disk", ErrNoMeasurements)
	}
	cpus := max(1, in.CPUs)
	r := &Recommendation{}
	var settings []Setting
	allDisks := append(append([]Disk{}, in.JournalDisks...), in.LedgerDisks...)
	jCookie := firstCookie(in.JournalDisks, in.LedgerDisks)
	lCookie := firstCookie(in.LedgerDisks, in.JournalDisks)

	// Shared-device mixed measurements, by journal disk and ledger disk.
	type pair struct{ j, l int }
	mixed := map[pair]mixedFigures{}
	for i, j := range in.JournalDisks {
		for k, l := range in.LedgerDisks {
			if sameDevice(j, l) {
				if m, ok := mixedOf(j, l); ok {
					mixed[pair{i, k}] = m
				}
			}
		}
	}

	// ---- journal disks ----
	var jDirs []string
	var jEv []string
	var jLatP50 []string
	var jAgg float64
	gw := GroupWaitMinMs
	thresh := JournalThresholdMin
	var threshEv []string
	wbKB := int64(64)
	var wbEv []string
	for i, d := range in.JournalDisks {
		sum := summarize("journal", d, allDisks)
		sweep := journalWritersSweep(d.Results)
		if len(sweep) == 0 {
			return nil, fmt.Errorf("%w: journal disk %s has no journal results", ErrNoMeasurements, d.Dir)
		}
		base := 1
		if jCookie != nil {
			base = max(1, countOnDisk(jCookie.JournalDirs, d.Dir, len(in.JournalDisks)))
		}
		n, ev := pickJournalCount(sweep, base)
		jEv = append(jEv, fmt.Sprintf("%s: %s", diskLabel(d), ev))
		sum.RecommendedDirs = n
		dirs := subDirs(d.Dir, n)
		jDirs = append(jDirs, dirs...)
		r.Layout.Journal = append(r.Layout.Journal, DiskDirs{Disk: d.Dir, Device: sum.Device, TotalBytes: d.TotalBytes, Recommended: dirs})
		jAgg += rateRounds(sweep[n]).median()
		for _, rs := range sweep {
			sum.PeakBytesPerSec = math.Max(sum.PeakBytesPerSec, rateRounds(rs).median())
		}
		p50, ok := syncP50(sweep)
		basis := "1 journal alone"
		for k := range in.LedgerDisks {
			if m, has := mixed[pair{i, k}]; has && m.syncP50Mixed > p50 {
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
	jEv = append(jEv, fmt.Sprintf("%d CPUs (%s): each journal dir adds a journal and a force-write thread, which mostly wait on fdatasync, so the count is not capped by CPUs", cpus, orDefault(in.CPUsSource, "as given")))
	if n := len(jDirs); n > 2*cpus {
		jEv = append(jEv, fmt.Sprintf("%d journal dirs on %d CPUs: watch the bookie's CPU use under load", n, cpus))
	}
	js := Setting{
		File: FileBookKeeper, Key: "journalDirectories", Value: strings.Join(jDirs, ","),
		PulsarDefault: "data/bookkeeper/journal (1 dir)",
		Rule: fmt.Sprintf("per journal disk: the smallest journal count that the best count (by median over rounds, not clearly over a p99 add latency of max(%.0f× the 1-journal p99, %s)) does not clearly beat by >%.0f%%; changed from the current count (cookie, else Pulsar's 1) only when the rounds separate the two; at most %d per disk; N>1 → N sub-directories",
			JournalP99Factor, fmtNs(float64(JournalP99Floor)), (JournalDirGain-1)*100, MaxJournalDirsPerDisk),
		Evidence:       jEv,
		NewBookiesOnly: true,
	}
	if jCookie != nil {
		js.Current = strings.Join(jCookie.JournalDirs, ",")
		js.Evidence = append(js.Evidence, fmt.Sprintf("live bookie: cookie %s fixes %d journal dir(s): %s", jCookie.Path, len(jCookie.JournalDirs), js.Current))
		for i := range r.Layout.Journal {
			r.Layout.Journal[i].Current = jCookie.JournalDirs
		}
	}
	settings = append(settings, js)
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "journalWriteBufferSizeKB", Value: strconv.FormatInt(wbKB, 10), PulsarDefault: "64",
		Rule:     fmt.Sprintf("raise from 64 only if a larger write buffer (BookKeeper journal model; plain model: write size) clearly beats 64 KiB by >%.0f%% at the same group threshold; then the smallest size within %.0f%% of the best, 64–1024", (JournalWriteBufferGain-1)*100, (1-LevelOff)*100),
		Evidence: wbEv,
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "journalBufferedWritesThreshold", Value: strconv.FormatInt(thresh, 10), PulsarDefault: "524288",
		Rule:     fmt.Sprintf("smallest journalBufferedWritesThreshold (BookKeeper journal model; plain model: group size) reaching %.0f%% of the best MB/s with 1 journal, clamped to %s–%s (largest over journal disks); Pulsar's 512 KiB kept unless the choice clearly beats it", LevelOff*100, units.FormatBytes(JournalThresholdMin), units.FormatBytes(JournalThresholdMax)),
		Evidence: threshEv,
	})
	if len(jLatP50) == 0 {
		jLatP50 = append(jLatP50, "no sync latency measured; Pulsar default kept")
	}
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "journalMaxGroupWaitMSec", Value: strconv.Itoa(gw), PulsarDefault: "1",
		Rule:     fmt.Sprintf("≈ the device's p50 fdatasync latency (under the mixed load when journal and ledgers share a device), rounded up to whole ms, clamped to %d–%d (slowest journal disk)", GroupWaitMinMs, GroupWaitMaxMs),
		Evidence: jLatP50,
	})
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
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "journalAlignmentSize", Value: strconv.FormatInt(align, 10), PulsarDefault: "4096",
		Rule:     "max(4096, sysfs physical_block_size of the journal disks)",
		Evidence: alEv,
	})

	// ---- ledger disks ----
	var lDirs []string
	var lEv, bufEv, flushEv, compEv []string
	var bufCands []int64
	wbBytes := int64(64 * KiB)
	var flushBytes int64
	compRate := math.Inf(1)
	var lAgg float64
	anyHDD := false
	var dirsPerDisk []int
	for k, d := range in.LedgerDisks {
		sum := summarize("ledger", d, allDisks)
		if sum.Class == "hdd" {
			anyHDD = true
		}
		sizes := entryLogSizes(d.Results)
		if len(sizes) == 0 {
			return nil, fmt.Errorf("%w: ledger disk %s has no entrylog results", ErrNoMeasurements, d.Dir)
		}
		bs, bev := pickEntryLogBuffer(sizes)
		bufEv = append(bufEv, fmt.Sprintf("%s: %s", diskLabel(d), bev))
		wbBytes = max(wbBytes, bs)
		for s := range sizes {
			bufCands = append(bufCands, s)
		}
		base := 1
		if lCookie != nil {
			base = max(1, countOnDisk(lCookie.LedgerDirs, d.Dir, len(in.LedgerDisks)))
		}
		n, diskBW, lev := pickLedgerCount(d.Results, base, sizes[bs].median())
		lEv = append(lEv, fmt.Sprintf("%s: %s", diskLabel(d), lev))
		sum.RecommendedDirs = n
		sum.TotalBytes = d.TotalBytes
		for _, v := range sizes {
			sum.PeakBytesPerSec = math.Max(sum.PeakBytesPerSec, v.median())
		}
		sum.PeakBytesPerSec = math.Max(sum.PeakBytesPerSec, diskBW)
		dirs := subDirs(d.Dir, n)
		lDirs = append(lDirs, dirs...)
		r.Layout.Ledgers = append(r.Layout.Ledgers, DiskDirs{Disk: d.Dir, Device: sum.Device, TotalBytes: d.TotalBytes, Recommended: dirs})
		dirsPerDisk = append(dirsPerDisk, n)
		// The bandwidth ledger writes get: alone, or while the journal on
		// the same device writes too.
		sustained, basis := diskBW, "sustained"
		for i := range in.JournalDisks {
			m, ok := mixed[pair{i, k}]
			if !ok || m.logAlone.median() <= 0 {
				continue
			}
			// One entry-log writer with and without the journal beside it:
			// the disk's aggregate scaled by what the journal took.
			if f := m.logMixed.median() / m.logAlone.median(); f < 1 && diskBW*f < sustained {
				sustained, basis = diskBW*f, fmt.Sprintf("sustained × %.2f (1 writer with journal %s written at once ÷ alone)", f, in.JournalDisks[i].Dir)
			}
		}
		lAgg += sustained
		perDir := sustained / float64(n)
		fb := roundUp(int64(perDir*FlushEntrylogSeconds), MiB)
		fb = min(FlushEntrylogMax, max(FlushEntrylogMin, fb))
		flushEv = append(flushEv, fmt.Sprintf("%s: %s %s ÷ %d dirs = %s per dir × %.0f ms = %s", diskLabel(d), units.DecimalRate(sustained), basis, n,
			units.DecimalRate(perDir), FlushEntrylogSeconds*1000, units.HumanBytes(perDir*FlushEntrylogSeconds)))
		flushBytes = max(flushBytes, fb)
		cr := sustained * CompactionShare / float64(n)
		compEv = append(compEv, fmt.Sprintf("%s: %s %s × %.0f%% = %s for the disk, ÷ %d dirs = %s per dir",
			diskLabel(d), units.DecimalRate(sustained), basis, CompactionShare*100, units.DecimalRate(sustained*CompactionShare), n, units.DecimalRate(cr)))
		compRate = math.Min(compRate, cr)
		r.Disks = append(r.Disks, sum)
	}
	ls := Setting{
		File: FileBookKeeper, Key: "ledgerDirectories", Value: strings.Join(lDirs, ","),
		PulsarDefault: "data/bookkeeper/ledgers (1 dir)",
		Rule: fmt.Sprintf("per ledger disk: the smallest measured entry-log writer count (one entry logger and flush thread per dir) that the best does not clearly beat by >%.0f%%, changed from the current count (cookie, else Pulsar's 1) only when the rounds separate the two; raised to ⌈MB/s ÷ %.0f MB/s⌉ (one flush thread's limit) only up to a measured count that is not clearly slower; at most %d; N>1 → N sub-directories",
			(LedgerDirGain-1)*100, FlushThreadBytesPerSec/1e6, MaxLedgerDirsPerDisk),
		Evidence:       lEv,
		NewBookiesOnly: true,
	}
	effLedgerDirs := len(lDirs)
	if lCookie != nil {
		ls.Current = strings.Join(lCookie.LedgerDirs, ",")
		effLedgerDirs = len(lCookie.LedgerDirs)
		ls.Evidence = append(ls.Evidence, fmt.Sprintf("live bookie: cookie %s fixes %d ledger dir(s): %s (ledger dirs may only grow, with allowStorageExpansion; ledgerId mod N placement makes any change unsafe for existing data)", lCookie.Path, effLedgerDirs, ls.Current))
		for i := range r.Layout.Ledgers {
			r.Layout.Ledgers[i].Current = lCookie.LedgerDirs
		}
	}

	// ---- memory plan ----
	haveMem := in.DirectMemoryBytes > 0
	var mp MemoryPlan
	var memEv []string
	if haveMem {
		var err error
		mp, memEv, err = planMemory(in, effLedgerDirs, wbBytes, bufCands)
		if err != nil {
			return nil, err
		}
		if mp.EntryLogBufBytes/int64(2*effLedgerDirs) < wbBytes {
			bufEv = append(bufEv, fmt.Sprintf("memory-limited: 2 × %d dirs × %s > %.0f%% of direct memory %s; reduced to %s",
				effLedgerDirs, units.FormatBytes(wbBytes), EntryLogBufferShare*100, units.FormatBytes(in.DirectMemoryBytes), units.FormatBytes(mp.EntryLogBufBytes/int64(2*effLedgerDirs))))
			wbBytes = mp.EntryLogBufBytes / int64(2*effLedgerDirs)
		}
	} else {
		mp = MemoryPlan{DirectSource: "unknown", LedgerDirs: effLedgerDirs}
		bufEv = append(bufEv, fmt.Sprintf("direct memory unknown: 2 × %d dirs × %s of direct buffers (entry logger + compaction logger) not checked against -XX:MaxDirectMemorySize", effLedgerDirs, units.FormatBytes(wbBytes)))
	}
	flushBytes = max(flushBytes, wbBytes)

	settings = append(settings, ls)
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "writeBufferSizeBytes", Value: strconv.FormatInt(wbBytes, 10), PulsarDefault: "65536",
		Rule: fmt.Sprintf("the entry logger's write(2) size into the page cache (the disk I/O size is set by writeback and the fdatasync every flushEntrylogBytes): Pulsar's 64 KiB unless a larger size clearly beats it by >%.0f%% in the sustained sweep (then the smallest within %.0f%% of the best, largest over ledger disks); 2 × ledger dirs × size ≤ %.0f%% of direct memory",
			(1/LevelOff-1)*100, (1-LevelOff)*100, EntryLogBufferShare*100),
		Evidence: append(bufEv, "one data point: WeChat runs 64 MiB in production (its disks, not this one)"),
	})
	rb := int64(ReadBufferDefault)
	rbEv := []string{"entry size unknown: Pulsar's 4096 (also the WeChat report's value on SSD)"}
	if in.EntrySizeBytes > 0 {
		rb = min(ReadBufferMax, max(ReadBufferDefault, roundUp(in.EntrySizeBytes, 4*KiB)))
		rbEv = []string{fmt.Sprintf("median entry size %d B", in.EntrySizeBytes)}
	}
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "readBufferSizeBytes", Value: strconv.FormatInt(rb, 10), PulsarDefault: "4096",
		Rule:     "≈ median entry size rounded up to 4 KiB (4096 … 1 MiB)",
		Evidence: rbEv,
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "flushEntrylogBytes", Value: strconv.FormatInt(flushBytes, 10), PulsarDefault: "33554432",
		Rule:     fmt.Sprintf("≈ %.0f ms of sustained per-dir write bandwidth rounded up to MiB, clamped to %s–%s, ≥ writeBufferSizeBytes (largest over ledger disks)", FlushEntrylogSeconds*1000, units.FormatBytes(FlushEntrylogMin), units.FormatBytes(FlushEntrylogMax)),
		Evidence: flushEv,
	})
	wc := Setting{File: FileBookKeeper, Key: "dbStorage_writeCacheMaxSizeMb", PulsarDefault: "(25% of direct memory)",
		Rule: "half of (direct memory − journal 5% − headroom − entry-log buffers), total over all ledger dirs (BK splits it evenly)"}
	rc := Setting{File: FileBookKeeper, Key: "dbStorage_readAheadCacheMaxSizeMb", PulsarDefault: "(25% of direct memory)",
		Rule: "the other half of the cache budget, total over all ledger dirs"}
	if haveMem {
		wc.Value = strconv.FormatInt(mp.WriteCacheBytes/MiB, 10)
		wc.Evidence = append(memEv, fmt.Sprintf("per ledger dir: %s, two halves of %s", units.HumanBytes(float64(mp.WriteCacheBytes)/float64(effLedgerDirs)), units.HumanBytes(float64(mp.WriteCacheBytes)/float64(2*effLedgerDirs))))
		rc.Value = strconv.FormatInt(mp.ReadCacheBytes/MiB, 10)
		rc.Evidence = []string{
			fmt.Sprintf("BookKeeper's start-up check: write %d MiB + read %d MiB = %d MiB ≤ direct memory %d MiB", mp.WriteCacheBytes/MiB, mp.ReadCacheBytes/MiB, (mp.WriteCacheBytes+mp.ReadCacheBytes)/MiB, in.DirectMemoryBytes/MiB),
			fmt.Sprintf("per ledger dir: %s", units.HumanBytes(float64(mp.ReadCacheBytes)/float64(effLedgerDirs))),
		}
	} else {
		for _, s := range []*Setting{&wc, &rc} {
			s.NeedsInput = NeedsDirectMemory
			s.Evidence = []string{"a share of the bookie JVM's direct memory, which was not given"}
		}
	}
	settings = append(settings, wc, rc)
	compBytes := max(int64(1000000), int64(compRate)/MiB*MiB)
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "isThrottleByBytes", Value: "true", PulsarDefault: "false",
		Rule:     "throttle compaction by bytes so its rate is tied to measured disk bandwidth (disk-tuning §3)",
		Evidence: []string{"compaction rewrites live entries; an entry-count limit means nothing in bytes when entry sizes vary"},
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "compactionRateByBytes", Value: strconv.FormatInt(compBytes, 10), PulsarDefault: "1000000",
		Rule:     fmt.Sprintf("%.0f%% of the ledger disk's sustained write bandwidth, divided among the dirs on that disk (each dir compacts on its own GC thread and rate limiter), rounded down to MiB/s, slowest disk", CompactionShare*100),
		Evidence: compEv,
	})
	gc := planGC(in.LedgerDisks, dirsPerDisk, compBytes)
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "gcWaitTime", Value: strconv.FormatInt(gc.gcWaitMs, 10), PulsarDefault: "900000",
		Rule:     "the GC cycle: keep Pulsar's 15 min; the compaction intervals are whole cycles of it",
		Evidence: gc.gcEv,
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "minorCompactionInterval", Value: strconv.FormatInt(gc.minorSec, 10), PulsarDefault: "3600",
		Rule:     fmt.Sprintf("at least Pulsar's 3600 s and at least the worst-case minor pass (%.1f × dir capacity ÷ compactionRateByBytes), in whole gcWaitTime cycles", MinorCompactionThresh),
		Evidence: gc.minorEv,
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "minorCompactionThreshold", Value: strconv.FormatFloat(MinorCompactionThresh, 'f', -1, 64), PulsarDefault: "0.2",
		Rule:     "keep Pulsar's 0.2: minor compaction only picks nearly empty entry logs, cheap to rewrite",
		Evidence: []string{compactionThresholdEvidence(MinorCompactionThresh), "must stay below majorCompactionThreshold (GarbageCollectorThread refuses to start otherwise)"},
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "majorCompactionInterval", Value: strconv.FormatInt(gc.majorSec, 10), PulsarDefault: "86400",
		Rule:     fmt.Sprintf("at least Pulsar's 86400 s and at least the worst-case major pass (%.1f × dir capacity ÷ compactionRateByBytes), in whole gcWaitTime cycles, > minorCompactionInterval", MajorCompactionThresh),
		Evidence: gc.majorEv,
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "majorCompactionThreshold", Value: strconv.FormatFloat(MajorCompactionThresh, 'f', -1, 64), PulsarDefault: "0.5",
		Rule:     "keep Pulsar's 0.5: above it a compaction rewrites more bytes than it frees",
		Evidence: []string{compactionThresholdEvidence(MajorCompactionThresh)},
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Scope: ScopeAutoRecovery, Key: "rereplicationEntryBatchSize", Value: strconv.Itoa(RereplicationBatch), PulsarDefault: "100",
		Rule:     "100 entries in parallel per ledger being re-replicated (BK code default 10); read by the AutoRecovery process",
		Evidence: []string{"Pulsar's shipped value; the WeChat deployment used 100 to speed up recovery"},
	})

	// ---- RocksDB entry-location index ----
	rw := int64(RocksWriteBufferSSD)
	rwEv := []string{"ledger disks are SSD-class: 128 MB memtables (WeChat report) mean fewer L0 flushes and compactions"}
	switch {
	case anyHDD:
		rw = RocksWriteBufferDefault
		rwEv = []string{"an HDD-class ledger disk: keep Pulsar's 64 MiB (the 128 MB report is from SSDs)"}
	case !haveMem:
		rw = RocksWriteBufferDefault
		rwEv = []string{"direct memory unknown (our proxy for the pod's size): keep Pulsar's 64 MiB; give -XX:MaxDirectMemorySize to consider 128 MiB"}
	case rocksNative(effLedgerDirs, RocksWriteBufferSSD) > in.DirectMemoryBytes:
		rw = RocksWriteBufferDefault
		rwEv = []string{fmt.Sprintf("SSD-class, but 128 MiB memtables would need %s of native memory, more than the %s direct memory (our proxy for the pod's size): keep Pulsar's 64 MiB",
			units.HumanBytes(float64(rocksNative(effLedgerDirs, RocksWriteBufferSSD))), units.FormatBytes(in.DirectMemoryBytes))}
	}
	mp.RocksDBNative = rocksNative(effLedgerDirs, rw)
	rwEv = append(rwEv, fmt.Sprintf("native memory (outside MaxDirectMemorySize), per bookie: %d dirs × (block cache %s + %d × %s) = %s — the pod limit must cover it",
		effLedgerDirs, units.HumanBytes(RocksBlockCacheDefault), RocksMaxWriteBufferCount, units.FormatBytes(rw), units.HumanBytes(float64(mp.RocksDBNative))))
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "dbStorage_rocksDB_writeBufferSizeMB", Value: strconv.FormatInt(rw/MiB, 10), PulsarDefault: "64",
		Rule:     "same as write_buffer_size in entry_location_rocksdb.conf; BookKeeper ignores it when that file exists (Pulsar ≥ 2.11 ships it), but the Pulsar image's update-rocksdb-conf-from-env.py writes it into the file from the environment (the Helm chart runs it)",
		Evidence: rwEv[:1],
	})
	settings = append(settings, Setting{
		File: FileRocksDB, Section: `CFOptions "default"`, Key: "write_buffer_size", Value: strconv.FormatInt(rw, 10), PulsarDefault: "67108864",
		Rule:     "128 MiB on SSD-class ledger disks when dirs × (block cache + 4 × 128 MiB) ≤ direct memory; Pulsar's 64 MiB otherwise",
		Evidence: rwEv,
	})
	settings = append(settings, Setting{
		File: FileRocksDB, Section: `CFOptions "default"`, Key: "max_write_buffer_number", Value: strconv.Itoa(RocksMaxWriteBufferCount), PulsarDefault: "4",
		Rule:     "keep Pulsar's value",
		Evidence: []string{"listed because the native-memory estimate uses it"},
	})
	settings = append(settings, Setting{
		File: FileRocksDB, Section: `TableOptions/BlockBasedTable "default"`, Key: "block_cache", Value: strconv.Itoa(RocksBlockCacheDefault), PulsarDefault: "206150041",
		Rule:     "keep Pulsar's value unless the locations index is known to be larger",
		Evidence: []string{"index size is a property of the data, not the disk; disk-tuning §3: hold a large part of the locations index (can reach ~2 GB)"},
	})
	for i := range settings {
		if settings[i].Scope == "" && settings[i].File == FileBookKeeper {
			settings[i].Scope = ScopeBookie
		}
	}

	r.Memory = mp
	r.Settings = settings
	if haveMem && mp.RocksDBNative > in.DirectMemoryBytes {
		r.Warnings = append(r.Warnings, fmt.Sprintf("RocksDB needs ~%s of native memory outside the JVM limits; the pod's memory limit must cover heap + direct memory + this + page cache", units.HumanBytes(float64(mp.RocksDBNative))))
	}
	var mixedW []string
	for pr, m := range mixed {
		j, l := in.JournalDisks[pr.j], in.LedgerDisks[pr.l]
		w := fmt.Sprintf("journal %s and ledger %s share device %s; measured at once: journal %s (alone %s), p99 add %s (alone %s); entry log %s (alone %s)",
			j.Dir, l.Dir, j.Device.Disk, m.journalMixed.describe(), m.journalAlone.describe(), fmtNs(m.p99Mixed), fmtNs(m.p99Alone), m.logMixed.describe(), m.logAlone.describe())
		if m.p99Alone > 0 && m.p99Mixed > MixedP99Factor*m.p99Alone {
			w += fmt.Sprintf(": the ledger writes raise the journal's p99 %.1f× — put the journal on its own device", m.p99Mixed/m.p99Alone)
		}
		mixedW = append(mixedW, w)
	}
	slices.Sort(mixedW)
	r.Warnings = append(append(warnings(in, r, jAgg, lAgg, len(mixed) > 0), mixedW...), r.Warnings...)
	if w, ok := loadWarning(in.Bench); ok {
		r.Warnings = append([]string{w}, r.Warnings...)
	}
	if in.Bench != nil && in.Bench.Guard != nil {
		r.Warnings = append(r.Warnings, in.Bench.Guard.warnings()...)
	}
	return r, nil
}

// countOnDisk counts the cookie's dirs on the disk of dir: dir itself or
// below it; when the cookie's paths are the bookie pod's (none match), an
// even share of them over the disks.
func countOnDisk(dirs []string, dir string, disks int) int {
	n := 0
	for _, d := range dirs {
		if d == dir || strings.HasPrefix(d, strings.TrimSuffix(dir, "/")+"/") {
			n++
		}
	}
	if n == 0 {
		return (len(dirs) + disks - 1) / max(1, disks)
	}
	return n
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// planMemory lays out direct memory: journal 5%, headroom, entry-log
// buffers (reduced to fit their share), then write and read caches in equal
// halves of what is left.
func planMemory(in Input, ledgerDirs int, wb int64, cands []int64) (MemoryPlan, []string, error) {
	d := in.DirectMemoryBytes
	mp := MemoryPlan{DirectBytes: d, DirectSource: in.DirectMemorySource, LedgerDirs: ledgerDirs}
	mp.JournalBytes = int64(float64(d) * JournalMemShare)
	mp.HeadroomBytes = max(HeadroomMin, int64(float64(d)*HeadroomShare))
	limit := int64(float64(d) * EntryLogBufferShare)
	per := wb
	if 2*int64(ledgerDirs)*per > limit {
		fit := int64(0)
		slices.Sort(cands)
		for _, c := range cands {
			if c <= wb && 2*int64(ledgerDirs)*c <= limit {
				fit = c
			}
		}
		if fit == 0 {
			// No measured size fits: the largest power of two that does,
			// never below BK's 64 KiB.
			fit = 64 * KiB
			for fit*2 <= wb && 2*int64(ledgerDirs)*fit*2 <= limit {
				fit *= 2
			}
		}
		per = fit
		mp.MemoryLimitedNote = fmt.Sprintf("entry-log write buffer reduced from %s to %s to fit %.0f%% of direct memory", units.FormatBytes(wb), units.FormatBytes(per), EntryLogBufferShare*100)
	}
	mp.EntryLogBufBytes = 2 * int64(ledgerDirs) * per
	cache := d - mp.JournalBytes - mp.HeadroomBytes - mp.EntryLogBufBytes
	need := int64(ledgerDirs) * (MinWriteCachePerDir + MinReadCachePerDir)
	if cache < need {
		return mp, nil, fmt.Errorf("%w: %s direct memory leaves %s for caches after journal %s, headroom %s and entry-log buffers %s; %d ledger dirs need ≥ %s (use -XX:MaxDirectMemorySize ≥ %s)",
			ErrDirectMemoryTooSmall, units.FormatBytes(d), units.HumanBytes(float64(cache)), units.HumanBytes(float64(mp.JournalBytes)), units.HumanBytes(float64(mp.HeadroomBytes)),
			units.HumanBytes(float64(mp.EntryLogBufBytes)), ledgerDirs, units.FormatBytes(need), units.FormatBytes(roundUp(minDirectFor(ledgerDirs, mp.EntryLogBufBytes), 256*MiB)))
	}
	// Whole MiB per dir, as BK divides the MB total by the dir count.
	half := cache / 2 / int64(ledgerDirs) / MiB * MiB * int64(ledgerDirs)
	mp.WriteCacheBytes, mp.ReadCacheBytes = half, half
	ev := []string{
		fmt.Sprintf("direct memory %s (%s)", units.FormatBytes(d), in.DirectMemorySource),
		fmt.Sprintf("− journal %.0f%% %s − headroom (Netty, in-flight requests) %s − entry-log buffers 2 × %d dirs × %s = %s for caches",
			JournalMemShare*100, units.HumanBytes(float64(mp.JournalBytes)), units.HumanBytes(float64(mp.HeadroomBytes)), ledgerDirs, units.FormatBytes(per), units.HumanBytes(float64(cache))),
	}
	return mp, ev, nil
}

// minDirectFor solves planMemory's inequality for the direct memory a node
// with n ledger dirs needs.
func minDirectFor(n int, bufs int64) int64 {
	need := int64(n)*(MinWriteCachePerDir+MinReadCachePerDir) + bufs
	// d·(1 − 0.05 − 0.20) ≥ need, and d − 0.05d − 128 MiB ≥ need.
	a := int64(float64(need) / (1 - JournalMemShare - HeadroomShare))
	b := int64(float64(need+HeadroomMin) / (1 - JournalMemShare))
	return max(a, b)
}

// rocksNative is the RocksDB memory outside the JVM: one entry-location
// DB per ledger dir, each with its own block cache and memtables.
func rocksNative(dirs int, writeBuffer int64) int64 {
	return int64(dirs) * (RocksBlockCacheDefault + RocksMaxWriteBufferCount*writeBuffer)
}

// warnings collects conditions an operator should know about.
func warnings(in Input, r *Recommendation, jAgg, lAgg float64, mixedMeasured bool) []string {
	var w []string
	all := append(append([]Disk{}, in.JournalDisks...), in.LedgerDisks...)
	budgetCut := map[string][]float64{}
	for _, d := range all {
		cls, basis, _ := classifyWith(d, sameDeviceReads(d, all))
		if d.Device != nil && d.Device.Rotational && cls == "ssd" {
			w = append(w, fmt.Sprintf("%s: sysfs says rotational but %s; treated as SSD (virtual disks often report rotational=1)", diskLabel(d), basis))
		}
		if d.Device != nil && cls == "ssd" && d.Device.Scheduler != "" && d.Device.Scheduler != "none" && d.Device.Scheduler != "noop" {
			w = append(w, fmt.Sprintf("%s: I/O scheduler %q; SSDs usually do best with \"none\"", diskLabel(d), d.Device.Scheduler))
		}
		for _, res := range d.Results {
			for _, rw := range res.Warnings {
				if strings.Contains(rw, "byte budget spent") {
					budgetCut[diskLabel(d)] = append(budgetCut[diskLabel(d)], res.DurationSec)
					continue
				}
				w = append(w, fmt.Sprintf("%s: %s %s: %s", diskLabel(d), res.Workload, pointLabel(res), rw))
			}
		}
		if cut := budgetCut[diskLabel(d)]; len(cut) > 0 {
			w = append(w, fmt.Sprintf("%s: %d of %d points were stopped early by the byte budget (shortest measured %.1f s): the disk is fast for the budget; raise --max-bytes for steadier figures",
				diskLabel(d), len(cut), len(d.Results), slices.Min(cut)))
		}
	}
	for _, j := range in.JournalDisks {
		for _, l := range in.LedgerDisks {
			if sameDevice(j, l) && !mixedMeasured {
				w = append(w, fmt.Sprintf("journal %s and ledger %s share device %s: not measured under mixed load (re-run the benchmark with both directories)", j.Dir, l.Dir, j.Device.Disk))
			}
		}
	}
	if lAgg > 0 && jAgg > lAgg {
		w = append(w, fmt.Sprintf("journals accept %s but ledger disks write %s: sustained ingest is bounded by the ledger disks; beyond it the write cache fills and adds are throttled", units.DecimalRate(jAgg), units.DecimalRate(lAgg)))
	}
	if r.Memory.MemoryLimitedNote != "" {
		w = append(w, "memory-limited: "+r.Memory.MemoryLimitedNote)
	}
	if strings.HasPrefix(in.DirectMemorySource, "-Xmx") {
		w = append(w, "direct memory taken from -Xmx (JVM default); set -XX:MaxDirectMemorySize explicitly")
	}
	return w
}

// sameDeviceReads returns random-read results of other disks on d's device.
func sameDeviceReads(d Disk, all []Disk) []diskbench.Result {
	var out []diskbench.Result
	for _, o := range all {
		if o.Dir != d.Dir && sameDevice(d, o) {
			for _, r := range o.Results {
				if r.Workload == diskbench.WorkloadRandRead {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

func sameDevice(a, b Disk) bool {
	return a.Device != nil && b.Device != nil && a.Device.Disk != "" && a.Device.Disk == b.Device.Disk
}

func firstCookie(primary, secondary []Disk) *Cookie {
	for _, ds := range [][]Disk{primary, secondary} {
		for _, d := range ds {
			if len(d.Cookies) > 0 {
				c := d.Cookies[0]
				return &c
			}
		}
	}
	return nil
}

// subDirs returns dir itself for n = 1, else dir/0 … dir/n-1.
func subDirs(dir string, n int) []string {
	if n <= 1 {
		return []string{dir}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = filepath.Join(dir, strconv.Itoa(i))
	}
	return out
}

func diskLabel(d Disk) string {
	if d.Device != nil && d.Device.Disk != "" {
		return fmt.Sprintf("%s (%s)", d.Dir, d.Device.Disk)
	}
	return d.Dir
}

func pointLabel(r diskbench.Result) string {
	switch r.Workload {
	case diskbench.WorkloadRandRead:
		return fmt.Sprintf("bs=%s depth=%d", units.FormatBytes(r.BlockSize), r.Depth)
	case diskbench.WorkloadJournal:
		return fmt.Sprintf("writers=%d bs=%s sync-every=%d", r.Writers, units.FormatBytes(r.BlockSize), max(1, r.SyncEvery))
	default:
		return fmt.Sprintf("writers=%d bs=%s", r.Writers, units.FormatBytes(r.BlockSize))
	}
}

func usable(r diskbench.Result) bool { return r.BytesPerSec > 0 && r.Ops > 0 }

// classifyWith classifies d using its own random-read results plus extra
// ones measured on the same device (a journal and a ledger dir sharing a
// disk).
func classifyWith(d Disk, extra []diskbench.Result) (class, basis string, iops float64) {
	var best float64
	var bs int64 = math.MaxInt64
	for _, r := range append(append([]diskbench.Result{}, d.Results...), extra...) {
		if r.Workload != diskbench.WorkloadRandRead || !usable(r) {
			continue
		}
		switch {
		case r.BlockSize < bs:
			bs, best = r.BlockSize, r.IOPS
		case r.BlockSize == bs:
			best = math.Max(best, r.IOPS)
		}
	}
	if best > 0 && bs <= 16*KiB {
		if best < HDDMaxIOPS {
			return "hdd", fmt.Sprintf("%s random reads reached %.0f IOPS (< %d)", units.FormatBytes(bs), best, HDDMaxIOPS), best
		}
		return "ssd", fmt.Sprintf("%s random reads reached %.0f IOPS (≥ %d)", units.FormatBytes(bs), best, HDDMaxIOPS), best
	}
	if d.Device != nil && d.Device.Rotational {
		return "hdd", "sysfs rotational=1 (no random-read measurement)", 0
	}
	if d.Device != nil {
		return "ssd", "sysfs rotational=0 (no random-read measurement)", 0
	}
	return "ssd", "unknown; assumed SSD", 0
}

func summarize(role string, d Disk, all []Disk) DiskSummary {
	cls, basis, iops := classifyWith(d, sameDeviceReads(d, all))
	s := DiskSummary{Role: role, Dir: d.Dir, Class: cls, ClassBasis: basis, RandReadIOPS: iops, LiveBookie: len(d.Cookies) > 0}
	if d.Device != nil {
		s.Device = d.Device.Disk
	}
	return s
}

func roundUp(v, unit int64) int64 {
	if v <= 0 {
		return unit
	}
	return (v + unit - 1) / unit * unit
}

// fmtNs renders nanoseconds as µs or ms with 2–3 significant digits.
func fmtNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	default:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	}
}
