package blobtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// PartSize is the part size the multipart cases use: the S3 minimum.
const PartSize = blob.MinPartSize

// AcceptanceTest runs the contract suite against store, which must be backed
// by an empty bucket that no one else writes to. It does not close store.
// Each case is a subtest of its own name (go test -run 'Acceptance/Ranges').
func AcceptanceTest(t *testing.T, store blob.Store) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("blobtest: seed %d (store %s)", seed, store.Name())
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	e := &env{rng: rand.NewChaCha8(key)}
	for _, c := range acceptanceCases() {
		t.Run(c.name, func(t *testing.T) { c.run(t, store, e) })
	}
}

// acceptanceCase is one named case of the suite.
type acceptanceCase struct {
	name string
	run  func(t *testing.T, store blob.Store, e *env)
}

// acceptanceCases lists the cases in the order they run.
func acceptanceCases() []acceptanceCase {
	return []acceptanceCase{
		{"NotFound", caseNotFound},
		{"PutGetMetadata", casePutGetMetadata},
		{"EmptyObject", caseEmptyObject},
		{"Ranges", caseRanges},
		{"Overwrite", caseOverwrite},
		{"SpecialKeys", caseSpecialKeys},
		{"IterSortedByPrefix", caseIterSortedByPrefix},
		{"DeleteIdempotent", caseDeleteIdempotent},
		{"InvalidArguments", caseInvalidArguments},
		{"PutShortReader", casePutShortReader},
		{"PutCancelled", casePutCancelled},
		{"MultipartOutOfOrder", caseMultipartOutOfOrder},
		{"MultipartConcurrentParts", caseMultipartConcurrentParts},
		{"MultipartReuploadPart", caseMultipartReuploadPart},
		{"MultipartSinglePart", caseMultipartSinglePart},
		{"MultipartAbortLeavesNothing", caseMultipartAbortLeavesNothing},
		{"MultipartMissingPart", caseMultipartMissingPart},
		{"MultipartPartTooSmall", caseMultipartPartTooSmall},
		{"MultipartInvalidPartNumber", caseMultipartInvalidPartNumber},
		{"ListAndAbortIncompleteUploads", caseListAndAbortIncompleteUploads},
		{"PartsPipeline", casePartsPipeline},
	}
}

// env is what the cases share: test data from the suite's seeded source
// (the seed is logged, so a failing run can be replayed) and a bounded
// context per test.
type env struct {
	mu  sync.Mutex
	rng *rand.ChaCha8
}

// ctx is bounded by 2 minutes and cancelled when t ends.
func (e *env) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// data returns n seeded random bytes.
func (e *env) data(n int) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := make([]byte, n)
	_, _ = e.rng.Read(b)
	return b
}

// parts returns n parts of PartSize random bytes, the last of last bytes.
func (e *env) parts(n int, last int) [][]byte {
	ps := make([][]byte, n)
	for i := range ps {
		sz := PartSize
		if i == n-1 {
			sz = last
		}
		ps[i] = e.data(sz)
	}
	return ps
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
