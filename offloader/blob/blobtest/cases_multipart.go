package blobtest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// The multipart cases: part order and concurrency, re-uploads, aborts,
// refused parts, listing incomplete uploads and the Parts pipeline.

func caseMultipartOutOfOrder(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	ps := e.parts(3, 1000)
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
}

func caseMultipartConcurrentParts(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	ps := e.parts(4, PartSize/2)
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
}

func caseMultipartReuploadPart(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	ps := e.parts(2, 100)
	mp, err := store.CreateMultipart(ctx, "mpu/reup", blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := mp.UploadPart(ctx, 1, e.data(PartSize)); err != nil {
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
}

func caseMultipartSinglePart(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	body := e.data(777)
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
}

func caseMultipartAbortLeavesNothing(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	mp, err := store.CreateMultipart(ctx, "mpu/abort", blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := mp.UploadPart(ctx, 1, e.data(PartSize)); err != nil {
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
}

func caseMultipartMissingPart(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	mp, err := store.CreateMultipart(ctx, "mpu/gap", blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mp.Complete(ctx); !errors.Is(err, blob.ErrMissingPart) {
		t.Errorf("Complete with no parts: %v, want ErrMissingPart", err)
	}
	if err := mp.UploadPart(ctx, 1, e.data(PartSize)); err != nil {
		t.Fatal(err)
	}
	if err := mp.UploadPart(ctx, 3, e.data(10)); err != nil {
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
}

func caseMultipartPartTooSmall(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	mp, err := store.CreateMultipart(ctx, "mpu/small", blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if err := mp.UploadPart(ctx, i, e.data(1024)); err != nil {
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
}

func caseMultipartInvalidPartNumber(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
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
}

func caseListAndAbortIncompleteUploads(t *testing.T, store blob.Store, e *env) {
	ml, ok := store.(blob.MultipartLister)
	if !ok {
		t.Skip("store does not implement MultipartLister")
	}
	ctx := e.ctx(t)
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
}

func casePartsPipeline(t *testing.T, store blob.Store, e *env) {
	ctx := e.ctx(t)
	for _, n := range []int{100, PartSize, 2*PartSize + 17} {
		body := e.data(n)
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
	if err := p.Send(ctx, 1, e.data(PartSize), func() { released.Add(1) }); err != nil {
		t.Fatal(err)
	}
	_ = p.Send(ctx, blob.MaxParts+1, e.data(10), func() { released.Add(1) })
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
}
