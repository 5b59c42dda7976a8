package upload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/crc32c"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/memblob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
)

const mib = 1 << 20

// ledger is a synthetic ledger held in memory.
type ledger struct {
	id       int64
	payloads [][]byte
}

func newLedger(seed uint64, n int, size func(rng *rand.Rand) int) *ledger {
	rng := rand.New(rand.NewPCG(seed, 99))
	l := &ledger{id: int64(seed)}
	for range n {
		p := make([]byte, size(rng))
		for j := 0; j < len(p); j += 8 {
			v := rng.Uint64()
			for k := 0; k < 8 && j+k < len(p); k++ {
				p[j+k] = byte(v >> (8 * k))
			}
		}
		l.payloads = append(l.payloads, p)
	}
	return l
}

func (l *ledger) ledger() format.Ledger { return format.LedgerOf(l.id, l.payloads) }

func (l *ledger) request() Request {
	fl := l.ledger()
	md, err := format.IndexMetadata(&bkproto.LedgerMetadataFormat{
		QuorumSize: proto.Int32(2), EnsembleSize: proto.Int32(3), AckQuorumSize: proto.Int32(2),
		Length: proto.Int64(fl.Length), LastEntryId: proto.Int64(fl.LastEntryID),
		State:      bkproto.LedgerMetadataFormat_CLOSED.Enum(),
		DigestType: bkproto.LedgerMetadataFormat_CRC32C.Enum(), Password: []byte{},
		Ctime: proto.Int64(1700000000000),
		Segment: []*bkproto.LedgerMetadataFormat_Segment{{
			EnsembleMember: []string{"127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183"}, FirstEntryId: proto.Int64(0)}},
	})
	if err != nil {
		panic(err)
	}
	return Request{UUID: uuid.New(), Ledger: fl, Metadata: md, ManagedLedgerName: "public/default/persistent/t1"}
}

// source yields the ledger's entries, optionally failing at entry failAt.
type source struct {
	l      *ledger
	next   int
	failAt int
}

func (s *source) Next(context.Context) (int64, []byte, error) {
	if s.next >= len(s.l.payloads) {
		return 0, nil, io.EOF
	}
	if s.failAt > 0 && s.next == s.failAt {
		return 0, nil, errors.New("bookie went away")
	}
	s.next++
	return int64(s.next - 1), s.l.payloads[s.next-1], nil
}

func (l *ledger) src() *source { return &source{l: l} }

func mustNew(t *testing.T, store blob.Writer, o *Options) *Uploader {
	t.Helper()
	u, err := New(store, o)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// assertEmpty checks that a failed upload left nothing behind.
func assertEmpty(t *testing.T, store *memblob.Store) {
	t.Helper()
	if keys := store.Keys(); len(keys) != 0 {
		t.Fatalf("objects left behind: %v", keys)
	}
	if ups, _ := store.ListMultipart(context.Background(), ""); len(ups) != 0 {
		t.Fatalf("multipart uploads left behind: %v", ups)
	}
}

func TestUploadMultiBlock(t *testing.T) {
	l := newLedger(1, 400, func(r *rand.Rand) int { return 1 + r.IntN(100<<10) }) // ~20 MiB
	store := memblob.New()
	store.MinPartSize = format.MinPartSize
	store.PartDelay = 5 * time.Millisecond
	// Part 1 waits (bounded) until part 2 has started: with 2 parts in
	// flight it must; uploaded one at a time it never does.
	part2 := make(chan struct{})
	var once sync.Once
	store.Hook = func(op string, _ string, part int) error {
		switch {
		case op == blob.OpUploadPart && part == 1:
			select {
			case <-part2:
			case <-time.After(10 * time.Second):
			}
		case op == blob.OpUploadPart && part == 2:
			once.Do(func() { close(part2) })
		}
		return nil
	}
	reg := prometheus.NewRegistry()
	u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib, PartsInFlight: 2, Registerer: reg})
	req := l.request()
	res, err := u.Upload(context.Background(), req, l.src())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Multipart || res.Blocks < 4 {
		t.Fatalf("multipart %v with %d blocks", res.Multipart, res.Blocks)
	}
	// Finish's time split: the last part still uploading (>= most of its
	// 5 ms delay: nothing waits for it before Finish), the completion,
	// the index PUT.
	if f := res.Finish; f.LastParts < 2*time.Millisecond || f.Complete <= 0 || f.Index <= 0 {
		t.Errorf("finish times %+v: want all three timed", f)
	}
	if p := store.PeakPartsInFlight(); p != 2 {
		t.Fatalf("peak parts in flight %d, want 2", p)
	}
	// The stored object is exactly the reference encoding.
	want, layout, err := format.Encode(l.ledger(), format.EncoderOptions{MaxBlockSize: 5 * mib}, l.payloads)
	if err != nil {
		t.Fatal(err)
	}
	got, md, ok := store.Object(res.DataKey)
	if !ok || !bytes.Equal(got, want) || res.DataObjectLength != layout.DataObjectLength {
		t.Fatalf("stored data object differs from the reference encoding (%d vs %d bytes)", len(got), len(want))
	}
	if md["role"] != "data" || md[format.MetaFormatVersion] != "1" || md["managedledgername"] != "public/default/persistent/t1" ||
		!strings.HasPrefix(md[format.MetaSoftwareVersion], "tierkeeper-") {
		t.Fatalf("data metadata %v", md)
	}
	ixRaw, imd, _ := store.Object(res.IndexKey)
	wantIx, _ := layout.Index(req.Metadata).Marshal()
	if !bytes.Equal(ixRaw, wantIx) || imd["role"] != "index" {
		t.Fatalf("index bytes or metadata differ: %v", imd)
	}
	if err := Verify(context.Background(), store, res, &VerifyOptions{BlockHeaders: true}); err != nil {
		t.Fatal(err)
	}
	r, err := format.Open(context.Background(), store, req.UUID, l.id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	i := 0
	if err := r.Read(context.Background(), 0, r.LastEntryID(), func(id int64, p []byte) error {
		if !bytes.Equal(p, l.payloads[id]) {
			return fmt.Errorf("entry %d differs", id)
		}
		i++
		return nil
	}); err != nil || i != len(l.payloads) {
		t.Fatalf("read back %d entries: %v", i, err)
	}
	if n := testutil.ToFloat64(u.m.parts); n != float64(res.Blocks) {
		t.Fatalf("parts metric %v, want %d", n, res.Blocks)
	}
	if n := testutil.ToFloat64(u.m.bytes); n != float64(res.DataObjectLength+int64(len(res.IndexBytes))) {
		t.Fatalf("bytes metric %v", n)
	}

	// A second Uploader on the same registry (promauto.With panicked here)
	// counts into the same series.
	u2 := mustNew(t, store, &Options{MaxBlockSize: 5 * mib, PartsInFlight: 2, Registerer: reg})
	req2 := l.request()
	req2.Ledger.ID++
	res2, err := u2.Upload(context.Background(), req2, l.src())
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(u.m.parts); n != float64(res.Blocks+res2.Blocks) {
		t.Fatalf("parts metric %v after two uploaders, want %d", n, res.Blocks+res2.Blocks)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestUploadSingleBlockUsesPut(t *testing.T) {
	l := newLedger(2, 10, func(r *rand.Rand) int { return 100 })
	store := memblob.New()
	u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib})
	res, err := u.Upload(context.Background(), l.request(), l.src())
	if err != nil {
		t.Fatal(err)
	}
	if res.Multipart || store.Count(blob.OpCreateMultipart) != 0 || store.Count(blob.OpPut) != 2 {
		t.Fatalf("single-block ledger: multipart=%v creates=%d puts=%d", res.Multipart, store.Count(blob.OpCreateMultipart), store.Count(blob.OpPut))
	}
	if res.DataObjectLength != 128+10*(12+100) || res.Index.Blocks[0].PartID != 1 {
		t.Fatalf("result %+v", res)
	}
	// The single PUT counts as the last part; there is no completion.
	if f := res.Finish; f.LastParts <= 0 || f.Complete != 0 || f.Index <= 0 {
		t.Errorf("finish times %+v: want the PUT and the index timed, no completion", f)
	}
	if err := Verify(context.Background(), store, res, &VerifyOptions{BlockHeaders: true}); err != nil {
		t.Fatal(err)
	}

	// MultipartAlways does as Pulsar: one part.
	store2 := memblob.New()
	u2 := mustNew(t, store2, &Options{MaxBlockSize: 5 * mib, Multipart: MultipartAlways})
	res2, err := u2.Upload(context.Background(), l.request(), l.src())
	if err != nil {
		t.Fatal(err)
	}
	if !res2.Multipart || store2.Count(blob.OpUploadPart) != 1 || store2.Count(blob.OpPut) != 1 {
		t.Fatalf("MultipartAlways: parts=%d puts=%d", store2.Count(blob.OpUploadPart), store2.Count(blob.OpPut))
	}
	a, _, _ := store.Object(res.DataKey)
	b, _, _ := store2.Object(res2.DataKey)
	if !bytes.Equal(a, b) {
		t.Fatal("single PUT and multipart objects differ")
	}
}

func TestUploadLedgerExactlyOneFullBlock(t *testing.T) {
	// Records filling exactly 5 MiB: still one block, single PUT.
	per := (5*mib - 128) / 4
	l := newLedger(3, 4, func(*rand.Rand) int { return per - 12 })
	if (5*mib-128)%4 != 0 {
		t.Fatal("bad arithmetic")
	}
	store := fsStore(t)
	u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib})
	res, err := u.Upload(context.Background(), l.request(), l.src())
	if err != nil {
		t.Fatal(err)
	}
	if res.Blocks != 1 || res.Multipart || res.DataObjectLength != 5*mib {
		t.Fatalf("blocks %d multipart %v length %d", res.Blocks, res.Multipart, res.DataObjectLength)
	}
	if err := Verify(context.Background(), store, res, &VerifyOptions{BlockHeaders: true}); err != nil {
		t.Fatal(err)
	}
}

func TestUploadFailuresLeaveNothing(t *testing.T) {
	l := newLedger(4, 300, func(r *rand.Rand) int { return 1 + r.IntN(100<<10) })
	boom := errors.New("injected 503")
	cases := []struct {
		name  string
		hook  func(op string, key string, part int) error
		src   func() EntrySource
		stage string
	}{
		{"part 3 fails", func(op string, _ string, part int) error {
			if op == blob.OpUploadPart && part == 3 {
				return boom
			}
			return nil
		}, nil, stagePart},
		{"complete fails", func(op string, _ string, _ int) error {
			if op == blob.OpCompleteMultipart {
				return boom
			}
			return nil
		}, nil, stageComplete},
		{"index put fails", func(op string, key string, _ int) error {
			if op == blob.OpPut && strings.HasSuffix(key, "-index") {
				return boom
			}
			return nil
		}, nil, stageIndex},
		{"create fails", func(op string, _ string, _ int) error {
			if op == blob.OpCreateMultipart {
				return boom
			}
			return nil
		}, nil, stageCreate},
		{"entry source fails", nil, func() EntrySource { return &source{l: l, failAt: 150} }, stageEncode},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := memblob.New()
			store.Hook = c.hook
			pool := format.NewPool(5*mib, 3)
			u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib, PartsInFlight: 2, Pool: pool})
			src := EntrySource(l.src())
			if c.src != nil {
				src = c.src()
			}
			_, err := u.Upload(context.Background(), l.request(), src)
			if err == nil {
				t.Fatal("upload succeeded")
			}
			if c.src == nil && !errors.Is(err, boom) {
				t.Fatalf("error %v does not wrap the store error", err)
			}
			assertEmpty(t, store)
			if n := testutil.ToFloat64(u.m.failures.WithLabelValues(c.stage)); n != 1 {
				t.Fatalf("failures{stage=%s} = %v", c.stage, n)
			}
			// Every pool buffer is back.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			for i := range pool.Buffers() {
				if _, err := pool.Get(ctx, 10); err != nil {
					t.Fatalf("buffer %d not returned: %v", i, err)
				}
			}
		})
	}
}

func TestUploadCancelled(t *testing.T) {
	l := newLedger(5, 300, func(r *rand.Rand) int { return 1 + r.IntN(100<<10) })
	store := memblob.New()
	store.PartDelay = 50 * time.Millisecond
	u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib})
	ctx, cancel := context.WithCancel(context.Background())
	store.Hook = func(op string, _ string, part int) error {
		if op == blob.OpUploadPart && part == 2 {
			cancel()
		}
		return nil
	}
	_, err := u.Upload(ctx, l.request(), l.src())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	assertEmpty(t, store)
}

func TestSessionAbort(t *testing.T) {
	l := newLedger(6, 200, func(r *rand.Rand) int { return 1 + r.IntN(100<<10) })
	store := memblob.New()
	u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib})
	s, err := u.Begin(context.Background(), l.request())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		if err := s.Add(context.Background(), int64(i), l.payloads[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, store)
	if err := s.Add(context.Background(), 120, l.payloads[120]); !errors.Is(err, ErrSessionDone) {
		t.Fatalf("Add after Abort: %v", err)
	}
	if _, err := s.Finish(context.Background()); !errors.Is(err, ErrSessionDone) {
		t.Fatalf("Finish after Abort: %v", err)
	}
}

func TestUploadSharedPoolSmallerThanParallelism(t *testing.T) {
	// Two buffers for two concurrent ledgers with 4 parts in flight each:
	// must neither deadlock nor exceed the pool.
	store := memblob.New()
	pool := format.NewPool(5*mib, 2)
	u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib, PartsInFlight: 4, Pool: pool})
	errs := make(chan error, 2)
	for i := range 2 {
		l := newLedger(uint64(10+i), 200, func(r *rand.Rand) int { return 1 + r.IntN(100<<10) })
		go func() {
			res, err := u.Upload(context.Background(), l.request(), l.src())
			if err == nil {
				err = Verify(context.Background(), store, res, nil)
			}
			errs <- err
		}()
	}
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("uploads sharing a small pool deadlocked")
		}
	}
	if p := store.PeakPartsInFlight(); p > 2 {
		t.Fatalf("%d parts in flight with 2 buffers", p)
	}
}

func TestUploadRejectsBadRequests(t *testing.T) {
	l := newLedger(7, 3, func(*rand.Rand) int { return 10 })
	u := mustNew(t, memblob.New(), nil)
	mod := func(f func(r *Request)) Request { r := l.request(); f(&r); return r }
	for name, req := range map[string]Request{
		"no uuid":         mod(func(r *Request) { r.UUID = uuid.Nil }),
		"no metadata":     mod(func(r *Request) { r.Metadata = nil }),
		"open":            mod(func(r *Request) { r.Metadata.State = bkproto.LedgerMetadataFormat_OPEN.Enum() }),
		"lac mismatch":    mod(func(r *Request) { r.Metadata.LastEntryId = proto.Int64(5) }),
		"length mismatch": mod(func(r *Request) { r.Ledger.Length++ }),
		"missing quorum":  mod(func(r *Request) { r.Metadata.QuorumSize = nil }),
		"empty ledger": mod(func(r *Request) {
			r.Ledger.LastEntryID, r.Ledger.Length = -1, 0
			r.Metadata.LastEntryId, r.Metadata.Length = proto.Int64(-1), proto.Int64(0)
		}),
	} {
		if _, err := u.Begin(context.Background(), req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	for _, o := range []*Options{{MaxBlockSize: format.MinPartSize - 1}, {Pool: format.NewPool(mib, 1)}} {
		if _, err := New(memblob.New(), o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestUploadEntryTooLarge(t *testing.T) {
	l := newLedger(8, 2, func(*rand.Rand) int { return 5*mib - 128 - 12 + 1 })
	store := memblob.New()
	u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib})
	if _, err := u.Upload(context.Background(), l.request(), l.src()); !errors.Is(err, format.ErrRecordTooLarge) {
		t.Fatalf("err = %v, want ErrRecordTooLarge", err)
	}
	assertEmpty(t, store)
}

func TestVerifyDetectsMismatches(t *testing.T) {
	l := newLedger(9, 200, func(r *rand.Rand) int { return 1 + r.IntN(100<<10) })
	ctx := context.Background()
	cases := map[string]func(store *memblob.Store, res *Result){
		"data size": func(s *memblob.Store, res *Result) {
			b, md, _ := s.Object(res.DataKey)
			s.SetObject(res.DataKey, b[:len(b)-1], md)
		},
		"data version": func(s *memblob.Store, res *Result) {
			b, md, _ := s.Object(res.DataKey)
			delete(md, format.MetaFormatVersion)
			s.SetObject(res.DataKey, b, md)
		},
		"data role": func(s *memblob.Store, res *Result) {
			b, md, _ := s.Object(res.DataKey)
			md["role"] = "index"
			s.SetObject(res.DataKey, b, md)
		},
		"index bytes": func(s *memblob.Store, res *Result) {
			b, md, _ := s.Object(res.IndexKey)
			b[len(b)-1] ^= 1
			s.SetObject(res.IndexKey, b, md)
		},
		"block header": func(s *memblob.Store, res *Result) {
			b, md, _ := s.Object(res.DataKey)
			b[res.Index.Blocks[2].Offset+27] ^= 1
			s.SetObject(res.DataKey, b, md)
		},
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			store := memblob.New()
			u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib})
			res, err := u.Upload(ctx, l.request(), l.src())
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(ctx, store, res, &VerifyOptions{BlockHeaders: true}); err != nil {
				t.Fatal(err)
			}
			corrupt(store, res)
			if err := Verify(ctx, store, res, &VerifyOptions{BlockHeaders: true}); !errors.Is(err, ErrVerify) {
				t.Fatalf("Verify = %v, want ErrVerify", err)
			}
		})
	}
	store := memblob.New()
	if err := Verify(ctx, store, &Result{DataKey: "x", IndexKey: "y"}, nil); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("missing objects: %v", err)
	}
}

// TestAddSummed uploads a ledger whose entries come with their CRC-32C
// (AddSummed, as the copy passes the bookies' verified CRCs) mixed with
// plain Adds: every part goes out with the block's combined CRC, which
// memblob checks as S3 does, and the object reads back byte for byte. One
// wrong CRC makes its part refused (ErrBadDigest) and the upload fail,
// leaving nothing behind.
func TestAddSummed(t *testing.T) {
	l := newLedger(7, 120, func(r *rand.Rand) int { return 1 + r.IntN(200<<10) }) // ~12 MiB
	for _, lie := range []int{-1, 77} {
		store := memblob.New()
		store.MinPartSize = format.MinPartSize
		u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib, PartsInFlight: 2})
		req := l.request()
		ctx := context.Background()
		s, err := u.Begin(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range l.payloads {
			crc := crc32c.Checksum(p)
			switch {
			case i == lie:
				err = s.AddSummed(ctx, int64(i), p, crc^0x8000)
			case i%3 == 0:
				err = s.Add(ctx, int64(i), p)
			default:
				err = s.AddSummed(ctx, int64(i), p, crc)
			}
			if err != nil {
				break
			}
		}
		var res *Result
		if err == nil {
			res, err = s.Finish(ctx)
		}
		if lie >= 0 {
			if !errors.Is(err, blob.ErrBadDigest) {
				t.Fatalf("wrong CRC for entry %d: err = %v, want ErrBadDigest", lie, err)
			}
			if keys := store.Keys(); len(keys) != 0 {
				t.Fatalf("a failed upload left %v", keys)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		checkMultipartEncoding(t, store, res, l)
	}
}

// checkMultipartEncoding checks that res is a multipart upload whose data
// object in store is, byte for byte, l's encoding in 5 MiB blocks.
func checkMultipartEncoding(t *testing.T, store *memblob.Store, res *Result, l *ledger) {
	t.Helper()
	if res.Blocks < 2 {
		t.Fatalf("%d blocks, want a multipart upload", res.Blocks)
	}
	data, _, ok := store.Object(res.DataKey)
	if !ok {
		t.Fatalf("no data object %s", res.DataKey)
	}
	want, _, err := format.Encode(l.ledger(), format.EncoderOptions{MaxBlockSize: 5 * mib}, l.payloads)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("stored object (%d bytes) differs from the encoding (%d bytes)", len(data), len(want))
	}
}

// noCRCStore is memblob (which checks a part CRC-32C when one is given)
// saying it does not use part CRC-32Cs, as a Content-MD5, COS or fs store
// does.
type noCRCStore struct{ *memblob.Store }

func (noCRCStore) UsesPartCRC32C() bool { return false }

// A store that does not use part CRC-32Cs gets parts without one (the
// encoder computes none): a wrong CRC handed to AddSummed, which memblob
// would refuse if it were sent, does not reach it, and the object reads
// back as the encoding.
func TestNoPartCRC32CForStoresThatDoNotUseIt(t *testing.T) {
	l := newLedger(8, 120, func(r *rand.Rand) int { return 1 + r.IntN(200<<10) }) // ~12 MiB
	mem := memblob.New()
	mem.MinPartSize = format.MinPartSize
	store := noCRCStore{mem}
	u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib, PartsInFlight: 2})
	ctx := context.Background()
	s, err := u.Begin(ctx, l.request())
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range l.payloads {
		if err := s.AddSummed(ctx, int64(i), p, crc32c.Checksum(p)^0x8000); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	res, err := s.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkMultipartEncoding(t, mem, res, l)
}
