package cos

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// An endpoint whose certificate the client does not trust fails at once,
// naming the handshake, the server and the reason, without retries. The
// server is versitygw behind TLS: the handshake fails before any COS
// request is read.
func TestTLSUntrustedServerIsAClearError(t *testing.T) {
	srv := testenv.StartPrivateS3TLS(t, testenv.NewCA(t, "cos"))
	var dials atomic.Int32
	var d net.Dialer
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	// The production retry policy (the defaults: 5 attempts).
	cfg := Config{
		Bucket: "bucket-1250000000", Region: "ap-test", Endpoint: srv.Endpoint,
		Credentials: Credentials{Source: SourceStatic, SecretID: "id", SecretKey: blob.Secret("cos-secret-7f3a9c")},
	}
	st, err := New(cfg, Options{DialContext: dial})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = st.Head(ctx, "x")
	if err == nil {
		t.Fatal("Head over TLS to a server signed by an unknown CA succeeded")
	}
	t.Logf("error after %v and %d connections: %v", time.Since(start), dials.Load(), err)
	for _, want := range []string{"TLS handshake with " + srv.Addr, "certificate signed by unknown authority"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "cos-secret-7f3a9c") {
		t.Errorf("error %q shows the secret key", err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections for one Head: a certificate error was retried", n)
	}
}
