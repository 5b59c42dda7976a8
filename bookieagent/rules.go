package bookieagent

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Rule constants. Each cites the row of disk-tuning.md §3 it implements;
// "Heur." marks our own choice where the document gives a range.
const (
	// JournalNearBest: a journal count qualifies when its aggregate MB/s is
	// within 10% of the best measured count ("within ~5–10% of the best").
	JournalNearBest = 0.90
	// JournalP99Factor: ... and its p99 add latency is at most 2× the
	// single-journal p99 ("≤ 2× the N=1 p99").
	JournalP99Factor = 2.0
	// MaxJournalDirsPerDisk caps journal dirs per disk ("cap ... at 8").
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
	// LedgerDirGain: add a ledger dir on one disk while the next writer
	// count still gains more than 10% ("while (b) ... still gains >10%").
	LedgerDirGain = 1.10
	// FlushThreadBytesPerSec is what one DbLedgerStorage flush thread
	// sustains (BK PR #1289, ~500 MB/s); faster disks need more dirs.
	FlushThreadBytesPerSec = 500e6
	// MaxLedgerDirsPerDisk caps ledger dirs per disk (Heur.).
	MaxLedgerDirsPerDisk = 4
	// FlushEntrylogSeconds: flushEntrylogBytes ≈ 100 ms of measured write
	// bandwidth, clamped to 32–64 MiB ("32–64 MiB, or ≈ 50–100 ms").
	FlushEntrylogSeconds = 0.1
	FlushEntrylogMin     = 32 * MiB
	FlushEntrylogMax     = 64 * MiB
	// CompactionShare: compactionRateByBytes = 10% of the per-dir write
	// bandwidth (lower end of "10–20% of the measured ledger-disk write
	// bandwidth left over at peak ingest"; ingest is unknown to the agent).
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
)

// Config file names a Setting belongs to.
const (
	FileBookKeeper = "bookkeeper.conf"
	FileRocksDB    = "entry_location_rocksdb.conf"
)

// Disk is one directory given to the agent (--journal-dir / --ledger-dir),
// treated as one disk, with what was measured on it.
type Disk struct {
	// Dir is the configured directory.
	Dir string `json:"dir"`
	// FSType is the filesystem type (ext4, xfs).
	FSType string `json:"fs_type,omitempty"`
	// Device is the block device behind Dir, when sysfs could tell.
	Device *BlockDevice `json:"device,omitempty"`
	// BenchDir is where the measurements ran (Dir, or a scratch sibling on
	// the same filesystem when Dir holds a live bookie).
	BenchDir string `json:"bench_dir,omitempty"`
	// Cookies are the bookie cookies found in Dir or its sub-directories.
	Cookies []Cookie `json:"cookies,omitempty"`
	// Results are diskbench results measured on this disk.
	Results []diskbench.Result `json:"results"`
}

// Input is everything Recommend needs. It is what `bookieagent recommend`
// measures and probes, and what the golden tests load from testdata.
type Input struct {
	JournalDisks []Disk `json:"journal_disks"`
	LedgerDisks  []Disk `json:"ledger_disks"`
	// CPUs is the number of CPUs the bookie may use.
	CPUs int `json:"cpus"`
	// DirectMemoryBytes is the bookie JVM's -XX:MaxDirectMemorySize.
	DirectMemoryBytes int64 `json:"direct_memory_bytes"`
	// DirectMemorySource says where DirectMemoryBytes came from.
	DirectMemorySource string `json:"direct_memory_source"`
	// EntrySizeBytes is the median entry size, when known (0 = unknown).
	EntrySizeBytes int64 `json:"entry_size_bytes,omitempty"`
}

// Setting is one recommended configuration value with its evidence.
type Setting struct {
	File string `json:"file"`
	// Section is the RocksDB options-file section, e.g. `CFOptions "default"`.
	Section string `json:"section,omitempty"`
	Key     string `json:"key"`
	Value   string `json:"value"`
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
	// PeakBytesPerSec is the best write throughput measured on the disk.
	PeakBytesPerSec float64 `json:"peak_bytes_per_sec"`
	// RandReadIOPS is the best small-block random-read IOPS (0 = not run).
	RandReadIOPS float64 `json:"randread_iops,omitempty"`
}

// MemoryPlan is the direct-memory budget behind the cache sizes.
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
// needs, ErrNoDirectMemory without a direct-memory size, and
// ErrDirectMemoryTooSmall when the minimum caches do not fit.
func Recommend(in Input) (*Recommendation, error) {
	if len(in.JournalDisks) == 0 || len(in.LedgerDisks) == 0 {
		return nil, fmt.Errorf("%w: need at least one journal and one ledger disk", ErrNoMeasurements)
	}
	if in.DirectMemoryBytes <= 0 {
		return nil, ErrNoDirectMemory
	}
	cpus := in.CPUs
	if cpus < 1 {
		cpus = 1
	}
	r := &Recommendation{}
	var settings []Setting
	allDisks := append(append([]Disk{}, in.JournalDisks...), in.LedgerDisks...)

	// ---- journal disks ----
	perDiskCap := max(1, min(MaxJournalDirsPerDisk, cpus/2/len(in.JournalDisks)))
	var jDirs []string
	var jEv []string
	var jLatP50 []float64
	var jAgg float64
	thresh := JournalThresholdMin
	var threshEv []string
	wbKB := int64(64)
	var wbEv []string
	for _, d := range in.JournalDisks {
		sum := summarize("journal", d, allDisks)
		sweep := journalWritersSweep(d.Results)
		if len(sweep) == 0 {
			return nil, fmt.Errorf("%w: journal disk %s has no journal results", ErrNoMeasurements, d.Dir)
		}
		n, ev := pickJournalCount(sweep, perDiskCap)
		jEv = append(jEv, fmt.Sprintf("%s: %s", diskLabel(d), ev))
		sum.RecommendedDirs = n
		jDirs = append(jDirs, subDirs(d.Dir, n)...)
		for _, res := range sweep {
			if res.Writers == n {
				jAgg += res.BytesPerSec
			}
			sum.PeakBytesPerSec = math.Max(sum.PeakBytesPerSec, res.BytesPerSec)
		}
		if p50, ok := syncP50(sweep); ok {
			jLatP50 = append(jLatP50, p50)
		}
		t, tev := pickGroupThreshold(d.Results)
		threshEv = append(threshEv, fmt.Sprintf("%s: %s", diskLabel(d), tev))
		thresh = max(thresh, t)
		kb, wev := pickJournalWriteBuffer(d.Results)
		wbEv = append(wbEv, fmt.Sprintf("%s: %s", diskLabel(d), wev))
		wbKB = max(wbKB, kb)
		r.Disks = append(r.Disks, sum)
	}
	jCookie := firstCookie(in.JournalDisks, in.LedgerDisks)
	js := Setting{
		File: FileBookKeeper, Key: "journalDirectories", Value: strings.Join(jDirs, ","),
		PulsarDefault: "data/bookkeeper/journal (1 dir)",
		Rule: fmt.Sprintf("per journal disk: smallest writer count within %.0f%% of the best aggregate MB/s whose p99 add latency (BookKeeper journal model; plain model: commit) ≤ %.0f× the 1-writer p99; capped at min(%d, CPUs/2 ÷ journal disks) = %d; N>1 → N sub-directories",
			(1-JournalNearBest)*100, JournalP99Factor, MaxJournalDirsPerDisk, perDiskCap),
		Evidence:       jEv,
		NewBookiesOnly: true,
	}
	if jCookie != nil {
		js.Current = strings.Join(jCookie.JournalDirs, ",")
		js.Evidence = append(js.Evidence, fmt.Sprintf("live bookie: cookie %s fixes %d journal dir(s): %s", jCookie.Path, len(jCookie.JournalDirs), js.Current))
	}
	settings = append(settings, js)

	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "journalWriteBufferSizeKB", Value: strconv.FormatInt(wbKB, 10), PulsarDefault: "64",
		Rule:     fmt.Sprintf("raise from 64 only if a larger write buffer (BookKeeper journal model; plain model: write size) beats 64 KiB by >%.0f%% at the same group threshold; then the smallest size within %.0f%% of the best, 64–1024", (JournalWriteBufferGain-1)*100, (1-LevelOff)*100),
		Evidence: wbEv,
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "journalBufferedWritesThreshold", Value: strconv.FormatInt(thresh, 10), PulsarDefault: "524288",
		Rule:     fmt.Sprintf("smallest journalBufferedWritesThreshold (BookKeeper journal model; plain model: group size) reaching %.0f%% of the best MB/s with 1 journal, clamped to %s–%s (largest over journal disks)", LevelOff*100, units.FormatBytes(JournalThresholdMin), units.FormatBytes(JournalThresholdMax)),
		Evidence: threshEv,
	})
	gw := GroupWaitMinMs
	var gwEv []string
	for i, p := range jLatP50 {
		ms := int(math.Ceil(p / 1e6))
		gw = max(gw, min(GroupWaitMaxMs, max(GroupWaitMinMs, ms)))
		gwEv = append(gwEv, fmt.Sprintf("%s: p50 fdatasync %s (1 writer)", diskLabel(in.JournalDisks[i]), fmtNs(p)))
	}
	if len(jLatP50) == 0 {
		gwEv = append(gwEv, "no sync latency measured; Pulsar default kept")
	}
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "journalMaxGroupWaitMSec", Value: strconv.Itoa(gw), PulsarDefault: "1",
		Rule:     fmt.Sprintf("≈ the device's p50 sync latency, rounded up to whole ms, clamped to %d–%d (slowest journal disk)", GroupWaitMinMs, GroupWaitMaxMs),
		Evidence: gwEv,
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
	for _, d := range in.LedgerDisks {
		sum := summarize("ledger", d, allDisks)
		if sum.Class == "hdd" {
			anyHDD = true
		}
		bsSweep := entryLogBlockSweep(d.Results)
		if len(bsSweep) == 0 {
			return nil, fmt.Errorf("%w: ledger disk %s has no entrylog results", ErrNoMeasurements, d.Dir)
		}
		bs, peak, bev := pickEntryLogBuffer(bsSweep)
		bufEv = append(bufEv, fmt.Sprintf("%s: %s", diskLabel(d), bev))
		wbBytes = max(wbBytes, bs)
		for _, res := range bsSweep {
			bufCands = append(bufCands, res.BlockSize)
		}
		atChosen := 0.0
		for _, res := range bsSweep {
			if res.BlockSize == bs {
				atChosen = res.BytesPerSec
			}
		}
		n, diskBW, lev := pickLedgerCount(d.Results, atChosen)
		lEv = append(lEv, fmt.Sprintf("%s: %s", diskLabel(d), lev))
		sum.RecommendedDirs = n
		sum.PeakBytesPerSec = math.Max(peak, diskBW)
		lDirs = append(lDirs, subDirs(d.Dir, n)...)
		lAgg += diskBW
		perDir := diskBW / float64(n)
		fb := roundUp(int64(perDir*FlushEntrylogSeconds), MiB)
		fb = min(FlushEntrylogMax, max(FlushEntrylogMin, fb))
		flushEv = append(flushEv, fmt.Sprintf("%s: %s per dir × %.0f ms = %s", diskLabel(d), units.DecimalRate(perDir), FlushEntrylogSeconds*1000, units.HumanBytes(perDir*FlushEntrylogSeconds)))
		flushBytes = max(flushBytes, fb)
		cr := perDir * CompactionShare
		compEv = append(compEv, fmt.Sprintf("%s: %s per dir (%s ÷ %d dirs) × %.0f%% = %s", diskLabel(d), units.DecimalRate(perDir), units.DecimalRate(diskBW), n, CompactionShare*100, units.DecimalRate(cr)))
		compRate = math.Min(compRate, cr)
		r.Disks = append(r.Disks, sum)
	}
	lCookie := firstCookie(in.LedgerDisks, in.JournalDisks)
	ls := Setting{
		File: FileBookKeeper, Key: "ledgerDirectories", Value: strings.Join(lDirs, ","),
		PulsarDefault: "data/bookkeeper/ledgers (1 dir)",
		Rule: fmt.Sprintf("per ledger disk: add a dir while the next entry-log writer count gains >%.0f%%; at least ⌈MB/s ÷ %.0f MB/s⌉ (one DbLedgerStorage flush thread per dir); at most %d; N>1 → N sub-directories",
			(LedgerDirGain-1)*100, FlushThreadBytesPerSec/1e6, MaxLedgerDirsPerDisk),
		Evidence:       lEv,
		NewBookiesOnly: true,
	}
	effLedgerDirs := len(lDirs)
	if lCookie != nil {
		ls.Current = strings.Join(lCookie.LedgerDirs, ",")
		effLedgerDirs = len(lCookie.LedgerDirs)
		ls.Evidence = append(ls.Evidence, fmt.Sprintf("live bookie: cookie %s fixes %d ledger dir(s): %s (ledger dirs may only grow, with allowStorageExpansion; ledgerId mod N placement makes any change unsafe for existing data)", lCookie.Path, effLedgerDirs, ls.Current))
	}

	// ---- memory plan ----
	mp, memEv, err := planMemory(in, effLedgerDirs, wbBytes, bufCands)
	if err != nil {
		return nil, err
	}
	if mp.EntryLogBufBytes/int64(2*effLedgerDirs) < wbBytes {
		bufEv = append(bufEv, fmt.Sprintf("memory-limited: 2 × %d dirs × %s > %.0f%% of direct memory %s; reduced to %s",
			effLedgerDirs, units.FormatBytes(wbBytes), EntryLogBufferShare*100, units.FormatBytes(in.DirectMemoryBytes), units.FormatBytes(mp.EntryLogBufBytes/int64(2*effLedgerDirs))))
		wbBytes = mp.EntryLogBufBytes / int64(2*effLedgerDirs)
	}
	flushBytes = max(flushBytes, wbBytes)

	settings = append(settings, ls)
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "writeBufferSizeBytes", Value: strconv.FormatInt(wbBytes, 10), PulsarDefault: "65536",
		Rule: fmt.Sprintf("smallest entry-log write size reaching %.0f%% of the peak (1 writer), largest over ledger disks; 2 × ledger dirs × size ≤ %.0f%% of direct memory",
			LevelOff*100, EntryLogBufferShare*100),
		Evidence: bufEv,
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
		Rule:     fmt.Sprintf("≈ %.0f ms of measured per-dir write bandwidth rounded up to MiB, clamped to %s–%s, ≥ writeBufferSizeBytes (largest over ledger disks)", FlushEntrylogSeconds*1000, units.FormatBytes(FlushEntrylogMin), units.FormatBytes(FlushEntrylogMax)),
		Evidence: flushEv,
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "dbStorage_writeCacheMaxSizeMb", Value: strconv.FormatInt(mp.WriteCacheBytes/MiB, 10), PulsarDefault: "(25% of direct memory)",
		Rule:     "half of (direct memory − journal 5% − headroom − entry-log buffers), total over all ledger dirs (BK splits it evenly)",
		Evidence: append(memEv, fmt.Sprintf("per ledger dir: %s, two halves of %s", units.HumanBytes(float64(mp.WriteCacheBytes)/float64(effLedgerDirs)), units.HumanBytes(float64(mp.WriteCacheBytes)/float64(2*effLedgerDirs)))),
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "dbStorage_readAheadCacheMaxSizeMb", Value: strconv.FormatInt(mp.ReadCacheBytes/MiB, 10), PulsarDefault: "(25% of direct memory)",
		Rule: "the other half of the cache budget, total over all ledger dirs",
		Evidence: []string{
			fmt.Sprintf("BookKeeper's start-up check: write %d MiB + read %d MiB = %d MiB ≤ direct memory %d MiB", mp.WriteCacheBytes/MiB, mp.ReadCacheBytes/MiB, (mp.WriteCacheBytes+mp.ReadCacheBytes)/MiB, in.DirectMemoryBytes/MiB),
			fmt.Sprintf("per ledger dir: %s", units.HumanBytes(float64(mp.ReadCacheBytes)/float64(effLedgerDirs))),
		},
	})
	compBytes := max(int64(1000000), int64(compRate)/MiB*MiB)
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "isThrottleByBytes", Value: "true", PulsarDefault: "false",
		Rule:     "throttle compaction by bytes so its rate is tied to measured disk bandwidth (disk-tuning §3)",
		Evidence: []string{"compaction rewrites live entries; an entry-count limit means nothing in bytes when entry sizes vary"},
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "compactionRateByBytes", Value: strconv.FormatInt(compBytes, 10), PulsarDefault: "1000000",
		Rule:     fmt.Sprintf("%.0f%% of the per-dir measured entry-log write bandwidth, rounded down to MiB/s, slowest ledger disk (each dir compacts on its own thread)", CompactionShare*100),
		Evidence: compEv,
	})
	settings = append(settings, Setting{
		File: FileBookKeeper, Key: "rereplicationEntryBatchSize", Value: strconv.Itoa(RereplicationBatch), PulsarDefault: "100",
		Rule:     "100 entries in parallel per ledger being re-replicated (BK code default 10)",
		Evidence: []string{"Pulsar's shipped value; the WeChat deployment used 100 to speed up recovery"},
	})

	// ---- RocksDB entry-location index ----
	rw := int64(RocksWriteBufferSSD)
	rwEv := []string{"ledger disks are SSD-class: 128 MB memtables (WeChat report) mean fewer L0 flushes and compactions"}
	switch {
	case anyHDD:
		rw = RocksWriteBufferDefault
		rwEv = []string{"an HDD-class ledger disk: keep Pulsar's 64 MiB (the 128 MB report is from SSDs)"}
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
		Rule:     "same as write_buffer_size in entry_location_rocksdb.conf; ignored when that file exists (Pulsar ≥ 2.11 / BK ≥ 4.15 ship it)",
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

	r.Memory = mp
	r.Settings = settings
	if mp.RocksDBNative > in.DirectMemoryBytes {
		r.Warnings = append(r.Warnings, fmt.Sprintf("RocksDB needs ~%s of native memory outside the JVM limits; the pod's memory limit must cover heap + direct memory + this + page cache", units.HumanBytes(float64(mp.RocksDBNative))))
	}
	r.Warnings = append(warnings(in, r, jAgg, lAgg), r.Warnings...)
	return r, nil
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
func warnings(in Input, r *Recommendation, jAgg, lAgg float64) []string {
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
			if sameDevice(j, l) {
				w = append(w, fmt.Sprintf("journal %s and ledger %s share device %s: under mixed load journal p99 rises (run diskbench's mixed workload to see how much)", j.Dir, l.Dir, j.Device.Disk))
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
// returns its results sorted by writers, one per count (the best if
// repeated).
func journalWritersSweep(rs []diskbench.Result) []diskbench.Result {
	by := map[journalConfig]map[int]diskbench.Result{}
	for _, r := range rs {
		if r.Workload != diskbench.WorkloadJournal || !usable(r) || r.Writers < 1 {
			continue
		}
		k := journalConfigOf(r)
		if by[k] == nil {
			by[k] = map[int]diskbench.Result{}
		}
		if old, ok := by[k][r.Writers]; !ok || r.BytesPerSec > old.BytesPerSec {
			by[k][r.Writers] = r
		}
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
	var out []diskbench.Result
	for _, r := range by[best] {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Writers < out[j].Writers })
	return out
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

// pickJournalCount applies the journalDirectories rule to a writers sweep.
func pickJournalCount(sweep []diskbench.Result, capN int) (int, string) {
	var best float64
	for _, r := range sweep {
		best = math.Max(best, r.BytesPerSec)
	}
	base, hasBase := int64(0), false
	if sweep[0].Writers == 1 {
		base, hasBase = commitP99(sweep[0])
	}
	var parts []string
	chosen, fastest := 0, 0
	var fastestBW float64
	for _, r := range sweep {
		p99, ok := commitP99(r)
		lat := "p99 n/a"
		switch {
		case ok && r.AddLatency != nil:
			lat = "p99 add " + fmtNs(float64(p99))
		case ok:
			lat = "p99 commit " + fmtNs(float64(p99))
		}
		parts = append(parts, fmt.Sprintf("N=%d %s %s", r.Writers, units.DecimalRate(r.BytesPerSec), lat))
		if r.Writers > capN {
			continue
		}
		if hasBase && ok && float64(p99) > JournalP99Factor*float64(base) {
			continue
		}
		if r.BytesPerSec > fastestBW {
			fastestBW, fastest = r.BytesPerSec, r.Writers
		}
		if chosen == 0 && r.BytesPerSec >= JournalNearBest*best {
			chosen = r.Writers
		}
	}
	note := ""
	if chosen == 0 {
		// No count within the cap and the latency budget comes near the
		// best: the fastest count that does meet them.
		chosen = max(1, fastest)
		note = fmt.Sprintf("; no count within the cap (%d) and the p99 budget reaches %.0f%% of the best, took the fastest that meets both", capN, JournalNearBest*100)
	}
	return chosen, fmt.Sprintf("%s: %s; best %s → N=%d%s",
		journalConfigOf(sweep[0]).describe(), strings.Join(parts, ", "), units.DecimalRate(best), chosen, note)
}

// syncP50 returns the 1-writer p50 fdatasync latency of a writers sweep.
func syncP50(sweep []diskbench.Result) (float64, bool) {
	for _, r := range sweep {
		if r.Writers == 1 {
			switch {
			case r.SyncLatency != nil && r.SyncLatency.Count > 0:
				return float64(r.SyncLatency.P50Ns), true
			case r.CommitLatency != nil && r.CommitLatency.Count > 0:
				return float64(r.CommitLatency.P50Ns), true
			}
		}
	}
	return 0, false
}

// pickGroupThreshold applies the journalBufferedWritesThreshold rule to the
// 1-writer journal results: best MB/s per group size, smallest group
// reaching LevelOff of the best.
func pickGroupThreshold(rs []diskbench.Result) (int64, string) {
	if slices.ContainsFunc(rs, bkResult) {
		return pickGroupThresholdBK(rs)
	}
	// The write size measured at the most group sizes (ties: the smaller).
	groups := map[int64]map[int64]float64{} // bs -> group -> MB/s
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadJournal && usable(r) && r.Writers == 1 {
			if groups[r.BlockSize] == nil {
				groups[r.BlockSize] = map[int64]float64{}
			}
			g := r.BlockSize * int64(syncEvery(r))
			groups[r.BlockSize][g] = math.Max(groups[r.BlockSize][g], r.BytesPerSec)
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
	gs := slices.Sorted(maps.Keys(by))
	best := slices.Max(slices.Collect(maps.Values(by)))
	var parts []string
	level := gs[len(gs)-1]
	found := false
	for _, g := range gs {
		parts = append(parts, fmt.Sprintf("%s %s", units.FormatBytes(g), units.DecimalRate(by[g])))
		if !found && by[g] >= LevelOff*best {
			level, found = g, true
		}
	}
	v := min(JournalThresholdMax, max(JournalThresholdMin, level))
	still := ""
	if level == gs[len(gs)-1] && len(gs) > 1 && by[gs[len(gs)-2]] < LevelOff*best {
		still = " (still rising at the largest group measured)"
	}
	return v, fmt.Sprintf("%s writes, group size → MB/s (1 writer): %s; levels off at %s%s → %s", units.FormatBytes(wbs), strings.Join(parts, ", "), units.FormatBytes(level), still, units.FormatBytes(v))
}

// pickGroupThresholdBK is pickGroupThreshold for bookkeeper-model results:
// 1-journal points that differ only in journalBufferedWritesThreshold
// (the configuration measured at the most thresholds), best MB/s per
// threshold, the smallest reaching LevelOff of the best.
func pickGroupThresholdBK(rs []diskbench.Result) (int64, string) {
	by := map[journalConfig]map[int64]float64{}
	for _, r := range rs {
		if bkResult(r) && usable(r) && r.Writers == 1 {
			k := journalConfigOf(r)
			th := k.settings.JournalBufferedWritesThreshold
			k.settings.JournalBufferedWritesThreshold = 0
			if by[k] == nil {
				by[k] = map[int64]float64{}
			}
			by[k][th] = math.Max(by[k][th], r.BytesPerSec)
		}
	}
	var key journalConfig
	n := 0
	for k, m := range by {
		if len(m) > n || (len(m) == n && k.bs < key.bs) {
			key, n = k, len(m)
		}
	}
	if n < 2 {
		return JournalThresholdMin, "fewer than 2 journalBufferedWritesThreshold values measured; Pulsar default kept"
	}
	m := by[key]
	ths := slices.Sorted(maps.Keys(m))
	best := slices.Max(slices.Collect(maps.Values(m)))
	var parts []string
	level := ths[len(ths)-1]
	found := false
	for _, th := range ths {
		parts = append(parts, fmt.Sprintf("%s %s", units.FormatBytes(th), units.DecimalRate(m[th])))
		if !found && m[th] >= LevelOff*best {
			level, found = th, true
		}
	}
	v := min(JournalThresholdMax, max(JournalThresholdMin, level))
	still := ""
	if level == ths[len(ths)-1] && m[ths[len(ths)-2]] < LevelOff*best {
		still = " (still rising at the largest threshold measured)"
	}
	return v, fmt.Sprintf("%s entries, %d in flight, journalWriteBufferSizeKB %d: journalBufferedWritesThreshold → MB/s (1 journal): %s; levels off at %s%s → %s",
		units.FormatBytes(key.bs), key.inFlight, key.settings.JournalWriteBufferSizeKB, strings.Join(parts, ", "), units.FormatBytes(level), still, units.FormatBytes(v))
}

// pickJournalWriteBufferBK is pickJournalWriteBuffer for bookkeeper-model
// results: 1-journal points that differ only in journalWriteBufferSizeKB
// (the largest threshold measured with at least two buffer sizes).
func pickJournalWriteBufferBK(rs []diskbench.Result) (int64, string) {
	by := map[journalConfig]map[int64]float64{}
	for _, r := range rs {
		if bkResult(r) && usable(r) && r.Writers == 1 {
			k := journalConfigOf(r)
			kb := int64(k.settings.JournalWriteBufferSizeKB)
			k.settings.JournalWriteBufferSizeKB = 0
			if by[k] == nil {
				by[k] = map[int64]float64{}
			}
			by[k][kb] = math.Max(by[k][kb], r.BytesPerSec)
		}
	}
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
	kbs := slices.Sorted(maps.Keys(m))
	best := slices.Max(slices.Collect(maps.Values(m)))
	var parts []string
	for _, kb := range kbs {
		parts = append(parts, fmt.Sprintf("%d KiB %s", kb, units.DecimalRate(m[kb])))
	}
	ev := fmt.Sprintf("%s entries, %d in flight, journalBufferedWritesThreshold %s: journalWriteBufferSizeKB → MB/s (1 journal): %s",
		units.FormatBytes(key.bs), key.inFlight, units.FormatBytes(key.settings.JournalBufferedWritesThreshold), strings.Join(parts, ", "))
	base, ok := m[64]
	if !ok {
		return 64, ev + "; 64 KiB not measured, default kept"
	}
	if best <= JournalWriteBufferGain*base {
		return 64, ev + fmt.Sprintf("; best is within %.0f%% of 64 KiB → keep 64", (JournalWriteBufferGain-1)*100)
	}
	for _, kb := range kbs {
		if kb > 64 && m[kb] >= LevelOff*best {
			v := min(1024, kb)
			return v, ev + fmt.Sprintf("; %d KiB is within %.0f%% of the best and beats 64 KiB by %.0f%% → %d", kb, (1-LevelOff)*100, (m[kb]/base-1)*100, v)
		}
	}
	return 64, ev
}

// pickJournalWriteBuffer compares write sizes at one group size (the
// largest group measured with at least two write sizes, 1 writer).
func pickJournalWriteBuffer(rs []diskbench.Result) (int64, string) {
	if slices.ContainsFunc(rs, bkResult) {
		return pickJournalWriteBufferBK(rs)
	}
	by := map[int64]map[int64]float64{} // group -> bs -> MB/s
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadJournal && usable(r) && r.Writers == 1 {
			g := r.BlockSize * int64(syncEvery(r))
			if by[g] == nil {
				by[g] = map[int64]float64{}
			}
			by[g][r.BlockSize] = math.Max(by[g][r.BlockSize], r.BytesPerSec)
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
	base, ok := m[64*KiB]
	bss := slices.Sorted(maps.Keys(m))
	best := slices.Max(slices.Collect(maps.Values(m)))
	var parts []string
	for _, bs := range bss {
		parts = append(parts, fmt.Sprintf("%s %s", units.FormatBytes(bs), units.DecimalRate(m[bs])))
	}
	ev := fmt.Sprintf("group %s, write size → MB/s: %s", units.FormatBytes(group), strings.Join(parts, ", "))
	if !ok {
		return 64, ev + "; 64 KiB not measured, default kept"
	}
	if best <= JournalWriteBufferGain*base {
		return 64, ev + fmt.Sprintf("; best is within %.0f%% of 64 KiB → keep 64", (JournalWriteBufferGain-1)*100)
	}
	for _, bs := range bss {
		if bs > 64*KiB && m[bs] >= LevelOff*best {
			kb := min(1024, max(64, bs/KiB))
			return kb, ev + fmt.Sprintf("; %s is within %.0f%% of the best and beats 64 KiB by %.0f%% → %d", units.FormatBytes(bs), (1-LevelOff)*100, (m[bs]/base-1)*100, kb)
		}
	}
	return 64, ev
}

// entryLogBlockSweep returns the 1-writer entry-log results, best per block
// size, sorted by block size.
func entryLogBlockSweep(rs []diskbench.Result) []diskbench.Result {
	by := map[int64]diskbench.Result{}
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadEntryLog && usable(r) && max(1, r.Writers) == 1 {
			if old, ok := by[r.BlockSize]; !ok || r.BytesPerSec > old.BytesPerSec {
				by[r.BlockSize] = r
			}
		}
	}
	out := make([]diskbench.Result, 0, len(by))
	for _, r := range by {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BlockSize < out[j].BlockSize })
	return out
}

func pickEntryLogBuffer(sweep []diskbench.Result) (int64, float64, string) {
	var peak float64
	for _, r := range sweep {
		peak = math.Max(peak, r.BytesPerSec)
	}
	var parts []string
	chosen := int64(0)
	for _, r := range sweep {
		parts = append(parts, fmt.Sprintf("%s %s", units.FormatBytes(r.BlockSize), units.DecimalRate(r.BytesPerSec)))
		if chosen == 0 && r.BytesPerSec >= LevelOff*peak {
			chosen = r.BlockSize
		}
	}
	return chosen, peak, fmt.Sprintf("write size → MB/s (1 writer): %s; peak %s; %.0f%% of peak first at %s",
		strings.Join(parts, ", "), units.DecimalRate(peak), LevelOff*100, units.FormatBytes(chosen))
}

// pickLedgerCount applies the ledgerDirectories rule: walk the entry-log
// writer counts (at the block size measured with the most counts) while
// each step gains more than LedgerDirGain; then raise to the flush-thread
// floor. It returns the count and the disk's aggregate MB/s at that count.
func pickLedgerCount(rs []diskbench.Result, peak1 float64) (int, float64, string) {
	by := map[int64]map[int]float64{}
	for _, r := range rs {
		if r.Workload == diskbench.WorkloadEntryLog && usable(r) {
			w := max(1, r.Writers)
			if by[r.BlockSize] == nil {
				by[r.BlockSize] = map[int]float64{}
			}
			by[r.BlockSize][w] = math.Max(by[r.BlockSize][w], r.BytesPerSec)
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
	if bs < 0 || len(by[bs]) < 2 {
		n := flushFloor(peak1)
		return n, peak1, fmt.Sprintf("writer counts not swept; peak %s (1 writer) → %d dir(s) by the flush-thread floor", units.DecimalRate(peak1), n)
	}
	m := by[bs]
	ws := slices.Sorted(maps.Keys(m))
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("N=%d %s", w, units.DecimalRate(m[w])))
	}
	n := 1
	for i := 1; i < len(ws) && ws[i] <= MaxLedgerDirsPerDisk; i++ {
		if m[ws[i]] > LedgerDirGain*m[n] {
			n = ws[i]
		} else {
			break
		}
	}
	bw := m[n]
	ev := fmt.Sprintf("%s writes: %s → N=%d", units.FormatBytes(bs), strings.Join(parts, ", "), n)
	if top := math.Max(bw, peak1); flushFloor(top) > n {
		f := flushFloor(top)
		// Never raise to or past a count measured clearly slower; below
		// such a count only measured counts qualify.
		bad := 0
		for c := n + 1; c <= f; c++ {
			if v, ok := m[c]; ok && v < JournalNearBest*m[n] {
				bad = c
				break
			}
		}
		to := f
		if bad > 0 {
			to = n
			for c := n + 1; c < bad; c++ {
				if _, ok := m[c]; ok {
					to = c
				}
			}
		}
		ev += fmt.Sprintf("; %s needs ⌈%s ÷ %.0f MB/s⌉ = %d flush threads (at most %d)", units.DecimalRate(top), units.DecimalRate(top), FlushThreadBytesPerSec/1e6, int(math.Ceil(top/FlushThreadBytesPerSec)), MaxLedgerDirsPerDisk)
		if bad > 0 {
			ev += fmt.Sprintf(", but N=%d measured %s (< %.0f%% of N=%d)", bad, units.DecimalRate(m[bad]), JournalNearBest*100, n)
		}
		if to > n {
			ev += fmt.Sprintf(" → raised to %d", to)
		} else {
			ev += fmt.Sprintf(" → kept at %d", n)
		}
		n = to
	}
	bw = math.Max(bw, m[n])
	if n == 1 {
		// One writer: the figure at the chosen write size applies.
		bw = math.Max(bw, peak1)
	}
	return n, bw, ev
}

func flushFloor(bw float64) int {
	return max(1, min(MaxLedgerDirsPerDisk, int(math.Ceil(bw/FlushThreadBytesPerSec))))
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
