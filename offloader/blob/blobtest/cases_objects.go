package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// The cases of single objects: reads, writes, metadata, keys, listing,
// deletion and argument checks.

func caseNotFound(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	if _, err := store.Head(ctx, "missing/obj"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Head missing: err = %v, want ErrNotFound", err)
	}
	if rc, _, err := store.Get(ctx, "missing/obj"); !errors.Is(err, blob.ErrNotFound) {
		closeIf(rc)
		t.Errorf("Get missing: err = %v, want ErrNotFound", err)
	}
	if rc, _, err := store.GetRange(ctx, "missing/obj", 0, 1); !errors.Is(err, blob.ErrNotFound) {
		closeIf(rc)
		t.Errorf("GetRange missing: err = %v, want ErrNotFound", err)
	}
	if err := store.Delete(ctx, "missing/obj"); err != nil {
		t.Errorf("Delete missing: %v, want nil", err)
	}
	n := 0
	if err := store.Iter(ctx, "missing/", func(blob.Attrs) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("Iter missing prefix: %d objects, err %v", n, err)
	}
}

func casePutGetMetadata(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	body := e.data(10_000)
	start := time.Now().Add(-5 * time.Minute)
	md := map[string]string{"S3ManagedLedgerOffloaderFormatVersion": "1", "role": "data", "managedledgername": "public/default/persistent/t1"}
	a, err := store.Put(ctx, "put/obj", bytes.NewReader(body), int64(len(body)), blob.PutOptions{Metadata: md})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if a.Key != "put/obj" || a.Size != int64(len(body)) || a.ETag == "" {
		t.Errorf("Put attrs = %+v", a)
	}
	want := map[string]string{"s3managedledgeroffloaderformatversion": "1", "role": "data", "managedledgername": "public/default/persistent/t1"}
	h, err := store.Head(ctx, "put/obj")
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	checkAttrs(t, "Head", h, "put/obj", int64(len(body)), want, start)
	if strings.Contains(h.ETag, `"`) {
		t.Errorf("ETag %q has quotes", h.ETag)
	}
	if h.ETag != a.ETag {
		t.Errorf("Head ETag %q != Put ETag %q", h.ETag, a.ETag)
	}
	got, ga := readAll(t, ctx, store, "put/obj", 0, -1)
	if !bytes.Equal(got, body) {
		t.Fatalf("Get returned %d bytes, not the %d put", len(got), len(body))
	}
	checkAttrs(t, "Get", ga, "put/obj", int64(len(body)), want, start)

	// No metadata at all.
	if _, err := store.Put(ctx, "put/plain", bytes.NewReader(body[:10]), 10, blob.PutOptions{}); err != nil {
		t.Fatalf("Put plain: %v", err)
	}
	h, err = store.Head(ctx, "put/plain")
	if err != nil || len(h.Metadata) != 0 || h.Size != 10 {
		t.Errorf("Head plain = %+v, %v; want size 10, no metadata", h, err)
	}
}

func caseEmptyObject(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	if _, err := store.Put(ctx, "empty/obj", bytes.NewReader(nil), 0, blob.PutOptions{}); err != nil {
		t.Fatalf("Put empty: %v", err)
	}
	h, err := store.Head(ctx, "empty/obj")
	if err != nil || h.Size != 0 {
		t.Fatalf("Head empty = %+v, %v", h, err)
	}
	for _, r := range [][2]int64{{0, -1}, {0, 0}} {
		if got, _ := readAll(t, ctx, store, "empty/obj", r[0], r[1]); len(got) != 0 {
			t.Errorf("GetRange(%d,%d) of empty object gave %d bytes", r[0], r[1], len(got))
		}
	}
	for _, r := range [][2]int64{{0, 1}, {1, -1}} {
		if rc, _, err := store.GetRange(ctx, "empty/obj", r[0], r[1]); !errors.Is(err, blob.ErrInvalidRange) {
			closeIf(rc)
			t.Errorf("GetRange(%d,%d) of empty object: err = %v, want ErrInvalidRange", r[0], r[1], err)
		}
	}
}

func caseRanges(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	const size = 1000
	body := e.data(size)
	if _, err := store.Put(ctx, "range/obj", bytes.NewReader(body), size, blob.PutOptions{Metadata: map[string]string{"k": "v"}}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	valid := [][2]int64{{0, 1}, {0, size}, {0, -1}, {1, -1}, {size - 1, 1}, {size - 1, -1}, {500, 0}, {size, -1}, {size, 0}, {123, 456}, {0, 0}}
	for _, r := range valid {
		got, a := readAll(t, ctx, store, "range/obj", r[0], r[1])
		end := int64(size)
		if r[1] >= 0 {
			end = r[0] + r[1]
		}
		if !bytes.Equal(got, body[r[0]:end]) {
			t.Errorf("GetRange(%d,%d): got %d bytes, want %d (content differs or length)", r[0], r[1], len(got), end-r[0])
		}
		if r[1] != 0 && (a.Size != size || a.Metadata["k"] != "v") {
			t.Errorf("GetRange(%d,%d) attrs = %+v, want object size %d and metadata", r[0], r[1], a, size)
		}
	}
	invalid := [][2]int64{{-1, 5}, {size, 1}, {size + 1, -1}, {size + 1, 0}, {990, 20}, {0, size + 1}, {-5, -1}}
	for _, r := range invalid {
		if rc, _, err := store.GetRange(ctx, "range/obj", r[0], r[1]); !errors.Is(err, blob.ErrInvalidRange) {
			closeIf(rc)
			t.Errorf("GetRange(%d,%d): err = %v, want ErrInvalidRange", r[0], r[1], err)
		}
	}
}

func caseOverwrite(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	v1, v2 := e.data(3000), e.data(1234)
	if _, err := store.Put(ctx, "over/obj", bytes.NewReader(v1), int64(len(v1)), blob.PutOptions{Metadata: map[string]string{"a": "1", "both": "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, "over/obj", bytes.NewReader(v2), int64(len(v2)), blob.PutOptions{Metadata: map[string]string{"b": "2", "both": "y"}}); err != nil {
		t.Fatal(err)
	}
	got, a := readAll(t, ctx, store, "over/obj", 0, -1)
	if !bytes.Equal(got, v2) {
		t.Errorf("after overwrite got %d bytes, want the second version (%d bytes)", len(got), len(v2))
	}
	if !mapsEqual(a.Metadata, map[string]string{"b": "2", "both": "y"}) {
		t.Errorf("after overwrite metadata = %v, want only the second version's", a.Metadata)
	}
}

func caseSpecialKeys(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	keys := []string{"special/sp ace", "special/ü-ñ-漢字", "special/a+b=c&d", "special/q?x#y%20z", "special/semi;colon,comma", "special/(paren)[br]{c}'q'", "special/~tilde*star!"}
	for i, k := range keys {
		b := []byte(fmt.Sprintf("v%d", i))
		if _, err := store.Put(ctx, k, bytes.NewReader(b), int64(len(b)), blob.PutOptions{}); err != nil {
			t.Fatalf("Put %q: %v", k, err)
		}
		if got, _ := readAll(t, ctx, store, k, 0, -1); !bytes.Equal(got, b) {
			t.Errorf("Get %q = %q, want %q", k, got, b)
		}
	}
	listed := iterKeys(t, ctx, store, "special/")
	want := slices.Clone(keys)
	sort.Strings(want)
	if !slices.Equal(listed, want) {
		t.Errorf("Iter(special/) = %q, want %q", listed, want)
	}
}

func caseIterSortedByPrefix(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	keys := []string{"iter/b", "iter/a", "iter/a-b", "iter/c/d", "iter/c/e/f", "iter/ab", "iter/Z", "iter/ü", "iter/0", "iter/a.b", "iter/c0"}
	// No key is both an object and a "directory" of others ("iter" and
	// "iter/b"): directory-backed servers (versitygw posix) refuse it.
	others := []string{"iterx", "iter-", "other/iter/a"}
	for _, k := range append(slices.Clone(keys), others...) {
		if _, err := store.Put(ctx, k, bytes.NewReader([]byte(k)), int64(len(k)), blob.PutOptions{}); err != nil {
			t.Fatalf("Put %q: %v", k, err)
		}
	}
	want := slices.Clone(keys)
	sort.Strings(want) // byte order = UTF-8 order
	var sizes []int64
	var got []string
	if err := store.Iter(ctx, "iter/", func(a blob.Attrs) error {
		got = append(got, a.Key)
		sizes = append(sizes, a.Size)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Iter(iter/) = %q\nwant %q", got, want)
	}
	for i, k := range got {
		if i < len(sizes) && sizes[i] != int64(len(k)) {
			t.Errorf("Iter size of %q = %d, want %d", k, sizes[i], len(k))
		}
	}
	if got := iterKeys(t, ctx, store, "iter/c/"); !slices.Equal(got, []string{"iter/c/d", "iter/c/e/f"}) {
		t.Errorf("Iter(iter/c/) = %q", got)
	}
	if got := iterKeys(t, ctx, store, "iter/a"); !slices.Equal(got, []string{"iter/a", "iter/a-b", "iter/a.b", "iter/ab"}) {
		t.Errorf("Iter(iter/a) = %q", got)
	}
	if got := iterKeys(t, ctx, store, "iter"); len(got) != len(keys)+2 {
		t.Errorf("Iter(iter) = %q, want %d keys", got, len(keys)+2)
	}
	stop := errors.New("stop")
	n := 0
	err := store.Iter(ctx, "iter/", func(blob.Attrs) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Errorf("Iter stopping at 3: n=%d err=%v, want the callback's error", n, err)
	}
}

func caseDeleteIdempotent(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	if _, err := store.Put(ctx, "del/obj", strings.NewReader("x"), 1, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := store.Delete(ctx, "del/obj"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := store.Head(ctx, "del/obj"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Head after delete: %v, want ErrNotFound", err)
	}
	if got := iterKeys(t, ctx, store, "del/"); len(got) != 0 {
		t.Errorf("Iter after delete = %q", got)
	}
}

func caseInvalidArguments(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	if _, err := store.Put(ctx, "", strings.NewReader("x"), 1, blob.PutOptions{}); !errors.Is(err, blob.ErrInvalidArgument) {
		t.Errorf("Put empty key: %v, want ErrInvalidArgument", err)
	}
	if _, err := store.Put(ctx, "inv/md", strings.NewReader("x"), 1, blob.PutOptions{Metadata: map[string]string{"bad key": "v"}}); !errors.Is(err, blob.ErrInvalidArgument) {
		t.Errorf("Put bad metadata key: %v, want ErrInvalidArgument", err)
	}
	if _, err := store.Put(ctx, "inv/md", strings.NewReader("x"), 1, blob.PutOptions{Metadata: map[string]string{"k": "line\nbreak"}}); !errors.Is(err, blob.ErrInvalidArgument) {
		t.Errorf("Put bad metadata value: %v, want ErrInvalidArgument", err)
	}
	if _, err := store.Head(ctx, "inv/md"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("rejected Put stored something: Head = %v", err)
	}
}

func casePutShortReader(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	_, err := store.Put(ctx, "short/obj", strings.NewReader("only ten b"), 20, blob.PutOptions{})
	if err == nil {
		t.Fatal("Put with a reader shorter than size succeeded")
	}
	if _, err := store.Head(ctx, "short/obj"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("failed Put left an object: Head = %v", err)
	}
}

func casePutCancelled(t *testing.T, store blob.Store, e *env) {
	ctx, cancel := context.WithCancel(e.ctx(t))
	cancel()
	_, err := store.Put(ctx, "cancel/obj", strings.NewReader("abc"), 3, blob.PutOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Put with cancelled context: %v, want context.Canceled", err)
	}
	if _, err := store.Head(e.ctx(t), "cancel/obj"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("cancelled Put stored an object: Head = %v", err)
	}
}
