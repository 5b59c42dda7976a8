package s3

import (
	"context"
	"testing"

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

// An endpoint whose certificate the client does not trust fails at once,
// without the SDK's retries, naming the handshake, the server and the
// reason.
func TestTLSUntrustedServerIsAClearError(t *testing.T) {
	srv := testenv.StartPrivateS3TLS(t, testenv.NewCA(t, "s3"))
	t.Setenv("AWS_CA_BUNDLE", "")
	cfg := staticConfig(srv, "some-bucket")
	cfg.Retry = Retry{} // the production policy: 5 attempts, backoff up to 20 s
	blobtest.UntrustedServer(t, srv.Addr, srv.SecretKey, func(dial blob.DialFunc) blob.Store {
		return newTestStore(t, cfg, Options{DialContext: dial})
	})
}

func TestAcceptanceVirtualHost(t *testing.T) {
	srv := testenv.StartS3(t)
	cfg := staticConfig(srv, srv.NewBucket(t))
	cfg.Endpoint, cfg.Addressing = srv.VirtualEndpoint, "virtual"
	blobtest.AcceptanceTest(t, newTestStore(t, cfg, Options{DialContext: srv.DialContext}))
}
