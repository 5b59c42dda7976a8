package format

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/blob/memblob"
)

// fixture writes an encoded ledger into a memblob store.
type fixture struct {
	store    *memblob.Store
	id       uuid.UUID
	ledger   int64
	payloads [][]byte
	data     []byte
	layout   Layout
}

func randomPayloads(rng *rand.Rand, n, maxLen int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		p := make([]byte, 1+rng.IntN(maxLen))
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		out[i] = p
	}
	return out
}

func metadataFor(l Ledger) *bkproto.LedgerMetadataFormat {
	md := goldenMetadata()
	md.LastEntryId = proto.Int64(l.LastEntryID)
	md.Length = proto.Int64(l.Length)
	return md
}

func newFixture(t testing.TB, payloads [][]byte, maxBlock int) *fixture {
	t.Helper()
	f := &fixture{store: memblob.New(), id: uuid.New(), ledger: 42, payloads: payloads}
	l := LedgerOf(f.ledger, payloads)
	var err error
	f.data, f.layout, err = Encode(l, EncoderOptions{MaxBlockSize: maxBlock}, payloads)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := f.layout.Index(metadataFor(l)).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	info := ObjectInfo{SoftwareVersion: "test"}
	f.store.SetObject(DataKey(f.id, f.ledger), f.data, info.Metadata(RoleData))
	f.store.SetObject(IndexKey(f.id, f.ledger), ix, info.Metadata(RoleIndex))
	return f
}

func (f *fixture) indexBytes(t testing.TB) []byte {
	t.Helper()
	raw, _, ok := f.store.Object(IndexKey(f.id, f.ledger))
	if !ok {
		t.Fatal("no index")
	}
	return raw
}

func (f *fixture) open(t testing.TB, opts *ReaderOptions) *Reader {
	t.Helper()
	r, err := Open(context.Background(), f.store, f.id, f.ledger, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func (f *fixture) check(t testing.TB, r *Reader, first, last int64) {
	t.Helper()
	got, err := r.ReadEntries(context.Background(), first, last)
	if err != nil {
		t.Fatalf("read %d..%d: %v", first, last, err)
	}
	if int64(len(got)) != last-first+1 {
		t.Fatalf("read %d..%d: %d entries", first, last, len(got))
	}
	for i, p := range got {
		if !bytes.Equal(p, f.payloads[first+int64(i)]) {
			t.Fatalf("entry %d differs", first+int64(i))
		}
	}
}

func TestReaderReadsEverything(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	f := newFixture(t, randomPayloads(rng, 500, 300), 4096)
	if len(f.layout.Blocks) < 20 {
		t.Fatalf("fixture has only %d blocks", len(f.layout.Blocks))
	}
	r := f.open(t, nil)
	if r.LastEntryID() != 499 || r.Length() != LedgerOf(0, f.payloads).Length {
		t.Fatalf("LAC %d length %d", r.LastEntryID(), r.Length())
	}
	f.check(t, r, 0, 499)
	if n := r.Requests(); n != 1 {
		t.Fatalf("whole-ledger read took %d data GETs, want 1", n)
	}
	if n := f.store.Count(blob.OpGet); n != 1 {
		t.Fatalf("index GETs %d, want 1", n)
	}
}

func TestReaderSequentialReadsShareOneRequestPerBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	f := newFixture(t, randomPayloads(rng, 300, 200), 2048)
	r := f.open(t, nil)
	for first := int64(0); first < 300; first += 7 {
		f.check(t, r, first, min(first+6, 299))
	}
	if n, want := r.Requests(), int64(len(f.layout.Blocks)); n != want {
		t.Fatalf("sequential reads took %d data GETs, want one per block (%d)", n, want)
	}
	if got := r.BytesFetched(); got != f.layout.DataObjectLength {
		t.Fatalf("sequential reads fetched %d bytes of a %d-byte object, want each byte once", got, f.layout.DataObjectLength)
	}
	if got := f.store.BytesRead(); got != f.layout.DataObjectLength+int64(len(f.indexBytes(t))) {
		t.Fatalf("store delivered %d body bytes, want the data object and the index once", got)
	}
}

func TestReaderRandomEntryCostsOneRequest(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f := newFixture(t, randomPayloads(rng, 2000, 2000), 64<<10)
	// ReadAhead small so that jumps really need a new GET.
	r := f.open(t, &ReaderOptions{ReadAhead: 4096})
	for range 200 {
		id := rng.Int64N(2000)
		before := r.Requests()
		f.check(t, r, id, id)
		if d := r.Requests() - before; d > 1 {
			t.Fatalf("entry %d took %d data GETs", id, d)
		}
	}
	if n := f.store.Count(blob.OpGet); n != 1 {
		t.Fatalf("index fetched %d times; it must be cached", n)
	}
}

// Every data GET ends at the end of the block it reads: a random entry
// costs at most its block, read-ahead included (before, the range ran to
// the end of the object and the read-ahead past the block).
func TestReaderRandomEntryCostsAtMostItsBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	f := newFixture(t, randomPayloads(rng, 3000, 2000), 64<<10)
	if len(f.layout.Blocks) < 20 {
		t.Fatalf("fixture has only %d blocks", len(f.layout.Blocks))
	}
	ix := f.layout.Index(nil)
	r := f.open(t, nil) // 1 MiB read-ahead: far more than a block
	for range 300 {
		id := rng.Int64N(3000)
		blk, _ := ix.Lookup(id)
		start, end := ix.BlockRange(blk)
		before, served := r.BytesFetched(), f.store.BytesRead()
		f.check(t, r, id, id)
		if d := r.BytesFetched() - before; d > end-start {
			t.Fatalf("entry %d fetched %d bytes; its block has %d", id, d, end-start)
		}
		if d := f.store.BytesRead() - served; d > end-start {
			t.Fatalf("entry %d: the store served %d bytes; its block has %d", id, d, end-start)
		}
	}
}

func TestReaderLearnsOffsets(t *testing.T) {
	// One 1 MiB block; a random read starts at the block, later ones near
	// their entry and stop at the next known record, so far fewer bytes
	// are fetched.
	rng := rand.New(rand.NewPCG(7, 8))
	f := newFixture(t, randomPayloads(rng, 1000, 1000), 1<<20)
	const interval = 4096
	r := f.open(t, &ReaderOptions{ReadAhead: 4096, LearnInterval: interval})
	f.check(t, r, 999, 999) // scans the whole block, learns marks
	if r.BytesFetched() != f.layout.DataObjectLength {
		t.Fatalf("first read fetched %d of %d bytes", r.BytesFetched(), f.layout.DataObjectLength)
	}
	for _, id := range []int64{500, 17, 998, 0, 250} {
		before := r.BytesFetched()
		f.check(t, r, id, id)
		// At most one interval (plus the record crossing it) before the
		// entry, and the same after it.
		if d, bound := r.BytesFetched()-before, int64(2*(interval+1000+RecordHeaderSize)+BlockHeaderSize); d > bound {
			t.Fatalf("read of entry %d after learning fetched %d bytes, want <= %d", id, d, bound)
		}
	}
}

func TestReaderRetriesBrokenStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	f := newFixture(t, randomPayloads(rng, 400, 500), 8192)
	var cuts atomic.Int64
	dk := DataKey(f.id, f.ledger)
	f.store.CutBody = func(key string, _ int64, n int64) int64 {
		if key == dk && cuts.Add(1) <= 3 {
			return n / 3
		}
		return -1
	}
	r := f.open(t, nil)
	f.check(t, r, 0, 399)
	if r.Requests() != 4 {
		t.Fatalf("%d data GETs, want 1 + 3 reopenings", r.Requests())
	}

	// A stream that keeps breaking exhausts the retries with a clear error.
	f.store.CutBody = func(key string, _ int64, n int64) int64 {
		if key == dk {
			return min(n, 100)
		}
		return -1
	}
	r2 := f.open(t, &ReaderOptions{Retries: 2})
	_, err := r2.ReadEntries(context.Background(), 0, 399)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want unexpected EOF after retries", err)
	}
	if r2.Requests() != 3 {
		t.Fatalf("%d data GETs, want 3", r2.Requests())
	}
}

func TestReaderChecksFormatVersion(t *testing.T) {
	f := newFixture(t, [][]byte{[]byte("a"), []byte("b")}, 1024)
	ik := IndexKey(f.id, f.ledger)
	raw, md, _ := f.store.Object(ik)
	delete(md, MetaFormatVersion)
	f.store.SetObject(ik, raw, md)
	if _, err := Open(context.Background(), f.store, f.id, f.ledger, nil); !errors.Is(err, ErrFormatVersion) {
		t.Fatalf("index without version: %v", err)
	}

	f = newFixture(t, [][]byte{[]byte("a"), []byte("b")}, 1024)
	dk := DataKey(f.id, f.ledger)
	raw, md, _ = f.store.Object(dk)
	md[MetaFormatVersion] = "2"
	f.store.SetObject(dk, raw, md)
	r := f.open(t, nil)
	if _, err := r.ReadEntries(context.Background(), 0, 1); !errors.Is(err, ErrFormatVersion) {
		t.Fatalf("data with version 2: %v", err)
	}
}

func TestReaderMissingObjects(t *testing.T) {
	store := memblob.New()
	if _, err := Open(context.Background(), store, uuid.New(), 1, nil); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("missing index: %v", err)
	}
	if store.Count(blob.OpGet) != 1 {
		t.Fatalf("missing index retried %d times", store.Count(blob.OpGet))
	}
	f := newFixture(t, [][]byte{[]byte("a")}, 1024)
	r := f.open(t, nil)
	if err := f.store.Delete(context.Background(), DataKey(f.id, f.ledger)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadEntries(context.Background(), 0, 0); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("missing data: %v", err)
	}
}

func TestReaderRejectsBadRanges(t *testing.T) {
	f := newFixture(t, [][]byte{[]byte("a"), []byte("b"), []byte("c")}, 1024)
	r := f.open(t, nil)
	for _, rg := range [][2]int64{{-1, 0}, {2, 1}, {0, 3}, {3, 3}} {
		if _, err := r.ReadEntries(context.Background(), rg[0], rg[1]); !errors.Is(err, ErrEntryRange) {
			t.Errorf("range %v: %v", rg, err)
		}
	}
	f.check(t, r, 1, 2)
}

func TestReaderDetectsCorruption(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	payloads := randomPayloads(rng, 60, 100)
	base := newFixture(t, payloads, 1024)
	entryOff := func(id int) int64 {
		// Offset of entry id's record.
		for b := len(base.layout.Blocks) - 1; b >= 0; b-- {
			blk := base.layout.Blocks[b]
			if blk.FirstEntryID <= int64(id) {
				off := blk.Offset + BlockHeaderSize
				for i := blk.FirstEntryID; i < int64(id); i++ {
					off += RecordHeaderSize + int64(len(payloads[i]))
				}
				return off
			}
		}
		panic("unreachable")
	}
	blk1 := base.layout.Blocks[1]
	_, end0 := base.layout.Index(nil).BlockRange(0)
	lastRecEnd0 := entryOff(int(blk1.FirstEntryID)-1) + RecordHeaderSize + int64(len(payloads[blk1.FirstEntryID-1]))
	cases := []struct {
		name string
		off  int64
		fn   func(b []byte)
	}{
		{"entry id", entryOff(5) + 4, func(b []byte) { b[7] ^= 1 }},
		{"length overruns block", entryOff(3), func(b []byte) { binary.BigEndian.PutUint32(b, 1<<20) }},
		{"next block magic", blk1.Offset, func(b []byte) { b[0] = 0 }},
		{"next block first entry", blk1.Offset + 20, func(b []byte) { b[7]++ }},
		{"padding", lastRecEnd0, func(b []byte) { b[min(end0-lastRecEnd0-1, 5)] = 0 }},
		// Block 0's header is read and checked like the others (it was
		// skipped: a read starting at a block began after its header).
		{"block 0 magic", 0, func(b []byte) { b[3] ^= 0x10 }},
		{"block 0 header length", 4, func(b []byte) { b[7] = 64 }},
		{"block 0 block length", 12, func(b []byte) { b[7]++ }},
		{"block 0 first entry", 20, func(b []byte) { b[7] = 1 }},
	}
	if end0-lastRecEnd0 < 1 {
		t.Fatalf("fixture block 0 has no padding")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, payloads, 1024)
			dk := DataKey(f.id, f.ledger)
			raw, md, _ := f.store.Object(dk)
			c.fn(raw[c.off:])
			f.store.SetObject(dk, raw, md)
			r := f.open(t, nil)
			_, err := r.ReadEntries(context.Background(), 0, int64(len(payloads)-1))
			if !errors.Is(err, ErrCorruptBlock) {
				t.Fatalf("err = %v, want ErrCorruptBlock", err)
			}
		})
	}
	// A random read that starts at a later block checks that block's
	// header too.
	t.Run("block 2 header on a random read", func(t *testing.T) {
		f := newFixture(t, payloads, 1024)
		dk := DataKey(f.id, f.ledger)
		raw, md, _ := f.store.Object(dk)
		b2 := f.layout.Blocks[2]
		raw[b2.Offset+20+7]++
		f.store.SetObject(dk, raw, md)
		r := f.open(t, nil)
		_, err := r.ReadEntries(context.Background(), b2.FirstEntryID, b2.FirstEntryID)
		if !errors.Is(err, ErrCorruptBlock) || !strings.Contains(err.Error(), "block 2 header") {
			t.Fatalf("err = %v, want ErrCorruptBlock naming block 2's header", err)
		}
	})
	// A data object shorter or longer than the index says is corrupt, on
	// the first GET, whatever entry is read.
	for _, c := range []struct {
		name, want string
		fn         func([]byte) []byte
	}{
		{"truncated", "fewer bytes than dataObjectLength", func(b []byte) []byte { return b[:len(b)-3] }},
		{"trailing bytes", "trailing bytes after dataObjectLength", func(b []byte) []byte { return append(b, padding[:]...) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, payloads, 1024)
			dk := DataKey(f.id, f.ledger)
			raw, md, _ := f.store.Object(dk)
			f.store.SetObject(dk, c.fn(raw), md)
			for _, first := range []int64{0, int64(len(payloads) - 1)} {
				r := f.open(t, nil)
				_, err := r.ReadEntries(context.Background(), first, int64(len(payloads)-1))
				if !errors.Is(err, ErrCorruptBlock) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("read from entry %d: err = %v, want ErrCorruptBlock: %s", first, err, c.want)
				}
				if r.Requests() != 1 {
					t.Errorf("%d data GETs before the error, want 1", r.Requests())
				}
			}
		})
	}
}

func TestReaderHonoursCancellation(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	f := newFixture(t, randomPayloads(rng, 200, 100), 2048)
	r := f.open(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := r.Read(ctx, 0, 199, func(int64, []byte) error {
		n++
		if n == 10 {
			cancel()
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v after %d entries, want context.Canceled", err, n)
	}
	// The reader recovers on the next call.
	f.check(t, r, 0, 199)
	stop := errors.New("stop")
	if err := r.Read(context.Background(), 0, 5, func(id int64, _ []byte) error {
		if id == 2 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) {
		t.Fatalf("callback error lost: %v", err)
	}
	r.Close()
	if _, err := r.ReadEntries(context.Background(), 0, 0); err == nil {
		t.Fatal("read after Close succeeded")
	}
}

func ExampleReader() {
	payloads := [][]byte{[]byte("hello"), []byte("world")}
	l := LedgerOf(3, payloads)
	data, layout, _ := Encode(l, EncoderOptions{}, payloads)
	md := goldenMetadata()
	md.LastEntryId, md.Length = proto.Int64(l.LastEntryID), proto.Int64(l.Length)
	ix, _ := layout.Index(md).Marshal()

	// Any blob.Store works; here the fs provider in a scratch directory.
	dir, _ := os.MkdirTemp("", "format-example-")
	defer os.RemoveAll(dir)
	store, _ := fs.New(fs.Config{Dir: dir, NoSync: true}, fs.Options{})
	ctx := context.Background()
	id := uuid.MustParse("00000000-0000-4000-8000-000000000001")
	store.Put(ctx, DataKey(id, 3), bytes.NewReader(data), int64(len(data)), blob.PutOptions{Metadata: ObjectInfo{}.Metadata(RoleData)})
	store.Put(ctx, IndexKey(id, 3), bytes.NewReader(ix), int64(len(ix)), blob.PutOptions{Metadata: ObjectInfo{}.Metadata(RoleIndex)})

	r, _ := Open(ctx, store, id, 3, nil)
	defer r.Close()
	_ = r.Read(ctx, 0, 1, func(id int64, p []byte) error {
		fmt.Println(id, string(p))
		return nil
	})
	// Output:
	// 0 hello
	// 1 world
}

// ReadIndex retries a failed index GET up to its budget (through
// internal/retry), and stops at once on an error not worth retrying.
func TestReadIndexRetries(t *testing.T) {
	f := newFixture(t, [][]byte{[]byte("a"), []byte("b")}, 1024)
	ik := IndexKey(f.id, f.ledger)
	transient := errors.New("connection reset")
	for _, c := range []struct {
		name      string
		failures  int
		err       error
		wantGets  int
		wantError error
	}{
		{"two transient failures", 2, transient, 3, nil},
		{"budget exhausted", 10, transient, 4, transient},
		{"not found is final", 10, blob.ErrNotFound, 1, blob.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			var gets atomic.Int64
			f.store.Hook = func(op, key string, _ int) error {
				if op == blob.OpGet && key == ik && gets.Add(1) <= int64(c.failures) {
					return c.err
				}
				return nil
			}
			defer func() { f.store.Hook = nil }()
			ix, raw, err := ReadIndex(context.Background(), f.store, ik, 3)
			if got := gets.Load(); got != int64(c.wantGets) {
				t.Errorf("%d index GETs, want %d", got, c.wantGets)
			}
			if c.wantError != nil {
				if !errors.Is(err, c.wantError) {
					t.Fatalf("err = %v, want %v", err, c.wantError)
				}
				return
			}
			if err != nil || ix == nil || len(raw) == 0 || ix.LastEntryID() != 1 {
				t.Fatalf("ReadIndex = %v, %d bytes, %v", ix, len(raw), err)
			}
		})
	}
}
