package upload

// The format benchmark: encode + multipart upload of a synthetic ledger to a
// real S3 server (versitygw via testenv.StartS3, s3 provider) against a raw
// multipart PUT of the same bytes with the same part size and parallelism,
// and the peak RSS of each, measured in a child process per run (so one
// run's heap does not hide another's).
//
//	make bench-format
//	go test -run '^$' -bench BenchmarkFormatUpload -benchtime 1x ./offloader/format/upload/
//
// Knobs (environment): TK_BENCH_SIZES (MiB, comma-separated; default
// "1024,2048"), TK_BENCH_BLOCK_MIB (64), TK_BENCH_PARTS (2),
// TK_BENCH_ENTRY_KIB (64), TK_BENCH_ROUNDS (3).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/stats"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	s3store "github.com/tierkeeper/tierkeeper/offloader/blob/s3"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

const benchChildEnv = "TK_FORMAT_BENCH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(benchChildEnv) != "" {
		os.Exit(benchChild())
	}
	code := m.Run()
	testenv.StopSharedS3()
	os.Exit(code)
}

// benchConfig is passed to the child as JSON.
type benchConfig struct {
	Mode      string // "encode" or "raw"
	Endpoint  string
	Region    string
	AccessKey string
	SecretKey string
	Bucket    string
	Bytes     int64 // ledger payload bytes
	Entry     int   // payload size of every entry
	Block     int
	Parts     int
}

type benchResult struct {
	ObjectBytes int64   `json:"object_bytes"`
	Seconds     float64 `json:"seconds"`
	MaxRSS      int64   `json:"max_rss_bytes"`
	Parts       int     `json:"parts"`
}

func BenchmarkFormatUpload(b *testing.B) {
	srv := testenv.StartS3(b)
	bucket := srv.NewBucket(b)
	var sizes []int64
	for _, n := range testenv.EnvInts(b, "TK_BENCH_SIZES", []int{1024, 2048}) {
		sizes = append(sizes, int64(n)<<20)
	}
	base := benchConfig{
		Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Bucket: bucket,
		Entry: testenv.EnvInt(b, "TK_BENCH_ENTRY_KIB", 64) << 10,
		Block: testenv.EnvInt(b, "TK_BENCH_BLOCK_MIB", 64) << 20,
		Parts: testenv.EnvInt(b, "TK_BENCH_PARTS", 2),
	}
	rounds := testenv.EnvInt(b, "TK_BENCH_ROUNDS", 3)
	bound := int64(base.Parts+2)*int64(base.Block) + 64<<20
	b.Logf("versitygw %s; block %d MiB, %d parts in flight, %d KiB entries, %d rounds; RSS goal <= (parts+2) x block + 64 MiB = %d MiB",
		srv.Endpoint, base.Block>>20, base.Parts, base.Entry>>10, rounds, bound>>20)

	run := func(mode string, size int64) benchResult {
		c := base
		c.Mode, c.Bytes = mode, size
		res, err := runBenchChild(c)
		if err != nil {
			b.Fatalf("%s %d MiB: %v", mode, size>>20, err)
		}
		b.Logf("%-6s ledger %5d MiB  object %5d MiB in %2d parts  %6.2fs  %7.1f MiB/s  peak RSS %4d MiB",
			mode, size>>20, res.ObjectBytes>>20, res.Parts, res.Seconds, float64(res.ObjectBytes)/res.Seconds/(1<<20), res.MaxRSS>>20)
		return res
	}
	for i := 0; i < b.N; i++ {
		// Throughput: raw and encode on the first size, paired
		// by round and take medians (the machine is shared and noisy).
		var raws, encs, ratios []float64
		var firstEnc benchResult
		for j := range rounds {
			// Alternate which goes first so neither always pays for the
			// other's leftovers (page cache, server-side deletes).
			var r, e benchResult
			if j%2 == 0 {
				r = run("raw", sizes[0])
				e = run("encode", sizes[0])
			} else {
				e = run("encode", sizes[0])
				r = run("raw", sizes[0])
			}
			if j == 0 {
				firstEnc = e
			}
			rm := float64(r.ObjectBytes) / r.Seconds / (1 << 20)
			em := float64(e.ObjectBytes) / e.Seconds / (1 << 20)
			raws, encs, ratios = append(raws, rm), append(encs, em), append(ratios, em/rm)
		}
		rawMBps, encMBps, ratio := stats.Median(raws), stats.Median(encs), stats.Median(ratios)
		rss := []int64{firstEnc.MaxRSS}
		for _, size := range sizes[1:] {
			rss = append(rss, run("encode", size).MaxRSS)
		}
		maxRSS := int64(0)
		for _, r := range rss {
			maxRSS = max(maxRSS, r)
		}
		b.ReportMetric(encMBps, "encode-MiB/s")
		b.ReportMetric(rawMBps, "raw-MiB/s")
		b.ReportMetric(ratio, "encode/raw")
		b.ReportMetric(float64(maxRSS)/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(float64(bound)/(1<<20), "RSS-bound-MiB")
		var rssText []string
		for j, r := range rss {
			rssText = append(rssText, fmt.Sprintf("%d MiB ledger: %d MiB", sizes[j]>>20, r>>20))
		}
		b.Logf("RESULT median of %d paired rounds: encode+upload %.1f MiB/s, raw multipart %.1f MiB/s, ratio %.2fx (per round %s; goal >= 0.90); peak RSS %s (goal <= %d MiB)",
			rounds, encMBps, rawMBps, ratio, fmtList(ratios), strings.Join(rssText, ", "), bound>>20)
	}
}

func fmtList(v []float64) string {
	var out []string
	for _, x := range v {
		out = append(out, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(out, " ")
}

func runBenchChild(c benchConfig) (benchResult, error) {
	cfg, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+string(cfg))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return benchResult{}, fmt.Errorf("child: %v\n%s", err, errb.String())
	}
	var res benchResult
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &res); err != nil {
		return benchResult{}, fmt.Errorf("child output %q: %v", out.String(), err)
	}
	return res, nil
}

// benchChild runs one upload and prints a benchResult.
func benchChild() int {
	var c benchConfig
	if err := json.Unmarshal([]byte(os.Getenv(benchChildEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	store, err := s3store.New(ctx, s3test.Static(c.Bucket, c.Region, c.Endpoint, c.AccessKey, c.SecretKey), s3store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Synthetic payloads: slices of 8 MiB of random bytes.
	src := make([]byte, 8<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	n := c.Bytes / int64(c.Entry)
	payload := func(i int64) []byte {
		off := (i * 7919) % int64(len(src)-c.Entry)
		return src[off : off+int64(c.Entry)]
	}
	l := format.Ledger{ID: 1, LastEntryID: n - 1, Length: n * int64(c.Entry)}
	var res benchResult
	start := time.Now()
	var key string
	switch c.Mode {
	case "encode":
		md := &bkproto.LedgerMetadataFormat{
			QuorumSize: proto.Int32(2), EnsembleSize: proto.Int32(2), AckQuorumSize: proto.Int32(2),
			Length: proto.Int64(l.Length), LastEntryId: proto.Int64(l.LastEntryID), Ctime: proto.Int64(0),
			State: bkproto.LedgerMetadataFormat_CLOSED.Enum(), DigestType: bkproto.LedgerMetadataFormat_CRC32C.Enum(),
		}
		u, err := New(store, &Options{MaxBlockSize: c.Block, PartsInFlight: c.Parts})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		s, err := u.Begin(ctx, Request{UUID: uuid.New(), Ledger: l, Metadata: md})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for i := range n {
			if err := s.Add(ctx, i, payload(i)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		r, err := s.Finish(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		res.ObjectBytes, res.Parts, key = r.DataObjectLength, r.Blocks, r.DataKey
		res.Seconds = time.Since(start).Seconds()
		_ = store.Delete(ctx, r.IndexKey)
	case "raw":
		total := encodedSize(n, c.Entry, c.Block)
		key = "raw-" + uuid.NewString()
		parts, err := rawUpload(ctx, store, key, total, c.Block, c.Parts, src)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		res.ObjectBytes, res.Parts = total, parts
		res.Seconds = time.Since(start).Seconds()
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", c.Mode)
		return 2
	}
	_ = store.Delete(ctx, key)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	res.MaxRSS = ru.Maxrss << 10
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// encodedSize is the data object size for n entries of size bytes: the
// encoder's layout computed from sizes alone.
func encodedSize(n int64, size, maxBlock int) int64 {
	length := n * int64(size)
	var total, written int64
	for first := int64(0); first < n; {
		bs := int64(format.BlockSize(maxBlock, n-1, first, length, written))
		perBlock := (bs - format.BlockHeaderSize) / int64(format.RecordHeaderSize+size)
		k := min(perBlock, n-first)
		first += k
		written += k * int64(size)
		total += bs
	}
	return total
}

// rawUpload is the baseline: a multipart upload of total bytes in parts of
// partSize through the same pipeline (blob.Parts) with the same parallelism
// and pooled buffers, each part filled by copying from src (the raw
// counterpart of the encoder's copy).
func rawUpload(ctx context.Context, store blob.Writer, key string, total int64, partSize, parallel int, src []byte) (int, error) {
	p, err := blob.StartParts(ctx, store, key, blob.PutOptions{ContentType: "application/octet-stream"}, blob.PartsOptions{InFlight: parallel})
	if err != nil {
		return 0, err
	}
	pool := format.NewPool(partSize, parallel+1)
	parts := 0
	for off := int64(0); off < total; off += int64(partSize) {
		n := int(min(int64(partSize), total-off))
		buf, err := pool.Get(ctx, n)
		if err != nil {
			return 0, errors.Join(err, p.Abort(ctx))
		}
		for i := 0; i < n; {
			i += copy(buf[i:], src[(off+int64(i))%int64(len(src)):])
		}
		parts++
		if err := p.Send(ctx, parts, buf, func() { pool.Put(buf) }); err != nil {
			return 0, errors.Join(err, p.Abort(ctx))
		}
	}
	if _, err := p.Complete(ctx); err != nil {
		return 0, errors.Join(err, p.Abort(ctx))
	}
	return parts, nil
}
