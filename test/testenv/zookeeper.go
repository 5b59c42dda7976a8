package testenv

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

// ZooKeeper is a standalone ZooKeeper server (the 3.9.x jar Pulsar pins,
// from the compat Maven build) listening on 127.0.0.1 with its own data
// directory. The admin HTTP server is off, the heap is 64 MiB (ZooKeeperOptions), fsync is off
// (data survives a process kill, not a machine crash). tickTime is 500 ms,
// so clients may ask for session timeouts from 1 s to 40 s.
type ZooKeeper struct {
	Addr string // "127.0.0.1:port"
	Port int
	// SecureAddr is the TLS client port's "127.0.0.1:port" when
	// ZooKeeperOptions.TLS is set, else "".
	SecureAddr string
	DataDir    string // kept across Restart

	owner   testing.TB
	heap    string
	fullJIT bool
	build   *JavaBuild
	logDir  string
	cfg     string
	// superDigest is the -D option naming the super user, or "".
	superDigest string

	mu   sync.Mutex
	proc *Process
	gen  int
}

// zkStartTimeout bounds the wait for a (re)started server to serve.
const zkStartTimeout = 60 * time.Second

// StartZooKeeper starts a fresh server and returns when it serves requests.
// It is stopped when t ends. Without the compat Maven build the test is
// skipped (failed when TIERKEEPER_REQUIRE_PEERS=1).
func StartZooKeeper(t testing.TB) *ZooKeeper {
	t.Helper()
	return StartZooKeeperWith(t, ZooKeeperOptions{})
}

// ZooKeeperOptions configure StartZooKeeperWith.
type ZooKeeperOptions struct {
	// Heap is the server's JVM heap (-Xmx), e.g. "1g" for trees of
	// hundreds of thousands of znodes. Default "64m".
	Heap string
	// TLS, when set, adds a secure client port (SecureAddr; Netty, PEM
	// key and trust stores) serving Cert, trusting client certificates
	// signed by CA; the plain port stays (the four-letter commands use it).
	TLS *ZooKeeperTLS
	// SuperDigest is "user:password" of ZooKeeper's super user (who
	// passes every ACL), for tests of ACLs.
	SuperDigest string
	// FullJIT runs the server with the JVM's optimising compiler, as a
	// production ZooKeeper runs, for benchmarks of its request rate. By
	// default it stops at the quick first tier, which halves start-up.
	FullJIT bool
}

// ZooKeeperTLS is the secure client port's configuration.
type ZooKeeperTLS struct {
	CA   *CA
	Cert Cert
	// ClientAuth is ssl.clientAuth: "need", "want" (default) or "none".
	ClientAuth string
}

// StartZooKeeperWith is StartZooKeeper with options.
func StartZooKeeperWith(t testing.TB, o ZooKeeperOptions) *ZooKeeper {
	t.Helper()
	if o.Heap == "" {
		o.Heap = "64m"
	}
	b := requireJavaBuild(t)
	dir := t.TempDir()
	z := &ZooKeeper{
		owner:   t,
		heap:    o.Heap,
		fullJIT: o.FullJIT,
		build:   b,
		DataDir: filepath.Join(dir, "data"),
		logDir:  dir,
		cfg:     filepath.Join(dir, "zoo.cfg"),
	}
	if err := os.MkdirAll(z.DataDir, 0o755); err != nil {
		t.Fatalf("zookeeper: %v", err)
	}
	z.Port = FreePort(t)
	z.Addr = fmt.Sprintf("127.0.0.1:%d", z.Port)
	cfg := strings.Join([]string{
		"dataDir=" + z.DataDir,
		fmt.Sprintf("clientPort=%d", z.Port),
		"clientPortAddress=127.0.0.1",
		"tickTime=500",
		"minSessionTimeout=1000",
		"maxSessionTimeout=40000",
		"maxClientCnxns=0",
		"forceSync=no",
		"admin.enableServer=false",
		"4lw.commands.whitelist=srvr,ruok,stat,mntr,cons,dump",
	}, "\n") + "\n"
	if o.TLS != nil {
		port := FreePort(t)
		z.SecureAddr = fmt.Sprintf("127.0.0.1:%d", port)
		auth := o.TLS.ClientAuth
		if auth == "" {
			auth = "want"
		}
		cfg += strings.Join([]string{
			fmt.Sprintf("secureClientPort=%d", port),
			"secureClientPortAddress=127.0.0.1",
			"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
			"ssl.keyStore.location=" + o.TLS.Cert.KeyStoreFile,
			"ssl.keyStore.type=PEM",
			"ssl.trustStore.location=" + o.TLS.CA.CertFile,
			"ssl.trustStore.type=PEM",
			"ssl.clientAuth=" + auth,
			"ssl.clientHostnameVerification=false",
		}, "\n") + "\n"
	}
	if o.SuperDigest != "" {
		user, pw, _ := strings.Cut(o.SuperDigest, ":")
		z.superDigest = "-Dzookeeper.DigestAuthenticationProvider.superDigest=" + user + ":" + digestOf(user, pw)
	}
	if err := os.WriteFile(z.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatalf("zookeeper: %v", err)
	}
	if err := z.start(t); err != nil {
		t.Fatalf("zookeeper: %v", err)
	}
	return z
}

func (z *ZooKeeper) start(t testing.TB) error {
	t.Helper()
	z.mu.Lock()
	z.gen++
	name := generationName("zookeeper", z.gen)
	z.mu.Unlock()
	opts := append(JVMOptions(z.heap, !z.fullJIT),
		"-Dzookeeper.admin.enableServer=false",
		"-Dtk.loglevel=INFO")
	if z.superDigest != "" {
		opts = append(opts, z.superDigest)
	}
	cds, done := z.build.CDS("zookeeper")
	opts = append(opts, cds...)
	cmd := z.build.Command(opts, "org.apache.zookeeper.server.ZooKeeperServerMain", z.cfg)
	p := Start(cleanupOn{TB: t, owner: z.owner}, name, z.logDir, cmd)
	watchExit(p, done)
	z.mu.Lock()
	z.proc = p
	z.mu.Unlock()
	return z.waitServing(p, zkStartTimeout)
}

// waitServing polls the "srvr" four-letter command until the server reports
// a mode (it answers "not currently serving" while loading its database).
func (z *ZooKeeper) waitServing(p *Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited during start-up: %v; log tail:\n%s", p.Name, err, Tail(p.LogPath, 30))
		}
		out, err := FourLetter(z.Addr, "srvr", time.Second)
		if err == nil && strings.Contains(out, "Mode:") {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = strings.TrimSpace(out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not serving on %s after %s (last: %s); log tail:\n%s", p.Name, z.Addr, timeout, last, Tail(p.LogPath, 30))
}

// FourLetter sends a ZooKeeper four-letter command (srvr, ruok, mntr ...)
// and returns the reply.
func FourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var sb strings.Builder
	r := bufio.NewReader(c)
	buf := make([]byte, 4096)
	for sb.Len() < 1<<20 {
		n, err := r.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return sb.String(), nil
}

// Stop shuts the server down gracefully (SIGTERM); the data directory stays.
func (z *ZooKeeper) Stop() {
	z.mu.Lock()
	p := z.proc
	z.mu.Unlock()
	if p != nil {
		p.Stop()
	}
}

// Kill ends the server at once (SIGKILL), like a crash.
func (z *ZooKeeper) Kill() {
	z.mu.Lock()
	p := z.proc
	z.mu.Unlock()
	if p != nil {
		p.Kill()
	}
}

// Running reports whether the server process is alive.
func (z *ZooKeeper) Running() bool {
	z.mu.Lock()
	p := z.proc
	z.mu.Unlock()
	if p == nil {
		return false
	}
	done, _ := p.Exited()
	return !done
}

// Restart stops the server if it runs and starts it again on the same port
// and data directory (sessions expire or reconnect; znodes stay). t is used
// for failures only; the server lives as long as the test that started it.
func (z *ZooKeeper) Restart(t testing.TB) {
	t.Helper()
	z.Stop()
	if err := z.start(t); err != nil {
		t.Fatalf("zookeeper restart: %v", err)
	}
}

// Start starts a stopped or killed server again (same as Restart).
func (z *ZooKeeper) Start(t testing.TB) { t.Helper(); z.Restart(t) }

// LogPath is the log file of the current server process.
func (z *ZooKeeper) LogPath() string {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.proc == nil {
		return ""
	}
	return z.proc.LogPath
}

// zkConnectTimeout bounds Session and session: the wait for an established
// session with a server that serves.
const zkConnectTimeout = 30 * time.Second

// Session opens a session to the server through internal/zk (the
// project's one way to ZooKeeper) with o, waiting at most 30 s for it, and
// closes it when t ends; t fails if no session is established.
func (z *ZooKeeper) Session(t testing.TB, o tkzk.Options) *tkzk.Session {
	t.Helper()
	s, err := session(t.Context(), z.Addr, o)
	if err != nil {
		t.Fatalf("connect to ZooKeeper %s: %v", z.Addr, err)
	}
	t.Cleanup(s.Close)
	return s
}

// session opens a session to addr with o within zkConnectTimeout (and ctx);
// the caller closes it.
func session(ctx context.Context, addr string, o tkzk.Options) (*tkzk.Session, error) {
	ctx, cancel := context.WithTimeout(ctx, zkConnectTimeout)
	defer cancel()
	return tkzk.Connect(ctx, []string{addr}, o)
}

// digestOf is ZooKeeper's digest of a user's password:
// base64(SHA-1("user:password")).
func digestOf(user, pw string) string {
	sum := sha1.Sum([]byte(user + ":" + pw))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// CreatePath creates the znode p with data, creating missing parents empty.
// Nodes that already exist (p included) are left as they are.
func CreatePath(t testing.TB, c *zk.Conn, p string, data []byte) {
	t.Helper()
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := range parts {
		sub := "/" + strings.Join(parts[:i+1], "/")
		var d []byte
		if i == len(parts)-1 {
			d = data
		}
		if _, err := c.Create(sub, d, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", sub, err)
		}
	}
}

// SecuredZooKeeper is a ZooKeeper whose secure client port requires client
// certificates, with what a client needs to reach it.
type SecuredZooKeeper struct {
	*ZooKeeper
	// CA signed the server's and Client's certificates.
	CA     *CA
	Client Cert
	// TLSAddr is localhost:<secure port>: the name the server's
	// certificate holds.
	TLSAddr string
}

// StartSecuredZooKeeper starts a ZooKeeper with a TLS client port
// (ssl.clientAuth=need) next to its plain one.
func StartSecuredZooKeeper(t testing.TB) *SecuredZooKeeper {
	t.Helper()
	ca := NewCA(t, "zk-ca")
	srv := ca.Issue(t, "zk", "localhost")
	z := StartZooKeeperWith(t, ZooKeeperOptions{TLS: &ZooKeeperTLS{CA: ca, Cert: srv, ClientAuth: "need"}})
	_, port, _ := strings.Cut(z.SecureAddr, ":")
	return &SecuredZooKeeper{ZooKeeper: z, CA: ca, Client: ca.Issue(t, "tierkeeper", "tierkeeper"), TLSAddr: "localhost:" + port}
}
