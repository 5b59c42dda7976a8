package blobtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// PartSize is the part size the multipart cases use: the S3 minimum.
const PartSize = blob.MinPartSize

// AcceptanceTest runs the contract suite against store, which must be backed
// by an empty bucket that no one else writes to. It does not close store.
func AcceptanceTest(t *testing.T, store blob.Store) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("blobtest: seed %d (store %s)", seed, store.Name())
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	rng := rand.NewChaCha8(key)
	ctxT := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t.Cleanup(cancel)
		return ctx
	}
	data := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rng.Read(b)
		return b
	}

	t.Run("NotFound", func(t *testing.T) {
		ctx := ctxT(t)
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
	})

	t.Run("PutGetMetadata", func(t *testing.T) {
		ctx := ctxT(t)
		body := data(10_000)
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
	})

	t.Run("EmptyObject", func(t *testing.T) {
		ctx := ctxT(t)
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
	})

	t.Run("Ranges", func(t *testing.T) {
		ctx := ctxT(t)
		const size = 1000
		body := data(size)
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
	})

	t.Run("Overwrite", func(t *testing.T) {
		ctx := ctxT(t)
		v1, v2 := data(3000), data(1234)
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
	})

	t.Run("SpecialKeys", func(t *testing.T) {
		ctx := ctxT(t)
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
	})

	t.Run("IterSortedByPrefix", func(t *testing.T) {
		ctx := ctxT(t)
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
	})

	t.Run("DeleteIdempotent", func(t *testing.T) {
		ctx := ctxT(t)
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
	})

	t.Run("InvalidArguments", func(t *testing.T) {
		ctx := ctxT(t)
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
	})

	t.Run("PutShortReader", func(t *testing.T) {
		ctx := ctxT(t)
		_, err := store.Put(ctx, "short/obj", strings.NewReader("only ten b"), 20, blob.PutOptions{})
		if err == nil {
			t.Fatal("Put with a reader shorter than size succeeded")
		}
		if _, err := store.Head(ctx, "short/obj"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("failed Put left an object: Head = %v", err)
		}
	})

	t.Run("PutCancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctxT(t))
		cancel()
		_, err := store.Put(ctx, "cancel/obj", strings.NewReader("abc"), 3, blob.PutOptions{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Put with cancelled context: %v, want context.Canceled", err)
		}
		if _, err := store.Head(ctxT(t), "cancel/obj"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("cancelled Put stored an object: Head = %v", err)
		}
	})

	parts := func(n int, last int) [][]byte {
		ps := make([][]byte, n)
		for i := range ps {
			sz := PartSize
			if i == n-1 {
				sz = last
			}
			ps[i] = data(sz)
		}
		return ps
	}

	t.Run("MultipartOutOfOrder", func(t *testing.T) {
		ctx := ctxT(t)
		ps := parts(3, 1000)
		mp, err := store.CreateMultipart(ctx, "mpu/ooo", blob.PutOptions{Metadata: map[string]string{"S3ManagedLedgerOffloaderFormatVersion": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if mp.UploadID() == "" {
			t.Error("empty upload ID")
		}
		if _, err := store.Head(ctx, "mpu/ooo"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("object visible before Complete: %v", err)
		}
		for _, i := range []int{3, 1, 2} {
			if err := mp.UploadPart(ctx, i, ps[i-1]); err != nil {
				t.Fatalf("UploadPart %d: %v", i, err)
			}
		}
		if _, err := store.Head(ctx, "mpu/ooo"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("object visible before Complete: %v", err)
		}
		a, err := mp.Complete(ctx)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		want := bytes.Join(ps, nil)
		if a.Size != int64(len(want)) || a.Key != "mpu/ooo" || a.ETag == "" {
			t.Errorf("Complete attrs = %+v, want size %d", a, len(want))
		}
		got, ga := readAll(t, ctx, store, "mpu/ooo", 0, -1)
		if !bytes.Equal(got, want) {
			t.Fatalf("completed object differs from the parts in order (%d vs %d bytes)", len(got), len(want))
		}
		if ga.Metadata["s3managedledgeroffloaderformatversion"] != "1" {
			t.Errorf("multipart metadata = %v", ga.Metadata)
		}
		// A range across the part boundary.
		r, _ := readAll(t, ctx, store, "mpu/ooo", PartSize-10, 20)
		if !bytes.Equal(r, want[PartSize-10:PartSize+10]) {
			t.Error("range across a part boundary differs")
		}
		if ml, ok := store.(blob.MultipartLister); ok {
			ups, err := ml.ListMultipart(ctx, "mpu/ooo")
			if err != nil || len(ups) != 0 {
				t.Errorf("completed upload still listed: %v, %v", ups, err)
			}
		}
	})

	t.Run("MultipartConcurrentParts", func(t *testing.T) {
		ctx := ctxT(t)
		ps := parts(4, PartSize/2)
		mp, err := store.CreateMultipart(ctx, "mpu/conc", blob.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, len(ps))
		for i := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = mp.UploadPart(ctx, i+1, ps[i])
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent UploadPart: %v", err)
		}
		if _, err := mp.Complete(ctx); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if got, _ := readAll(t, ctx, store, "mpu/conc", 0, -1); !bytes.Equal(got, bytes.Join(ps, nil)) {
			t.Fatal("completed object differs from the parts")
		}
	})

	t.Run("MultipartReuploadPart", func(t *testing.T) {
		ctx := ctxT(t)
		ps := parts(2, 100)
		mp, err := store.CreateMultipart(ctx, "mpu/reup", blob.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := mp.UploadPart(ctx, 1, data(PartSize)); err != nil {
			t.Fatal(err)
		}
		if err := mp.UploadPart(ctx, 2, ps[1]); err != nil {
			t.Fatal(err)
		}
		if err := mp.UploadPart(ctx, 1, ps[0]); err != nil { // replaces the first
			t.Fatal(err)
		}
		if _, err := mp.Complete(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := readAll(t, ctx, store, "mpu/reup", 0, -1); !bytes.Equal(got, bytes.Join(ps, nil)) {
			t.Fatal("re-uploaded part did not replace the first version")
		}
	})

	t.Run("MultipartSinglePart", func(t *testing.T) {
		ctx := ctxT(t)
		body := data(777)
		mp, err := store.CreateMultipart(ctx, "mpu/single", blob.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := mp.UploadPart(ctx, 1, body); err != nil {
			t.Fatal(err)
		}
		a, err := mp.Complete(ctx)
		if err != nil || a.Size != 777 {
			t.Fatalf("Complete = %+v, %v", a, err)
		}
		if got, _ := readAll(t, ctx, store, "mpu/single", 0, -1); !bytes.Equal(got, body) {
			t.Fatal("single-part object differs")
		}
	})

	t.Run("MultipartAbortLeavesNothing", func(t *testing.T) {
		ctx := ctxT(t)
		mp, err := store.CreateMultipart(ctx, "mpu/abort", blob.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := mp.UploadPart(ctx, 1, data(PartSize)); err != nil {
			t.Fatal(err)
		}
		if err := mp.Abort(ctx); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		if _, err := store.Head(ctx, "mpu/abort"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Head after abort: %v", err)
		}
		if got := iterKeys(t, ctx, store, "mpu/abort"); len(got) != 0 {
			t.Errorf("Iter after abort = %q", got)
		}
		if ml, ok := store.(blob.MultipartLister); ok {
			if ups, err := ml.ListMultipart(ctx, "mpu/abort"); err != nil || len(ups) != 0 {
				t.Errorf("aborted upload still listed: %v, %v", ups, err)
			}
		}
		if err := mp.UploadPart(ctx, 2, []byte("late")); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("UploadPart after abort: %v, want ErrNotFound", err)
		}
		if _, err := mp.Complete(ctx); err == nil {
			t.Error("Complete after abort succeeded")
		}
		if err := mp.Abort(ctx); err != nil && !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("second Abort: %v, want nil or ErrNotFound", err)
		}
		if _, err := store.Head(ctx, "mpu/abort"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Head after Complete-after-abort: %v", err)
		}
	})

	t.Run("MultipartMissingPart", func(t *testing.T) {
		ctx := ctxT(t)
		mp, err := store.CreateMultipart(ctx, "mpu/gap", blob.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mp.Complete(ctx); !errors.Is(err, blob.ErrMissingPart) {
			t.Errorf("Complete with no parts: %v, want ErrMissingPart", err)
		}
		if err := mp.UploadPart(ctx, 1, data(PartSize)); err != nil {
			t.Fatal(err)
		}
		if err := mp.UploadPart(ctx, 3, data(10)); err != nil {
			t.Fatal(err)
		}
		if _, err := mp.Complete(ctx); !errors.Is(err, blob.ErrMissingPart) {
			t.Errorf("Complete with part 2 missing: %v, want ErrMissingPart", err)
		}
		if _, err := store.Head(ctx, "mpu/gap"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("failed Complete created an object: Head = %v", err)
		}
		if err := mp.Abort(ctx); err != nil {
			t.Errorf("Abort after failed Complete: %v", err)
		}
	})

	t.Run("MultipartPartTooSmall", func(t *testing.T) {
		ctx := ctxT(t)
		mp, err := store.CreateMultipart(ctx, "mpu/small", blob.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 2; i++ {
			if err := mp.UploadPart(ctx, i, data(1024)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := mp.Complete(ctx); !errors.Is(err, blob.ErrPartTooSmall) {
			t.Errorf("Complete with a 1 KiB first part: %v, want ErrPartTooSmall", err)
		}
		if _, err := store.Head(ctx, "mpu/small"); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("failed Complete created an object: Head = %v", err)
		}
		_ = mp.Abort(ctx)
	})

	t.Run("MultipartInvalidPartNumber", func(t *testing.T) {
		ctx := ctxT(t)
		mp, err := store.CreateMultipart(ctx, "mpu/badnum", blob.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer mp.Abort(ctx)
		for _, n := range []int{0, -1, blob.MaxParts + 1} {
			if err := mp.UploadPart(ctx, n, []byte("x")); !errors.Is(err, blob.ErrInvalidArgument) {
				t.Errorf("UploadPart(%d): %v, want ErrInvalidArgument", n, err)
			}
		}
	})

	t.Run("ListAndAbortIncompleteUploads", func(t *testing.T) {
		ml, ok := store.(blob.MultipartLister)
		if !ok {
			t.Skip("store does not implement MultipartLister")
		}
		ctx := ctxT(t)
		before := time.Now().Add(-5 * time.Minute)
		keys := []string{"sweep/b", "sweep/a", "sweep/a"}
		ids := map[string]string{}
		for _, k := range keys {
			mp, err := store.CreateMultipart(ctx, k, blob.PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := mp.UploadPart(ctx, 1, []byte("part")); err != nil {
				t.Fatal(err)
			}
			ids[mp.UploadID()] = k
		}
		other, err := store.CreateMultipart(ctx, "elsewhere/x", blob.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Abort(ctx)

		ups, err := ml.ListMultipart(ctx, "sweep/")
		if err != nil {
			t.Fatal(err)
		}
		if len(ups) != len(keys) {
			t.Fatalf("ListMultipart(sweep/) = %+v, want %d uploads", ups, len(keys))
		}
		for i, u := range ups {
			if ids[u.UploadID] != u.Key {
				t.Errorf("listed upload %+v not one we created (%v)", u, ids)
			}
			if u.Initiated.Before(before) || u.Initiated.After(time.Now().Add(5*time.Minute)) {
				t.Errorf("upload %s initiated %v, not recent", u.UploadID, u.Initiated)
			}
			if i > 0 && ups[i-1].Key > u.Key {
				t.Errorf("ListMultipart not sorted by key: %q after %q", u.Key, ups[i-1].Key)
			}
		}
		for _, u := range ups {
			if err := ml.AbortMultipart(ctx, u.Key, u.UploadID); err != nil {
				t.Errorf("AbortMultipart(%s, %s): %v", u.Key, u.UploadID, err)
			}
		}
		if ups, err := ml.ListMultipart(ctx, "sweep/"); err != nil || len(ups) != 0 {
			t.Errorf("after AbortMultipart: %+v, %v", ups, err)
		}
		if err := ml.AbortMultipart(ctx, "sweep/a", firstKey(ids)); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("AbortMultipart of an aborted upload: %v, want ErrNotFound", err)
		}
		if ups, err := ml.ListMultipart(ctx, "elsewhere/"); err != nil || len(ups) != 1 || ups[0].UploadID != other.UploadID() {
			t.Errorf("ListMultipart(elsewhere/) = %+v, %v", ups, err)
		}
	})

	t.Run("PartsPipeline", func(t *testing.T) {
		ctx := ctxT(t)
		for _, n := range []int{100, PartSize, 2*PartSize + 17} {
			body := data(n)
			key := fmt.Sprintf("parts/%d", n)
			a, err := UploadParts(ctx, store, key, body, PartSize, 3)
			if err != nil {
				t.Fatalf("Parts %d bytes: %v", n, err)
			}
			if a.Size != int64(n) {
				t.Errorf("Parts %d bytes: attrs size %d", n, a.Size)
			}
			if got, _ := readAll(t, ctx, store, key, 0, -1); !bytes.Equal(got, body) {
				t.Errorf("Parts %d bytes: stored object differs", n)
			}
		}
		// A part the store refuses (number out of range) fails the
		// pipeline; Abort leaves nothing.
		p, err := blob.StartParts(ctx, store, "parts/bad", blob.PutOptions{}, blob.PartsOptions{InFlight: 2})
		if err != nil {
			t.Fatal(err)
		}
		var released atomic.Int32 // release runs on the uploading goroutines
		if err := p.Send(ctx, 1, data(PartSize), func() { released.Add(1) }); err != nil {
			t.Fatal(err)
		}
		_ = p.Send(ctx, blob.MaxParts+1, data(10), func() { released.Add(1) })
		if _, err := p.Complete(ctx); !errors.Is(err, blob.ErrInvalidArgument) {
			t.Errorf("Complete after a refused part: %v, want ErrInvalidArgument", err)
		}
		if err := p.Abort(ctx); err != nil {
			t.Errorf("Abort: %v", err)
		}
		if n := released.Load(); n != 2 {
			t.Errorf("%d of 2 part buffers released", n)
		}
		AssertAbsentOrEqual(t, store, "parts/bad", nil)
		if ml, ok := store.(blob.MultipartLister); ok {
			if ups, err := ml.ListMultipart(ctx, "parts/bad"); err != nil || len(ups) != 0 {
				t.Errorf("aborted pipeline left uploads: %+v, %v", ups, err)
			}
		}
	})
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

func closeIf(rc io.ReadCloser) {
	if rc != nil {
		rc.Close()
	}
}

func checkAttrs(t *testing.T, what string, a blob.Attrs, key string, size int64, md map[string]string, after time.Time) {
	t.Helper()
	if a.Key != key || a.Size != size {
		t.Errorf("%s: key %q size %d, want %q %d", what, a.Key, a.Size, key, size)
	}
	if a.ETag == "" {
		t.Errorf("%s: empty ETag", what)
	}
	if a.LastModified.Before(after) || a.LastModified.After(time.Now().Add(5*time.Minute)) {
		t.Errorf("%s: LastModified %v not recent", what, a.LastModified)
	}
	if !mapsEqual(a.Metadata, md) {
		t.Errorf("%s: metadata %v, want %v", what, a.Metadata, md)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// readAll reads a range (off, length as GetRange) and fails the test on error.
func readAll(t *testing.T, ctx context.Context, s blob.Reader, key string, off, length int64) ([]byte, blob.Attrs) {
	t.Helper()
	var (
		rc  io.ReadCloser
		a   blob.Attrs
		err error
	)
	if off == 0 && length < 0 {
		rc, a, err = s.Get(ctx, key)
	} else {
		rc, a, err = s.GetRange(ctx, key, off, length)
	}
	if err != nil {
		t.Fatalf("GetRange(%q, %d, %d): %v", key, off, length, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q [%d,%d): %v", key, off, length, err)
	}
	return b, a
}

func iterKeys(t *testing.T, ctx context.Context, s blob.Reader, prefix string) []string {
	t.Helper()
	var keys []string
	if err := s.Iter(ctx, prefix, func(a blob.Attrs) error {
		keys = append(keys, a.Key)
		return nil
	}); err != nil {
		t.Fatalf("Iter(%q): %v", prefix, err)
	}
	return keys
}

// AssertAbsentOrEqual checks the invariant after a failed write of want
// under key: either no object exists, or it is byte-identical to want (nil
// want: the object must not exist).
func AssertAbsentOrEqual(t testing.TB, s blob.Reader, key string, want []byte) {
	t.Helper()
	got, found := readStored(t, s, key)
	if !found {
		return
	}
	if want == nil {
		t.Fatalf("object %q exists (%d bytes) after a failed write", key, len(got))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("object %q exists after a failed write and differs from the input (%d vs %d bytes): the store holds a lie", key, len(got), len(want))
	}
}

// AssertStored checks that key holds exactly want after a write that
// reported success: a missing object fails too.
func AssertStored(t testing.TB, s blob.Reader, key string, want []byte) {
	t.Helper()
	got, found := readStored(t, s, key)
	if !found {
		t.Fatalf("object %q missing after a write that succeeded", key)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("object %q differs from what was written (%d vs %d bytes)", key, len(got), len(want))
	}
}

// readStored reads the whole object; found is false when it does not exist.
func readStored(t testing.TB, s blob.Reader, key string) (got []byte, found bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, _, err := s.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	defer rc.Close()
	got, err = io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return got, true
}
