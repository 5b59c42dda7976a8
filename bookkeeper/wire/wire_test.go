package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/allocs"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/crc32c"
)

func TestReadRequestGolden(t *testing.T) {
	// Hand-assembled: frame len 15 | header{version 3, op READ_ENTRY, txn 5} | readRequest{ledger 7, entry 3}.
	want, _ := hex.DecodeString("0000000f" + "0a06080310011805" + "a20604" + "08071003")
	got := AppendReadRequest(nil, 5, 7, 3)
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}

func TestReadRequestMatchesProtobuf(t *testing.T) {
	cases := []struct {
		txn           uint64
		ledger, entry int64
	}{
		{0, 0, 0}, {1, 1, 1}, {math.MaxUint64, math.MaxInt64, math.MaxInt64},
		{42, 4294967296, -1}, {1 << 40, 123456789, 50000},
	}
	for _, c := range cases {
		frame := AppendReadRequest([]byte("prefix"), c.txn, c.ledger, c.entry)[len("prefix"):]
		body, err := ReadFrame(bytes.NewReader(frame), 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		var req bkproto.Request
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatalf("%+v: generated code rejects our request: %v", c, err)
		}
		h, rr := req.GetHeader(), req.GetReadRequest()
		if h.GetVersion() != bkproto.ProtocolVersion_VERSION_THREE || h.GetOperation() != bkproto.OperationType_READ_ENTRY ||
			h.GetTxnId() != c.txn || rr.GetLedgerId() != c.ledger || rr.GetEntryId() != c.entry {
			t.Fatalf("%+v: decoded %v", c, &req)
		}
		if rr.Flag != nil || rr.MasterKey != nil || rr.PreviousLAC != nil || rr.TimeOut != nil {
			t.Fatalf("read request carries flag/masterKey/long-poll fields: %v", rr)
		}
		// Byte-identical to the generated encoder.
		want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&req)
		if !bytes.Equal(body, want) {
			t.Fatalf("%+v: ours %x, protobuf %x", c, body, want)
		}
	}
}

func TestReadFrameBounds(t *testing.T) {
	big := []byte{0x7f, 0xff, 0xff, 0xff}
	allocated := false
	_, err := ReadFrame(bytes.NewReader(big), DefaultMaxFrameSize, func(n int) []byte { allocated = true; return make([]byte, n) })
	if !errors.Is(err, ErrFrameTooLarge) || allocated {
		t.Fatalf("oversized frame: err %v, allocated %t", err, allocated)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), DefaultMaxFrameSize, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("negative length: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 10, 1, 2}), 100, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated body: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0}), 100, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated length: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(nil), 100, nil); err != io.EOF {
		t.Fatalf("clean EOF: %v", err)
	}
	body, err := ReadFrame(bytes.NewReader(AppendFrame(nil, []byte("abc"))), 3, nil)
	if err != nil || string(body) != "abc" {
		t.Fatalf("exact-limit frame: %q %v", body, err)
	}
	// alloc provides the buffer, or declines it with nil.
	large := bytes.Repeat([]byte{7}, 100_000)
	buf := make([]byte, len(large))
	body, err = ReadFrame(bytes.NewReader(AppendFrame(nil, large)), DefaultMaxFrameSize, func(n int) []byte { return buf[:n] })
	if err != nil || !bytes.Equal(body, large) || &body[0] != &buf[0] {
		t.Fatalf("frame into a provided buffer: %v, equal %t", err, bytes.Equal(body, large))
	}
	body, err = ReadFrame(bytes.NewReader(AppendFrame(nil, large)), DefaultMaxFrameSize, func(int) []byte { return nil })
	if err != nil || !bytes.Equal(body, large) || &body[0] == &buf[0] {
		t.Fatalf("frame with the buffer declined: %v, equal %t", err, bytes.Equal(body, large))
	}
	// A declined buffer is allocated with room for a slightly longer
	// frame; without alloc, to the byte.
	if cap(body) != ReuseCap(len(large)) {
		t.Errorf("declined: cap %d, want %d", cap(body), ReuseCap(len(large)))
	}
	small, err := ReadFrame(bytes.NewReader(AppendFrame(nil, []byte("abc"))), 100, func(int) []byte { return nil })
	if err != nil || string(small) != "abc" || cap(small) != ReuseCap(3) {
		t.Errorf("small frame, declined: %q cap %d %v", small, cap(small), err)
	}
	if body, _ := ReadFrame(bytes.NewReader(AppendFrame(nil, large)), DefaultMaxFrameSize, nil); cap(body) != len(large) {
		t.Errorf("without alloc: cap %d, want %d", cap(body), len(large))
	}
}

func TestReuseCap(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 3000, 65536, 100_000, 1<<20 + 60, DefaultMaxFrameSize} {
		c := ReuseCap(n)
		// Room for the few bytes the ids' varints grow by, and under 1/32
		// more than the frame (plus the 64-byte floor) for large ones.
		if c < n+64 || c > n+128+n/32 {
			t.Errorf("ReuseCap(%d) = %d", n, c)
		}
	}
}

func marshalResponse(t testing.TB, r *bkproto.Response) []byte {
	b, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func okResponse(txn uint64, ledger, entry int64, body []byte) *bkproto.Response {
	return &bkproto.Response{
		Header: &bkproto.BKPacketHeader{Version: bkproto.ProtocolVersion_VERSION_THREE.Enum(),
			Operation: bkproto.OperationType_READ_ENTRY.Enum(), TxnId: proto.Uint64(txn)},
		Status: bkproto.StatusCode_EOK.Enum(),
		ReadResponse: &bkproto.ReadResponse{Status: bkproto.StatusCode_EOK.Enum(), LedgerId: proto.Int64(ledger),
			EntryId: proto.Int64(entry), Body: body, MaxLAC: proto.Int64(entry + 5)},
	}
}

func TestDecodeResponse(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 1000)
	frame := marshalResponse(t, okResponse(99, 7, 3, body))
	r, err := DecodeResponse(frame)
	if err != nil {
		t.Fatal(err)
	}
	if r.TxnID != 99 || r.Version != 3 || r.Operation != 1 || r.EffectiveStatus() != bkproto.StatusCode_EOK ||
		r.Read.LedgerID != 7 || r.Read.EntryID != 3 || !bytes.Equal(r.Read.Body, body) || !r.Read.HasMaxLAC || r.Read.MaxLAC != 8 {
		t.Fatalf("decoded %+v %+v", r, r.Read)
	}
	// Body aliases the frame: no copy.
	i := bytes.Index(frame, body)
	frame[i] = 'y'
	if r.Read.Body[0] != 'y' {
		t.Fatal("body is a copy, expected it to alias the frame")
	}

	// Error status at the top level wins.
	e := okResponse(1, 7, 3, nil)
	e.Status = bkproto.StatusCode_ETOOMANYREQUESTS.Enum()
	r, err = DecodeResponse(marshalResponse(t, e))
	if err != nil || r.EffectiveStatus() != bkproto.StatusCode_ETOOMANYREQUESTS {
		t.Fatalf("top-level status: %v %v", r, err)
	}
	// Read-level status.
	e = okResponse(1, 7, 3, nil)
	e.ReadResponse.Status = bkproto.StatusCode_ENOENTRY.Enum()
	r, err = DecodeResponse(marshalResponse(t, e))
	if err != nil || r.EffectiveStatus() != bkproto.StatusCode_ENOENTRY || r.Read.Body != nil {
		t.Fatalf("read status: %+v %v", r, err)
	}
	// EOK without readResponse is unusable.
	e = okResponse(1, 7, 3, nil)
	e.ReadResponse = nil
	r, err = DecodeResponse(marshalResponse(t, e))
	if err != nil || r.EffectiveStatus() != bkproto.StatusCode_EBADREQ {
		t.Fatalf("no readResponse: %+v %v", r, err)
	}
	// Empty body present is distinguished from absent.
	r, err = DecodeResponse(marshalResponse(t, okResponse(1, 7, 3, []byte{})))
	if err != nil || r.Read.Body == nil || len(r.Read.Body) != 0 {
		t.Fatalf("empty body: %+v %v", r.Read, err)
	}
	// Unknown fields (e.g. a future field, a group) are skipped.
	withUnknown := append(marshalResponse(t, okResponse(4, 7, 3, []byte("b"))), 0xb8, 0x06, 0x01) // field 103 varint
	if r, err = DecodeResponse(withUnknown); err != nil || r.TxnID != 4 {
		t.Fatalf("unknown field: %v", err)
	}
}

func TestDecodeResponseRejects(t *testing.T) {
	noHeader := okResponse(1, 2, 3, nil)
	noHeader.Header = nil
	noStatus := okResponse(1, 2, 3, nil)
	noStatus.Status = nil
	noTxn := okResponse(1, 2, 3, nil)
	noTxn.Header.TxnId = nil
	noEntry := okResponse(1, 2, 3, nil)
	noEntry.ReadResponse.EntryId = nil
	cases := map[string][]byte{
		"empty":       {},
		"garbage":     []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
		"v2 header":   {0x02, 0x02, 0x00, 0x00, 0, 0, 0, 0},
		"truncated":   marshalResponse(t, okResponse(1, 2, 3, []byte("hello")))[:20],
		"no header":   mustMarshalPartial(noHeader),
		"no status":   mustMarshalPartial(noStatus),
		"no txnId":    mustMarshalPartial(noTxn),
		"no entry id": mustMarshalPartial(noEntry),
	}
	for name, b := range cases {
		if _, err := DecodeResponse(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func mustMarshalPartial(m proto.Message) []byte {
	b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzDecodeResponse checks that the decoder never panics and, whenever both
// it and the generated protobuf code accept an input, that they agree.
func FuzzDecodeResponse(f *testing.F) {
	f.Add(marshalResponse(f, okResponse(99, 7, 3, []byte("entry bytes"))))
	e := okResponse(1, 7, 3, nil)
	e.ReadResponse.Status = bkproto.StatusCode_ENOLEDGER.Enum()
	f.Add(marshalResponse(f, e))
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x00, 0x10, 0x00})
	f.Add(AppendReadRequest(nil, 1, 2, 3)[4:])
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResponse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		_ = r.EffectiveStatus()
		var p bkproto.Response
		if proto.Unmarshal(b, &p) != nil {
			return // e.g. unknown enum values make required fields "missing" for protobuf
		}
		if p.GetHeader().GetTxnId() != r.TxnID || int32(p.GetStatus()) != int32(r.Status) ||
			int32(p.GetHeader().GetVersion()) != r.Version || int32(p.GetHeader().GetOperation()) != r.Operation {
			t.Fatalf("header/status differ: protobuf %v, ours %+v", &p, r)
		}
		if (p.ReadResponse != nil) != (r.Read != nil) {
			t.Fatalf("readResponse presence differs: protobuf %v, ours %+v", &p, r)
		}
		if pr := p.ReadResponse; pr != nil {
			q := r.Read
			if pr.GetLedgerId() != q.LedgerID || pr.GetEntryId() != q.EntryID || int32(pr.GetStatus()) != int32(q.Status) ||
				!bytes.Equal(pr.GetBody(), q.Body) || (pr.Body != nil) != (q.Body != nil) ||
				pr.GetMaxLAC() != q.MaxLAC || (pr.MaxLAC != nil) != q.HasMaxLAC {
				t.Fatalf("readResponse differs: protobuf %v, ours %+v", pr, q)
			}
		}
	})
}

// FuzzReadFrame: never more than the limit, never more than the input
// holds, and what a small input makes the reader allocate is small: a
// frame header claiming 5 MiB followed by less than 64 KiB costs at most
// 64 KiB, not megabytes.
func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(nil, []byte("abc")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0x00, 0x50, 0x00, 0x00, 1, 2, 3}) // claims 5 MiB, sends 3 bytes
	f.Add(append([]byte{0x00, 0x02, 0x00, 0x00}, make([]byte, 1<<17)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, limit := range []int{64, DefaultMaxFrameSize} {
			body, err := ReadFrame(bytes.NewReader(b), limit, nil)
			if err == nil && (len(body) > limit || len(b) < 4+len(body)) {
				t.Fatalf("frame of %d bytes from %d input bytes (limit %d)", len(body), len(b), limit)
			}
			// ReadFrameSum reads the same, and sums what it read.
			sbody, sum, serr := ReadFrameSum(bytes.NewReader(b), limit, nil)
			if (serr == nil) != (err == nil) || !bytes.Equal(sbody, body) || (sum.OK && sum.CRC32C != crc32c.Checksum(sbody)) || sum.OK != (serr == nil && len(sbody) >= SumMin) {
				t.Fatalf("ReadFrameSum: %d bytes, sum %+v, %v; ReadFrame: %d bytes, %v", len(sbody), sum, serr, len(body), err)
			}
		}
		got := allocs.Bytes(3, func() { _, _ = ReadFrame(bytes.NewReader(b), DefaultMaxFrameSize, nil) })
		bound := uint64(frameChunk + 4096)
		if len(b) >= 4+frameChunk {
			bound += uint64(len(b)) // the rest of a frame of at most len(b)-4 bytes
		}
		if got > bound {
			t.Fatalf("%d input bytes made ReadFrame allocate %d bytes (bound %d)", len(b), got, bound)
		}
	})
}

func TestReadFrameGrowsWithInput(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16)
	body, err := ReadFrame(bytes.NewReader(AppendFrame(nil, big)), DefaultMaxFrameSize, nil)
	if err != nil || !bytes.Equal(body, big) {
		t.Fatalf("3 MiB frame: %d bytes, %v", len(body), err)
	}
	// A 5 MiB claim with 10 bytes behind it.
	claim := append([]byte{0x00, 0x50, 0x00, 0x00}, make([]byte, 10)...)
	if _, err := ReadFrame(bytes.NewReader(claim), DefaultMaxFrameSize, nil); err != io.ErrUnexpectedEOF {
		t.Fatalf("short frame: %v", err)
	}
	if got := allocs.Bytes(3, func() { _, _ = ReadFrame(bytes.NewReader(claim), DefaultMaxFrameSize, nil) }); got > 128<<10 {
		t.Errorf("a 14-byte input claiming 5 MiB allocated %d bytes", got)
	}
}

// BenchmarkReadFrame1MiB: the cost of growing a 1 MiB body as it arrives.
func BenchmarkReadFrame1MiB(b *testing.B) {
	frame := AppendFrame(nil, make([]byte, 1<<20))
	r := bytes.NewReader(frame)
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		r.Reset(frame)
		if _, err := ReadFrame(r, DefaultMaxFrameSize, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// Hand-assembled: frame len 11 | header{version 3, op START_TLS (9), txn 7} |
// startTLSRequest (field 106, empty).
func TestStartTLSRequestGolden(t *testing.T) {
	want, _ := hex.DecodeString("0000000b" + "0a06080310091807" + "d20600")
	if got := AppendStartTLSRequest(nil, 7); !bytes.Equal(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

// chunkReader returns at most n bytes a read, like a socket.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestReadFrameSum: a body of at least SumMin bytes comes with the CRC-32C
// of all of it, however the input is cut, into a provided buffer or not;
// a smaller one with none; a truncated one fails as ReadFrame does.
func TestReadFrameSum(t *testing.T) {
	for _, n := range []int{SumMin - 1, SumMin, 100_000, 1<<20 + 3, 3 << 20} {
		big := make([]byte, n)
		for i := range big {
			big[i] = byte(i*7 + i>>11)
		}
		frame := AppendFrame(nil, big)
		for _, piece := range []int{1000, 64 << 10, 1 << 30} {
			for _, provided := range []bool{false, true} {
				var alloc func(int) []byte
				if provided {
					alloc = func(n int) []byte { return make([]byte, n, ReuseCap(n)) }
				}
				body, sum, err := ReadFrameSum(chunkReader{bytes.NewReader(frame), piece}, DefaultMaxFrameSize, alloc)
				if err != nil || !bytes.Equal(body, big) {
					t.Fatalf("%d bytes in pieces of %d: %v, equal %t", n, piece, err, bytes.Equal(body, big))
				}
				wantOK := n >= SumMin
				if sum.OK != wantOK || (wantOK && sum.CRC32C != crc32c.Checksum(big)) {
					t.Fatalf("%d bytes in pieces of %d (provided %t): sum %+v, want ok=%t crc %08x", n, piece, provided, sum, wantOK, crc32c.Checksum(big))
				}
			}
		}
		if _, _, err := ReadFrameSum(bytes.NewReader(frame[:len(frame)-1]), DefaultMaxFrameSize, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%d bytes, one short: %v", n, err)
		}
	}
}
