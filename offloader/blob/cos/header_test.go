package cos

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tierkeeper/tierkeeper/internal/allocs"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

func TestGetAnswer(t *testing.T) {
	h := http.Header{}
	h.Set("Content-Length", "10")
	h.Set("Content-Range", "bytes 5-14/100")
	h.Set("ETag", `"abc"`)
	h.Set("X-Cos-Meta-Role", "data")
	h.Set("X-Cos-Meta-", "nameless")
	a, body, _, crcOK, err := getAnswer("k", h, true, 5, 10)
	if err != nil || body != 10 || a.Size != 100 || a.ETag != "abc" || a.Metadata["role"] != "data" || len(a.Metadata) != 1 || crcOK {
		t.Fatalf("ranged answer: %+v, body %d, crc %v, %v", a, body, crcOK, err)
	}
	for _, cl := range []string{"-5", "+5", "", " 5", "5x", "0x10"} {
		h := http.Header{}
		h.Set("Content-Length", cl)
		h.Set("x-cos-hash-crc64ecma", "1")
		if _, _, _, _, err := getAnswer("k", h, false, 0, -1); err == nil {
			t.Errorf("Content-Length %q accepted", cl)
		}
		if _, err := headAnswer("k", h); err == nil {
			t.Errorf("HEAD Content-Length %q accepted", cl)
		}
	}
	h = http.Header{}
	h.Set("Content-Length", "7")
	h.Set("x-cos-hash-crc64ecma", "12345")
	if a, body, crc, ok, err := getAnswer("k", h, false, 0, -1); err != nil || body != 7 || a.Size != 7 || !ok || crc != 12345 {
		t.Errorf("whole object: %+v %d %d %v %v", a, body, crc, ok, err)
	}
}

// FuzzGetAnswer: COS response headers. An accepted answer gives a
// non-negative size, the body length the request asked for, named user
// metadata; a small header set allocates little.
func FuzzGetAnswer(f *testing.F) {
	f.Add("10", "bytes 5-14/100", "123", "role", "data", true, int64(5), int64(10))
	f.Add("100", "", "18446744073709551615", "Role", "x", false, int64(0), int64(-1))
	f.Add("-5", "", "", "", "", false, int64(0), int64(-1))
	f.Add("0", "bytes 0-0/1", "", "a", "", true, int64(1), int64(-1))
	f.Fuzz(func(t *testing.T, cl, cr, crc, metaKey, metaVal string, ranged bool, off, length int64) {
		h := http.Header{}
		h.Set("Content-Length", cl)
		if cr != "" {
			h.Set("Content-Range", cr)
		}
		h.Set("x-cos-hash-crc64ecma", crc)
		h["X-Cos-Meta-"+metaKey] = []string{metaVal}
		var (
			a    blob.Attrs
			body int64
			err  error
		)
		in := len(cl) + len(cr) + len(crc) + len(metaKey) + len(metaVal)
		if n := allocs.Bytes(2, func() { a, body, _, _, err = getAnswer("k", h, ranged, off, length) }); n > 4096+4*uint64(in) {
			t.Fatalf("getAnswer of %d header bytes allocated %d bytes", in, n)
		}
		if err != nil {
			return
		}
		if a.Size < 0 || body < 0 || body > a.Size {
			t.Fatalf("accepted size %d, body %d (Content-Length %q, Content-Range %q)", a.Size, body, cl, cr)
		}
		if ranged {
			if want, err := blob.ResolveRange(off, length, a.Size); err != nil || want != body {
				t.Fatalf("ranged answer for %d+%d: body %d of %d, ResolveRange %d %v", off, length, body, a.Size, want, err)
			}
		} else if body != a.Size {
			t.Fatalf("whole object: body %d, size %d", body, a.Size)
		}
		for k := range a.Metadata {
			if k == "" || k != strings.ToLower(k) {
				t.Fatalf("metadata key %q", k)
			}
		}
	})
}
