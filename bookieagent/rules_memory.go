package bookieagent

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// memoryRules lays out memory for the ledger dirs the bookie runs: the
// RocksDB memtable size first (its native memory is part of the split),
// then, with the container's memory limit, the split between heap, direct
// memory, RocksDB and the page cache (deriving direct memory when the JVM's
// flags were not given), then direct memory between the journal, the
// entry-log buffers, headroom and the caches (planMemory).
func (rc *recommender) memoryRules() error {
	in := rc.in
	dirs := max(1, rc.runDirs)
	rc.rocksWB, rc.rocksEv = rc.pickRocksWriteBuffer(dirs)
	native := rocksNative(dirs, rc.rocksWB)
	d, dsrc := in.DirectMemoryBytes, in.DirectMemorySource
	var split MemoryPlan
	var limitEv []string
	if l := in.MemoryLimitBytes; l > 0 {
		split.LimitBytes, split.LimitSource = l, orDefault(in.MemoryLimitSource, "as given")
		heap, heapSrc := in.HeapBytes, "-Xmx"
		if heap == 0 {
			heap = min(HeapMax, max(HeapMin, int64(float64(l)*HeapShare))) / (256 * MiB) * (256 * MiB)
			heapSrc = fmt.Sprintf("%.1f%% of the limit, %s–%s (Heur.: DbLedgerStorage keeps entries off-heap; the heap holds requests, read buffers and metadata)", HeapShare*100, units.FormatBytes(HeapMin), units.FormatBytes(HeapMax))
		}
		page := max(int64(PageCacheMin), int64(float64(l)*PageCacheShare))
		split.HeapBytes, split.JVMOverheadBytes = heap, JVMOverhead
		if d == 0 {
			d = min(l-heap-native-page-JVMOverhead, int64(float64(l)*DirectShareMax)) / (256 * MiB) * (256 * MiB)
			if d <= 0 {
				return fmt.Errorf("%w: the %s container limit does not hold heap %s + RocksDB %s + page cache %s + JVM overhead %s; raise the limit or give -XX:MaxDirectMemorySize",
					ErrDirectMemoryTooSmall, units.FormatBytes(l), units.HumanBytes(float64(heap)), units.HumanBytes(float64(native)), units.HumanBytes(float64(page)), units.HumanBytes(float64(JVMOverhead)))
			}
			dsrc = fmt.Sprintf("derived from the %s container limit (%s): what heap, RocksDB, JVM overhead and %.0f%% page cache leave, at most %.0f%% of the limit; set -XX:MaxDirectMemorySize", units.FormatBytes(l), split.LimitSource, PageCacheShare*100, DirectShareMax*100)
			split.JVMOptions = fmt.Sprintf("-Xms%dm -Xmx%dm -XX:MaxDirectMemorySize=%dm", heap/MiB, heap/MiB, d/MiB)
		}
		split.PageCacheBytes = l - heap - d - native - JVMOverhead
		limitEv = append(limitEv, fmt.Sprintf("container limit %s (%s) = heap %s (%s) + direct %s (%s) + RocksDB native %s + JVM overhead %s + page cache %s",
			units.FormatBytes(l), split.LimitSource, units.HumanBytes(float64(heap)), heapSrc, units.HumanBytes(float64(d)), dsrc,
			units.HumanBytes(float64(native)), units.HumanBytes(float64(JVMOverhead)), units.HumanBytes(float64(split.PageCacheBytes))))
		if split.PageCacheBytes < page {
			rc.r.Warnings = append(rc.r.Warnings, fmt.Sprintf("the container limit %s leaves %s for the page cache after heap %s, direct memory %s, RocksDB ~%s and JVM overhead (want ≥ %s: entry-log writeback is charged to the pod's memory cgroup); raise the limit or lower -XX:MaxDirectMemorySize",
				units.FormatBytes(l), units.HumanBytes(float64(max(0, split.PageCacheBytes))), units.HumanBytes(float64(heap)), units.HumanBytes(float64(d)), units.HumanBytes(float64(native)), units.HumanBytes(float64(page))))
		}
	}
	rc.haveMem = d > 0
	if rc.haveMem {
		mp, ev, err := planMemory(d, dsrc, dirs, rc.wb, rc.bufCands)
		if err != nil {
			return err
		}
		rc.mp, rc.memEv = mp, append(limitEv, ev...)
	} else {
		rc.mp = MemoryPlan{DirectSource: "unknown", LedgerDirs: dirs}
	}
	rc.mp.RocksDBNative = native
	rc.mp.LimitBytes, rc.mp.LimitSource, rc.mp.HeapBytes = split.LimitBytes, split.LimitSource, split.HeapBytes
	rc.mp.JVMOverheadBytes, rc.mp.PageCacheBytes, rc.mp.JVMOptions = split.JVMOverheadBytes, split.PageCacheBytes, split.JVMOptions
	rc.r.Memory = rc.mp
	return nil
}

// pickRocksWriteBuffer chooses the entry-location index's memtable size:
// 128 MiB on SSD-class ledger disks when every dir's index with 4 such
// memtables fits in RocksShareMax of the container limit, else Pulsar's
// 64 MiB.
func (rc *recommender) pickRocksWriteBuffer(dirs int) (int64, []string) {
	big := rocksNative(dirs, RocksWriteBufferSSD)
	switch l := rc.in.MemoryLimitBytes; {
	case rc.anyHDD:
		return RocksWriteBufferDefault, []string{"an HDD-class ledger disk: keep Pulsar's 64 MiB (the 128 MB report is from SSDs)"}
	case l == 0:
		return RocksWriteBufferDefault, []string{"container memory limit unknown: keep Pulsar's 64 MiB; RocksDB's memory is native, outside the JVM's limits, so only the pod's limit can tell whether 128 MiB memtables fit (give --memory-limit or run in the bookie's pod)"}
	case float64(big) > RocksShareMax*float64(l):
		return RocksWriteBufferDefault, []string{fmt.Sprintf("SSD-class, but 128 MiB memtables would need %s of native memory, more than %.0f%% of the %s container limit: keep Pulsar's 64 MiB",
			units.HumanBytes(float64(big)), RocksShareMax*100, units.FormatBytes(l))}
	}
	return RocksWriteBufferSSD, []string{fmt.Sprintf("ledger disks are SSD-class and %d dirs × (block cache + 4 × 128 MiB) = %s fit in %.0f%% of the %s container limit: 128 MB memtables (WeChat report) mean fewer L0 flushes and compactions",
		dirs, units.HumanBytes(float64(big)), RocksShareMax*100, units.FormatBytes(rc.in.MemoryLimitBytes))}
}

// cacheRules sets the write and read-ahead caches from the memory plan.
func (rc *recommender) cacheRules() error {
	mp, dirs := rc.mp, max(1, rc.runDirs)
	wc := Setting{File: FileBookKeeper, Key: "dbStorage_writeCacheMaxSizeMb", PulsarDefault: "(25% of direct memory)",
		Rule: fmt.Sprintf("half of the caches' share of direct memory: BookKeeper's default %.0f%% for write + read cache, less when the journal's 5%%, headroom and the entry-log buffers leave less; total over the ledger dirs the bookie runs (BK splits it evenly, two halves per dir)", CacheShare*100)}
	rc2 := Setting{File: FileBookKeeper, Key: "dbStorage_readAheadCacheMaxSizeMb", PulsarDefault: "(25% of direct memory)",
		Rule: "the other half of the caches' share, total over the ledger dirs the bookie runs"}
	if rc.haveMem {
		wc.Value = strconv.FormatInt(mp.WriteCacheBytes/MiB, 10)
		wc.Evidence = append(slices.Clone(rc.memEv), fmt.Sprintf("per ledger dir: %s, two halves of %s", units.HumanBytes(float64(mp.WriteCacheBytes)/float64(dirs)), units.HumanBytes(float64(mp.WriteCacheBytes)/float64(2*dirs))))
		rc2.Value = strconv.FormatInt(mp.ReadCacheBytes/MiB, 10)
		rc2.Evidence = []string{
			fmt.Sprintf("BookKeeper's start-up check: write %d MiB + read %d MiB = %d MiB ≤ direct memory %d MiB", mp.WriteCacheBytes/MiB, mp.ReadCacheBytes/MiB, (mp.WriteCacheBytes+mp.ReadCacheBytes)/MiB, mp.DirectBytes/MiB),
			fmt.Sprintf("per ledger dir: %s", units.HumanBytes(float64(mp.ReadCacheBytes)/float64(dirs))),
		}
	} else {
		for _, s := range []*Setting{&wc, &rc2} {
			s.NeedsInput = NeedsDirectMemory
			s.Evidence = []string{"a share of the bookie JVM's direct memory, which was not given (nor a container limit to derive it from)"}
		}
	}
	rc.add(wc, rc2)
	return nil
}

// rocksDBRules sets the entry-location index's RocksDB options.
func (rc *recommender) rocksDBRules() error {
	rw, dirs := rc.rocksWB, max(1, rc.runDirs)
	ev := append(slices.Clone(rc.rocksEv), fmt.Sprintf("native memory (outside the JVM's limits), per bookie: %d dirs × (block cache %s + %d × %s) = %s — the pod limit must cover it",
		dirs, units.HumanBytes(RocksBlockCacheDefault), RocksMaxWriteBufferCount, units.FormatBytes(rw), units.HumanBytes(float64(rc.mp.RocksDBNative))))
	rc.add(Setting{
		File: FileBookKeeper, Key: "dbStorage_rocksDB_writeBufferSizeMB", Value: strconv.FormatInt(rw/MiB, 10), PulsarDefault: "64",
		Rule:     "same as write_buffer_size in entry_location_rocksdb.conf; BookKeeper ignores it when that file exists (Pulsar ≥ 2.11 ships it), but the Pulsar image's update-rocksdb-conf-from-env.py writes it into the file from the environment (the Helm chart runs it)",
		Evidence: ev[:1],
	}, Setting{
		File: FileRocksDB, Section: `CFOptions "default"`, Key: "write_buffer_size", Value: strconv.FormatInt(rw, 10), PulsarDefault: "67108864",
		Rule:     fmt.Sprintf("128 MiB on SSD-class ledger disks when dirs × (block cache + 4 × 128 MiB) ≤ %.0f%% of the container's memory limit; Pulsar's 64 MiB otherwise", RocksShareMax*100),
		Evidence: ev,
	}, Setting{
		File: FileRocksDB, Section: `CFOptions "default"`, Key: "max_write_buffer_number", Value: strconv.Itoa(RocksMaxWriteBufferCount), PulsarDefault: "4",
		Rule:     "keep Pulsar's value",
		Evidence: []string{"listed because the native-memory estimate uses it"},
	}, Setting{
		File: FileRocksDB, Section: `TableOptions/BlockBasedTable "default"`, Key: "block_cache", Value: strconv.Itoa(RocksBlockCacheDefault), PulsarDefault: "206150041",
		Rule:     "keep Pulsar's value unless the locations index is known to be larger",
		Evidence: []string{"the index size is a property of the data, not the disk: the block cache should hold a large part of the entry-locations index, which can reach a few GB"},
	})
	return nil
}

// planMemory lays out direct memory d for dirs ledger dirs: journal 5%,
// headroom, the entry-log buffers (reduced to fit their share), then the
// write and read caches in equal halves of BookKeeper's default 50%, or of
// what is left when that is less.
func planMemory(d int64, src string, dirs int, wb int64, cands []int64) (MemoryPlan, []string, error) {
	mp := MemoryPlan{DirectBytes: d, DirectSource: src, LedgerDirs: dirs}
	mp.JournalBytes = int64(float64(d) * JournalMemShare)
	mp.HeadroomBytes = max(HeadroomMin, int64(float64(d)*HeadroomShare))
	limit := int64(float64(d) * EntryLogBufferShare)
	bufs := func(per int64) int64 { return int64(EntryLogBuffersPerDir*dirs) * per }
	per := wb
	if bufs(per) > limit {
		fit := int64(0)
		slices.Sort(cands)
		for _, c := range cands {
			if c <= wb && bufs(c) <= limit {
				fit = c
			}
		}
		if fit == 0 {
			// No measured size fits: the largest power of two that does,
			// never below BK's 64 KiB.
			fit = 64 * KiB
			for fit*2 <= wb && bufs(fit*2) <= limit {
				fit *= 2
			}
		}
		per = fit
		mp.MemoryLimitedNote = fmt.Sprintf("entry-log write buffer reduced from %s to %s to fit %.0f%% of direct memory", units.FormatBytes(wb), units.FormatBytes(per), EntryLogBufferShare*100)
	}
	mp.EntryLogBufBytes = bufs(per) + int64(dirs)*CompactionScanBuffer
	rest := d - mp.JournalBytes - mp.HeadroomBytes - mp.EntryLogBufBytes
	cache := min(int64(float64(d)*CacheShare), rest)
	need := int64(dirs) * (MinWriteCachePerDir + MinReadCachePerDir)
	if cache < need {
		return mp, nil, fmt.Errorf("%w: %s direct memory leaves %s for caches after journal %s, headroom %s and entry-log buffers %s; %d ledger dirs need ≥ %s (use -XX:MaxDirectMemorySize ≥ %s)",
			ErrDirectMemoryTooSmall, units.FormatBytes(d), units.HumanBytes(float64(cache)), units.HumanBytes(float64(mp.JournalBytes)), units.HumanBytes(float64(mp.HeadroomBytes)),
			units.HumanBytes(float64(mp.EntryLogBufBytes)), dirs, units.FormatBytes(need), units.FormatBytes(roundUp(minDirectFor(dirs, mp.EntryLogBufBytes), 256*MiB)))
	}
	// Whole MiB per dir, as BK divides the MB total by the dir count.
	half := cache / 2 / int64(dirs) / MiB * MiB * int64(dirs)
	mp.WriteCacheBytes, mp.ReadCacheBytes = half, half
	basis := fmt.Sprintf("BookKeeper's default %.0f%% of direct memory", CacheShare*100)
	if cache < int64(float64(d)*CacheShare) {
		basis = "less than BookKeeper's default 50%: what the journal, headroom and buffers leave"
	}
	ev := []string{
		fmt.Sprintf("direct memory %s (%s)", units.FormatBytes(d), src),
		fmt.Sprintf("journal %.0f%% %s + headroom (Netty, in-flight requests) %s + entry-log buffers %d × %d dirs × %s + %s compaction scan buffer per dir = %s; caches %s (%s), the rest %s unassigned",
			JournalMemShare*100, units.HumanBytes(float64(mp.JournalBytes)), units.HumanBytes(float64(mp.HeadroomBytes)), EntryLogBuffersPerDir, dirs, units.FormatBytes(per),
			units.FormatBytes(CompactionScanBuffer), units.HumanBytes(float64(mp.JournalBytes+mp.HeadroomBytes+mp.EntryLogBufBytes)), units.HumanBytes(float64(2*half)), basis,
			units.HumanBytes(float64(d-mp.JournalBytes-mp.HeadroomBytes-mp.EntryLogBufBytes-2*half))),
	}
	return mp, ev, nil
}

// minDirectFor solves planMemory's inequality for the direct memory a node
// with n ledger dirs needs.
func minDirectFor(n int, bufs int64) int64 {
	need := int64(n) * (MinWriteCachePerDir + MinReadCachePerDir)
	// 0.5·d ≥ need, d·(1 − 0.05 − 0.20) − bufs ≥ need, d − 0.05d − 128 MiB − bufs ≥ need.
	a := int64(float64(need) / CacheShare)
	b := int64(float64(need+bufs) / (1 - JournalMemShare - HeadroomShare))
	c := int64(float64(need+bufs+HeadroomMin) / (1 - JournalMemShare))
	return max(a, b, c)
}

// rocksNative is the RocksDB memory outside the JVM: one entry-location
// DB per ledger dir, each with its own block cache and memtables.
func rocksNative(dirs int, writeBuffer int64) int64 {
	return int64(dirs) * (RocksBlockCacheDefault + RocksMaxWriteBufferCount*writeBuffer)
}
