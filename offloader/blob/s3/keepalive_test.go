package s3

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestRequestsShareOneConnection: one request after another (PUTs, a
// multipart upload's parts from a buffer and from slices, its completion,
// a ranged GET) go over one connection to a keep-alive server. A new
// connection per request (a body left unread, a wrapper that breaks the
// transport's pool, a server that closes) costs every part a connect and
// TCP buffers that start small. Over TLS too, where the connection is
// blob.BodyWrites's own (a new one would also cost a handshake).
func TestRequestsShareOneConnection(t *testing.T) {
	t.Run("http", func(t *testing.T) { requestsShareOneConnection(t, testenv.StartS3(t)) })
	t.Run("https", func(t *testing.T) {
		ca := testenv.NewCA(t, "s3")
		srv := testenv.StartPrivateS3TLS(t, ca)
		t.Setenv("AWS_CA_BUNDLE", srv.CAFile)
		requestsShareOneConnection(t, srv)
	})
}

func requestsShareOneConnection(t *testing.T, srv *testenv.S3) {
	var dials atomic.Int64
	d := &net.Dialer{}
	st := newTestStore(t, staticConfig(srv, srv.NewBucket(t)), Options{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}})
	ctx := context.Background()
	small := bytes.Repeat([]byte("s"), 1000)
	for range 3 {
		if _, err := st.Put(ctx, "small", bytes.NewReader(small), int64(len(small)), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	part := bytes.Repeat([]byte("p"), blob.MinPartSize)
	mp, err := st.CreateMultipart(ctx, "big", blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := mp.UploadPart(ctx, 1, part); err != nil {
		t.Fatal(err)
	}
	if err := blob.UploadPartVector(ctx, mp, 2, [][]byte{part[:1<<20], part[1<<20:]}); err != nil {
		t.Fatal(err)
	}
	if _, err := mp.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	rc, _, err := st.GetRange(ctx, "big", 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, rc); err != nil || n != 100 {
		t.Fatalf("ranged GET: %d bytes, %v", n, err)
	}
	rc.Close()
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections for 8 requests in sequence, want 1", n)
	}
}
