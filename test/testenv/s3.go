package testenv

// S3: a real S3 server (versitygw, posix backend) on 127.0.0.1.
//
// One server is shared by every test of a test package (StartS3); tests
// isolate themselves with a fresh bucket each (NewBucket). A test that needs
// to stop or kill its server takes a private one (StartPrivateS3).

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sys/unix"
)

// S3VirtualDomain is the base domain of virtual-host bucket addressing on
// the test S3 server: host "<bucket>.s3.tierkeeper.test:<port>" addresses
// <bucket>. No DNS knows it; dial 127.0.0.1:<port> (S3.DialContext).
const S3VirtualDomain = "s3.tierkeeper.test"

// S3 is a running versitygw S3 server.
type S3 struct {
	// Endpoint is "http://127.0.0.1:<port>" (path-style addressing), or
	// "https://..." for a server of StartPrivateS3TLS.
	Endpoint string
	// CAFile is the CA certificate (PEM) that signed a TLS server's
	// certificate; "" for plain HTTP. Clients trust it through
	// AWS_CA_BUNDLE (the s3 provider) or as their RootCAs.
	CAFile string
	// Addr is "127.0.0.1:<port>".
	Addr string
	// AccessKey and SecretKey are the root credentials (random per server).
	AccessKey string
	SecretKey string
	// Region is the server's region ("us-east-1").
	Region string
	// VirtualDomain is S3VirtualDomain; VirtualEndpoint is
	// "http://s3.tierkeeper.test:<port>" for virtual-host addressing (pair
	// it with DialContext).
	VirtualDomain   string
	VirtualEndpoint string
	// Dir is the posix backend root: one directory per bucket.
	Dir string
	// LogPath is the server log (request log included).
	LogPath string

	client  *s3.Client
	seq     atomic.Int64
	proc    *Process
	private bool
	argv    []string // the server's arguments, for Restart
}

// Versitygw returns the path of the versitygw binary (`make deps` installs
// it into the cache).
func Versitygw() string { return filepath.Join(CacheDir(), "bin", "versitygw") }

var (
	sharedS3Once sync.Once
	sharedS3     *S3
	sharedS3Err  error
)

var errVersitygwMissing = errors.New("versitygw not installed")

// StartS3 returns the S3 server shared by the test package, starting it on
// first use. It lives until the test binary exits (or StopSharedS3). If the
// binary is missing the test is skipped or failed (Unavailable).
func StartS3(t testing.TB) *S3 {
	t.Helper()
	sharedS3Once.Do(func() {
		sharedS3, sharedS3Err = startS3Process(false, nil, nil, "")
	})
	if errors.Is(sharedS3Err, errVersitygwMissing) {
		Unavailable(t, "%v (make deps installs %s)", sharedS3Err, Versitygw())
		return nil
	}
	if sharedS3Err != nil {
		t.Fatalf("start S3 server: %v", sharedS3Err)
	}
	s := sharedS3
	if done, err := s.proc.Exited(); done {
		t.Fatalf("shared S3 server has exited (%v); log tail:\n%s", err, Tail(s.LogPath, 30))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- last lines of %s:\n%s", s.LogPath, Tail(s.LogPath, 30))
		}
	})
	return s
}

// Pid is the server process's id.
func (s *S3) Pid() int { return s.proc.Pid() }

// StopSharedS3 stops the shared server and removes its data. Call it from
// TestMain after m.Run() if you want the data directory gone; otherwise the
// server dies with the test binary (parent-death signal) and the temporary
// directory stays.
func StopSharedS3() {
	if sharedS3 != nil {
		sharedS3.proc.Stop()
		_ = os.RemoveAll(filepath.Dir(sharedS3.Dir))
	}
}

// StartPrivateS3 starts a server owned by t (stopped at the end of t); use it
// to kill or restart the server.
func StartPrivateS3(t testing.TB) *S3 {
	t.Helper()
	return StartPrivateS3With(t, S3Options{})
}

// StartPrivateS3TLS starts a server owned by t, as StartPrivateS3, that
// speaks HTTPS only, with a certificate ca issues for 127.0.0.1 and
// *.s3.tierkeeper.test (virtual-host addressing).
func StartPrivateS3TLS(t testing.TB, ca *CA) *S3 {
	t.Helper()
	return StartPrivateS3With(t, S3Options{CA: ca})
}

// S3Options configure a private server (StartPrivateS3With).
type S3Options struct {
	// CA makes the server speak HTTPS only, as StartPrivateS3TLS.
	CA *CA
	// Dir is the directory the server's data and log go under (default
	// os.TempDir()); e.g. a ReflinkFS, where completing a multipart upload
	// clones the parts instead of copying them.
	Dir string
}

// StartPrivateS3With starts a server owned by t, as StartPrivateS3, with
// opts.
func StartPrivateS3With(t testing.TB, opts S3Options) *S3 {
	t.Helper()
	var cert *Cert
	ca := opts.CA
	if ca != nil {
		c := ca.Issue(t, "versitygw", "127.0.0.1", "*."+S3VirtualDomain, S3VirtualDomain)
		cert = &c
	}
	s, err := startS3Process(true, ca, cert, opts.Dir)
	if errors.Is(err, errVersitygwMissing) {
		Unavailable(t, "%v (make deps installs %s)", err, Versitygw())
		return nil
	}
	if err != nil {
		t.Fatalf("start S3 server: %v", err)
	}
	t.Cleanup(func() {
		s.proc.Stop()
		if t.Failed() {
			t.Logf("--- last lines of %s:\n%s", s.LogPath, Tail(s.LogPath, 30))
		}
		_ = os.RemoveAll(filepath.Dir(s.Dir))
	})
	return s
}

// Stop stops a private server (SIGTERM, then SIGKILL). Calling it on the
// shared server is not allowed.
func (s *S3) Stop() {
	if !s.private {
		panic("testenv: Stop on the shared S3 server")
	}
	s.proc.Stop()
}

// Kill ends a private server at once with SIGKILL (a crash), leaving its
// data (objects, incomplete multipart uploads) for Restart.
func (s *S3) Kill() {
	if !s.private {
		panic("testenv: Kill on the shared S3 server")
	}
	s.proc.Kill()
}

// Restart starts a stopped or killed private server again on the same
// address and data directory, and waits until it listens.
func (s *S3) Restart() error {
	if !s.private {
		panic("testenv: Restart on the shared S3 server")
	}
	s.proc.Stop()
	p, err := runDetached("versitygw", Versitygw(), s.argv, s.LogPath)
	if err != nil {
		return err
	}
	if err := p.WaitTCP(s.Addr, 30*time.Second); err != nil {
		p.Stop()
		return err
	}
	s.proc = p
	return nil
}

func startS3Process(private bool, ca *CA, cert *Cert, parent string) (*S3, error) {
	bin := Versitygw()
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w: %s", errVersitygwMissing, bin)
	}
	var base string
	var err error
	if parent == "" {
		base, err = ownedTempDir("tierkeeper-s3-")
	} else {
		base, err = os.MkdirTemp(parent, "tierkeeper-s3-")
	}
	if err != nil {
		return nil, err
	}
	root := filepath.Join(base, "data")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	s := &S3{
		AccessKey:     "TK" + strings.ToUpper(randHex(9)),
		SecretKey:     randHex(20),
		Region:        "us-east-1",
		VirtualDomain: S3VirtualDomain,
		Dir:           root,
		LogPath:       filepath.Join(base, "versitygw.log"),
		private:       private,
	}
	// --keep-alive: as every production store (S3, COS) does, a client's
	// connection serves request after request. Without it versitygw closes
	// the connection after every response, so each part upload or ranged
	// GET pays a new connection and starts with small TCP buffers.
	args := []string{"--access", s.AccessKey, "--secret", s.SecretKey, "--region", s.Region,
		"--virtual-domain", S3VirtualDomain, "--keep-alive"}
	scheme := "http"
	if cert != nil {
		args = append(args, "--cert", cert.CertFile, "--key", cert.KeyFile)
		scheme, s.CAFile = "https", ca.CertFile
	}
	args = append(args, "posix")
	// The posix backend keeps metadata in xattrs; use a sidecar directory
	// where the file system has none.
	if err := unix.Setxattr(root, "user.tierkeeper-probe", []byte("1"), 0); err != nil {
		side := filepath.Join(base, "meta")
		if err := os.MkdirAll(side, 0o755); err != nil {
			return nil, err
		}
		args = append(args, "--sidecar", side)
	} else {
		_ = unix.Removexattr(root, "user.tierkeeper-probe")
	}
	args = append(args, root)

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		full := append([]string{"--port", addr}, args...)
		p, err := runDetached("versitygw", bin, full, s.LogPath)
		if err != nil {
			return nil, err
		}
		if err := p.WaitTCP(addr, 30*time.Second); err != nil {
			p.Stop()
			lastErr = err
			continue
		}
		s.Addr = addr
		s.Endpoint = scheme + "://" + addr
		s.VirtualEndpoint = fmt.Sprintf("%s://%s:%d", scheme, S3VirtualDomain, port)
		s.proc = p
		s.argv = full
		if s.client, err = s.newClient(); err != nil {
			p.Stop()
			return nil, err
		}
		return s, nil
	}
	return nil, lastErr
}

// runDetached starts bin as Start does (own process group, killed when the
// test binary dies) but owned by no test, with output appended to logPath.
// The process is started from a goroutine locked to its OS thread until the
// process ends, so the parent-death signal (SIGKILL, sent when the forking
// thread ends) fires only when the test binary exits. The goroutine
// unlocks before it returns: a goroutine that exits locked ends its thread,
// and that would SIGKILL every other server forked from the same thread
// before the lock (a killed S3 server took the package's ZooKeeper with it).
func runDetached(name, bin string, args []string, logPath string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			f.Close()
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return p, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// DialContext dials the server whatever host name is asked for, so
// virtual-host URLs ("http://<bucket>.s3.tierkeeper.test:<port>") work
// without DNS. Use it as http.Transport.DialContext.
func (s *S3) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, s.Addr)
}

// Client returns an aws-sdk-go-v2 S3 client for the server (path-style, root
// credentials).
func (s *S3) Client() *s3.Client { return s.client }

func (s *S3) newClient() (*s3.Client, error) {
	var hc *http.Client
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, err
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("testenv: no certificate in %s", s.CAFile)
		}
		// DefaultTransport's dial and handshake timeouts, as the SDK's
		// own client has.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: roots}
		hc = &http.Client{Transport: tr}
	}
	opts := s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		// versitygw verifies checksums it is sent; keep the test client's
		// requests plain.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if hc != nil {
		opts.HTTPClient = hc
	}
	return s3.New(opts), nil
}

// NewBucket creates a fresh, empty bucket named after the test and returns
// its name (3–63 chars, lower case). The bucket is left for the server's
// cleanup.
func (s *S3) NewBucket(t testing.TB) string {
	t.Helper()
	name := BucketName(t.Name(), fmt.Sprintf("-%d-%s", s.seq.Add(1), randHex(3)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// BucketName makes a bucket name of at most 63 characters from a test name
// and a suffix (lower-case letters, digits and '-', which makes it unique):
// "tk-" + the test name in lower case with every run of other characters
// replaced by one '-', cut to fit + suffix.
func BucketName(testName, suffix string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	stem := strings.Trim(b.String(), "-")
	if max := 63 - len("tk-") - len(suffix); len(stem) > max {
		stem = strings.Trim(stem[:max], "-")
	}
	if stem == "" {
		stem = "t"
	}
	return "tk-" + stem + suffix
}
