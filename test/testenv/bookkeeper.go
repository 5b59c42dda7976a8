package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

// BookKeeperCluster is a set of real BookKeeper bookies (the version Pulsar
// pins, from the compat Maven build), one JVM process each, registered in a
// ZooKeeper under LedgersRoot. Bookies listen on 127.0.0.1 only, advertise
// 127.0.0.1:port as their id, and use Pulsar's default storage
// (DbLedgerStorage, RocksDB index) with small caches.
type BookKeeperCluster struct {
	ZK          *ZooKeeper
	LedgersRoot string // "/ledgers"

	owner testing.TB
	build *JavaBuild
	dir   string
	opts  BookieOptions

	mu      sync.Mutex
	bookies []*bookie
}

// BookieOptions tune StartBookiesWith. The zero value gives the defaults.
type BookieOptions struct {
	// LedgerStorage is the ledgerStorageClass; default Pulsar's
	// "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage". Use
	// "org.apache.bookkeeper.bookie.SortedLedgerStorage" for BK's own default.
	LedgerStorage string
	// Heap is the JVM -Xmx; default "128m" ("512m" with PulsarJVM).
	Heap string
	// PulsarJVM runs each bookie's JVM as Pulsar runs a bookie (its
	// conf/bkenv.sh and its Helm chart's bookkeeper PULSAR_GC): the heap
	// fixed at Heap (-Xms = -Xmx) and touched at start, G1 with a 10 ms
	// pause goal (its GC threads sized to the machine), both JIT
	// compilers, Netty's leak detection off. Without it a bookie gets
	// the harness's quick-start JVM (C1 only, serial GC, a heap that
	// grows from 16 MiB), which starts in half the time and suits tests;
	// benchmarks whose figures include what the bookies cost use
	// PulsarJVM (BenchBookieOptions).
	PulsarJVM bool
	// DirectMemory is -XX:MaxDirectMemorySize (Netty buffers, read and
	// write caches); default "256m".
	DirectMemory string
	// Extra are more bookie configuration lines ("key=value"); a key that
	// is also a default (e.g. "zkTimeout=4000") replaces the default.
	Extra []string
	// ExtraFor are more lines for the bookie with that index only (after
	// Extra), e.g. a bookie that also runs AutoRecovery
	// ("autoRecoveryDaemonEnabled=true") or a setting that differs.
	ExtraFor map[int][]string
	// HTTP starts each bookie's HTTP admin server on 127.0.0.1 at a free
	// port (BookieInfo.HTTPAddr).
	HTTP bool
}

// BookieInfo describes one bookie of a cluster.
type BookieInfo struct {
	Index int
	ID    string // bookie id as stored in ledger metadata: "127.0.0.1:port"
	Addr  string // network address, same as ID here
	Port  int
	Dir   string // journal in Dir/j, ledgers in Dir/l
	// HTTPAddr is the HTTP admin server's host:port (BookieOptions.HTTP).
	HTTPAddr string
	// Conf is the bookie's configuration file.
	Conf    string
	LogPath string // log of the current (or last) process
	Running bool
	// PID is the current (or last) process's id (0 before the first).
	PID int
}

type bookie struct {
	BookieInfo
	conf string
	proc *Process
	gen  int
}

const (
	// A starting bookie is waited for while it makes progress (uses CPU or
	// logs): on a loaded machine its JVM start takes as long as it takes.
	// Stuck is bookieStartStall without progress (three times zkTimeout,
	// which a restarted bookie may wait out for its old registration to
	// expire, not idle meanwhile: ZooKeeper pings, GC); bookieStartLimit
	// bounds the whole start.
	bookieStartStall = 30 * time.Second
	bookieStartLimit = 5 * time.Minute
	// DefaultLedgerStorage is Pulsar's conf/bookkeeper.conf storage.
	DefaultLedgerStorage = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"
)

// StartBookies formats BookKeeper metadata in zk (once; a fresh "/ledgers")
// and starts n bookies in parallel. It returns when every bookie is
// registered under /ledgers/available. The bookies stop when t ends.
//
// JVM start-up dominates: expect ~5-10 s for 3-4 bookies on 2 cores, so
// share one cluster per test package (see test/compat/harness_test.go).
func StartBookies(t testing.TB, zkSrv *ZooKeeper, n int) *BookKeeperCluster {
	t.Helper()
	return StartBookiesWith(t, zkSrv, n, BookieOptions{})
}

// StartBookiesWith is StartBookies with options.
func StartBookiesWith(t testing.TB, zkSrv *ZooKeeper, n int, o BookieOptions) *BookKeeperCluster {
	t.Helper()
	b := requireJavaBuild(t)
	if o.LedgerStorage == "" {
		o.LedgerStorage = DefaultLedgerStorage
	}
	if o.Heap == "" {
		o.Heap = "128m"
		if o.PulsarJVM {
			o.Heap = "512m"
		}
	}
	if o.DirectMemory == "" {
		o.DirectMemory = "256m"
	}
	c := &BookKeeperCluster{ZK: zkSrv, LedgersRoot: "/ledgers", owner: t, build: b, dir: t.TempDir(), opts: o}
	if err := c.format(t); err != nil {
		t.Fatalf("bookkeeper: format metadata: %v", err)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = c.newBookie(t)
	}
	if err := c.startAll(t, idx); err != nil {
		t.Fatalf("bookkeeper: %v", err)
	}
	// Registered after the per-process cleanups, so it runs before them and
	// stops every bookie in parallel (each takes ~0.5-1.5 s to shut down).
	t.Cleanup(c.stopAll)
	return c
}

// stopAll stops every bookie gracefully, in parallel.
func (c *BookKeeperCluster) stopAll() {
	c.mu.Lock()
	var procs []*Process
	for _, b := range c.bookies {
		if b.proc != nil {
			procs = append(procs, b.proc)
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop() }()
	}
	wg.Wait()
}

// MetadataServiceURI is the BookKeeper client setting for this cluster,
// "zk+hierarchical://127.0.0.1:port/ledgers".
func (c *BookKeeperCluster) MetadataServiceURI() string {
	return "zk+hierarchical://" + c.ZK.Addr + c.LedgersRoot
}

// Bookies returns every bookie ever added, in index order.
func (c *BookKeeperCluster) Bookies() []BookieInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]BookieInfo, len(c.bookies))
	for i, bk := range c.bookies {
		out[i] = bk.BookieInfo
		if bk.proc != nil {
			done, _ := bk.proc.Exited()
			out[i].Running = !done
			out[i].LogPath = bk.proc.LogPath
			out[i].PID = bk.proc.Pid()
		}
	}
	return out
}

// Bookie returns the bookie with index i.
func (c *BookKeeperCluster) Bookie(i int) BookieInfo { return c.Bookies()[i] }

// RunningBookies returns the ids of the running bookies.
func (c *BookKeeperCluster) RunningBookies() []string {
	var ids []string
	for _, b := range c.Bookies() {
		if b.Running {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// IndexOf returns the index of the bookie with id, or -1.
func (c *BookKeeperCluster) IndexOf(id string) int {
	for _, b := range c.Bookies() {
		if b.ID == id {
			return b.Index
		}
	}
	return -1
}

// StopBookie stops bookie i gracefully (SIGTERM) and waits until its
// registration znode is gone. Its data stays; StartBookie brings it back.
func (c *BookKeeperCluster) StopBookie(i int) {
	c.mu.Lock()
	bk := c.bookies[i]
	p := bk.proc
	c.mu.Unlock()
	if p != nil {
		p.Stop()
	}
	// A graceful shutdown closes the ZK session, removing the ephemeral node.
	_ = c.waitUnregistered(bk.ID, 15*time.Second)
}

// KillBookie ends bookie i at once (SIGKILL), like a crash. Its
// registration znode lingers until its ZK session expires (~10 s).
func (c *BookKeeperCluster) KillBookie(i int) {
	c.mu.Lock()
	p := c.bookies[i].proc
	c.mu.Unlock()
	if p != nil {
		p.Kill()
	}
}

// StartBookie starts stopped or killed bookie i again with the same port,
// id and data, and waits until it is registered by the new process. After
// KillBookie that takes up to zkTimeout (10 s): the bookie waits for its
// old registration's session to expire, as a real restarted bookie does.
func (c *BookKeeperCluster) StartBookie(t testing.TB, i int) {
	t.Helper()
	c.mu.Lock()
	bk := c.bookies[i]
	p := bk.proc
	c.mu.Unlock()
	if p != nil {
		if done, _ := p.Exited(); !done {
			t.Fatalf("bookkeeper: bookie %d (%s) is running", i, bk.ID)
		}
	}
	if err := c.startAll(t, []int{i}); err != nil {
		t.Fatalf("bookkeeper: %v", err)
	}
}

// AddBookie starts one more bookie and returns its index.
func (c *BookKeeperCluster) AddBookie(t testing.TB) int {
	t.Helper()
	i := c.newBookie(t)
	if err := c.startAll(t, []int{i}); err != nil {
		t.Fatalf("bookkeeper: %v", err)
	}
	return i
}

// format writes the cluster metadata (LAYOUT, INSTANCEID, available/...)
// with BookKeeper's own shell: `BookieShell initnewcluster`.
func (c *BookKeeperCluster) format(t testing.TB) error {
	conf := filepath.Join(c.dir, "format.conf")
	if err := os.WriteFile(conf, []byte(c.confText(-1, 0, 0, c.dir)), 0o644); err != nil {
		return err
	}
	// One JVM run, bounded as a bookie's start is (not a fixed minute: at
	// load 36 this run, creating its class-data archive, took longer).
	out, err := c.Shell(t.Context(), bookieStartLimit, "initnewcluster")
	if err != nil {
		return fmt.Errorf("initnewcluster: %w (stdout %s)", err, out)
	}
	return nil
}

// Shell runs BookKeeper's own shell (`bin/bookkeeper shell …`,
// org.apache.bookkeeper.bookie.BookieShell) against the cluster's metadata
// with args, e.g. "decommissionbookie", "-bookieid", id; bounded by
// timeout. It returns the shell's output (stdout; its log goes to stderr,
// part of the error when it fails).
func (c *BookKeeperCluster) Shell(ctx context.Context, timeout time.Duration, args ...string) ([]byte, error) {
	opts := append(JVMOptions("96m", true), "-Dtk.loglevel=WARN")
	cds, done := c.build.CDS("bkshell")
	opts = append(opts, cds...)
	conf := filepath.Join(c.dir, "format.conf")
	cmd := c.build.Command(opts, "org.apache.bookkeeper.bookie.BookieShell", append([]string{"-conf", conf}, args...)...)
	return runJava(ctx, timeout, cmd, done)
}

func (c *BookKeeperCluster) confText(index, port, httpPort int, dir string) string {
	lines := []string{
		fmt.Sprintf("bookiePort=%d", port),
		"advertisedAddress=127.0.0.1",
		"listeningInterface=lo",
		"allowLoopback=true",
		"useHostNameAsBookieID=false",
		"metadataServiceUri=" + c.MetadataServiceURI(),
		"journalDirectories=" + filepath.Join(dir, "j"),
		"ledgerDirectories=" + filepath.Join(dir, "l"),
		"ledgerStorageClass=" + c.opts.LedgerStorage,
		"dbStorage_writeCacheMaxSizeMb=16",
		"dbStorage_readAheadCacheMaxSizeMb=16",
		"dbStorage_rocksDB_blockCacheSize=8388608",
		"journalSyncData=false",
		"journalPreAllocSizeMB=4",
		"journalWriteBufferSizeKB=256",
		"logSizeLimit=67108864",
		"diskUsageThreshold=0.99",
		"diskUsageWarnThreshold=0.98",
		"httpServerEnabled=false",
		"httpServerHost=127.0.0.1",
		"statsProviderClass=org.apache.bookkeeper.stats.NullStatsProvider",
		"zkTimeout=10000",
		// Pulsar's bookkeeper.conf raises the frame size for 5 MiB messages.
		"nettyMaxFrameSizeBytes=5253120",
		// and the entry logs' read buffer from BookKeeper's 512 bytes,
		// through which a bookie reads every entry it serves from an entry
		// log: a 1 MiB entry in 2048 preads of 512 bytes took the bookies
		// 5.2-5.6 CPU-s per GiB served, 1.9-2.1 with Pulsar's 4096
		// (make bench-bk, TIERKEEPER_BENCH_BK_CONF).
		"readBufferSizeBytes=4096",
	}
	if httpPort > 0 {
		lines = append(lines, "httpServerPort="+strconv.Itoa(httpPort))
		c.replace(&lines, "httpServerEnabled=true")
		// No default: BookKeeper needs the class (Pulsar's conf sets it).
		c.replace(&lines, "httpServerClass=org.apache.bookkeeper.http.vertx.VertxHttpServer")
	}
	// Extra lines replace defaults with the same key (a repeated key would
	// become a list in BookKeeper's configuration library).
	for _, e := range append(slices.Clone(c.opts.Extra), c.opts.ExtraFor[index]...) {
		c.replace(&lines, e)
	}
	return strings.Join(lines, "\n") + "\n"
}

// replace sets line e ("key=value") in lines, replacing the line of the
// same key or appending it.
func (c *BookKeeperCluster) replace(lines *[]string, e string) {
	k, _, _ := strings.Cut(e, "=")
	for i, l := range *lines {
		if lk, _, _ := strings.Cut(l, "="); strings.TrimSpace(lk) == strings.TrimSpace(k) {
			(*lines)[i] = e
			return
		}
	}
	*lines = append(*lines, e)
}

func (c *BookKeeperCluster) newBookie(t testing.TB) int {
	c.mu.Lock()
	i := len(c.bookies)
	c.mu.Unlock()
	dir := filepath.Join(c.dir, fmt.Sprintf("bookie%d", i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("bookkeeper: %v", err)
	}
	port := FreePort(t)
	httpPort, httpAddr := 0, ""
	if c.opts.HTTP {
		httpPort = FreePort(t)
		httpAddr = fmt.Sprintf("127.0.0.1:%d", httpPort)
	}
	conf := filepath.Join(dir, "bk.conf")
	if err := os.WriteFile(conf, []byte(c.confText(i, port, httpPort, dir)), 0o644); err != nil {
		t.Fatalf("bookkeeper: %v", err)
	}
	id := fmt.Sprintf("127.0.0.1:%d", port)
	c.mu.Lock()
	defer c.mu.Unlock()
	if i != len(c.bookies) {
		t.Fatalf("bookkeeper: bookies added concurrently")
	}
	c.bookies = append(c.bookies, &bookie{
		BookieInfo: BookieInfo{Index: i, ID: id, Addr: id, Port: port, Dir: dir, HTTPAddr: httpAddr, Conf: conf},
		conf:       conf,
	})
	return i
}

// startAll starts the given bookies in parallel and waits for all of them to
// register.
func (c *BookKeeperCluster) startAll(t testing.TB, idx []int) error {
	t.Helper()
	// A killed bookie's registration outlives it until its ZK session
	// expires (zkTimeout); the restarted bookie waits for that, then
	// registers with a new session. Remember the old owners.
	oldOwner := make([]int64, len(idx))
	for k, i := range idx {
		c.mu.Lock()
		id := c.bookies[i].ID
		c.mu.Unlock()
		oldOwner[k] = c.registrationOwner(id)
	}
	procs := make([]*Process, len(idx))
	for k, i := range idx {
		c.mu.Lock()
		bk := c.bookies[i]
		bk.gen++
		name := generationName(fmt.Sprintf("bookie%d", i), bk.gen)
		c.mu.Unlock()
		opts, role := bookieJVMOptions(c.opts), "bookie"
		if c.opts.PulsarJVM {
			role = "bookie-pulsar-jvm"
		}
		cds, done := c.build.CDS(role)
		opts = append(opts, cds...)
		cmd := c.build.Command(opts, "org.apache.bookkeeper.server.Main", "-c", bk.conf)
		p := Start(cleanupOn{TB: t, owner: c.owner}, name, c.dir, cmd)
		watchExit(p, done)
		c.mu.Lock()
		bk.proc = p
		c.mu.Unlock()
		procs[k] = p
	}
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for k, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.mu.Lock()
			id := c.bookies[i].ID
			c.mu.Unlock()
			errs[k] = c.waitRegisteredBy(id, oldOwner[k], procs[k])
		}()
	}
	wg.Wait()
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("bookies did not start:\n%s", strings.Join(msgs, "\n"))
	}
	return nil
}

// zkConn opens a ZooKeeper session to the cluster's server (no logging);
// the caller closes it.
func (c *BookKeeperCluster) zkConn() (*tkzk.Session, error) {
	return session(context.Background(), c.ZK.Addr, tkzk.Options{SessionTimeout: 10 * time.Second})
}

// registrationOwner returns the ZK session owning <root>/available/<id>, or
// 0 when there is none.
func (c *BookKeeperCluster) registrationOwner(id string) int64 {
	conn, err := c.zkConn()
	if err != nil {
		return 0
	}
	defer conn.Close()
	ok, st, err := conn.Exists(c.LedgersRoot + "/available/" + id)
	if err != nil || !ok {
		return 0
	}
	return st.EphemeralOwner
}

// waitRegisteredBy waits until <root>/available/<id> exists and is owned
// by a session other than notOwner, while p starts (Process.WaitProgressing).
func (c *BookKeeperCluster) waitRegisteredBy(id string, notOwner int64, p *Process) error {
	conn, err := c.zkConn()
	if err != nil {
		return err
	}
	defer conn.Close()
	path := c.LedgersRoot + "/available/" + id
	return p.WaitProgressing(fmt.Sprintf("registered at %s by a new session (bookie %s)", path, id), bookieStartStall, bookieStartLimit,
		func() (bool, error) {
			ok, st, err := conn.Exists(path)
			return err == nil && ok && st.EphemeralOwner != notOwner, err
		})
}

// waitUnregistered polls <root>/available/<id> every 100 ms until it is
// gone or timeout passes.
func (c *BookKeeperCluster) waitUnregistered(id string, timeout time.Duration) error {
	conn, err := c.zkConn()
	if err != nil {
		return err
	}
	defer conn.Close()
	path := c.LedgersRoot + "/available/" + id
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, _, err := conn.Exists(path)
		if err == nil && !ok {
			return nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("bookie %s: %s not gone after %s (last error %v)", id, path, timeout, last)
}

// AvailableBookies lists <root>/available as ZooKeeper sees it now (writable
// bookies only), sorted.
func (c *BookKeeperCluster) AvailableBookies() ([]string, error) {
	conn, err := c.zkConn()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	kids, _, err := conn.Children(c.LedgersRoot + "/available")
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, k := range kids {
		if k != "readonly" {
			ids = append(ids, k)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// bookieJVMOptions are a bookie's JVM options (BookieOptions.PulsarJVM).
func bookieJVMOptions(o BookieOptions) []string {
	var opts []string
	if o.PulsarJVM {
		opts = append([]string{
			"-Xms" + o.Heap, "-Xmx" + o.Heap, "-Xss512k", "-XX:-UsePerfData",
			"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=10", "-XX:+ParallelRefProcEnabled",
			"-XX:+UnlockExperimentalVMOptions", "-XX:+DoEscapeAnalysis",
			// No GC thread counts: Pulsar's bkenv.sh sets 32 and its
			// Helm chart 4, each for a bookie with cores of its own;
			// the JVM sizes them to the machine.
			"-XX:G1NewSizePercent=50",
			"-XX:+DisableExplicitGC", "-XX:-ResizePLAB",
			// A bookie that has run for a while has touched all of
			// its heap; a new one would pay for first touches while
			// measured.
			"-XX:+AlwaysPreTouch",
			"-Dio.netty.leakDetectionLevel=disabled",
			"-Dio.netty.recycler.maxCapacityPerThread=4096",
		}, jvmCommonOptions()...)
	} else {
		opts = JVMOptions(o.Heap, true)
	}
	return append(opts, "-XX:MaxDirectMemorySize="+o.DirectMemory, "-Dtk.loglevel=INFO")
}

// BenchBookieOptions are the bookie options of a benchmark that measures
// what the bookies cost: PulsarJVM unless TK_BENCH_BOOKIE_PULSAR_JVM is 0
// (make's BENCH_BOOKIE_PULSAR_JVM). It logs which JVM the bookies get.
func BenchBookieOptions(tb testing.TB) BookieOptions {
	tb.Helper()
	o := BookieOptions{PulsarJVM: EnvBool(tb, "TK_BENCH_BOOKIE_PULSAR_JVM", true)}
	if o.PulsarJVM {
		tb.Logf("bookie JVM: Pulsar's (fixed heap, G1, both JIT compilers)")
	} else {
		tb.Logf("bookie JVM: the harness's quick-start JVM (C1 only, serial GC)")
	}
	return o
}
