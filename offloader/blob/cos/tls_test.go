package cos

import (
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// An endpoint whose certificate the client does not trust fails at once,
// without our retries, naming the handshake, the server and the reason.
// The server is versitygw behind TLS: the handshake fails before any COS
// request is read.
func TestTLSUntrustedServerIsAClearError(t *testing.T) {
	srv := testenv.StartPrivateS3TLS(t, testenv.NewCA(t, "cos"))
	const secret = "cos-secret-7f3a9c"
	cfg := Config{ // the production retry policy (the defaults: 5 attempts)
		Bucket: "bucket-1250000000", Region: "ap-test", Endpoint: srv.Endpoint,
		Credentials: Credentials{Source: SourceStatic, SecretID: "id", SecretKey: blob.Secret(secret)},
	}
	blobtest.UntrustedServer(t, srv.Addr, secret, func(dial blob.DialFunc) blob.Store {
		st, err := New(cfg, Options{DialContext: dial})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}
