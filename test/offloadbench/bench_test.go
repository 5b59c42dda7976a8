package offloadbench

// make bench-offload
// go test -run '^$' -bench BenchmarkOffload -benchtime 1x -timeout 60m ./test/offloadbench/
//
// On one ≥ 1 GiB ledger written by BookKeeper's Java client to three real
// bookies (1 MiB entries, E=3 W=2 A=2), in the same run and alternating
// the order every round:
//
//   tierkeeper  the real `offloader offload` process (select .. commit; copy
//               MB/s from its own step timing, wall time and peak RSS of the
//               process)
//   raw         a multipart PUT of the same number of bytes from memory, same
//               part size and parts in flight (blob.Parts), in a child
//               process: the store's own speed, the ceiling
//   pulsar      Pulsar 4.0.8's BlobStoreManagedLedgerOffloader.offload on the
//               same ledger (Java tool pulsar-offload; its own timing, the
//               JVM start and NAR load excluded), with its default 64 MiB
//               blocks
//
// then the peak RSS of the offloader at every ledger size (flat?), and, for
// each block size, what Pulsar's own reader (pulsar-read-offloaded, 1 MiB
// read buffer as the broker's default) fetches from the store per random
// seek (a fresh read handle, one entry) and for a full sequential read,
// counted by a proxy in front of versitygw.
//
// Every round also reads the ledger alone (offloader ledger read
// --verify-only) and reports the copy as a share of reading and then
// uploading one after the other, 1/(1/read + 1/put): on shared cores the
// limit of a copy that competes with the bookies and the store for CPU;
// the offloader's CPU seconds per GiB of its copy step (its own
// /proc/self/stat, reported as copyCost) against those of the JVM running
// Pulsar's offloader over its offload call; the copy's Go allocations per
// GiB and where it waited (for the bookies, for a free block, finishing);
// its page faults per GiB; that CPU without what the copy's timeline
// samples took (copytrace's SamplerCPUSeconds: the benchmark's instrument,
// which a production copy does not run); the floor of that CPU on the round's machine
// (a bare relay of the same bytes at the copy's rate through two loopback
// sockets, relay_test.go); the I/O stall time (PSI) during the copy and
// the raw PUT, the most free memory each step took and the most page
// cache it held dirty or under writeback (what the store's completion
// writes back on XFS with reflink: MiB per second of completion). Every step starts
// after a sync (on the XFS store, once its disk is quiet: settleStoreDisk),
// with the same free memory (primeMemory); the disks' writes, discards and
// flushes during the copy and the raw PUT are printed. Before the
// rounds the bookies serve the read alone until their CPU per GiB settles
// (testenv.WarmBookieReads: their JIT compiles the read path over the
// first ~20 GiB), then a warm-up copy runs. The warm-up copy
// is profiled (--profile-dir: CPU, blocking, mutex, allocations; the tops
// are logged). Every measured copy
// writes its timeline (--timeline, with the bookies' and versitygw's CPU:
// --timeline-procs), summed up per round (copytrace.Summarize: the copy's
// time waiting for a free block, for the bookies, copying and finishing,
// each with the processes' cores, the machine's busy share and PSI, and
// the slowest second); the servers' and the machine's CPU are sampled
// during the raw PUT and the read alone too, and every round accounts
// for the machine's CPU: the core-seconds the copy kept busy (its own
// process, the bookies, versitygw, the rest) against those the read alone
// and the raw PUT kept busy together, and the most of the limit the copy
// could reach at their cost (all but the store's completion overlapped).
//
// Knobs: TK_BENCH_STORE_OPTIONS (key=value,... added to the s3 store's
// config for the offloader and the raw PUT, e.g. checksum=md5),
// TK_BENCH_BASE_REV (a git revision whose offloader's copy is
// measured too, in every round beside this tree's: a before/after; it
// must report copyCost in its offload output), TK_BENCH_BASE_ENV
// (VAR=value,... set for the base's process; without TK_BENCH_BASE_REV the
// base is this tree: e.g. GOMAXPROCS=1), TK_BENCH_PROFILE_DIR (keep the warm-up profiles there),
// TK_BENCH_OFFLOAD_MIB (ledger sizes in MiB, default "1024,2048";
// the first is the throughput ledger), TK_BENCH_ROUNDS (3), TK_BENCH_PARTS
// (2), TK_BENCH_SEEKS (16), TK_BENCH_SEEK_BLOCKS (block sizes in MiB for
// the seek table, default "5,8,16,64"), TK_BENCH_ONLY (a comma list of
// throughput, rss, seeks: run only those, default all three; or reads,
// copies: the read alone or the copy against the base, alternated, see
// paired), TK_BENCH_PRIME_MEMORY (1; 0:
// the steps start without primeMemory), TK_BENCH_TLS (0; 1: the store
// speaks HTTPS only, and the copy, the raw PUT and Pulsar's offloader
// encrypt what they upload; the bare relay runs plain and again with its
// sink behind TLS), TK_BENCH_STORE_FS
// (tmp: the store's data in the temporary directory; xfs-reflink: on a
// testenv.ReflinkFS, where completing a multipart upload clones the parts
// instead of copying the object's bytes through this host's memory again),
// TK_BENCH_PERF (0; 1: the warm-up copy is recorded with Linux perf
// too, every CPU with kernel stacks, and its samples are split by what
// the stacks were doing: encryption, socket reads and writes, loopback
// receive, page faults, ...: perf_test.go; needs perf and root or
// perf_event_paranoid <= 0; the data stays in TK_BENCH_PROFILE_DIR; that
// warm-up then runs without Go's profiles, whose stack walks would count
// as the copy's user time),
// TK_BENCH_BOOKIE_PULSAR_JVM (1: the bookies in Pulsar's JVM settings,
// testenv.BookieOptions.PulsarJVM; 0: the test suite's quick-start JVM).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/hostfs"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/internal/stats"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	blobclient "github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/copytrace"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

const rawChildEnv = "TK_OFFLOADBENCH_RAW"

func TestMain(m *testing.M) {
	if os.Getenv(rawChildEnv) != "" {
		os.Exit(rawChild())
	}
	if os.Getenv(relayChildEnv) != "" {
		os.Exit(relayChild())
	}
	code := m.Run()
	testenv.StopSharedS3()
	os.Exit(code)
}

// busyDuring runs fn and returns the share of the machine's CPU time that
// was busy meanwhile (every process, not only fn's).
func busyDuring(fn func()) float64 {
	b0, t0 := testenv.CPUTime()
	fn()
	b1, t1 := testenv.CPUTime()
	if t1 == t0 {
		return 0
	}
	return float64(b1-b0) / float64(t1-t0)
}

// ioDelta is the machine's I/O stall time during a step, its dirty page
// cache at the start and the most free memory the step took (MemFree at
// the start minus its lowest value, sampled every 50 ms).
type ioDelta struct {
	start    testenv.IOState
	stall    time.Duration
	tookFree float64 // MiB
	// peakDirty is the most page cache dirty or under writeback at once
	// (MiB): for an upload, what the store had written and not yet on its
	// disk when it came to complete the object.
	peakDirty float64
	// disks is what every block device that wrote, discarded or flushed
	// did during the step (/proc/diskstats differences, by name): the
	// store's loop device and the disk under its image.
	disks []hostfs.DiskStats
}

// diskDelta is what each device of after did since before, for the
// devices that wrote, discarded or flushed meanwhile; partitions are left
// out (their disk counts them).
func diskDelta(before, after []hostfs.DiskStats) []hostfs.DiskStats {
	prev := make(map[string]hostfs.DiskStats, len(before))
	for _, d := range before {
		prev[d.Name] = d
	}
	var out []hostfs.DiskStats
	for _, a := range after {
		b, ok := prev[a.Name]
		if !ok || (a.WrittenBytes == b.WrittenBytes && a.DiscardedBytes == b.DiscardedBytes && a.FlushesCompleted == b.FlushesCompleted) {
			continue
		}
		out = append(out, hostfs.DiskStats{
			Name:               a.Name,
			WritesCompleted:    a.WritesCompleted - b.WritesCompleted,
			WrittenBytes:       a.WrittenBytes - b.WrittenBytes,
			WriteTimeSeconds:   a.WriteTimeSeconds - b.WriteTimeSeconds,
			IOTimeSeconds:      a.IOTimeSeconds - b.IOTimeSeconds,
			DiscardsCompleted:  a.DiscardsCompleted - b.DiscardsCompleted,
			DiscardedBytes:     a.DiscardedBytes - b.DiscardedBytes,
			DiscardTimeSeconds: a.DiscardTimeSeconds - b.DiscardTimeSeconds,
			FlushesCompleted:   a.FlushesCompleted - b.FlushesCompleted,
			FlushTimeSeconds:   a.FlushTimeSeconds - b.FlushTimeSeconds,
		})
	}
	kept := out[:0]
	for _, d := range out {
		// A partition's writes are its disk's too.
		if (hostfs.FS{}).DiskOf(d.Name) == d.Name {
			kept = append(kept, d)
		}
	}
	return kept
}

// diskLine renders the devices' differences for a log line.
func (d ioDelta) diskLine() string {
	if len(d.disks) == 0 {
		return "no disk wrote"
	}
	var parts []string
	for _, x := range d.disks {
		p := fmt.Sprintf("%s wrote %.0f MiB in %d writes (%.2fs of writes, busy %.2fs)", x.Name, float64(x.WrittenBytes)/(1<<20), x.WritesCompleted, x.WriteTimeSeconds, x.IOTimeSeconds)
		if x.DiscardsCompleted > 0 {
			p += fmt.Sprintf(", discarded %.0f MiB in %d (%.2fs)", float64(x.DiscardedBytes)/(1<<20), x.DiscardsCompleted, x.DiscardTimeSeconds)
		}
		if x.FlushesCompleted > 0 {
			p += fmt.Sprintf(", %d flushes (%.2fs)", x.FlushesCompleted, x.FlushTimeSeconds)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// ioDuring runs fn and reads the machine's I/O state every 50 ms meanwhile.
func ioDuring(fn func()) ioDelta {
	disks, _ := (hostfs.FS{}).Diskstats()
	s := testenv.IONow()
	lowest, peak := s.FreeMiB, s.DirtyMiB+s.WritebackMiB
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				n := testenv.IONow()
				lowest, peak = min(lowest, n.FreeMiB), max(peak, n.DirtyMiB+n.WritebackMiB)
			}
		}
	}()
	fn()
	close(stop)
	<-done
	e := testenv.IONow()
	d := ioDelta{start: s, stall: e.Stall - s.Stall, tookFree: s.FreeMiB - min(lowest, e.FreeMiB), peakDirty: max(peak, e.DirtyMiB+e.WritebackMiB)}
	if after, err := (hostfs.FS{}).Diskstats(); err == nil && disks != nil {
		d.disks = diskDelta(disks, after)
	}
	return d
}

// settleStoreDisk waits, after a sync, until the store's disk has been
// quiet for 250 ms (nothing in flight, no write or discard completed),
// for at most 15 s, and returns how long it waited and what it discarded
// meanwhile. On XFS mounted with online discard (testenv.ReflinkFS) the
// discards of the objects an earlier step deleted run in the background
// after the log commits: 1137 MiB took the loop device 0.5-1.1 s, inside
// whichever step came next (the raw PUT, which follows the copy in most
// rounds). Without a block device under the store (tmpfs) it returns at
// once.
func (be *bench) settleStoreDisk() (waited time.Duration, discarded uint64) {
	if be.storeDev == "" {
		return 0, 0
	}
	read := func() (hostfs.DiskStats, bool) {
		ds, err := (hostfs.FS{}).Diskstats()
		if err != nil {
			return hostfs.DiskStats{}, false
		}
		for _, d := range ds {
			if d.Name == be.storeDev {
				return d, true
			}
		}
		return hostfs.DiskStats{}, false
	}
	start := time.Now()
	first, ok := read()
	if !ok {
		return 0, 0
	}
	last, quietSince := first, start
	for time.Since(start) < 15*time.Second && time.Since(quietSince) < 250*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
		d, ok := read()
		if !ok {
			break
		}
		if d.IOsInProgress > 0 || d.WritesCompleted != last.WritesCompleted || d.DiscardsCompleted != last.DiscardsCompleted {
			quietSince = time.Now()
		}
		last = d
	}
	return time.Since(start), last.DiscardedBytes - first.DiscardedBytes
}

// primeMemory writes page cache (on tmpfs, else on the store's file
// system) for a step on a ledger of ledgerBytes (its object is ~1 % more),
// and deletes it, so that
// the step that follows finds that much free memory the guest has used
// recently. On a virtual machine whose host backs guest
// memory lazily and takes freed memory back (virtio-balloon free page
// reporting), the first touch of a page the host took back costs a host
// fault: 3.5-4.5 s per GiB here against 0.55 s for memory in use. Every
// step but the read writes about twice the ledger into new page cache
// (the store's parts, then the object it assembles from them: 2.4 GiB
// taken at most for a 1 GiB ledger), and without priming the step that
// follows a deletion (the copy's, the raw PUT's or Pulsar's objects)
// reuses that memory while the others pay the host's faults, mostly in
// the store's completion: the rotation of the steps then decides a
// round's share. It primes twice what a step takes (4 × the ledger,
// whose parts and assembled copy a step writes), plus 1 GiB.
// TK_BENCH_PRIME_MEMORY=0 turns it off.
func (be *bench) primeMemory(ledgerBytes int64) {
	if !be.prime {
		return
	}
	n := 4*ledgerBytes + 1<<30
	// tmpfs when there is one: its pages are never dirty, so priming
	// writes nothing to disk and is not throttled by writeback.
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = filepath.Dir(be.s3.Dir)
	}
	f, err := os.CreateTemp(dir, "tierkeeper-prime-")
	if err != nil {
		be.b.Fatal(err)
	}
	defer os.Remove(f.Name())
	buf := make([]byte, 8<<20)
	for w := int64(0); w < n; w += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			be.b.Fatalf("prime memory: %v", err)
		}
	}
	if err := f.Close(); err != nil {
		be.b.Fatalf("prime memory: %v", err)
	}
}

// bench is the set-up shared by the measurements.
type bench struct {
	b       *testing.B
	zk      *testenv.ZooKeeper
	bk      *testenv.BookKeeperCluster
	java    *testenv.JavaTools
	s3      *testenv.S3
	bucket  string
	store   string // blob config file
	bin     string // offloader binary
	baseBin string // TK_BENCH_BASE_REV's offloader binary, or ""
	// storeDev is the block device under the store's data (the
	// ReflinkFS's loop device), or "" (tmpfs); see settleStoreDisk.
	storeDev string
	baseRev  string
	baseEnv  []string // TK_BENCH_BASE_ENV: variables set for the base's process
	zkc      *tkzk.Session
	parts    int
	ledgers  map[int]*testenv.WrittenLedger // by size in MiB
	prime    bool                           // TK_BENCH_PRIME_MEMORY (default on): primeMemory before every step
	tls      bool                           // TK_BENCH_TLS: the store over HTTPS
	ca       *testenv.CA                    // the store's CA (TK_BENCH_TLS)
}

func BenchmarkOffload(b *testing.B) {
	sizes := testenv.EnvInts(b, "TK_BENCH_OFFLOAD_MIB", []int{1024, 2048})
	rounds := testenv.EnvInt(b, "TK_BENCH_ROUNDS", 3)
	seeks := testenv.EnvInt(b, "TK_BENCH_SEEKS", 16)
	seekBlocks := testenv.EnvInts(b, "TK_BENCH_SEEK_BLOCKS", []int{5, 8, 16, 64})
	be := &bench{b: b, parts: testenv.EnvInt(b, "TK_BENCH_PARTS", 2), ledgers: map[int]*testenv.WrittenLedger{},
		prime: testenv.EnvBool(b, "TK_BENCH_PRIME_MEMORY", true)}
	be.zk = testenv.StartZooKeeper(b)
	be.bk = testenv.StartBookiesWith(b, be.zk, 3, testenv.BenchBookieOptions(b))
	be.java = testenv.Java(b)
	be.java.Timeout = 20 * time.Minute
	var s3opts testenv.S3Options
	switch fs := os.Getenv("TK_BENCH_STORE_FS"); fs {
	case "", "tmp":
	case "xfs-reflink":
		// The store completes a multipart upload by cloning the parts,
		// not by copying the object's bytes into new page cache.
		s3opts.Dir = testenv.ReflinkFS(b, 32<<30)
		dev, err := (hostfs.FS{}).DeviceOf(s3opts.Dir)
		if err != nil {
			b.Fatal(err)
		}
		be.storeDev = dev.Name
		b.Logf("the store's data is on XFS with reflink (%s, %s): a completion clones the parts", s3opts.Dir, dev.Name)
	default:
		b.Fatalf("TK_BENCH_STORE_FS=%q: want tmp or xfs-reflink", fs)
	}
	if testenv.EnvBool(b, "TK_BENCH_TLS", false) {
		// The store over HTTPS, as production stores are: the copy and
		// the raw PUT trust its CA through AWS_CA_BUNDLE (inherited by
		// their processes), Pulsar's JVM through a trust store.
		s3opts.CA = testenv.NewCA(b, "bench")
		be.tls, be.ca = true, s3opts.CA
	}
	if s3opts == (testenv.S3Options{}) {
		be.s3 = testenv.StartS3(b)
	} else {
		be.s3 = testenv.StartPrivateS3With(b, s3opts)
	}
	if be.tls {
		b.Setenv("AWS_CA_BUNDLE", be.s3.CAFile)
		be.java.JVMArgs = append(be.java.JVMArgs, be.java.Build.TrustStoreArgs(b, be.s3.CAFile)...)
		b.Logf("the store speaks HTTPS only (%s)", be.s3.Endpoint)
	}
	be.bucket = be.s3.NewBucket(b)
	be.store = be.storeFile(be.bucket)
	be.bin = testenv.BuiltCommand(b, "offloader")
	if rev := os.Getenv("TK_BENCH_BASE_REV"); rev != "" {
		be.baseBin, be.baseRev = buildOffloaderAt(b, rev), rev
	}
	if env := os.Getenv("TK_BENCH_BASE_ENV"); env != "" {
		// The base is this tree under other variables (e.g. GOMAXPROCS=1)
		// unless a revision is given too.
		be.baseEnv = strings.Split(env, ",")
		if be.baseBin == "" {
			be.baseBin, be.baseRev = be.bin, "this tree"
		}
		be.baseRev += " with " + env
	}
	ctx := context.Background()
	zs, err := tkzk.Connect(ctx, []string{be.zk.Addr}, tkzk.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer zs.Close()
	be.zkc = zs
	for _, mib := range sizes {
		start := time.Now()
		m := be.java.WriteLedgers(b, be.bk, testenv.WriteLedgersOptions{BigMiB: mib, Digests: []string{"CRC32C"}})
		be.ledgers[mib] = &m.Ledgers[0]
		b.Logf("wrote a %d MiB ledger (%d) with BookKeeper's Java client in %s", mib, m.Ledgers[0].LedgerID, time.Since(start).Round(time.Second))
	}
	only := os.Getenv("TK_BENCH_ONLY")
	if only == "" {
		// reads and copies need a base; the default run is the other
		// three.
		only = "throughput,rss,seeks"
	}
	want := func(part string) bool { return strings.Contains(only, part) }
	for i := 0; i < b.N; i++ {
		if want("throughput") {
			be.throughput(ctx, sizes[0], rounds)
		}
		if want("reads") {
			be.reads(ctx, sizes[0], rounds)
		}
		if want("copies") {
			be.copies(ctx, sizes[0], rounds)
		}
		if want("rss") {
			be.rss(ctx, sizes)
		}
		if want("seeks") {
			be.seekTable(ctx, sizes[0], seekBlocks, seeks)
		}
	}
}

// storeFile is the store file for bucket, with TK_BENCH_STORE_OPTIONS
// (comma-separated key=value, e.g. checksum=md5,payload_signing=signed)
// added to its s3 config; the offloader and the raw PUT both use it.
func (be *bench) storeFile(bucket string) string {
	p := s3test.StoreFile(be.b, be.s3, bucket)
	opts := os.Getenv("TK_BENCH_STORE_OPTIONS")
	if opts == "" {
		return p
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		be.b.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		be.b.Fatal(err)
	}
	cfg, _ := doc["config"].(map[string]any)
	for _, kv := range strings.Split(opts, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || cfg == nil {
			be.b.Fatalf("TK_BENCH_STORE_OPTIONS %q: want key=value,...", opts)
		}
		cfg[k] = v
	}
	if raw, err = json.Marshal(doc); err != nil {
		be.b.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		be.b.Fatal(err)
	}
	be.b.Logf("store options: %s", opts)
	return p
}

// managedLedger (re)writes a managed ledger holding the ledger, closed,
// and an empty current ledger after it, with no offload context, and
// returns its topic name.
func (be *bench) managedLedger(l *testenv.WrittenLedger) string {
	ml := fmt.Sprintf("bench/offload/persistent/ledger-%d", l.LedgerID)
	info := &mlproto.ManagedLedgerInfo{LedgerInfo: []*mlproto.ManagedLedgerInfo_LedgerInfo{
		{LedgerId: proto.Int64(l.LedgerID), Entries: proto.Int64(l.LastEntryID + 1), Size: proto.Int64(l.Length), Timestamp: proto.Int64(time.Now().UnixMilli())},
		{LedgerId: proto.Int64(l.LedgerID + 1_000_000), Timestamp: proto.Int64(0)},
	}}
	data, err := mledger.Encode(info, mledger.EncodeOptions{})
	if err != nil {
		be.b.Fatal(err)
	}
	p := mledger.Path(ml)
	if _, st, err := be.zkc.Conn.Get(p); err == nil {
		if _, err := be.zkc.Conn.Set(p, data, st.Version); err != nil {
			be.b.Fatal(err)
		}
	} else {
		testenv.CreatePath(be.b, be.zkc.Conn, p, data)
	}
	return "persistent://bench/offload/ledger-" + strconv.FormatInt(l.LedgerID, 10)
}

// tkResult is one offloader run.
type tkResult struct {
	uuid        uuid.UUID
	objectBytes int64
	copySeconds float64
	wall        float64
	maxRSS      int64
	cost        copyCost
}

// copyCost is the offloader's own account of its copy step (copyCost in
// its JSON output): process CPU from /proc/self/stat, Go allocations, and
// where the time went. A base revision's output decodes into it too
// (fields it lacks stay zero).
type copyCost = offloader.CopyCost

// offload runs `offloader offload` on a fresh managed ledger of l; extra
// are more flags (e.g. --profile-dir).
func (be *bench) offload(ctx context.Context, l *testenv.WrittenLedger, blockMiB int, extra ...string) tkResult {
	return be.offloadWith(ctx, be.bin, nil, l, blockMiB, extra...)
}

// offloadWith is offload with the offloader binary bin, env added to its
// environment.
func (be *bench) offloadWith(ctx context.Context, bin string, env []string, l *testenv.WrittenLedger, blockMiB int, extra ...string) tkResult {
	topic := be.managedLedger(l)
	args := []string{"offload", "-o", "json", "--zk", be.zk.Addr, "--store", be.store, "--parts-in-flight", strconv.Itoa(be.parts), topic}
	if blockMiB > 0 {
		args = append(args, "--block-size", fmt.Sprintf("%dMiB", blockMiB))
	}
	args = append(args, extra...)
	limit := childLimit(l.Length)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		be.b.Fatalf("offloader (limit %s for %d MiB): %v%s\n%s", limit, l.Length>>20, err, timedOut(ctx), errb.String())
	}
	wall := time.Since(start).Seconds()
	var doc struct {
		ManagedLedgers []struct {
			Ledgers []struct {
				UUID        string             `json:"uuid"`
				ObjectBytes int64              `json:"objectBytes"`
				Steps       map[string]float64 `json:"stepSeconds"`
				CopyCost    *copyCost          `json:"copyCost"`
			} `json:"ledgers"`
		} `json:"managedLedgers"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.ManagedLedgers) != 1 || len(doc.ManagedLedgers[0].Ledgers) != 1 {
		be.b.Fatalf("offloader output: %v %s", err, out.String())
	}
	l0 := doc.ManagedLedgers[0].Ledgers[0]
	if l0.CopyCost == nil || l0.CopyCost.CPUError != "" {
		be.b.Fatalf("offloader output has no copy cost: %s", out.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return tkResult{uuid: uuid.MustParse(l0.UUID), objectBytes: l0.ObjectBytes, copySeconds: l0.Steps["copy"], wall: wall, maxRSS: ru.Maxrss << 10,
		cost: *l0.CopyCost}
}

// deleteObjects removes an attempt's objects (keeps the bucket small).
func (be *bench) deleteObjects(ctx context.Context, id uuid.UUID, ledgerID int64) {
	for _, k := range []string{format.DataKey(id, ledgerID), format.IndexKey(id, ledgerID)} {
		_, _ = be.s3.Client().DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(be.bucket), Key: aws.String(k)})
	}
}

// rawFinish is the raw PUT's completion: from its last part handed over
// to the object complete (Seconds), split into waiting for the parts
// still uploading and the store's CompleteMultipartUpload (its assembly
// of the object).
type rawFinish struct {
	Seconds         float64 `json:"completeSeconds"`
	PartsSeconds    float64 `json:"partsWaitSeconds"`
	CompleteSeconds float64 `json:"storeCompleteSeconds"`
}

// raw runs the raw multipart baseline in a child process.
func (be *bench) raw(size int64, part int) (seconds, cpuSeconds float64, fin rawFinish) {
	// Bounded: the child uploads size bytes to a local server (minutes at most).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var r struct {
		Seconds float64 `json:"seconds"`
		rawFinish
	}
	cmd := be.child(ctx, rawChildEnv, rawConfig{Store: be.store, Bytes: size, Part: part, Parts: be.parts}, &r)
	return r.Seconds, processCPU(cmd), r.rawFinish
}

// child runs this test binary as the child that env selects (TestMain),
// with cfg as its JSON configuration, and decodes the JSON line it prints
// into out.
func (be *bench) child(ctx context.Context, env string, cfg, out any) *exec.Cmd {
	js, err := json.Marshal(cfg)
	if err != nil {
		be.b.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+string(js))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		be.b.Fatalf("child %s: %v\n%s", env, err, stderr.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), out); err != nil {
		be.b.Fatalf("child %s output %q: %v", env, stdout.String(), err)
	}
	return cmd
}

// processCPU is the user+system CPU seconds of a finished child (its whole
// life, from the kernel's accounting).
func processCPU(cmd *exec.Cmd) float64 {
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
}

// procs are the servers whose CPU the timelines sample: the running
// bookies' JVMs and versitygw.
func (be *bench) procs() []copytrace.Proc {
	var out []copytrace.Proc
	for _, bi := range be.bk.Bookies() {
		if bi.Running && bi.PID > 0 {
			out = append(out, copytrace.Proc{Name: fmt.Sprintf("bookie-%d", bi.Index), PID: bi.PID})
		}
	}
	return append(out, copytrace.Proc{Name: "versitygw", PID: be.s3.Pid()})
}

// timelineArgs are the offloader flags that write the copy's timeline
// (with the servers' CPU) to path.
func (be *bench) timelineArgs(path string) []string {
	var procs []string
	for _, p := range be.procs() {
		procs = append(procs, fmt.Sprintf("%s=%d", p.Name, p.PID))
	}
	return []string{"--timeline", path, "--timeline-procs", strings.Join(procs, ",")}
}

// copyTimeline reads the one ledger's timeline offloader offload
// --timeline wrote to path and sums it up.
func (be *bench) copyTimeline(path string) copytrace.Summary {
	raw, err := os.ReadFile(path)
	if err != nil {
		be.b.Fatal(err)
	}
	var f copytrace.File
	if err := json.Unmarshal(raw, &f); err != nil || len(f.Ledgers) != 1 || f.Ledgers[0].Timeline == nil {
		be.b.Fatalf("timeline %s: %v (%d ledgers)", path, err, len(f.Ledgers))
	}
	l := f.Ledgers[0]
	if len(l.Timeline.Errors) > 0 {
		be.b.Logf("timeline %s: %s", path, strings.Join(l.Timeline.Errors, "; "))
	}
	return copytrace.Summarize(l.Timeline, l.PartsInFlight)
}

// serversDuring samples the servers' and the machine's CPU while fn runs
// (the raw PUT, the read alone: what the store and the bookies cost on
// their own).
func (be *bench) serversDuring(fn func()) copytrace.Summary {
	s := copytrace.Start(copytrace.Options{Procs: be.procs()})
	fn()
	return copytrace.Summarize(s.Stop(), 0)
}

// cores is a summary's servers' cores, machine and PSI, in a few words.
func cores(s copytrace.Summary) string {
	var parts []string
	for _, p := range s.Procs {
		if c, ok := s.Whole.Cores[p]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f", p, c))
		}
	}
	return fmt.Sprintf("cores %s; machine %.0f%% busy (steal %.0f%%), PSI cpu %.0f%% io %.0f%%", strings.Join(parts, ", "), 100*s.Whole.MachineBusy, 100*s.Whole.Steal, 100*s.Whole.PSICPU, 100*s.Whole.PSIIO)
}

// pulsar runs Pulsar's own offloader on the ledger (its default 64 MiB
// blocks) and returns its offload seconds and the JVM's CPU seconds over
// the offload call (from its /proc/self/stat).
func (be *bench) pulsar(ctx context.Context, l *testenv.WrittenLedger) (seconds, cpuSeconds float64) {
	var r struct {
		Seconds    float64 `json:"seconds"`
		CPUSeconds float64 `json:"cpuSeconds"`
		UUID       string  `json:"uuid"`
	}
	args := append([]string{"--metadata-uri", be.bk.MetadataServiceURI(), "--ledger", strconv.FormatInt(l.LedgerID, 10), "--timeout-seconds", "1200"},
		testenv.S3Args(be.s3, be.bucket)...)
	if err := be.java.RunJSON(ctx, &r, "pulsar-offload", args...); err != nil {
		be.b.Fatal(err)
	}
	be.deleteObjects(ctx, uuid.MustParse(r.UUID), l.LedgerID)
	if r.CPUSeconds < 0 {
		be.b.Fatal("pulsar-offload could not read its /proc/self/stat")
	}
	return r.Seconds, r.CPUSeconds
}

// bkRead reads the ledger from the bookies alone (offloader ledger read
// --verify-only: digests checked, nothing stored) and returns the seconds
// and the process's CPU seconds.
func (be *bench) bkRead(ctx context.Context, l *testenv.WrittenLedger) (seconds, cpuSeconds float64) {
	return be.bkReadWith(ctx, be.bin, nil, l)
}

// bkReadWith is bkRead with the offloader binary bin, env added to its
// environment.
func (be *bench) bkReadWith(ctx context.Context, bin string, env []string, l *testenv.WrittenLedger) (seconds, cpuSeconds float64) {
	limit := childLimit(l.Length)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "ledger", "read", "--verify-only", "-o", "json", "--zk", be.zk.Addr, "--ledger", strconv.FormatInt(l.LedgerID, 10))
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		be.b.Fatalf("ledger read (limit %s for %d MiB): %v%s\n%s", limit, l.Length>>20, err, timedOut(ctx), errb.String())
	}
	var r struct {
		Seconds float64 `json:"seconds"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		be.b.Fatalf("ledger read output: %v %s", err, out.String())
	}
	return r.Seconds, processCPU(cmd)
}

// childLimit bounds one offloader child (a copy or a read alone) of a
// ledger of n bytes: two minutes plus 5 MB/s, 25x slower than the slowest
// copy measured here, so that a child stuck on a server fails the bench
// instead of hanging it.
func childLimit(n int64) time.Duration {
	return 2*time.Minute + time.Duration(n/5e6)*time.Second
}

// timedOut says so when ctx's deadline ended a child.
func timedOut(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return " (killed: it did not finish within its limit)"
	}
	return ""
}

func mbps(bytes int64, seconds float64) float64 { return float64(bytes) / 1e6 / max(seconds, 1e-9) }

// gib is bytes in GiB.
func gib(bytes int64) float64 { return float64(bytes) / (1 << 30) }

func (be *bench) throughput(ctx context.Context, mib, rounds int) {
	b := be.b
	l := be.ledgers[mib]
	b.Logf("throughput on the %d MiB ledger, %d rounds, order rotated every round; load before: %s", mib, rounds, testenv.LoadAvg())
	// A warm-up run reads the ledger once (every command then meets the
	// same bookie caches), gives the data object's size for the raw
	// baseline, and is profiled (CPU, blocking, mutex, allocations; the
	// measured runs are not).
	profDir := os.Getenv("TK_BENCH_PROFILE_DIR")
	if profDir == "" {
		profDir = b.TempDir()
	}
	// The bookies' read path first: in Pulsar's JVM their CPU per GiB
	// falls by half over the first ~20 GiB they serve (C2), and a round
	// that met them half-compiled measured the JIT, not the copy.
	wr := testenv.WarmBookieReads(b, be.bk, testenv.WarmReads{}, func() int64 {
		be.bkRead(ctx, l)
		return l.Length
	})
	b.Logf("bookies warmed with the read alone: %s", wr)
	// The warm-up starts like every measured step, so that round 1 does
	// not start with the memory an unprimed warm-up left to the host.
	be.primeMemory(l.Length)
	syscall.Sync()
	be.settleStoreDisk()
	var rec *perfRecording
	if testenv.EnvBool(b, "TK_BENCH_PERF", false) {
		var err error
		if rec, err = startPerf(ctx, profDir, 999); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(rec.kill)
	}
	// Under perf the warm-up runs without Go's profiles: their stack
	// walks (blocking and mutex events) would land in perf's user-space
	// samples as work the measured copies do not do.
	warmArgs := []string{"--profile-dir", profDir}
	if rec != nil {
		warmArgs = nil
		b.Logf("warm-up copy: recorded by perf, so not profiled by Go (no CPU or blocking profile tops below)")
	}
	warm := be.offload(ctx, l, 0, warmArgs...)
	if rec != nil {
		if err := rec.stop(); err != nil {
			b.Fatal(err)
		}
		be.summarizePerf(ctx, rec)
	}
	be.deleteObjects(ctx, warm.uuid, l.LedgerID)
	be.summarizeProfiles(warm.cost.Profiles)
	g := gib(l.Length)
	var tks, tkWalls, raws, pulsars, bks, shares, tkCPUs, tkUsers, tkSystems, pulCPUs, cpuRatios, allocs []float64
	var baseMBs, baseShares, baseCPUs, baseRatios, baseAllocs []float64
	var roundStates []string
	var overlaps, relays, relayRatios, tlsRelays, tlsRelayRatios, unsampleds, costRatios, ceilings []float64
	for r := 0; r < rounds; r++ {
		var tk tkResult
		var tkTL, rawTL, bkTL copytrace.Summary
		var rawS, rawCPU, pulS, pulCPU, bkS, bkCPU, tkBusy, rawBusy float64
		var rawFin rawFinish
		var tkIO, rawIO, bkIO ioDelta
		var base tkResult
		steps := []func(){
			func() {
				bkIO = ioDuring(func() { bkTL = be.serversDuring(func() { bkS, bkCPU = be.bkRead(ctx, l) }) })
			},
			func() {
				path := filepath.Join(profDir, fmt.Sprintf("copy-timeline-round-%d.json", r+1))
				tkIO = ioDuring(func() { tkBusy = busyDuring(func() { tk = be.offload(ctx, l, 0, be.timelineArgs(path)...) }) })
				be.deleteObjects(ctx, tk.uuid, l.LedgerID)
				tkTL = be.copyTimeline(path)
			},
			func() {
				rawIO = ioDuring(func() {
					rawTL = be.serversDuring(func() {
						rawBusy = busyDuring(func() { rawS, rawCPU, rawFin = be.raw(warm.objectBytes, pipeline.DefaultBlockSize) })
					})
				})
			},
			func() { pulS, pulCPU = be.pulsar(ctx, l) },
		}
		if be.baseBin != "" {
			steps = append(steps, func() {
				base = be.offloadWith(ctx, be.baseBin, be.baseEnv, l, 0)
				be.deleteObjects(ctx, base.uuid, l.LedgerID)
			})
		}
		var settled time.Duration
		var discarded uint64
		for i := range steps {
			// Every step starts with the same free memory (see
			// primeMemory) and with what the steps before it wrote on
			// disk (the store's objects and parts), so none pays for
			// another's writeback, nor for the discards of what they
			// deleted (settleStoreDisk).
			be.primeMemory(l.Length)
			syscall.Sync()
			w, d := be.settleStoreDisk()
			settled, discarded = settled+w, discarded+d
			steps[(i+r)%len(steps)]()
		}
		if be.storeDev != "" {
			b.Logf("round %d: before its steps the store's disk (%s) settled in %.2fs in all, discarding %.0f MiB", r+1, be.storeDev, settled.Seconds(), float64(discarded)/(1<<20))
		}
		tkm, rawm, pulm, bkm := mbps(l.Length, tk.copySeconds), mbps(tk.objectBytes, rawS), mbps(l.Length, pulS), mbps(l.Length, bkS)
		// The floor of the copy's CPU on this round's machine: a bare
		// relay of the same bytes at the copy's rate (relay_test.go). It
		// writes no page cache, so it needs no priming.
		relayS, relayCPU := be.relay(l.Length, int(l.Length/(l.LastEntryID+1)), pipeline.DefaultBlockSize, tkm, nil)
		// Over HTTPS, the same relay with its sink behind TLS: the floor
		// with the encryption every HTTPS copy pays.
		var tlsRelayS, tlsRelayCPU float64
		if be.ca != nil {
			tlsRelayS, tlsRelayCPU = be.relay(l.Length, int(l.Length/(l.LastEntryID+1)), pipeline.DefaultBlockSize, tkm, be.ca)
		}
		// The co-located limit: reading alone, then uploading alone, one
		// after the other (the copy overlaps them, but on shared cores
		// the two compete for the same CPU).
		share := (bkS + rawS) / tk.copySeconds
		c := tk.cost
		tkCPU, pulCPUg := c.CPUSeconds/g, pulCPU/g
		// The copy's CPU without its timeline's samples (the benchmark's
		// instrument, which a production copy does not run).
		unsampled := tkCPU - tkTL.SamplerCPUSeconds/g
		b.Logf("round %d: tierkeeper copy %.1f MB/s (%.2fs; whole run incl. verify+commit %.2fs; machine CPU %.0f%% busy), raw multipart %.1f MB/s (%.2fs; CPU %.0f%% busy), Pulsar offloader %.1f MB/s (%.2fs), bookie read alone %.1f MB/s (%.2fs); copy = %.2f of the limit 1/(1/read+1/put) = %.1f MB/s; load %s",
			r+1, tkm, tk.copySeconds, tk.wall, 100*tkBusy, rawm, rawS, 100*rawBusy, pulm, pulS, bkm, bkS, share, mbps(l.Length, bkS+rawS), testenv.LoadAvg())
		b.Logf("round %d: I/O: copy stalled on I/O %.2fs (PSI io some; dirty %.0f MiB, writeback %.0f MiB at its start, at most %.0f MiB dirty or under writeback), raw PUT %.2fs (dirty %.0f MiB at its start, at most %.0f MiB); most free memory taken (MemFree at the start minus its lowest): copy %.0f MiB, raw PUT %.0f MiB, read alone %.0f MiB",
			r+1, tkIO.stall.Seconds(), tkIO.start.DirtyMiB, tkIO.start.WritebackMiB, tkIO.peakDirty, rawIO.stall.Seconds(), rawIO.start.DirtyMiB, rawIO.peakDirty, tkIO.tookFree, rawIO.tookFree, bkIO.tookFree)
		b.Logf("round %d: disks during the copy: %s; during the raw PUT: %s", r+1, tkIO.diskLine(), rawIO.diskLine())
		b.Logf("round %d: CPU per GiB: tierkeeper copy %.2f s (user %.2f, system %.2f; its timeline's samples took %.3f of it: %.2f s without them), Pulsar's JVM %.2f s (%.2fx); read alone %.2f s, raw PUT alone %.2f s (whole processes); copy allocated %.0f MiB/GiB in %.0f objects/GiB, %d GCs (%.0f ms paused), %.0f page faults/GiB, %.0f read and %.0f write system calls/GiB; copy waited %.2fs for the bookies, %.2fs in Add (encode + waiting for a free block), %.2fs finishing (last parts, complete, index)",
			r+1, tkCPU, c.UserSeconds/g, c.SystemSeconds/g, tkTL.SamplerCPUSeconds/g, unsampled, pulCPUg, tkCPU/pulCPUg, bkCPU/g, rawCPU/g, float64(c.AllocBytes)/(1<<20)/g, float64(c.Allocs)/g, c.GCCycles, 1000*c.GCPauseSeconds, float64(c.PageFaults)/g, float64(c.ReadCalls)/g, float64(c.WriteCalls)/g, c.ReadWaitSeconds, c.AddSeconds, c.FinishSeconds)
		b.Logf("round %d: a bare relay of the same bytes at the copy's rate (%.1f MB/s reached; entry-sized writes from one loopback socket, a block-sized buffer, writes to another; the machine otherwise idle) took %.2f CPU-s/GiB: the copy without its timeline's samples took %.2fx that",
			r+1, mbps(l.Length, relayS), relayCPU/g, unsampled/(relayCPU/g))
		relays, relayRatios, unsampleds = append(relays, relayCPU/g), append(relayRatios, unsampled/(relayCPU/g)), append(unsampleds, unsampled)
		if be.ca != nil {
			b.Logf("round %d: the same relay with its sink behind TLS (the offloader's HTTPS connection: crypto/tls, records sent 256 KiB per system call; %.1f MB/s reached) took %.2f CPU-s/GiB: the copy without its timeline's samples took %.2fx that",
				r+1, mbps(l.Length, tlsRelayS), tlsRelayCPU/g, unsampled/(tlsRelayCPU/g))
			tlsRelays, tlsRelayRatios = append(tlsRelays, tlsRelayCPU/g), append(tlsRelayRatios, unsampled/(tlsRelayCPU/g))
		}
		b.Logf("round %d: timeline of the copy (every %s): %s", r+1, copytrace.DefaultInterval, tkTL)
		b.Logf("round %d: servers alone: during the raw PUT %s; during the read alone %s", r+1, cores(rawTL), cores(bkTL))
		// The store's completion ends both the copy and the raw PUT and
		// overlaps nothing: the share without it says how well reading
		// and uploading overlap. versitygw assembles the object: on ext4
		// it copies the parts' bytes; on XFS with reflink it clones them,
		// and the clone first writes the parts' dirty pages back and
		// waits for them (xfs_reflink_remap_prep), so its time is the
		// disk's: the figure per second of it is the most page cache the
		// step held dirty or under writeback, over that time.
		tkFinish, rawComplete := tk.cost.FinishSeconds, rawFin.Seconds
		overlap := (bkS + rawS - rawComplete) / (tk.copySeconds - tkFinish)
		b.Logf("round %d: the copy finished in %.2fs (last parts %.2fs, completion %.2fs, index %.3fs), the raw PUT's completion took %.2fs (last parts %.2fs, completion %.2fs); at most %.0f and %.0f MiB dirty or under writeback: %.0f and %.0f MiB per second of completion; without them the copy is %.2f of the limit",
			r+1, tkFinish, tk.cost.FinishPartsSeconds, tk.cost.FinishCompleteSeconds, tk.cost.FinishIndexSeconds, rawComplete, rawFin.PartsSeconds, rawFin.CompleteSeconds,
			tkIO.peakDirty, rawIO.peakDirty, tkIO.peakDirty/max(tk.cost.FinishCompleteSeconds, 1e-3), rawIO.peakDirty/max(rawFin.CompleteSeconds, 1e-3), overlap)
		overlaps = append(overlaps, overlap)
		// What the machine's CPU allowed: on shared cores the copy and
		// both steps keep the machine busy, so the copy can beat the limit
		// only by the CPU the steps alone left idle.
		cores := float64(runtime.NumCPU())
		tkA, bkA, rawA := accountOf(tkTL, "offloader", 0, cores), accountOf(bkTL, "", bkCPU, cores), accountOf(rawTL, "", rawCPU, cores)
		both := bkA.plus(rawA)
		ceiling := (bkS + rawS) / max(bkS, rawS, rawComplete+both.machine/cores)
		b.Logf("round %d: CPU account (core-seconds): the copy kept the machine busy for %.2f (%s), the read alone and the raw PUT for %.2f + %.2f = %.2f (%s): the copy cost %.2fx their sum (bookies %.2fx, versitygw %.2fx, its own process %.2fx the reader's and the PUT client's); at their cost, overlapping all but the store's completion, the copy would be at most %.2f of the limit",
			r+1, tkA.machine, tkA, bkA.machine, rawA.machine, both.machine, both, tkA.machine/both.machine, tkA.bookies/both.bookies, tkA.store/both.store, tkA.client/both.client, ceiling)
		costRatios, ceilings = append(costRatios, tkA.machine/both.machine), append(ceilings, ceiling)
		roundStates = append(roundStates, fmt.Sprintf("round %d %.2f (finish %.2fs against the raw PUT's completion %.2fs; %.2f without them): %s",
			r+1, share, tkFinish, rawComplete, overlap, stateShares(tkTL)))
		if be.baseBin != "" {
			bc := base.cost
			bm, bshare, bcpu := mbps(l.Length, base.copySeconds), (bkS+rawS)/base.copySeconds, bc.CPUSeconds/g
			b.Logf("round %d: base %s copy %.1f MB/s (%.2fs) = %.2f of the limit; CPU %.2f s/GiB (user %.2f, system %.2f) (%.2fx Pulsar's); allocated %.0f MiB/GiB, %d GCs (%.0f ms paused), %.0f page faults/GiB, %.0f read and %.0f write system calls/GiB (a figure the base does not report is zero); waited %.2fs for the bookies, %.2fs in Add, %.2fs finishing",
				r+1, be.baseRev, bm, base.copySeconds, bshare, bcpu, bc.UserSeconds/g, bc.SystemSeconds/g, bcpu/pulCPUg, float64(bc.AllocBytes)/(1<<20)/g, bc.GCCycles, 1000*bc.GCPauseSeconds, float64(bc.PageFaults)/g, float64(bc.ReadCalls)/g, float64(bc.WriteCalls)/g, bc.ReadWaitSeconds, bc.AddSeconds, bc.FinishSeconds)
			baseMBs, baseShares, baseCPUs, baseRatios, baseAllocs = append(baseMBs, bm), append(baseShares, bshare), append(baseCPUs, bcpu), append(baseRatios, bcpu/pulCPUg), append(baseAllocs, float64(bc.AllocBytes)/g)
		}
		tks, tkWalls, raws, pulsars, bks = append(tks, tkm), append(tkWalls, mbps(l.Length, tk.wall)), append(raws, rawm), append(pulsars, pulm), append(bks, bkm)
		tkUsers, tkSystems = append(tkUsers, c.UserSeconds/g), append(tkSystems, c.SystemSeconds/g)
		shares, tkCPUs, pulCPUs, cpuRatios, allocs = append(shares, share), append(tkCPUs, tkCPU), append(pulCPUs, pulCPUg), append(cpuRatios, tkCPU/pulCPUg), append(allocs, float64(c.AllocBytes)/g)
	}
	b.ReportMetric(stats.Median(tks), "tk-copy-MB/s")
	b.ReportMetric(stats.Median(raws), "raw-MB/s")
	b.ReportMetric(stats.Median(pulsars), "pulsar-MB/s")
	b.ReportMetric(stats.Median(bks), "read-MB/s")
	b.ReportMetric(slices.Min(shares), "min-share-of-limit")
	b.ReportMetric(stats.Median(tkCPUs), "tk-CPU-s/GiB")
	b.ReportMetric(stats.Median(pulCPUs), "pulsar-CPU-s/GiB")
	b.ReportMetric(stats.Median(allocs), "tk-alloc-B/GiB")
	b.Logf("RESULT throughput (median of %d): tierkeeper %.1f MB/s copy, %.1f MB/s whole run; raw multipart %.1f MB/s; bookie read alone %.1f MB/s; Pulsar %.1f MB/s",
		rounds, stats.Median(tks), stats.Median(tkWalls), stats.Median(raws), stats.Median(bks), stats.Median(pulsars))
	b.Logf("RESULT co-located limit: copy / (1/(1/read + 1/put)) per round %s (goal >= 0.95 in every round)", fmtList(shares))
	b.ReportMetric(slices.Min(overlaps), "min-share-without-completion")
	b.ReportMetric(stats.Median(costRatios), "copy-vs-steps-machine-CPU")
	b.Logf("RESULT the machine's CPU: the copy cost %s x what the read alone and the raw PUT cost together (per round); at their cost it could reach at most %s of the limit (per round)",
		fmtList(costRatios), fmtList(ceilings))
	b.Logf("RESULT where the copy's time went (timeline states, share of the copy): %s", strings.Join(roundStates, "; "))
	b.Logf("RESULT CPU per GiB (median): tierkeeper copy %.2f s (per round %s; user %s, system %s), Pulsar's JVM %.2f s, ratio %.2f (per round %s; goals <= 0.25 and <= 1 s/GiB); copy allocations %.1f MiB/GiB",
		stats.Median(tkCPUs), fmtList(tkCPUs), fmtList(tkUsers), fmtList(tkSystems), stats.Median(pulCPUs), stats.Median(cpuRatios), fmtList(cpuRatios), stats.Median(allocs)/(1<<20))
	b.ReportMetric(stats.Median(unsampleds), "tk-unsampled-CPU-s/GiB")
	b.Logf("RESULT CPU per GiB of the copy without its timeline's samples (median): %.2f s (per round %s)", stats.Median(unsampleds), fmtList(unsampleds))
	b.ReportMetric(stats.Median(relays), "relay-CPU-s/GiB")
	plain := ""
	if be.tls {
		plain = " (this relay speaks plain TCP; the copy encrypts what it uploads: see the floor over TLS)"
	}
	b.Logf("RESULT the floor: a bare relay at the copy's rate took %.2f CPU-s/GiB (per round %s); the copy without its timeline's samples took %.2fx that (per round %s)%s",
		stats.Median(relays), fmtList(relays), stats.Median(relayRatios), fmtList(relayRatios), plain)
	if be.ca != nil {
		b.ReportMetric(stats.Median(tlsRelays), "tls-relay-CPU-s/GiB")
		b.Logf("RESULT the floor over TLS: the same relay writing through the offloader's HTTPS connection took %.2f CPU-s/GiB (per round %s); the copy without its timeline's samples took %.2fx that (per round %s)",
			stats.Median(tlsRelays), fmtList(tlsRelays), stats.Median(tlsRelayRatios), fmtList(tlsRelayRatios))
	}
	if be.baseBin != "" {
		b.Logf("RESULT base %s (median): copy %.1f MB/s, share of the limit per round %s, CPU %.2f s/GiB (%.2fx Pulsar's), allocations %.1f MiB/GiB",
			be.baseRev, stats.Median(baseMBs), fmtList(baseShares), stats.Median(baseCPUs), stats.Median(baseRatios), stats.Median(baseAllocs)/(1<<20))
	}
}

// reads times the read alone (ledger read --verify-only: the bookie
// client, its digest checks, nothing stored) of this tree against the
// base's (TK_BENCH_BASE_REV / TK_BENCH_BASE_ENV); see paired.
func (be *bench) reads(ctx context.Context, mib, rounds int) {
	l := be.ledgers[mib]
	be.paired(ctx, l, rounds, "read alone", "read", func(bin string, env []string) (float64, float64) {
		return be.bkReadWith(ctx, bin, env, l)
	})
}

// copies times the copy (offloader offload's copy step, nothing else of
// the throughput rounds: no raw PUT, no Pulsar, no priming) of this tree
// against the base's; see paired.
func (be *bench) copies(ctx context.Context, mib, rounds int) {
	l := be.ledgers[mib]
	be.paired(ctx, l, rounds, "copy", "copy", func(bin string, env []string) (float64, float64) {
		syscall.Sync()
		be.settleStoreDisk()
		r := be.offloadWith(ctx, bin, env, l, 0)
		be.deleteObjects(ctx, r.uuid, l.LedgerID)
		return r.copySeconds, r.cost.CPUSeconds
	})
}

// paired runs step (seconds and CPU seconds of one run of the offloader
// binary bin with env added) with this tree and with the base
// (TK_BENCH_BASE_REV / TK_BENCH_BASE_ENV), 5 pairs per round, each pair
// in a rotated order, after the bookies' read path is warmed. On shared
// cores a run's CPU per GiB moves by tens of per cent with the
// neighbours, so a change is judged by the ratios within each pair (CPU
// and MB/s: their medians and 95 % bootstrap intervals over the pairs),
// not by the runs' own figures. Runs move by a few per cent between them,
// more than one run's interval admits: a change is confirmed by a second
// run the other way round (the base as the tree).
func (be *bench) paired(ctx context.Context, l *testenv.WrittenLedger, rounds int, what, metric string, step func(bin string, env []string) (seconds, cpuSeconds float64)) {
	b := be.b
	if be.baseBin == "" {
		b.Fatalf("the paired %s compares with a base: set BENCH_BASE_REV or BENCH_BASE_ENV", what)
	}
	g := gib(l.Length)
	wr := testenv.WarmBookieReads(b, be.bk, testenv.WarmReads{}, func() int64 {
		be.bkRead(ctx, l)
		return l.Length
	})
	b.Logf("bookies warmed with the read alone: %s", wr)
	pairs := max(rounds, 1) * 5
	var tks, bases, ratios, tkMBs, baseMBs, speedRatios []float64
	for i := 0; i < pairs; i++ {
		var tkS, tkCPU, baseS, baseCPU float64
		steps := []func(){
			func() { tkS, tkCPU = step(be.bin, nil) },
			func() { baseS, baseCPU = step(be.baseBin, be.baseEnv) },
		}
		for j := range steps {
			steps[(i+j)%len(steps)]()
		}
		tks, bases = append(tks, tkCPU/g), append(bases, baseCPU/g)
		ratios = append(ratios, tkCPU/baseCPU)
		tkMBs, baseMBs = append(tkMBs, mbps(l.Length, tkS)), append(baseMBs, mbps(l.Length, baseS))
		speedRatios = append(speedRatios, baseS/tkS)
		b.Logf("pair %d: %s %.3f CPU-s/GiB (%.0f MB/s), base %s %.3f (%.0f MB/s): ratio %.3f; load %s",
			i+1, what, tkCPU/g, mbps(l.Length, tkS), be.baseRev, baseCPU/g, mbps(l.Length, baseS), ratios[i], testenv.LoadAvg())
	}
	medianInterval := func(xs []float64) (lo, hi float64) {
		return stats.BootstrapInterval(len(xs), 2000, 0.95, 1, func(idx []int) float64 {
			v := make([]float64, len(idx))
			for k, j := range idx {
				v[k] = xs[j]
			}
			return stats.Median(v)
		})
	}
	lo, hi := medianInterval(ratios)
	slo, shi := medianInterval(speedRatios)
	b.ReportMetric(stats.Median(tks), metric+"-CPU-s/GiB")
	b.ReportMetric(stats.Median(ratios), metric+"-CPU-vs-base")
	b.ReportMetric(stats.Median(speedRatios), metric+"-MB/s-vs-base")
	b.Logf("RESULT %s, %d pairs: this tree %.3f CPU-s/GiB (median; %.0f MB/s), base %s %.3f (%.0f MB/s); paired CPU ratio median %.3f (95 %% interval %.3f-%.3f); paired MB/s ratio (this tree / base) median %.3f (95 %% interval %.3f-%.3f)",
		what, pairs, stats.Median(tks), stats.Median(tkMBs), be.baseRev, stats.Median(bases), stats.Median(baseMBs), stats.Median(ratios), lo, hi, stats.Median(speedRatios), slo, shi)
}

// stepCPU is the CPU a step kept busy, in core-seconds: the machine's and
// its processes' (client: the copy's offloader, the reader alone or the
// raw PUT's client; the bookies' JVMs; the store).
type stepCPU struct {
	machine, client, bookies, store float64
}

// accountOf is the CPU of a step from its summary: client is the process
// named so in the summary, or else clientCPU (a child's whole life, which
// its summary spans).
func accountOf(s copytrace.Summary, client string, clientCPU, cores float64) stepCPU {
	w := s.Whole
	a := stepCPU{machine: w.MachineBusy * cores * w.Seconds, client: clientCPU}
	for p, c := range w.Cores {
		switch {
		case p == client:
			a.client = c * w.Seconds
		case strings.HasPrefix(p, "bookie-"):
			a.bookies += c * w.Seconds
		case p == "versitygw":
			a.store += c * w.Seconds
		}
	}
	return a
}

func (a stepCPU) plus(o stepCPU) stepCPU {
	return stepCPU{machine: a.machine + o.machine, client: a.client + o.client, bookies: a.bookies + o.bookies, store: a.store + o.store}
}

func (a stepCPU) String() string {
	return fmt.Sprintf("client %.2f, bookies %.2f, versitygw %.2f, the rest %.2f", a.client, a.bookies, a.store, a.machine-a.client-a.bookies-a.store)
}

// stateShares is a copy timeline's states and their shares, e.g.
// "waiting for a free block 61%, copying 30%, finishing 9%".
func stateShares(s copytrace.Summary) string {
	var out []string
	for _, st := range s.States {
		out = append(out, fmt.Sprintf("%s %.0f%%", st.Name, 100*st.Share))
	}
	return strings.Join(out, ", ")
}

func fmtList(v []float64) string {
	var out []string
	for _, x := range v {
		out = append(out, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(out, " ")
}

// summarizeProfiles logs the top of the warm-up copy's CPU and blocking
// profiles (go tool pprof -top).
func (be *bench) summarizeProfiles(files []string) {
	for _, f := range files {
		kind := ""
		switch {
		case strings.HasSuffix(f, ".cpu.pprof"):
			kind = "CPU"
		case strings.HasSuffix(f, ".block.pprof"):
			kind = "blocking"
		default:
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", be.bin, f).Output()
		cancel()
		if err != nil {
			be.b.Logf("pprof %s: %v", f, err)
			continue
		}
		be.b.Logf("warm-up copy %s profile %s (go tool pprof -top):", kind, f)
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			be.b.Logf("  %s %s", kind, line)
		}
	}
}

func (be *bench) rss(ctx context.Context, sizes []int) {
	b := be.b
	bound := int64(be.parts+2)*int64(pipeline.DefaultBlockSize) + 64<<20
	var parts []string
	var peak int64
	for _, mib := range sizes {
		l := be.ledgers[mib]
		tk := be.offload(ctx, l, 0)
		be.deleteObjects(ctx, tk.uuid, l.LedgerID)
		peak = max(peak, tk.maxRSS)
		parts = append(parts, fmt.Sprintf("%d MiB: %d MiB", mib, tk.maxRSS>>20))
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
	b.Logf("RESULT peak RSS of the offloader process (block %d MiB, %d parts in flight): %s; bound (parts+2) x block + 64 MiB = %d MiB",
		pipeline.DefaultBlockSize>>20, be.parts, strings.Join(parts, ", "), bound>>20)
}

// counter is a reverse proxy in front of versitygw that counts the bytes
// of GET answers: index objects and data objects apart. With trace set,
// it also writes one line per GET to it: the object, the range, and
// where the GET's time went (see getTiming).
type counter struct {
	data, index, gets atomic.Int64
	trace             io.Writer
	traceMu           sync.Mutex
}

// getTiming holds when a GET came into the counting proxy and when the
// store's headers for it arrived. Its trace line gives the request's time
// from the start of the trace, the store's time to answer (headers), the
// body's time through the proxy, and how long the client had been quiet
// before the request (since the end of the previous GET; negative when
// GETs overlap).
type getTiming struct {
	start, headers time.Time
}

type getTimingKey struct{}

func (c *counter) proxy(target string) *httptest.Server {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u) // keeps the signed Host header
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodGet {
			c.gets.Add(1)
			n := &c.data
			if strings.HasSuffix(resp.Request.URL.Path, "-index") {
				n = &c.index
			}
			resp.Body = &countingBody{ReadCloser: resp.Body, n: n}
			if t, ok := resp.Request.Context().Value(getTimingKey{}).(*getTiming); ok {
				t.headers = time.Now()
			}
		}
		return nil
	}
	if c.trace == nil {
		return httptest.NewServer(rp)
	}
	epoch := time.Now()
	fmt.Fprintf(c.trace, "# seconds since %s\tobject\trange\tstore_ms\tbody_ms\tidle_before_ms\n", epoch.UTC().Format(time.RFC3339Nano))
	var lastEnd time.Time
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := &getTiming{start: time.Now()}
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), getTimingKey{}, t)))
		end := time.Now()
		if r.Method != http.MethodGet || t.headers.IsZero() {
			return
		}
		c.traceMu.Lock()
		defer c.traceMu.Unlock()
		gap := -1.0
		if !lastEnd.IsZero() {
			gap = t.start.Sub(lastEnd).Seconds() * 1000
		}
		lastEnd = end
		fmt.Fprintf(c.trace, "%.3f\t%s\t%s\tstore_ms=%.2f\tbody_ms=%.2f\tidle_before_ms=%.2f\n",
			t.start.Sub(epoch).Seconds(), r.URL.Path, r.Header.Get("Range"),
			t.headers.Sub(t.start).Seconds()*1000, end.Sub(t.headers).Seconds()*1000, gap)
	}))
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

func (be *bench) seekTable(ctx context.Context, mib int, blocks []int, seeks int) {
	b := be.b
	l := be.ledgers[mib]
	var c counter
	px := c.proxy(be.s3.Endpoint)
	defer px.Close()
	s3args := []string{"--s3-endpoint", px.URL, "--bucket", be.bucket, "--access-key", be.s3.AccessKey, "--secret-key", be.s3.SecretKey, "--region", be.s3.Region}
	type row struct {
		block               int
		perSeek, seqBytes   float64
		seekSec, seqSeconds float64
	}
	var rows []row
	for _, bm := range blocks {
		tk := be.offload(ctx, l, bm)
		base := []string{"--ledger", strconv.FormatInt(l.LedgerID, 10), "--uuid", tk.uuid.String()}
		c.data.Store(0)
		c.index.Store(0)
		var rnd struct {
			Seeks []struct {
				Seconds float64 `json:"seconds"`
			} `json:"seeks"`
		}
		if err := be.java.RunJSON(ctx, &rnd, "pulsar-read-offloaded", append(append(base, "--random", strconv.Itoa(seeks), "--seed", "7"), s3args...)...); err != nil {
			b.Fatal(err)
		}
		var secs []float64
		for _, s := range rnd.Seeks {
			secs = append(secs, s.Seconds)
		}
		perSeek := float64(c.data.Load()) / float64(len(rnd.Seeks))
		c.data.Store(0)
		var seq struct {
			TotalBytes int64 `json:"totalBytes"`
		}
		start := time.Now()
		if err := be.java.RunJSON(ctx, &seq, "pulsar-read-offloaded", append(append(base, "--batch", "50"), s3args...)...); err != nil {
			b.Fatal(err)
		}
		seqWall := time.Since(start).Seconds()
		if seq.TotalBytes != l.Length {
			b.Fatalf("sequential read of %d bytes, the ledger has %d", seq.TotalBytes, l.Length)
		}
		rows = append(rows, row{block: bm, perSeek: perSeek, seqBytes: float64(c.data.Load()), seekSec: stats.Median(secs), seqSeconds: seqWall})
		be.deleteObjects(ctx, tk.uuid, l.LedgerID)
		b.Logf("block %2d MiB: %.1f MiB fetched per random seek (median seek %.0f ms), sequential read fetched %.0f MiB in %.1fs; load %s",
			bm, perSeek/(1<<20), stats.Median(secs)*1000, float64(c.data.Load())/(1<<20), seqWall, testenv.LoadAvg())
	}
	var ref row
	for _, r := range rows {
		if r.block == 64 {
			ref = r
		}
	}
	for _, r := range rows {
		if ref.perSeek > 0 {
			b.Logf("RESULT block %2d MiB: %.2f MiB per seek (%.1fx fewer than 64 MiB), sequential read %.2fx the time of 64 MiB blocks",
				r.block, r.perSeek/(1<<20), ref.perSeek/r.perSeek, r.seqSeconds/ref.seqSeconds)
		}
	}
}

// rawConfig is the raw baseline's job, passed to the child as JSON.
type rawConfig struct {
	Store       string // the offloader's store file: the same client settings
	Bytes       int64
	Part, Parts int
}

// rawChild uploads Bytes bytes as one multipart object with Parts parts in
// flight, each buffer filled by copying from memory (the raw counterpart of
// the encoder's copy), and prints the seconds.
func rawChild() int {
	var c rawConfig
	if err := json.Unmarshal([]byte(os.Getenv(rawChildEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	sc, err := blobclient.Load(c.Store)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := blobclient.New(ctx, sc, blobclient.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	src := make([]byte, 8<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	key := "raw-" + uuid.NewString()
	pool := format.NewPool(c.Part, c.Parts+1)
	start := time.Now()
	up, err := blob.StartParts(ctx, st, key, blob.PutOptions{ContentType: "application/octet-stream"}, blob.PartsOptions{InFlight: c.Parts})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	part := 0
	for off := int64(0); off < c.Bytes; off += int64(c.Part) {
		n := int(min(int64(c.Part), c.Bytes-off))
		buf, err := pool.Get(ctx, n)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for p := 0; p < n; {
			p += copy(buf[p:], src[(off+int64(p))%int64(len(src)):])
		}
		part++
		if err := up.Send(ctx, part, buf, func() { pool.Put(buf) }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fin := time.Now()
	if _, err := up.Complete(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	secs, complete := time.Since(start).Seconds(), time.Since(fin).Seconds()
	parts, store := up.Timings()
	_ = st.Delete(ctx, key)
	fmt.Printf(`{"seconds": %f, "completeSeconds": %f, "partsWaitSeconds": %f, "storeCompleteSeconds": %f}`+"\n", secs, complete, parts.Seconds(), store.Seconds())
	return 0
}
