// Package memblob is an in-memory blob.Store with fault injection, for the
// tests of code built on the blob contract (format, upload, the pipeline):
// a hook that fails chosen operations, bodies cut short mid-stream, request
// and byte counters, and a check of the S3 rule that every multipart part
// but the last is at least MinPartSize. Operations are named as everywhere
// else (blob.OpHead, blob.OpGetRange, blob.OpUploadPart, ...: the values of
// the metrics' operation label). Ranges, keys, metadata, part numbers and
// completion follow the blob contract through the same helpers the real
// providers use (blob.ResolveRange, ValidateKey, NormalizeMetadata,
// CheckPartNumber, CheckCompleteParts), and the store passes
// blobtest.AcceptanceTest.
//
// It is a test double for fault injection only; the real-peer suites run
// against versitygw and Pulsar's own code.
package memblob

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/crc32c"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Store is an in-memory bucket. The zero value is not usable; call New.
type Store struct {
	// Hook, when set, runs before every operation (op is one of the
	// blob.Op* names); a non-nil error fails it. part is the part number
	// for blob.OpUploadPart, else 0.
	Hook func(op, key string, part int) error
	// CutBody, when set, is asked for every Get/GetRange body: returning
	// n >= 0 ends the body with io.ErrUnexpectedEOF after n bytes.
	CutBody func(key string, off, length int64) int64
	// PartDelay slows every UploadPart (to observe parallelism).
	PartDelay time.Duration
	// MinPartSize is enforced on Complete for every part but the last
	// (S3: 5 MiB). Zero disables the check.
	MinPartSize int

	mu       sync.Mutex
	objects  map[string]object
	uploads  map[string]*upload
	counts   map[string]int
	read     int64 // body bytes delivered by Get/GetRange
	seq      int
	inFlight int
	peak     int
}

type object struct {
	data     []byte
	metadata map[string]string
	modified time.Time
	etag     string
}

type upload struct {
	key      string
	metadata map[string]string
	parts    map[int][]byte
	created  time.Time
}

// New returns an empty store.
func New() *Store {
	return &Store{objects: map[string]object{}, uploads: map[string]*upload{}, counts: map[string]int{}}
}

var (
	_ blob.Store           = (*Store)(nil)
	_ blob.MultipartLister = (*Store)(nil)
	_ blob.Multipart       = (*mpu)(nil)
	_ blob.PartCRC32CUser  = (*Store)(nil)
)

func (s *Store) enter(op, key string, part int) error {
	s.mu.Lock()
	s.counts[op]++
	hook := s.Hook
	s.mu.Unlock()
	if hook != nil {
		if err := hook(op, key, part); err != nil {
			return fmt.Errorf("memblob %s %s: %w", op, key, err)
		}
	}
	return nil
}

// Count returns how many times op (a blob.Op* name) was called.
func (s *Store) Count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[op]
}

// BytesRead returns the body bytes Get and GetRange callers have read so
// far (what a network store would have sent, for bodies read to the end or
// closed early).
func (s *Store) BytesRead() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read
}

// ResetCounts zeroes the counters.
func (s *Store) ResetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = map[string]int{}
	s.read = 0
	s.peak = 0
}

// PeakPartsInFlight is the largest number of concurrent UploadPart calls seen.
func (s *Store) PeakPartsInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// Object returns a copy of an object's bytes and metadata.
func (s *Store) Object(key string) ([]byte, map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	if !ok {
		return nil, nil, false
	}
	return bytes.Clone(o.data), maps.Clone(o.metadata), true
}

// SetObject stores bytes directly (to plant corrupt objects).
func (s *Store) SetObject(key string, data []byte, metadata map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[key] = object{data: bytes.Clone(data), metadata: lower(metadata), modified: time.Now(), etag: md5hex(data)}
}

// Keys lists the stored object keys in order.
func (s *Store) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.objects))
	for k := range s.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Name implements blob.Store.
func (s *Store) Name() string { return "mem://" }

// UsesPartCRC32C is true: a part CRC-32C given with the part is checked
// as S3 checks x-amz-checksum-crc32c.
func (s *Store) UsesPartCRC32C() bool { return true }

// Close implements blob.Store.
func (s *Store) Close() error { return nil }

func (s *Store) attrs(key string, o object) blob.Attrs {
	return blob.Attrs{Key: key, Size: int64(len(o.data)), ETag: o.etag, LastModified: o.modified, Metadata: maps.Clone(o.metadata)}
}

// Head implements blob.Reader.
func (s *Store) Head(ctx context.Context, key string) (blob.Attrs, error) {
	if err := s.enter(blob.OpHead, key, 0); err != nil {
		return blob.Attrs{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Attrs{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	if !ok {
		return blob.Attrs{}, fmt.Errorf("head %s: %w", key, blob.ErrNotFound)
	}
	return s.attrs(key, o), nil
}

// Get implements blob.Reader.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, blob.Attrs, error) {
	if err := s.enter(blob.OpGet, key, 0); err != nil {
		return nil, blob.Attrs{}, err
	}
	return s.body(ctx, key, 0, -1)
}

// GetRange implements blob.Reader.
func (s *Store) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, blob.Attrs, error) {
	if err := s.enter(blob.OpGetRange, key, 0); err != nil {
		return nil, blob.Attrs{}, err
	}
	return s.body(ctx, key, off, length)
}

func (s *Store) body(ctx context.Context, key string, off, length int64) (io.ReadCloser, blob.Attrs, error) {
	if err := ctx.Err(); err != nil {
		return nil, blob.Attrs{}, err
	}
	s.mu.Lock()
	o, ok := s.objects[key]
	cut := s.CutBody
	s.mu.Unlock()
	if !ok {
		return nil, blob.Attrs{}, fmt.Errorf("get %s: %w", key, blob.ErrNotFound)
	}
	n, err := blob.ResolveRange(off, length, int64(len(o.data)))
	if err != nil {
		return nil, blob.Attrs{}, fmt.Errorf("get %s: %w", key, err)
	}
	end := off + n
	var r io.Reader = bytes.NewReader(o.data[off:end])
	if cut != nil {
		if n := cut(key, off, end-off); n >= 0 && n < end-off {
			r = io.MultiReader(bytes.NewReader(o.data[off:off+n]), errReader{io.ErrUnexpectedEOF})
		}
	}
	return &ctxBody{ctx: ctx, r: r, s: s}, s.attrs(key, o), nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// ctxBody fails reads once its request context ends, like an HTTP body.
type ctxBody struct {
	ctx    context.Context
	r      io.Reader
	s      *Store
	closed bool
}

func (b *ctxBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, fmt.Errorf("read on closed body")
	}
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := b.r.Read(p)
	b.s.mu.Lock()
	b.s.read += int64(n)
	b.s.mu.Unlock()
	return n, err
}

func (b *ctxBody) Close() error { b.closed = true; return nil }

// Iter implements blob.Reader.
func (s *Store) Iter(ctx context.Context, prefix string, fn func(blob.Attrs) error) error {
	if err := s.enter(blob.OpIter, prefix, 0); err != nil {
		return err
	}
	for _, k := range s.Keys() {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		o, ok := s.objects[k]
		s.mu.Unlock()
		if !ok {
			continue
		}
		if err := fn(s.attrs(k, o)); err != nil {
			return err
		}
	}
	return nil
}

// Put implements blob.Writer.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, opts blob.PutOptions) (blob.Attrs, error) {
	if err := s.enter(blob.OpPut, key, 0); err != nil {
		return blob.Attrs{}, err
	}
	md, err := checkPut(key, opts)
	if err != nil {
		return blob.Attrs{}, err
	}
	data, err := io.ReadAll(io.LimitReader(r, size+1))
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("put %s: %w", key, err)
	}
	if int64(len(data)) != size {
		return blob.Attrs{}, fmt.Errorf("put %s: body has %d bytes, declared %d", key, len(data), size)
	}
	if err := ctx.Err(); err != nil {
		return blob.Attrs{}, err
	}
	o := object{data: data, metadata: md, modified: time.Now(), etag: md5hex(data)}
	s.mu.Lock()
	s.objects[key] = o
	s.mu.Unlock()
	return s.attrs(key, o), nil
}

// Delete implements blob.Writer.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.enter(blob.OpDelete, key, 0); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.objects, key)
	s.mu.Unlock()
	return nil
}

// CreateMultipart implements blob.Writer.
func (s *Store) CreateMultipart(ctx context.Context, key string, opts blob.PutOptions) (blob.Multipart, error) {
	if err := s.enter(blob.OpCreateMultipart, key, 0); err != nil {
		return nil, err
	}
	md, err := checkPut(key, opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := "upload-" + strconv.Itoa(s.seq)
	s.uploads[id] = &upload{key: key, metadata: md, parts: map[int][]byte{}, created: time.Now()}
	return &mpu{s: s, id: id, key: key}, nil
}

// ListMultipart implements blob.MultipartLister.
func (s *Store) ListMultipart(ctx context.Context, prefix string) ([]blob.Upload, error) {
	if err := s.enter(blob.OpListMultipart, prefix, 0); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []blob.Upload
	for id, u := range s.uploads {
		if strings.HasPrefix(u.key, prefix) {
			out = append(out, blob.Upload{Key: u.key, UploadID: id, Initiated: u.created})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].UploadID < out[j].UploadID
	})
	return out, nil
}

// AbortMultipart implements blob.MultipartLister.
func (s *Store) AbortMultipart(ctx context.Context, key, uploadID string) error {
	if err := s.enter(blob.OpAbortMultipart, key, 0); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.uploads[uploadID]; !ok || u.key != key {
		return fmt.Errorf("abort %s %s: %w", key, uploadID, blob.ErrNotFound)
	}
	delete(s.uploads, uploadID)
	return nil
}

type mpu struct {
	s   *Store
	id  string
	key string
}

func (m *mpu) UploadID() string { return m.id }

func (m *mpu) UploadPart(ctx context.Context, part int, data []byte) error {
	s := m.s
	// Counted in flight from the start, hook included, so a hook that
	// blocks keeps the part in flight.
	s.mu.Lock()
	s.inFlight++
	s.peak = max(s.peak, s.inFlight)
	delay := s.PartDelay
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	if err := s.enter(blob.OpUploadPart, m.key, part); err != nil {
		return err
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := blob.CheckPartNumber(part); err != nil {
		return fmt.Errorf("upload part %d of %s: %w", part, m.key, err)
	}
	// A CRC-32C given with the part is checked as S3 checks
	// x-amz-checksum-crc32c.
	if crc, ok := blob.PartCRC32C(ctx); ok && crc != crc32c.Checksum(data) {
		return fmt.Errorf("upload part %d of %s: %w: CRC-32C given %08x, part has %08x", part, m.key, blob.ErrBadDigest, crc, crc32c.Checksum(data))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.uploads[m.id]
	if !ok {
		return fmt.Errorf("upload part %d of %s: %w", part, m.key, blob.ErrNotFound)
	}
	u.parts[part] = bytes.Clone(data)
	return nil
}

func (m *mpu) Complete(ctx context.Context) (blob.Attrs, error) {
	s := m.s
	if err := s.enter(blob.OpCompleteMultipart, m.key, 0); err != nil {
		return blob.Attrs{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Attrs{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.uploads[m.id]
	if !ok {
		return blob.Attrs{}, fmt.Errorf("complete %s: %w", m.key, blob.ErrNotFound)
	}
	sizes := make(map[int]int64, len(u.parts))
	for n, p := range u.parts {
		sizes[n] = int64(len(p))
	}
	if err := blob.CheckCompleteParts(sizes, int64(s.MinPartSize)); err != nil {
		return blob.Attrs{}, fmt.Errorf("complete %s: %w", m.key, err)
	}
	var data []byte
	for n := 1; n <= len(u.parts); n++ {
		data = append(data, u.parts[n]...)
	}
	o := object{data: data, metadata: u.metadata, modified: time.Now(), etag: md5hex(data) + "-" + strconv.Itoa(len(u.parts))}
	s.objects[m.key] = o
	delete(s.uploads, m.id)
	return s.attrs(m.key, o), nil
}

func (m *mpu) Abort(ctx context.Context) error {
	s := m.s
	if err := s.enter(blob.OpAbortMultipart, m.key, 0); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.uploads, m.id)
	return nil
}

// checkPut applies the providers' key and metadata rules and returns the
// metadata to store.
func checkPut(key string, opts blob.PutOptions) (map[string]string, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	md, err := blob.NormalizeMetadata(opts.Metadata)
	if err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	return md, nil
}

func lower(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}

func md5hex(b []byte) string {
	h := md5.Sum(b)
	return hex.EncodeToString(h[:])
}
