package cos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/test/cosfake"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// BenchmarkParts measures multipart upload throughput through the
// real SDK, cosfake (signature check, MD5, CRC-64) and versitygw, all on
// 127.0.0.1.
func BenchmarkParts(b *testing.B) {
	f := cosfake.Start(b)
	s, err := New(fakeConfig(f, f.NewBucket(b)), Options{DialContext: f.DialContext})
	if err != nil {
		b.Fatal(err)
	}
	blobtest.BenchParts(b, s, 1, 4)
}

// BenchmarkUploadCPU gives MB/s and the client's CPU seconds per GiB of a
// 256 MiB multipart upload in 10 MiB parts (the offloader's default
// block) for each part checksum. cosfake runs in a child process (this
// test binary, started again), so the CPU figure is the client's alone:
// the SDK (signature, CRC-64 of what it sends), the MD5 in mode md5, and
// the pipeline.
func BenchmarkUploadCPU(b *testing.B) {
	srv := startChildFake(b)
	for _, mode := range []string{ChecksumMD5, ChecksumCRC64} {
		b.Run("checksum="+mode, func(b *testing.B) {
			cfg := Config{
				Bucket: srv.Bucket, Region: srv.Region, Endpoint: srv.BucketURL, Checksum: mode,
				Credentials: Credentials{Source: SourceStatic, SecretID: srv.SecretID, SecretKey: blob.Secret(srv.SecretKey)},
			}
			s, err := New(cfg, Options{DialContext: srv.dial})
			if err != nil {
				b.Fatal(err)
			}
			blobtest.BenchUploadCPU(b, s, 256<<20, 10<<20)
		})
	}
}

// childFake is what the child process serving cosfake reports.
type childFake struct {
	Addr, Bucket, BucketURL, Region, SecretID, SecretKey string
}

func (c childFake) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, c.Addr)
}

const (
	childFakeEnv    = "TIERKEEPER_COS_BENCH_CHILD"
	childFakeMarker = "cosfake-child: "
)

func TestMain(m *testing.M) {
	if os.Getenv(childFakeEnv) != "" {
		os.Exit(serveChildFake())
	}
	os.Exit(m.Run())
}

// serveChildFake runs cosfake (and its versitygw) until stdin closes,
// after printing where it listens on stdout.
func serveChildFake() int {
	tb := testenv.NewSharedTB("cosfake-child")
	defer testenv.StopSharedS3()
	defer tb.Close()
	err := tb.Do(func(tb testing.TB) {
		f := cosfake.Start(tb)
		bucket := f.NewBucket(tb)
		js, err := json.Marshal(childFake{Addr: f.Addr, Bucket: bucket, BucketURL: f.BucketURL(bucket), Region: f.Region, SecretID: f.SecretID, SecretKey: f.SecretKey})
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Printf("%s%s\n", childFakeMarker, js)
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent is done (or dies)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "cosfake child:", err)
		return 1
	}
	return 0
}

// startChildFake starts cosfake in a child process and stops it when b
// ends.
func startChildFake(b *testing.B) childFake {
	b.Helper()
	if _, err := os.Stat(testenv.Versitygw()); err != nil {
		testenv.Unavailable(b, "versitygw not installed (make deps)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childFakeEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	got := make(chan childFake, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if js, ok := strings.CutPrefix(sc.Text(), childFakeMarker); ok {
				var c childFake
				if json.Unmarshal([]byte(js), &c) == nil {
					got <- c
				}
			}
		}
		close(got)
	}()
	select {
	case c, ok := <-got:
		if !ok {
			b.Fatal("cosfake child process exited without serving")
		}
		return c
	case <-time.After(2 * time.Minute):
		b.Fatal("cosfake child process: no address within 2 minutes")
	}
	return childFake{}
}
