package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
)

// The compat Maven project (test/compat/java) built by `make compat-prepare`.
// Its outputs are everything the Java-side peers need:
//
//	test/compat/java/target/tierkeeper-compat.jar    the tool + log4j2.xml
//	test/compat/java/target/cp.txt                   runtime classpath (jars in .cache/m2)
//	test/compat/java/target/offloaders/tiered-storage-jcloud.nar
const (
	compatJavaDir = "test/compat/java"
	// ToolMainClass is the main class of the Java tools (subcommands).
	ToolMainClass = "io.tierkeeper.compat.Tool"
)

// JavaBuild locates the built compat Maven project.
type JavaBuild struct {
	Java      string // java executable
	Dir       string // test/compat/java
	Classpath string // the tool jar + the runtime classpath
	NarDir    string // directory holding tiered-storage-jcloud.nar

	keyOnce  sync.Once
	key      string
	mu       sync.Mutex
	training map[string]bool
}

var (
	javaBuildOnce sync.Once
	javaBuildVal  *JavaBuild
	javaBuildErr  error
)

// FindJavaBuild returns the compat Maven build, or an error naming what is
// missing (install with `make compat-prepare`).
func FindJavaBuild() (*JavaBuild, error) {
	javaBuildOnce.Do(func() { javaBuildVal, javaBuildErr = findJavaBuild() })
	return javaBuildVal, javaBuildErr
}

func findJavaBuild() (*JavaBuild, error) {
	java := "java"
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		if _, err := os.Stat(filepath.Join(jh, "bin", "java")); err == nil {
			java = filepath.Join(jh, "bin", "java")
		}
	}
	java, err := exec.LookPath(java)
	if err != nil {
		return nil, fmt.Errorf("no java runtime (install openjdk-17-jdk-headless; make deps): %w", err)
	}
	dir := filepath.Join(RepoRoot(), compatJavaDir)
	if d := os.Getenv("TIERKEEPER_COMPAT_JAVA"); d != "" {
		dir = d // another build of the Maven project (e.g. other pulsar.version)
	}
	cpFile := filepath.Join(dir, "target", "cp.txt")
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		return nil, fmt.Errorf("compat Maven project not built (run make compat-prepare): %w", err)
	}
	jar := filepath.Join(dir, "target", "tierkeeper-compat.jar")
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("compat Java tool not built (run make compat-prepare): %w", err)
	}
	return &JavaBuild{
		Java:      java,
		Dir:       dir,
		Classpath: jar + string(os.PathListSeparator) + strings.TrimSpace(string(cp)),
		NarDir:    filepath.Join(dir, "target", "offloaders"),
	}, nil
}

// requireJavaBuild returns the build or marks t unavailable.
func requireJavaBuild(t testing.TB) *JavaBuild {
	t.Helper()
	b, err := FindJavaBuild()
	if err != nil {
		Unavailable(t, "%v", err)
	}
	return b
}

// JVMOptions are the options every harness JVM gets: small heap (heap, e.g.
// "128m"), serial GC, IPv4, the --add-opens BookKeeper's bin/common.sh uses
// on JDK 11+, and quick start-up. fastStart trades peak JIT speed for start-up
// time (C1 only); use it for servers whose CPU use is low.
func JVMOptions(heap string, fastStart bool) []string {
	opts := append([]string{
		"-Xms16m", "-Xmx" + heap, "-XX:MaxDirectMemorySize=" + heap,
		"-XX:+UseSerialGC", "-XX:-UsePerfData", "-Xss512k",
	}, jvmCommonOptions()...)
	if fastStart {
		opts = append(opts, "-XX:TieredStopAtLevel=1")
	}
	return opts
}

// shaStubWorkaround returns -XX:UseAVX=2 on x86-64 CPUs with both the SHA
// extensions and AVX-512, for the client tool's JVMs (produce, read), which
// take the SHA-256 of every payload. JDK 17's SHA-256 stub runs the SHA
// extensions' legacy-SSE instructions without clearing the upper halves
// of the vector registers first (JDK-8346653): once some compiled code has
// left 512-bit state dirty, every block takes microcode assists, and the
// digest fell from ~1.2 GB/s to ~10-30 MB/s part-way through a read (the
// Reader's thread 95 % in sha256_implCompressMB, the broker idle, waiting
// for it). Capped at AVX2, the reads stayed at the broker's speed. Other
// JVMs (bookies, broker, Pulsar's offloader) keep their defaults.
func shaStubWorkaround() []string {
	var flags []string
	if infos, err := cpu.Info(); err == nil && len(infos) > 0 { // none: no workaround
		flags = infos[0].Flags
	}
	return shaStubFlags(runtime.GOARCH, flags)
}

// shaStubFlags is shaStubWorkaround's choice for a GOARCH and the CPU's
// flags (as /proc/cpuinfo names them).
func shaStubFlags(goarch string, flags []string) []string {
	if goarch == "amd64" && slices.Contains(flags, "sha_ni") && slices.Contains(flags, "avx512f") {
		return []string{"-XX:UseAVX=2"}
	}
	return nil
}

// jvmCommonOptions are the options of every harness JVM that do not
// size or tune it: IPv4, the --add-opens, no JMX for the loggers.
func jvmCommonOptions() []string {
	return []string{
		"-Djava.net.preferIPv4Stack=true",
		"-Dio.netty.tryReflectionSetAccessible=true",
		"--add-opens", "java.base/java.nio=ALL-UNNAMED",
		"--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
		"--add-opens", "java.base/java.io=ALL-UNNAMED",
		"--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
		"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
		"-Dlog4j2.disable.jmx=true",
		"-Dzookeeper.jmx.log4j.disable=true",
	}
}

// Command returns an exec.Cmd running mainClass with the build's classpath.
// JVM warnings go to stderr (stdout stays clean for results); its
// temporary files go to the test binary's own directory (jvmTempDir).
func (b *JavaBuild) Command(jvmOpts []string, mainClass string, args ...string) *exec.Cmd {
	a := []string{"-Xlog:disable", "-Xlog:all=warning:stderr"}
	if d := jvmTempDir(); d != "" {
		a = append(a, "-Djava.io.tmpdir="+d)
	}
	a = append(a, jvmOpts...)
	a = append(a, "-cp", b.Classpath, mainClass)
	a = append(a, args...)
	cmd := exec.Command(b.Java, a...)
	cmd.Dir = b.Dir
	return cmd
}

// CDS returns JVM options that use the class-data-sharing archive of role
// (a dynamic AppCDS archive of the classes that kind of process loads; it
// halves JVM start-up), and a function to call with the process's exit
// error once it has ended. Without an archive the process creates one at
// exit (-XX:ArchiveClassesAtExit; one process per role at a time), which
// done installs unless the process was killed. Archives live in
// target/cds, keyed by the classpath (jar sizes and mtimes) and the JVM;
// TIERKEEPER_JAVA_CDS=0 turns them off. A stale or broken archive is
// ignored by the JVM (-Xshare:auto).
func (b *JavaBuild) CDS(role string) (opts []string, done func(exitErr error)) {
	noop := func(error) {}
	if v := os.Getenv("TIERKEEPER_JAVA_CDS"); v == "0" || v == "false" {
		return nil, noop
	}
	key := b.cdsKey()
	if key == "" {
		return nil, noop
	}
	dir := filepath.Join(b.Dir, "target", "cds")
	path := filepath.Join(dir, role+"-"+key+".jsa")
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		return []string{"-Xshare:auto", "-XX:SharedArchiveFile=" + path}, noop
	}
	b.mu.Lock()
	if b.training == nil {
		b.training = map[string]bool{}
	}
	if b.training[role] {
		b.mu.Unlock()
		return nil, noop
	}
	b.training[role] = true
	b.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, noop
	}
	tmp := fmt.Sprintf("%s.tmp%d", path, time.Now().UnixNano())
	return []string{"-XX:ArchiveClassesAtExit=" + tmp}, func(exitErr error) {
		defer func() {
			b.mu.Lock()
			delete(b.training, role)
			b.mu.Unlock()
		}()
		var ee *exec.ExitError
		if errors.As(exitErr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				_ = os.Remove(tmp) // may be half written
				return
			}
		}
		if fi, err := os.Stat(tmp); err != nil || fi.Size() == 0 {
			_ = os.Remove(tmp)
			return
		}
		if err := os.Rename(tmp, path); err != nil {
			_ = os.Remove(tmp)
			return
		}
		// Drop archives of older builds of this role.
		old, _ := filepath.Glob(filepath.Join(dir, role+"-*.jsa"))
		for _, o := range old {
			if o != path {
				_ = os.Remove(o)
			}
		}
	}
}

// cdsKey identifies the classpath content and the JVM.
func (b *JavaBuild) cdsKey() string {
	b.keyOnce.Do(func() {
		h := sha256.New()
		fmt.Fprintln(h, b.Java)
		if real, err := filepath.EvalSymlinks(b.Java); err == nil {
			if fi, err := os.Stat(real); err == nil {
				fmt.Fprintln(h, real, fi.Size(), fi.ModTime().UnixNano())
			}
		}
		for _, p := range filepath.SplitList(b.Classpath) {
			fi, err := os.Stat(p)
			if err != nil {
				return
			}
			fmt.Fprintln(h, p, fi.Size(), fi.ModTime().UnixNano())
		}
		b.key = hex.EncodeToString(h.Sum(nil))[:16]
	})
	return b.key
}

// watchExit calls done with p's exit error once p has ended.
func watchExit(p *Process, done func(error)) {
	go func() {
		<-p.done
		p.mu.Lock()
		err := p.exitErr
		p.mu.Unlock()
		done(err)
	}()
}

// cleanupOn forwards everything to the embedded TB (the test doing the
// start, which sees start-up failures) except what runs at cleanup time,
// which goes to owner: a server restarted from inside one test keeps living
// (and logs) as long as whoever started it first.
type cleanupOn struct {
	testing.TB
	owner testing.TB
}

func (c cleanupOn) Cleanup(f func()) { c.owner.Cleanup(f) }
func (c cleanupOn) Failed() bool     { return c.owner.Failed() || c.TB.Failed() }
func (c cleanupOn) Logf(format string, args ...any) {
	c.owner.Logf(format, args...)
}

// runJava runs a short-lived JVM (RunTool) and passes its exit error to
// done (the CDS archive hook).
func runJava(ctx context.Context, timeout time.Duration, cmd *exec.Cmd, done func(error)) ([]byte, error) {
	out, err := RunTool(ctx, timeout, cmd)
	if done != nil {
		done(err)
	}
	return out, err
}

// JavaTools runs the compat Java tool (test/compat/java, main class
// io.tierkeeper.compat.Tool): BookKeeper's and Pulsar's own Java code. Every
// subcommand prints one JSON document on stdout and logs to stderr; see
// docs/compat.md for subcommands and flags.
type JavaTools struct {
	Build *JavaBuild
	// Heap is the JVM -Xmx; default "384m".
	Heap string
	// Timeout bounds one run; default 5 min.
	Timeout time.Duration
	// LogLevel is the log4j level of the tool's stderr log; default WARN,
	// or $TIERKEEPER_JAVA_LOGLEVEL.
	LogLevel string
	// JVMArgs are extra JVM options, e.g. "-Dtk.jcloudsheaders=DEBUG";
	// default the space-separated $TIERKEEPER_JAVA_OPTS.
	JVMArgs []string
}

// Java returns the tool runner, or marks t unavailable without the compat
// Maven build (`make compat-prepare`).
func Java(t testing.TB) *JavaTools {
	t.Helper()
	b := requireJavaBuild(t)
	lvl := os.Getenv("TIERKEEPER_JAVA_LOGLEVEL")
	if lvl == "" {
		lvl = "WARN"
	}
	return &JavaTools{Build: b, Heap: "384m", Timeout: 5 * time.Minute, LogLevel: lvl,
		JVMArgs: strings.Fields(os.Getenv("TIERKEEPER_JAVA_OPTS"))}
}

// Command returns the exec.Cmd for one tool run (not started).
func (j *JavaTools) Command(subcommand string, args ...string) *exec.Cmd {
	cmd, _ := j.command(subcommand, args...)
	return cmd
}

// toolRole groups subcommands that load the same classes (one CDS archive each).
func toolRole(subcommand string) string {
	switch {
	case strings.HasPrefix(subcommand, "ml-"):
		return "tool-ml"
	case strings.HasPrefix(subcommand, "pulsar-"):
		return "tool-offload"
	case subcommand == "versions":
		return "tool-versions"
	case subcommand == "journal-bench":
		return "tool-journal"
	case subcommand == "produce" || subcommand == "read" || subcommand == "keep-producing" || subcommand == "create-partitioned-topic":
		return "tool-client"
	default:
		return "tool-bk"
	}
}

func (j *JavaTools) command(subcommand string, args ...string) (*exec.Cmd, func(error)) {
	heap := j.Heap
	if heap == "" {
		heap = "384m"
	}
	lvl := j.LogLevel
	if lvl == "" {
		lvl = "WARN"
	}
	opts := append(JVMOptions(heap, false),
		"-Dtk.loglevel="+lvl,
		"-Dtk.offloadersDir="+j.Build.NarDir,
		"-Dtk.narExtractDir="+filepath.Join(j.Build.Dir, "target", "nar-extract"),
	)
	role := toolRole(subcommand)
	if role == "tool-client" {
		opts = append(opts, shaStubWorkaround()...)
	}
	opts = append(opts, j.JVMArgs...)
	cds, done := j.Build.CDS(role)
	opts = append(opts, cds...)
	return j.Build.Command(opts, ToolMainClass, append([]string{subcommand}, args...)...), done
}

// Run runs one subcommand and returns its stdout (a JSON document). The
// error carries the exit status and the tail of stderr.
func (j *JavaTools) Run(ctx context.Context, subcommand string, args ...string) ([]byte, error) {
	cmd, done := j.command(subcommand, args...)
	out, err := runJava(ctx, j.timeout(), cmd, done)
	if err != nil {
		return out, fmt.Errorf("java tool %s: %w", subcommand, err)
	}
	return out, nil
}

// RunJSON runs a subcommand and decodes its JSON result into v.
func (j *JavaTools) RunJSON(ctx context.Context, v any, subcommand string, args ...string) error {
	out, err := j.Run(ctx, subcommand, args...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("java tool %s: decode result: %w (stdout %.300q)", subcommand, err, out)
	}
	return nil
}

// S3Args are the tool's S3 options for a bucket on s (pulsar-offload,
// pulsar-read-offloaded, ml-offload, ml-reopen).
func S3Args(s *S3, bucket string) []string {
	return []string{
		"--s3-endpoint", s.Endpoint, "--bucket", bucket,
		"--access-key", s.AccessKey, "--secret-key", s.SecretKey, "--region", s.Region,
	}
}

// ---- write-ledgers

// WriteLedgersOptions select what WriteLedgers writes. Zero values give the
// defaults in brackets.
type WriteLedgersOptions struct {
	Digests        []string // [CRC32 MAC CRC32C DUMMY], one ledger each
	Entries        int      // entries per ledger [24]; sizes cycle through 0 B .. 1 MiB
	Seed           int64    // payload seed of the first ledger [1]; +1 per ledger
	Password       string   // ["tierkeeper-pw"]
	V2             bool     // write with the v2 wire protocol [v3]
	EnsembleChange bool     // add one CRC32C ledger with a forced ensemble change (needs E+1 running bookies)
	BigMiB         int      // instead: one ledger of BigMiB MiB (1 MiB entries, first digest)
	BigEntrySize   int      // entry size of the big ledger [1048576]
	Extra          []string // more tool flags
}

// LedgerManifest is the write-ledgers result.
type LedgerManifest struct {
	MetadataServiceURI string          `json:"metadataServiceUri"`
	WireProtocol       string          `json:"wireProtocol"`
	Seconds            float64         `json:"seconds"`
	Ledgers            []WrittenLedger `json:"ledgers"`
}

// WrittenLedger is one ledger written by BookKeeper's Java client, as its
// metadata reads after close, plus what was written.
type WrittenLedger struct {
	LedgerID       int64             `json:"ledgerId"`
	State          string            `json:"state"`
	DigestType     string            `json:"digestType"` // CRC32, MAC, CRC32C, DUMMY
	Password       string            `json:"password"`
	PasswordHex    string            `json:"passwordHex"`
	EnsembleSize   int               `json:"ensembleSize"`
	WriteQuorum    int               `json:"writeQuorum"`
	AckQuorum      int               `json:"ackQuorum"`
	LastEntryID    int64             `json:"lastEntryId"`
	Length         int64             `json:"length"`
	Ctime          int64             `json:"ctime"`
	Seed           int64             `json:"seed"`
	EntryCount     int64             `json:"entryCount"`
	EnsembleChange bool              `json:"ensembleChange"`
	Ensembles      []EnsembleSegment `json:"ensembles"`
	CustomMetadata map[string]string `json:"customMetadata"`
	Entries        []EntryDigest     `json:"entries"`
	WriteMBps      float64           `json:"writeMBps,omitempty"`
}

// EnsembleSegment is one ensemble of a ledger.
type EnsembleSegment struct {
	FirstEntryID int64    `json:"firstEntryId"`
	Bookies      []string `json:"bookies"`
}

// EntryDigest is one entry's payload length and SHA-256 (hex).
type EntryDigest struct {
	LedgerID int64  `json:"ledgerId,omitempty"`
	EntryID  int64  `json:"entryId"`
	Length   int    `json:"length"`
	SHA256   string `json:"sha256"`
}

// WriteLedgers runs write-ledgers against c and returns the manifest. With
// EnsembleChange it stops one bookie of the last ledger's ensemble half-way
// through (the client then replaces it with a bookie outside the ensemble)
// and starts it again afterwards. Failures fail t.
func (j *JavaTools) WriteLedgers(t testing.TB, c *BookKeeperCluster, o WriteLedgersOptions) *LedgerManifest {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "manifest.json")
	args := []string{"--metadata-uri", c.MetadataServiceURI(), "--out", out}
	if len(o.Digests) > 0 {
		args = append(args, "--digests", strings.Join(o.Digests, ","))
	}
	if o.Entries > 0 {
		args = append(args, "--entries", fmt.Sprint(o.Entries))
	}
	if o.Seed != 0 {
		args = append(args, "--seed", fmt.Sprint(o.Seed))
	}
	if o.Password != "" {
		args = append(args, "--password", o.Password)
	}
	if o.V2 {
		args = append(args, "--v2")
	}
	if o.BigMiB > 0 {
		args = append(args, "--big-mib", fmt.Sprint(o.BigMiB))
		if o.BigEntrySize > 0 {
			args = append(args, "--big-entry-size", fmt.Sprint(o.BigEntrySize))
		}
	}
	pause := filepath.Join(dir, "pause")
	if o.EnsembleChange {
		if n := len(c.RunningBookies()); n < 4 {
			t.Fatalf("write-ledgers --ensemble-change needs 4 running bookies (ensemble 3 + 1 spare), have %d", n)
		}
		args = append(args, "--ensemble-change", "--pause-dir", pause)
	}
	args = append(args, o.Extra...)

	ctx := t.Context()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := j.Run(ctx, "write-ledgers", args...)
		done <- result{b, err}
	}()
	var res result
	if o.EnsembleChange {
		stopped := -1
		deadline := time.After(j.timeout())
	wait:
		for {
			select {
			case res = <-done:
				break wait
			case <-deadline:
				t.Fatalf("write-ledgers: no pause point reached")
			case <-time.After(50 * time.Millisecond):
			}
			b, err := os.ReadFile(filepath.Join(pause, "ready.json"))
			if err != nil || stopped >= 0 {
				continue
			}
			var ready struct {
				LedgerID int64    `json:"ledgerId"`
				Ensemble []string `json:"ensemble"`
			}
			if err := json.Unmarshal(b, &ready); err != nil {
				t.Fatalf("write-ledgers: pause file: %v", err)
			}
			for _, id := range ready.Ensemble {
				if i := c.IndexOf(id); i >= 0 {
					stopped = i
					break
				}
			}
			if stopped < 0 {
				t.Fatalf("write-ledgers: ensemble %v has no bookie of this cluster", ready.Ensemble)
			}
			t.Logf("write-ledgers: stopping bookie %d (%s) of ledger %d's ensemble %v", stopped, c.Bookie(stopped).ID, ready.LedgerID, ready.Ensemble)
			c.StopBookie(stopped)
			if err := os.WriteFile(filepath.Join(pause, "go"), nil, 0o644); err != nil {
				t.Fatalf("write-ledgers: %v", err)
			}
		}
		if stopped >= 0 {
			c.StartBookie(t, stopped)
		}
	} else {
		res = <-done
	}
	if res.err != nil {
		t.Fatalf("%v", res.err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("write-ledgers: %v", err)
	}
	var m LedgerManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("write-ledgers: manifest: %v", err)
	}
	return &m
}

func (j *JavaTools) timeout() time.Duration {
	if j.Timeout <= 0 {
		return 5 * time.Minute
	}
	return j.Timeout
}

// Payload regenerates the payload of entry entryID of a write-ledgers
// ledger with the given seed and size (SplitMix64 stream; see docs/compat.md).
func Payload(seed, entryID int64, size int) []byte {
	const gamma = 0x9E3779B97F4A7C15
	mix := func(z uint64) uint64 {
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		return z ^ (z >> 31)
	}
	b := make([]byte, size)
	state := mix(uint64(seed) + gamma*uint64(entryID+1))
	for i := 0; i < size; i += 8 {
		state += gamma
		w := mix(state)
		for k := 0; k < 8 && i+k < size; k++ {
			b[i+k] = byte(w >> (8 * k))
		}
	}
	return b
}

// PayloadSize is the size of entry entryID in a write-ledgers ledger (not
// --big-mib): the sizes cycle through 0, 1, 13, 100, 1024, 4095, 65536,
// 1 MiB, 257, 31, 8191, 300000 bytes.
func PayloadSize(entryID int64) int {
	sizes := [...]int{0, 1, 13, 100, 1024, 4095, 65536, 1 << 20, 257, 31, 8191, 300000}
	return sizes[entryID%int64(len(sizes))]
}

// TrustStoreArgs are the JVM options that make a Java tool trust caFile
// (PEM) for HTTPS, e.g. a TLS S3 server's CA (StartPrivateS3TLS): a
// PKCS12 trust store made by the JDK's keytool in a temporary directory
// of t.
func (b *JavaBuild) TrustStoreArgs(t testing.TB, caFile string) []string {
	t.Helper()
	java, err := filepath.EvalSymlinks(b.Java)
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "truststore.p12")
	const pass = "tierkeeper"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(filepath.Dir(java), "keytool"), "-importcert", "-noprompt",
		"-alias", "ca", "-file", caFile, "-keystore", store, "-storetype", "PKCS12", "-storepass", pass).CombinedOutput()
	if err != nil {
		t.Fatalf("keytool: %v\n%s", err, out)
	}
	return []string{"-Djavax.net.ssl.trustStore=" + store, "-Djavax.net.ssl.trustStoreType=PKCS12", "-Djavax.net.ssl.trustStorePassword=" + pass}
}
