// Package bookieagent turns diskbench measurements into Apache BookKeeper
// bookie disk settings with the evidence for each value, and watches the
// capacity of a bookie's journal and ledger disks.
//
// # Recommendations
//
// Recommend is a pure function of measured [diskbench.Result]s per disk and
// a few node facts (CPUs, the JVM's -XX:MaxDirectMemorySize, sysfs block
// sizes, cookies found on disk, the container's memory limit). The rules
// run per area (rules_journal.go, rules_ledger.go, rules_memory.go,
// rules_compaction.go); docs/bookieagent.md ("Rules") gives the reasoning
// behind each, checked against BookKeeper 4.17's code, and the constants in
// rules.go name the thresholds.
// Every Setting carries its Rule and Evidence; Render prints them as
// comments of a bookkeeper.conf fragment, an entry_location_rocksdb.conf
// fragment (Pulsar ≥ 2.11 ignores dbStorage_rocksDB_* keys when that file
// exists), Helm values (bookkeeper.configData) or JSON.
//
// # Cookies and directory counts
//
// A bookie's cookie (current/VERSION) fixes its journal directories exactly
// and its ledger directories up to growth, and DbLedgerStorage places a
// ledger in dir ledgerId mod N. Directory counts are therefore marked "new
// or re-formatted bookies only"; when a cookie is found the rendered config
// keeps the cookie's value active and shows the recommendation as a comment.
// Benchmarks never write into a live bookie directory: PrepareBench picks a
// scratch sibling on the same filesystem, or refuses; and no run may take a
// journal or ledger filesystem past the bookie's disk-usage thresholds less
// a margin (DiskGuard).
//
// # Capacity
//
// Sampler statfs-es the configured mounts (gopsutil) and reads
// /proc/diskstats through a HostFS, keeps a bounded window, fits growth by
// least squares and computes usage as BookKeeper does, 1 − avail/size, so
// "full" means diskUsageThreshold (0.95), with the warn threshold at 0.90.
// Server exposes /metrics, /report, /recommendation and /healthz.
//
// # Caveats
//
// Growth fits are linear over the window; compaction makes ledger usage a
// sawtooth, so short windows over-react. Figures measured in a small pod
// include its memory cgroup's dirty-page limits.
package bookieagent
