package s3

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func staticConfig(srv *testenv.S3, bucket string) Config {
	return Config{
		Bucket: bucket, Region: srv.Region, Endpoint: srv.Endpoint, Addressing: "path",
		Credentials: Credentials{Source: SourceStatic, AccessKeyID: srv.AccessKey, SecretAccessKey: blob.Secret(srv.SecretKey)},
		Retry:       Retry{MaxAttempts: 3, MaxBackoff: blob.Duration(20e6)},
	}
}

func newTestStore(t *testing.T, cfg Config, opts Options) *Store {
	t.Helper()
	s, err := New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAcceptancePathStyle(t *testing.T) {
	srv := testenv.StartS3(t)
	blobtest.AcceptanceTest(t, newTestStore(t, staticConfig(srv, srv.NewBucket(t)), Options{ListPageSize: 3}))
}

// Over https, with the server's CA from AWS_CA_BUNDLE as a deployment
// with a private CA gives it: bodies take blob.BodyWrites's TLS path.
func TestAcceptanceTLS(t *testing.T) {
	ca := testenv.NewCA(t, "s3")
	srv := testenv.StartPrivateS3TLS(t, ca)
	t.Setenv("AWS_CA_BUNDLE", srv.CAFile)
	t.Run("path", func(t *testing.T) {
		blobtest.AcceptanceTest(t, newTestStore(t, staticConfig(srv, srv.NewBucket(t)), Options{ListPageSize: 3}))
	})
	t.Run("virtual", func(t *testing.T) {
		cfg := staticConfig(srv, srv.NewBucket(t))
		cfg.Endpoint, cfg.Addressing = srv.VirtualEndpoint, "virtual"
		blobtest.AcceptanceTest(t, newTestStore(t, cfg, Options{DialContext: srv.DialContext}))
	})
}

// A server whose certificate no trusted CA signed: the request fails
// (after the SDK's retries) naming the handshake, the server and the
// reason.
func TestTLSUntrustedServerIsAClearError(t *testing.T) {
	srv := testenv.StartPrivateS3TLS(t, testenv.NewCA(t, "s3"))
	t.Setenv("AWS_CA_BUNDLE", "")
	var dials atomic.Int32
	var d net.Dialer
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	// The production retry policy: 5 attempts, backoff up to 20 s.
	cfg := staticConfig(srv, "some-bucket")
	cfg.Retry = Retry{}
	st := newTestStore(t, cfg, Options{DialContext: dial})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := st.Head(ctx, "x")
	took := time.Since(start)
	if err == nil {
		t.Fatal("Head over TLS to a server signed by an unknown CA succeeded")
	}
	t.Logf("error after %v and %d connections: %v", took, dials.Load(), err)
	for _, want := range []string{"TLS handshake with " + srv.Addr, "certificate signed by unknown authority"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// A certificate the client does not trust stays untrusted: retrying
	// only delays the error the operator has to act on.
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections for one Head: a certificate error was retried", n)
	}
}

func TestAcceptanceVirtualHost(t *testing.T) {
	srv := testenv.StartS3(t)
	cfg := staticConfig(srv, srv.NewBucket(t))
	cfg.Endpoint, cfg.Addressing = srv.VirtualEndpoint, "virtual"
	blobtest.AcceptanceTest(t, newTestStore(t, cfg, Options{DialContext: srv.DialContext}))
}
