package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/tierkeeper/tierkeeper/internal/allocs"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

func TestReadRequestV2Golden(t *testing.T) {
	// Hand-assembled: frame len 20 | header (version 2 << 24 | READENTRY 2
	// << 16 | no flag) | ledgerId 7 | entryId 3.
	want, _ := hex.DecodeString("00000014" + "02020000" + "0000000000000007" + "0000000000000003")
	if got := AppendReadRequestV2(nil, 7, 3); !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}

// v2Response is a v2 read response frame body: header, rc, ids, entry.
func v2Response(rc int32, ledger, entry int64, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 2<<24|2<<16)
	b = binary.BigEndian.AppendUint32(b, uint32(rc))
	b = binary.BigEndian.AppendUint64(b, uint64(ledger))
	b = binary.BigEndian.AppendUint64(b, uint64(entry))
	return append(b, body...)
}

func TestDecodeReadResponseV2(t *testing.T) {
	frame := v2Response(0, 7, 3, []byte("entry bytes"))
	r, err := DecodeReadResponseV2(frame)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != 2 || r.Operation != int32(bkproto.OperationType_READ_ENTRY) || r.EffectiveStatus() != bkproto.StatusCode_EOK ||
		r.Read.LedgerID != 7 || r.Read.EntryID != 3 || string(r.Read.Body) != "entry bytes" {
		t.Fatalf("decoded %+v, read %+v", r, r.Read)
	}
	if &r.Read.Body[0] != &frame[ReadResponseV2Header] || cap(r.Read.Body) != len(r.Read.Body) {
		t.Fatal("the entry is copied, or its slice reaches past the frame's end")
	}
	if r, err := DecodeReadResponseV2(v2Response(0, 7, 4, nil)); err != nil || r.Read.Body == nil || len(r.Read.Body) != 0 {
		t.Fatalf("an empty entry: %+v, %v", r, err)
	}
	// Every v2 return code reads as its v3 status (BookieProtocol against
	// BookkeeperProtocol.proto).
	for rc, want := range map[int32]bkproto.StatusCode{
		1: bkproto.StatusCode_ENOLEDGER, 2: bkproto.StatusCode_ENOENTRY, 100: bkproto.StatusCode_EBADREQ,
		101: bkproto.StatusCode_EIO, 102: bkproto.StatusCode_EUA, 103: bkproto.StatusCode_EBADVERSION,
		104: bkproto.StatusCode_EFENCED, 105: bkproto.StatusCode_EREADONLY, 106: bkproto.StatusCode_ETOOMANYREQUESTS,
	} {
		r, err := DecodeReadResponseV2(v2Response(rc, 7, 3, nil))
		if err != nil || r.EffectiveStatus() != want || r.Read.Body != nil {
			t.Errorf("return code %d: %+v, %v; want status %v", rc, r, err, want)
		}
	}
}

func TestDecodeReadResponseV2Rejects(t *testing.T) {
	ok := v2Response(0, 7, 3, []byte("x"))
	wrongVersion := append([]byte{3}, ok[1:]...)
	wrongOp := append([]byte{2, 1}, ok[2:]...)
	for name, b := range map[string][]byte{
		"empty":                  nil,
		"short header":           ok[:ReadResponseV2Header-1],
		"version 3":              wrongVersion,
		"ADDENTRY":               wrongOp,
		"unknown return code":    v2Response(7, 7, 3, nil),
		"an entry with ENOENTRY": v2Response(2, 7, 3, []byte("x")),
		"a v3 response":          AppendReadRequest(nil, 1, 2, 3)[4:],
	} {
		if r, err := DecodeReadResponseV2(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %+v, %v; want ErrMalformed", name, r, err)
		}
	}
}

// FuzzDecodeReadResponseV2: any input decodes or fails with ErrMalformed,
// never panics; a decoded response holds the input's ids and, for EOK, the
// rest of the input as the entry, not a copy; and the decoder allocates
// the same two small structs whatever the input's size.
func FuzzDecodeReadResponseV2(f *testing.F) {
	f.Add(v2Response(0, 7, 3, []byte("entry bytes")))
	f.Add(v2Response(2, 7, 3, nil))
	f.Add(v2Response(106, -1, -1, nil))
	f.Add([]byte{})
	f.Add(AppendReadRequestV2(nil, 1, 2)[4:])
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeReadResponseV2(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		q := r.Read
		if q.LedgerID != int64(binary.BigEndian.Uint64(b[8:])) || q.EntryID != int64(binary.BigEndian.Uint64(b[16:])) {
			t.Fatalf("ids %d/%d from %x", q.LedgerID, q.EntryID, b[:ReadResponseV2Header])
		}
		if q.Status == bkproto.StatusCode_EOK {
			if len(q.Body) != len(b)-ReadResponseV2Header || (len(q.Body) > 0 && &q.Body[0] != &b[ReadResponseV2Header]) {
				t.Fatalf("entry of %d bytes from a frame of %d, or a copy", len(q.Body), len(b))
			}
		} else if q.Body != nil {
			t.Fatalf("status %v with an entry", q.Status)
		}
		if got := allocs.Bytes(3, func() { _, _ = DecodeReadResponseV2(b) }); got > 256 {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(b), got)
		}
	})
}

// A response appended by AppendReadResponseV2 decodes to what went in, for
// every status v2 has; a status it does not have goes out as EIO, and an
// entry goes out only with EOK.
func TestReadResponseV2RoundTrip(t *testing.T) {
	for _, rc := range v2ReturnCodes() {
		st, _ := v2Status(rc)
		frame := AppendReadResponseV2(nil, st, 9, 4, []byte("stored entry"))
		if got, ok := V2ReturnCode(st); !ok || got != rc {
			t.Errorf("V2ReturnCode(%v) = %d, %v; want %d", st, got, ok, rc)
		}
		r, err := DecodeReadResponseV2(frame[4:])
		if err != nil || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
			t.Fatalf("%v: %v (frame length %d for %d bytes)", st, err, binary.BigEndian.Uint32(frame), len(frame)-4)
		}
		wantBody := st == bkproto.StatusCode_EOK
		if r.EffectiveStatus() != st || r.Read.LedgerID != 9 || r.Read.EntryID != 4 || (r.Read.Body != nil) != wantBody {
			t.Errorf("%v: decoded %+v", st, r.Read)
		}
	}
	if _, ok := V2ReturnCode(bkproto.StatusCode_EUNKNOWNLEDGERSTATE); ok {
		t.Error("a status v2 does not have has a v2 return code")
	}
	r, err := DecodeReadResponseV2(AppendReadResponseV2(nil, bkproto.StatusCode_EUNKNOWNLEDGERSTATE, 9, 4, nil)[4:])
	if err != nil || r.EffectiveStatus() != bkproto.StatusCode_EIO {
		t.Errorf("an unknown status went out as %+v, %v; want EIO", r, err)
	}
}
