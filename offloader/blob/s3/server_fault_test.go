package s3

// The S3 server itself dies (SIGKILL of versitygw, not a proxy in front of
// a live server) in the middle of a multipart upload or a download, and is
// started again on the same address and data directory.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/offloader/blob/internal/faults"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// privateStore is a store on a server of its own (to kill), with the retry
// budget given.
func privateStore(t *testing.T, attempts int, backoff time.Duration) (*Store, *testenv.S3) {
	t.Helper()
	srv := testenv.StartPrivateS3(t)
	cfg := staticConfig(srv, srv.NewBucket(t))
	cfg.Retry = Retry{MaxAttempts: attempts, MaxBackoff: blob.Duration(backoff)}
	cfg.ResponseHeaderTimeout = blob.Duration(10 * time.Second)
	return newTestStore(t, cfg, Options{}), srv
}

// uploadKilling runs a four-part upload through blob.Parts and calls kill
// (once) when part 1 has been stored. It returns the pipeline and the error
// of Send/Complete; the caller decides about Abort.
func uploadKilling(ctx context.Context, t *testing.T, s *Store, key string, data []byte, kill func()) (*blob.Parts, blob.Attrs, error) {
	t.Helper()
	var once sync.Once
	p, err := blob.StartParts(ctx, s, key, blob.PutOptions{}, blob.PartsOptions{
		InFlight: 1, // part 1 is stored before part 2 starts
		OnDone: func(part, _ int, _ time.Duration, err error) {
			if part == 1 && err == nil {
				once.Do(kill)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for n, off := 1, 0; off < len(data); n, off = n+1, off+blob.MinPartSize {
		if err := p.Send(ctx, n, data[off:min(off+blob.MinPartSize, len(data))], nil); err != nil {
			return p, blob.Attrs{}, err
		}
	}
	a, err := p.Complete(ctx)
	return p, a, err
}

// Killed after part 1 and back within the retry budget: the SDK's retries
// carry the remaining parts over the outage and the object is whole.
func TestServerKilledMidUploadAndRestartedRetries(t *testing.T) {
	s, srv := privateStore(t, 20, time.Second)
	data := faults.RandBytes(3*blob.MinPartSize + 10)
	restarted := make(chan error, 1)
	_, a, err := uploadKilling(faults.Context(t), t, s, "mp", data, func() {
		srv.Kill()
		go func() {
			time.Sleep(time.Second)
			restarted <- srv.Restart()
		}()
	})
	if rerr := <-restarted; rerr != nil {
		t.Fatalf("restart: %v", rerr)
	}
	if err != nil {
		t.Fatalf("upload across a server restart: %v", err)
	}
	if a.Size != int64(len(data)) {
		t.Errorf("attrs size %d, want %d", a.Size, len(data))
	}
	blobtest.AssertStored(t, s, "mp", data)
	if ups, err := s.ListMultipart(faults.Context(t), "mp"); err != nil || len(ups) != 0 {
		t.Errorf("uploads left after success: %+v, %v", ups, err)
	}
}

// Killed after part 1 and not back before the retries run out: a clear
// error in bounded time naming the part, the failed abort naming the
// upload, and after the restart exactly that incomplete upload is listed
// (with the part stored before the crash) for a sweeper to abort.
func TestServerKilledMidUploadStaysDown(t *testing.T) {
	s, srv := privateStore(t, 3, 50*time.Millisecond)
	data := faults.RandBytes(3*blob.MinPartSize + 10)
	ctx := faults.Context(t)
	start := time.Now()
	p, _, err := uploadKilling(ctx, t, s, "mp", data, srv.Kill)
	if err == nil {
		t.Fatal("upload succeeded with the server dead")
	}
	if !strings.Contains(err.Error(), "upload part 2") || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %q: want it to name part 2 and wrap connection refused", err)
	}
	aerr := p.Abort(ctx)
	if aerr == nil || !strings.Contains(aerr.Error(), p.UploadID()) {
		t.Errorf("abort with the server dead: %v, want an error naming upload %s", aerr, p.UploadID())
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("failing took %v", el)
	}
	t.Logf("upload error: %v\nabort error: %v", err, aerr)

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	ups, err := s.ListMultipart(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 1 || ups[0].Key != "mp" || ups[0].UploadID != p.UploadID() {
		t.Fatalf("after the restart: uploads %+v, want the interrupted one (%s)", ups, p.UploadID())
	}
	blobtest.AssertAbsentOrEqual(t, s, "mp", nil)
	if err := s.AbortMultipart(ctx, ups[0].Key, ups[0].UploadID); err != nil {
		t.Fatalf("sweeping the interrupted upload: %v", err)
	}
	if ups, err := s.ListMultipart(ctx, ""); err != nil || len(ups) != 0 {
		t.Errorf("after AbortMultipart: %+v, %v", ups, err)
	}
	// The store works again.
	if _, err := blobtest.UploadParts(ctx, s, "mp", data, blob.MinPartSize, 2); err != nil {
		t.Fatalf("upload after the restart: %v", err)
	}
	blobtest.AssertStored(t, s, "mp", data)
}

// Killed while a download is streaming: the body fails (never a short
// read that looks complete), and after the restart the object is intact.
func TestServerKilledMidDownload(t *testing.T) {
	s, srv := privateStore(t, 3, 50*time.Millisecond)
	data := faults.RandBytes(64 << 20)
	ctx := faults.Context(t)
	if _, err := s.Put(ctx, "big", bytes.NewReader(data), int64(len(data)), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{0, -1}, {1 << 20, 32 << 20}} {
		rc, _, err := s.GetRange(ctx, "big", r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 1<<20)
		if _, err := io.ReadFull(rc, head); err != nil {
			t.Fatal(err)
		}
		srv.Kill()
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		want := int64(len(data)) - r[0] - 1<<20
		if r[1] > 0 {
			want = r[1] - 1<<20
		}
		if err == nil {
			t.Errorf("range %v: body read to the end (%d more bytes) after the server died", r, n)
		} else if n >= want {
			t.Errorf("range %v: %d of %d bytes and then %v", r, n, want, err)
		}
		t.Logf("range %v: %d more bytes (of %d) after the kill, then: %v", r, n, want, err)
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	blobtest.AssertStored(t, s, "big", data)
}
