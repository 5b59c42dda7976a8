package format

// The reader's fetch benchmark: bytes the format reader pulls over the
// network for random and for sequential reads of one offloaded ledger on a
// real S3 server (versitygw via testenv.StartS3, s3 provider), counted by
// a TCP proxy between the two (every byte the server sent that reached the
// client's socket, read or not), next to the payload bytes asked for.
//
//	make bench-format-read
//	go test -run '^$' -bench BenchmarkReaderFetch -benchtime 1x ./offloader/format/
//
// Knobs (environment): TK_BENCH_READ_MIB (ledger payload, default 256),
// TK_BENCH_BLOCK_MIB (block size, default 64, Pulsar's default),
// TK_BENCH_ENTRY_KIB (largest entry; sizes are uniform in 1..this, default
// 128), TK_BENCH_RANDOM (random single-entry reads, default 1000),
// TK_BENCH_BATCH (entries per sequential Read, default 100).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	s3store "github.com/tierkeeper/tierkeeper/offloader/blob/s3"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// countingProxy forwards TCP connections to upstream and counts the bytes
// it delivered to the client.
type countingProxy struct {
	ln       net.Listener
	upstream string
	down     atomic.Int64
	wg       sync.WaitGroup
}

func startCountingProxy(tb testing.TB, upstream string) *countingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &countingProxy{ln: ln, upstream: upstream}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *countingProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer c.Close()
			u, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
			if err != nil {
				return
			}
			defer u.Close()
			go func() {
				_, _ = io.Copy(u, c)
				u.Close()
			}()
			buf := make([]byte, 32<<10)
			for {
				n, err := u.Read(buf)
				if n > 0 {
					w, werr := c.Write(buf[:n])
					p.down.Add(int64(w))
					if werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

type fetchFigures struct {
	payload, wire, body, gets int64
	seconds                   float64
}

func BenchmarkReaderFetch(b *testing.B) {
	srv := testenv.StartS3(b)
	proxy := startCountingProxy(b, srv.Addr)
	ctx := context.Background()
	cfg := s3test.Config(srv, srv.NewBucket(b))
	cfg.Endpoint = "http://" + proxy.ln.Addr().String()
	store, err := s3store.New(ctx, cfg, s3store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	block := testenv.EnvInt(b, "TK_BENCH_BLOCK_MIB", 64) << 20
	maxEntry := testenv.EnvInt(b, "TK_BENCH_ENTRY_KIB", 128) << 10
	total := int64(testenv.EnvInt(b, "TK_BENCH_READ_MIB", 256)) << 20
	randomReads := testenv.EnvInt(b, "TK_BENCH_RANDOM", 1000)
	batch := int64(testenv.EnvInt(b, "TK_BENCH_BATCH", 100))

	// A ledger of random payloads (slices of one random buffer).
	rng := rand.New(rand.NewPCG(7, 11))
	src := make([]byte, 8<<20)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	var payloads [][]byte
	for n := int64(0); n < total; {
		size := 1 + rng.IntN(maxEntry)
		off := rng.IntN(len(src) - size)
		payloads = append(payloads, src[off:off+size])
		n += int64(size)
	}
	l := LedgerOf(1, payloads)
	data, layout, err := Encode(l, EncoderOptions{MaxBlockSize: block}, payloads)
	if err != nil {
		b.Fatal(err)
	}
	ix, err := layout.Index(metadataFor(l)).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	id := uuid.New()
	info := ObjectInfo{SoftwareVersion: "bench"}
	for key, body := range map[string][]byte{DataKey(id, 1): data, IndexKey(id, 1): ix} {
		role := RoleData
		if len(body) == len(ix) {
			role = RoleIndex
		}
		if _, err := store.Put(ctx, key, bytes.NewReader(body), int64(len(body)), blob.PutOptions{Metadata: info.Metadata(role)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("ledger: %d entries, %d MiB payload, %d blocks of %d MiB, data object %d MiB",
		len(payloads), l.Length>>20, len(layout.Blocks), block>>20, len(data)>>20)

	measure := func(reads func(r *Reader) (int64, error)) fetchFigures {
		r, err := Open(ctx, store, id, 1, nil)
		if err != nil {
			b.Fatal(err)
		}
		// Let the index GET's bytes settle before counting.
		time.Sleep(50 * time.Millisecond)
		before := proxy.down.Load()
		start := time.Now()
		payload, err := reads(r)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
		secs := time.Since(start).Seconds()
		time.Sleep(100 * time.Millisecond) // the proxy's last writes of a dropped stream
		return fetchFigures{payload: payload, wire: proxy.down.Load() - before, body: r.BytesFetched(), gets: r.Requests(), seconds: secs}
	}
	report := func(name string, f fetchFigures) {
		b.ReportMetric(float64(f.wire)/float64(f.payload), name+"-wire/payload")
		b.ReportMetric(float64(f.gets), name+"-GETs")
		b.Logf("%-10s payload %8.1f MB  fetched on the wire %8.1f MB (%.2fx)  body bytes read %s  %5d data GETs  %.2fs",
			name, float64(f.payload)/1e6, float64(f.wire)/1e6, float64(f.wire)/float64(f.payload), fmtBody(f.body), f.gets, f.seconds)
	}
	for b.Loop() {
		ids := rand.New(rand.NewPCG(3, 5))
		random := measure(func(r *Reader) (int64, error) {
			var n int64
			for range randomReads {
				e := ids.Int64N(l.LastEntryID + 1)
				err := r.Read(ctx, e, e, func(_ int64, p []byte) error { n += int64(len(p)); return nil })
				if err != nil {
					return n, err
				}
			}
			return n, nil
		})
		seq := measure(func(r *Reader) (int64, error) {
			var n int64
			for first := int64(0); first <= l.LastEntryID; first += batch {
				last := min(first+batch-1, l.LastEntryID)
				var i int64
				err := r.Read(ctx, first, last, func(id int64, p []byte) error {
					if !bytes.Equal(p, payloads[id]) {
						return errors.New("entry differs")
					}
					n += int64(len(p))
					i++
					return nil
				})
				if err != nil {
					return n, err
				}
			}
			return n, nil
		})
		report("random", random)
		report("sequential", seq)
	}
}

func fmtBody(n int64) string {
	if n < 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
}
