package bookieagent

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Rule constants. docs/bookieagent.md ("Rules") gives the reasoning behind
// each; "Heur." marks our own choice where BookKeeper's code fixes no value.
const (
	// JournalDirGain: a journal count qualifies when the best count does
	// not clearly beat it by more than 10%.
	JournalDirGain = 1.10
	// JournalP99Factor: a journal count is over the latency budget when its
	// fastest round's p99 add latency exceeds max(JournalP99Factor × the
	// slowest 1-journal round's p99, JournalP99Floor).
	JournalP99Factor = 2.0
	// JournalP99Floor: the budget is never below 10 ms (Heur.): a p99 add
	// latency under 10 ms is far inside what a Pulsar broker waits for an
	// add (its addEntryTimeout is seconds), and at 1–2 ms a 2× rule would
	// reject counts for a fraction of a millisecond.
	JournalP99Floor = 10_000_000 // ns
	// MaxJournalDirsPerDisk caps journal dirs per disk (Heur.). There is
	// no CPU cap: a journal's two threads (journal, force write) mostly
	// wait on fdatasync.
	MaxJournalDirsPerDisk = 8
	// LevelOff is the share of the peak at which a sweep counts as levelled
	// off (write sizes, journal group sizes).
	LevelOff = 0.95
	// JournalThresholdMin/Max bound journalBufferedWritesThreshold (never
	// below Pulsar's 512 KiB; Heur. max 4 MiB).
	JournalThresholdMin = 512 * KiB
	JournalThresholdMax = 4 * MiB
	// JournalWriteBufferGain: raise journalWriteBufferSizeKB only when a
	// larger buffer beats 64 KiB by more than 10% at the same group size.
	JournalWriteBufferGain = 1.10
	// GroupWaitMinMs/MaxMs bound journalMaxGroupWaitMSec (≈ the device's
	// p50 fdatasync latency).
	GroupWaitMinMs = 1
	GroupWaitMaxMs = 20
	// LedgerDirGain: one more ledger dir per disk must gain more than 10%
	// of what the bookie can flush (LedgerFlushRate).
	LedgerDirGain = 1.10
	// FlushThreadBytesPerSec is what one DbLedgerStorage flush thread
	// sustains (BK PR #1289: ~500 MB/s): a ledger dir cannot flush faster,
	// whatever the disk does.
	FlushThreadBytesPerSec = 500e6
	// MaxLedgerDirsPerDisk caps ledger dirs per disk (Heur.).
	MaxLedgerDirsPerDisk = 4
	// FlushEntrylogSeconds: flushEntrylogBytes ≈ 100 ms of sustained
	// per-dir bandwidth, clamped to 32–64 MiB (Pulsar ships 32 MiB).
	FlushEntrylogSeconds = 0.1
	FlushEntrylogMin     = 32 * MiB
	FlushEntrylogMax     = 64 * MiB
	// CompactionShare is the share of a ledger disk's sustained write
	// bandwidth left after the journal (when they share a device) that
	// compaction's own I/O may take, over all the dirs on the disk (Heur.).
	// Compaction reads every live entry of a log and writes it again, so
	// the throttle (bytes re-added) gets half of it.
	CompactionShare = 0.10
	// CompactionIOPerByte: disk bytes moved per byte compactionRateByBytes
	// lets through (one read, one write).
	CompactionIOPerByte = 2
	// HDDMaxIOPS: a disk with fewer 4 KiB random-read IOPS is treated as a
	// spinning disk whatever sysfs says (Heur.; HDDs do 100–500).
	HDDMaxIOPS = 1000
	// JournalMemShare is journalMaxMemorySizeMb's default, 5% of direct
	// memory (ServerConfiguration.getJournalMaxMemorySizeMb).
	JournalMemShare = 0.05
	// CacheShare is BookKeeper's default share of direct memory for the
	// write cache plus the read-ahead cache (DbLedgerStorage: 25% each).
	// The agent keeps it: the right split depends on ingest and catch-up
	// reads, which a disk benchmark does not measure.
	CacheShare = 0.50
	// HeadroomShare is direct memory kept for Netty's pooled buffers and
	// in-flight requests (Heur.; at least HeadroomMin).
	HeadroomShare = 0.20
	HeadroomMin   = 128 * MiB
	// EntryLogBuffersPerDir: every ledger dir's entry logger holds direct
	// write buffers of writeBufferSizeBytes for the current log, the
	// preallocated next one (EntryLoggerAllocator) and the compaction log
	// (DefaultEntryLogger), plus rotated logs until the next checkpoint
	// flushes them: at least 3.
	EntryLogBuffersPerDir = 3
	// CompactionScanBuffer is the direct buffer DefaultEntryLogger.scanEntryLog
	// allocates per compacting dir (1 MiB, grown to the largest entry).
	CompactionScanBuffer = 1 * MiB
	// EntryLogBufferShare caps the entry-log write buffers at 10% of direct
	// memory (Heur.).
	EntryLogBufferShare = 0.10
	// MinWriteCachePerDir: each write-cache half must hold ≥ 3 entries of
	// Pulsar's 5 MiB maxMessageSize, so ≥ 32 MiB per ledger dir (Heur.).
	MinWriteCachePerDir = 32 * MiB
	// MinReadCachePerDir is the smallest useful read-ahead cache per dir
	// (Heur.).
	MinReadCachePerDir = 16 * MiB
	// Container memory split (Heur.): page cache kept for entry-log
	// writeback and reads (dirty pages are charged to the pod's memory
	// cgroup), the JVM's own overhead (metaspace, thread stacks, GC), and
	// the heap when -Xmx is not given.
	PageCacheShare = 0.25
	PageCacheMin   = 512 * MiB
	JVMOverhead    = 256 * MiB
	HeapShare      = 0.125
	HeapMin        = 512 * MiB
	HeapMax        = 4 * GiB
	// DirectShareMax caps derived direct memory at 40% of the limit
	// (Heur.): beyond the caches' share, the page cache serves entry-log
	// reads and writeback for whatever BookKeeper's caches miss, and it is
	// given back under pressure where direct memory is not.
	DirectShareMax = 0.40
	// RocksShareMax: RocksDB's native memory may take at most a quarter of
	// the container limit before the larger memtables are given up.
	RocksShareMax = 0.25
	// RocksDB entry-location index settings (Pulsar's
	// entry_location_rocksdb.conf defaults and the WeChat report's 128 MB).
	RocksWriteBufferSSD      = 128 * MiB
	RocksWriteBufferDefault  = 64 * MiB
	RocksMaxWriteBufferCount = 4
	RocksBlockCacheDefault   = 206150041
	// ReadBufferDefault is readBufferSizeBytes for unknown entry sizes
	// (Pulsar's value), ReadBufferMax its ceiling: BookKeeper allocates one
	// heap buffer of this size per reading thread per entry log it reads
	// (DefaultEntryLogger's thread-local BufferedReadChannel map, which
	// holds them weakly: a GC frees them, and the next read of that log
	// allocates another; make bench-bk-read-buffers counts them).
	ReadBufferDefault = 4096
	ReadBufferMax     = 16 * KiB
	// ReadThreads are the threads that read entry logs with Pulsar's
	// settings: numReadWorkerThreads 8 + numHighPriorityWorkerThreads 8
	// (each ledger dir's GC thread adds one); CatchUpLogs is how many entry
	// logs a catch-up burst may keep open per thread (Heur.).
	ReadThreads = 16
	CatchUpLogs = 100
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
	// ProbeResults are the probes' results (one journal or entry-log run
	// per disk, warmed up until its rate settles): they size the benchmark
	// plan and warm the disk up, and no rule reads them — a probe is never
	// a round of a comparison (its warm-up differs from the rounds', and on
	// a virtual disk it may still measure the host cache's burst).
	ProbeResults []diskbench.Result `json:"probe_results,omitempty"`
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
	// HeapBytes is the bookie JVM's -Xmx, when known (0 = unknown).
	HeapBytes int64 `json:"heap_bytes,omitempty"`
	// MemoryLimitBytes is the bookie container's memory limit (cgroup v2
	// memory.max, v1 memory.limit_in_bytes), 0 when unknown or unlimited;
	// MemoryLimitSource says where it came from.
	MemoryLimitBytes  int64  `json:"memory_limit_bytes,omitempty"`
	MemoryLimitSource string `json:"memory_limit_source,omitempty"`
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

// DirCount is the number of directories a directory setting's value
// names: a comma list of paths, or a count over bookies as a merged
// recommendation gives it ("4 dir(s) per bookie"). Empty is 0.
func DirCount(v string) int {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if f := strings.Fields(v); len(f) > 1 && f[1] == "dir(s)" {
		if n, err := strconv.Atoi(f[0]); err == nil {
			return n
		}
	}
	n := 0
	for _, p := range strings.Split(v, ",") {
		if strings.TrimSpace(p) != "" {
			n++
		}
	}
	return n
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

// MemoryPlan is the memory budget behind the cache sizes: the container
// limit split between heap, direct memory, RocksDB's native memory and the
// page cache (when the limit is known), and direct memory split between
// the journal, entry-log buffers, headroom and the caches. The direct
// figures are zero but DirectSource when direct memory is unknown.
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
	// LimitBytes is the container's memory limit (0: unknown), split into
	// HeapBytes, DirectBytes, RocksDBNative, JVMOverheadBytes and
	// PageCacheBytes (what is left for the kernel's page cache).
	LimitBytes       int64  `json:"limit_bytes,omitempty"`
	LimitSource      string `json:"limit_source,omitempty"`
	HeapBytes        int64  `json:"heap_bytes,omitempty"`
	JVMOverheadBytes int64  `json:"jvm_overhead_bytes,omitempty"`
	PageCacheBytes   int64  `json:"page_cache_bytes,omitempty"`
	// JVMOptions are the memory flags for BOOKIE_MEM / PULSAR_MEM that
	// the plan assumes, when the agent derived them from the limit.
	JVMOptions string `json:"jvm_options,omitempty"`
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
// Without a direct-memory size (given, or derived from the container's
// memory limit) the settings that are shares of it carry NeedsInput
// instead of a value, and the rest are given.
//
// The rules run per area, each appending its settings in order: journal
// (rules_journal.go), ledger directories and entry logs
// (rules_ledger.go), memory and caches, RocksDB (rules_memory.go), then
// garbage collection and compaction (rules_compaction.go).
func Recommend(in Input) (*Recommendation, error) {
	if len(in.JournalDisks) == 0 || len(in.LedgerDisks) == 0 {
		return nil, fmt.Errorf("%w: need at least one journal and one ledger disk", ErrNoMeasurements)
	}
	rc := newRecommender(in)
	for _, area := range []func() error{
		rc.journalRules, rc.ledgerDirRules, rc.memoryRules, rc.entryLogRules, rc.cacheRules,
		rc.compactionRules, rc.autoRecoveryRules, rc.rocksDBRules,
	} {
		if err := area(); err != nil {
			return nil, err
		}
	}
	rc.finish()
	return rc.r, nil
}

// diskPair is a journal disk and a ledger disk (indexes into Input).
type diskPair struct{ j, l int }

// recommender carries what one area's rules hand to the next.
type recommender struct {
	in               Input
	cpus             int
	r                *Recommendation
	all              []Disk
	jCookie, lCookie *Cookie
	// mixed holds the shared-device measurements.
	mixed map[diskPair]mixedFigures

	// journalRules: the aggregate sustained rate the chosen journal counts
	// accept, in total and per device.
	jAgg       float64
	jAggDevice map[string]float64
	// jAggNew is what the recommended journal counts accept: the ingest a
	// new bookie's ledger dirs must take; jNewRounds the same per round.
	jAggNew    float64
	jNewRounds rounds

	// ledgerDirRules: per ledger disk.
	ledgers []ledgerPlan
	lDirs   []string
	// runDirs is the ledger dir count the bookie runs: the cookie's on a
	// live bookie, else the recommendation.
	runDirs int
	anyHDD  bool

	// entry-log write buffer, chosen per disk before the memory plan
	// bounds it.
	wb       int64
	bufCands []int64
	bufEv    []string

	// memoryRules.
	haveMem bool
	mp      MemoryPlan
	memEv   []string
	rocksWB int64
	rocksEv []string
}

// ledgerPlan is one ledger disk's part of the plan.
type ledgerPlan struct {
	disk Disk
	// recommended is the dir count for a new bookie, run the count the
	// bookie runs (its cookie's when live).
	recommended, run int
	// sustained is the disk's sustained write rate at the recommended
	// count; left what ledger writes get beside the journal on a shared
	// device (basis says how it was found).
	sustained, left float64
	basis           string
	summary         int // index into Recommendation.Disks
}

func newRecommender(in Input) *recommender {
	rc := &recommender{in: in, cpus: max(1, in.CPUs), r: &Recommendation{}, jAggDevice: map[string]float64{},
		mixed: map[diskPair]mixedFigures{}}
	rc.all = append(append([]Disk{}, in.JournalDisks...), in.LedgerDisks...)
	rc.jCookie = firstCookie(in.JournalDisks, in.LedgerDisks)
	rc.lCookie = firstCookie(in.LedgerDisks, in.JournalDisks)
	for i, j := range in.JournalDisks {
		for k, l := range in.LedgerDisks {
			if sameDevice(j, l) {
				if m, ok := mixedOf(j, l); ok {
					rc.mixed[diskPair{i, k}] = m
				}
			}
		}
	}
	return rc
}

// add appends settings, scoping bookkeeper.conf ones to the bookie unless
// they name their process.
func (rc *recommender) add(ss ...Setting) {
	for _, s := range ss {
		if s.Scope == "" && s.File == FileBookKeeper {
			s.Scope = ScopeBookie
		}
		rc.r.Settings = append(rc.r.Settings, s)
	}
}

// finish collects the warnings.
func (rc *recommender) finish() {
	in, r := rc.in, rc.r
	var own []string
	if rc.haveMem && r.Memory.LimitBytes == 0 && r.Memory.RocksDBNative > in.DirectMemoryBytes {
		own = append(own, fmt.Sprintf("RocksDB needs ~%s of native memory outside the JVM limits; the pod's memory limit must cover heap + direct memory + this + page cache", units.HumanBytes(float64(r.Memory.RocksDBNative))))
	}
	var mixedW []string
	for pr, m := range rc.mixed {
		j, l := in.JournalDisks[pr.j], in.LedgerDisks[pr.l]
		w := fmt.Sprintf("journal %s and ledger %s share device %s; measured at once: journal %s (alone %s), p99 add %s (alone %s); entry log %s (alone %s)",
			j.Dir, l.Dir, j.Device.Disk, m.journalMixed.describe(), m.journalAlone.describe(), fmtNs(m.p99Mixed), fmtNs(m.p99Alone), m.logMixed.describe(), m.logAlone.describe())
		if m.p99Alone > 0 && m.p99Mixed > MixedP99Factor*m.p99Alone {
			w += fmt.Sprintf(": the ledger writes raise the journal's p99 %.1f× — put the journal on its own device", m.p99Mixed/m.p99Alone)
		}
		mixedW = append(mixedW, w)
	}
	slices.Sort(mixedW)
	var lAgg float64
	for _, lp := range rc.ledgers {
		lAgg += lp.left
	}
	r.Warnings = append(append(append(warnings(in, r, rc.jAgg, lAgg, len(rc.mixed) > 0), mixedW...), own...), r.Warnings...)
	if w, ok := loadWarning(in.Bench); ok {
		r.Warnings = append([]string{w}, r.Warnings...)
	}
	if in.Bench != nil && in.Bench.Guard != nil {
		r.Warnings = append(r.Warnings, in.Bench.Guard.warnings()...)
	}
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
