package fs

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Config configures a directory store (the `config:` section of a
// `type: fs` blob config).
type Config struct {
	// Dir is the root directory; created if missing. Required.
	Dir string `json:"dir"`
	// MinPartSize is the smallest part (except the last) Complete accepts,
	// in bytes. Default 5 MiB, like S3, so code tested on fs works on S3.
	MinPartSize int64 `json:"min_part_size,omitempty"`
	// NoSync skips fsync (faster tests; not crash safe). Default false.
	NoSync bool `json:"no_sync,omitempty"`
}

// DefaultConfig returns the defaults (Dir still to be set).
func DefaultConfig() Config { return Config{MinPartSize: blob.MinPartSize} }

// Validate checks the config; errors name the offending key.
func (c Config) Validate() error {
	if c.Dir == "" {
		return errors.New("fs: config key dir is required")
	}
	if c.MinPartSize < 0 {
		return fmt.Errorf("fs: config key min_part_size must be >= 0, got %d", c.MinPartSize)
	}
	return nil
}

// Options are the non-config dependencies.
type Options struct {
	// Logger receives debug and warning messages. Default: discard.
	Logger *slog.Logger
	// Now returns the time recorded as LastModified. Default time.Now.
	Now func() time.Time
}

// Store is a blob store in a directory.
type Store struct {
	dir   string
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	keyMu [64]sync.Mutex
	upMu  [64]sync.Mutex
	// crashPoint, set only by tests, runs at the named steps of a write
	// ("data-renamed": the data file is in place, no record yet;
	// "record-renamed": the record is committed, the replaced data file
	// not yet removed), where a crash test kills the process.
	crashPoint func(step string)
}

var (
	_ blob.Store           = (*Store)(nil)
	_ blob.MultipartLister = (*Store)(nil)
	_ blob.Multipart       = (*multipart)(nil)
)

const (
	maxRecordSize = 64 << 10
	recordVersion = 1
)

// New opens (creating if needed) a store in cfg.Dir.
func New(cfg Config, opts Options) (*Store, error) {
	if cfg.MinPartSize == 0 {
		cfg.MinPartSize = blob.MinPartSize
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("fs: %w", err)
	}
	for _, sub := range []string{"objects", "data", "uploads", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("fs: create %s: %w", sub, err)
		}
	}
	s := &Store{dir: dir, cfg: cfg, log: opts.Logger, now: opts.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Name returns "file://<dir>".
func (s *Store) Name() string { return "file://" + s.dir }

// Close releases nothing; the store stays usable.
func (s *Store) Close() error { return nil }

// record is the JSON sidecar committed for each object.
type record struct {
	Version     int               `json:"v"`
	Key         string            `json:"key"`
	Data        string            `json:"data"`
	Size        int64             `json:"size"`
	ETag        string            `json:"etag"`
	Modified    time.Time         `json:"modified"`
	ContentType string            `json:"content_type,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

func (r *record) attrs() blob.Attrs {
	var md map[string]string
	if len(r.Metadata) > 0 {
		md = make(map[string]string, len(r.Metadata))
		for k, v := range r.Metadata {
			md[k] = v
		}
	}
	return blob.Attrs{Key: r.Key, Size: r.Size, ETag: r.ETag, LastModified: r.Modified, Metadata: md}
}

// encodeName maps a key to its file name in objects/.
func encodeName(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '/' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	name := b.String()
	switch {
	case name == ".":
		return "%2E"
	case name == "..":
		return "%2E%2E"
	case len(name) > 200:
		h := sha256.Sum256([]byte(key))
		return "%h" + hex.EncodeToString(h[:])
	}
	return name
}

// decodeName reverses encodeName; ok is false for hashed names (the key is
// in the record) and for names that are not ours.
func decodeName(name string) (key string, ok bool) {
	if strings.HasPrefix(name, "%h") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		v, err := strconv.ParseUint(name[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

func (s *Store) recordPath(key string) string {
	return filepath.Join(s.dir, "objects", encodeName(key))
}

func (s *Store) dataPath(gen string) string { return filepath.Join(s.dir, "data", gen) }

func (s *Store) lockKey(key string) func() { return lockStripe(&s.keyMu, key) }

func (s *Store) lockUpload(id string) func() { return lockStripe(&s.upMu, id) }

// lockStripe locks the mutex of locks that name hashes to and returns its
// unlock.
func lockStripe(locks *[64]sync.Mutex, name string) func() {
	h := fnv.New32a()
	h.Write([]byte(name))
	m := &locks[h.Sum32()%uint32(len(locks))]
	m.Lock()
	return m.Unlock
}

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func (s *Store) crash(step string) {
	if s.crashPoint != nil {
		s.crashPoint(step)
	}
}

// readRecord reads and checks the record at path; a missing file gives
// blob.ErrNotFound.
func readRecord(path, key string) (*record, error) {
	b, err := readSmall(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("fs: %q: %w", key, blob.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fs: read record of %q: %w", key, err)
	}
	return decodeRecord(b, path, key)
}

// readSmall reads a record or upload file, refusing one larger than
// maxRecordSize before reading it all.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecordSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecordSize {
		return nil, fmt.Errorf("%s is larger than %d bytes: corrupt", path, maxRecordSize)
	}
	return b, nil
}

// decodeRecord parses and checks a record file's bytes: the version, a
// data file name of 32 hex digits, a size >= 0, a valid key (key, if not
// "", is the one expected) and valid metadata. path names the file in
// errors.
func decodeRecord(b []byte, path, key string) (*record, error) {
	if len(b) > maxRecordSize {
		return nil, fmt.Errorf("fs: record %s larger than %d bytes: corrupt", path, maxRecordSize)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("fs: corrupt record %s: %w", path, err)
	}
	if r.Version != recordVersion || r.Data == "" || !isHexID(r.Data) || r.Size < 0 {
		return nil, fmt.Errorf("fs: corrupt record %s: version %d, data %q, size %d", path, r.Version, blob.Clip(r.Data), r.Size)
	}
	if err := blob.ValidateKey(r.Key); err != nil {
		return nil, fmt.Errorf("fs: corrupt record %s: %w", path, err)
	}
	if key != "" && r.Key != key {
		return nil, fmt.Errorf("fs: record %s holds key %q, not %q: corrupt", path, r.Key, key)
	}
	md, err := blob.NormalizeMetadata(r.Metadata)
	if err != nil || len(md) != len(r.Metadata) {
		return nil, fmt.Errorf("fs: corrupt record %s: metadata: %v", path, err)
	}
	for k := range r.Metadata {
		if _, ok := md[k]; !ok {
			return nil, fmt.Errorf("fs: corrupt record %s: metadata key %q not lower-case", path, k)
		}
	}
	return &r, nil
}

func isHexID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Head returns the object's attributes.
func (s *Store) Head(ctx context.Context, key string) (blob.Attrs, error) {
	if err := checkKey(ctx, key); err != nil {
		return blob.Attrs{}, err
	}
	r, err := readRecord(s.recordPath(key), key)
	if err != nil {
		return blob.Attrs{}, err
	}
	return r.attrs(), nil
}

func checkKey(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return blob.ValidateKey(key)
}

// Get streams the whole object.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, blob.Attrs, error) {
	return s.GetRange(ctx, key, 0, -1)
}

// GetRange streams length bytes at off (length < 0: to the end).
func (s *Store) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, blob.Attrs, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, blob.Attrs{}, err
	}
	// The data file of a record read a moment ago may be gone when a
	// concurrent overwrite committed in between; read the record again.
	for attempt := 0; ; attempt++ {
		r, err := readRecord(s.recordPath(key), key)
		if err != nil {
			return nil, blob.Attrs{}, err
		}
		n, err := blob.ResolveRange(off, length, r.Size)
		if err != nil {
			return nil, blob.Attrs{}, fmt.Errorf("fs: get %q: %w", key, err)
		}
		f, err := os.Open(s.dataPath(r.Data))
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, blob.Attrs{}, fmt.Errorf("fs: open data of %q: %w", key, err)
		}
		if st, err := f.Stat(); err != nil || st.Size() != r.Size {
			f.Close()
			return nil, blob.Attrs{}, fmt.Errorf("fs: data file of %q has %d bytes, record says %d: corrupt (%v)", key, sizeOf(st), r.Size, err)
		}
		return &ctxFile{ctxReader{ctx, io.NewSectionReader(f, off, n)}, f}, r.attrs(), nil
	}
}

func sizeOf(st os.FileInfo) int64 {
	if st == nil {
		return -1
	}
	return st.Size()
}

// ctxFile reads a section of a file and stops when ctx is done.
type ctxFile struct {
	ctxReader
	f *os.File
}

func (c *ctxFile) Close() error { return c.f.Close() }

// Iter calls fn for every object whose key starts with prefix, in
// ascending byte order of keys.
func (s *Store) Iter(ctx context.Context, prefix string, fn func(blob.Attrs) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Join(s.dir, "objects")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("fs: list: %w", err)
	}
	type entry struct{ key, name string }
	var list []entry
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		key, ok := decodeName(name)
		if !ok {
			if !strings.HasPrefix(name, "%h") {
				continue
			}
			r, err := readRecord(filepath.Join(dir, name), "")
			if errors.Is(err, blob.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			key = r.Key
		}
		if strings.HasPrefix(key, prefix) {
			list = append(list, entry{key, name})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].key < list[j].key })
	for _, e := range list {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := readRecord(filepath.Join(dir, e.name), e.key)
		if errors.Is(err, blob.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if err := fn(r.attrs()); err != nil {
			return err
		}
	}
	return nil
}

// Put stores exactly size bytes read from r under key.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, opts blob.PutOptions) (blob.Attrs, error) {
	if err := checkKey(ctx, key); err != nil {
		return blob.Attrs{}, err
	}
	if size < 0 {
		return blob.Attrs{}, fmt.Errorf("%w: negative size %d", blob.ErrInvalidArgument, size)
	}
	md, err := blob.NormalizeMetadata(opts.Metadata)
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	gen := newID()
	h := md5.New()
	err = s.writeFile(ctx, s.dataPath(gen), func(w io.Writer) error {
		n, err := io.Copy(io.MultiWriter(w, h), &ctxReader{ctx, io.LimitReader(r, size)})
		if err != nil {
			return err
		}
		if n != size {
			return fmt.Errorf("reader gave %d bytes, size is %d: %w", n, size, io.ErrUnexpectedEOF)
		}
		return nil
	})
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("fs: put %q: %w", key, err)
	}
	s.crash("data-renamed")
	rec := &record{Version: recordVersion, Key: key, Data: gen, Size: size, ETag: hex.EncodeToString(h.Sum(nil)),
		Modified: s.now().UTC(), ContentType: contentType(opts.ContentType), Metadata: md}
	if err := s.commit(ctx, rec); err != nil {
		_ = os.Remove(s.dataPath(gen))
		return blob.Attrs{}, err
	}
	return rec.attrs(), nil
}

func contentType(ct string) string {
	if ct == "" {
		return "application/octet-stream"
	}
	return ct
}

// commit renames rec over the key's record (the commit point) and removes
// the data file of the record it replaced.
func (s *Store) commit(ctx context.Context, rec *record) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fs: put %q: %w", rec.Key, err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("fs: %w", err)
	}
	if len(b) > maxRecordSize {
		return fmt.Errorf("fs: put %q: %w: record of %d bytes", rec.Key, blob.ErrInvalidArgument, len(b))
	}
	unlock := s.lockKey(rec.Key)
	defer unlock()
	path := s.recordPath(rec.Key)
	old, _ := readRecord(path, rec.Key)
	if err := s.writeFile(ctx, path, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return fmt.Errorf("fs: commit %q: %w", rec.Key, err)
	}
	s.crash("record-renamed")
	if old != nil && old.Data != rec.Data {
		if err := os.Remove(s.dataPath(old.Data)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("fs: remove replaced data file", "key", rec.Key, "err", err)
		}
	}
	return nil
}

// writeFile writes a temporary file with fill, fsyncs it, renames it to
// path and fsyncs path's directory.
func (s *Store) writeFile(ctx context.Context, path string, fill func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "w-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if !s.cfg.NoSync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = ctx.Err(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return s.syncDir(filepath.Dir(path))
}

func (s *Store) syncDir(dir string) error {
	if s.cfg.NoSync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Delete removes the object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	unlock := s.lockKey(key)
	defer unlock()
	path := s.recordPath(key)
	r, err := readRecord(path, key)
	if errors.Is(err, blob.ErrNotFound) {
		return nil
	}
	if err != nil {
		// A corrupt record is still removed.
		s.log.Warn("fs: deleting object with unreadable record", "key", key, "err", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fs: delete %q: %w", key, err)
	}
	if err := s.syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("fs: delete %q: %w", key, err)
	}
	if r != nil {
		if err := os.Remove(s.dataPath(r.Data)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("fs: remove data file", "key", key, "err", err)
		}
	}
	return nil
}

// Sweep removes temporary files and unreferenced data files older than
// olderThan (left by a crash), and returns how many it removed. Incomplete
// multipart uploads are not touched (use ListMultipart/AbortMultipart).
func (s *Store) Sweep(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := s.now().Add(-olderThan)
	removed := 0
	tmps, err := os.ReadDir(filepath.Join(s.dir, "tmp"))
	if err != nil {
		return 0, fmt.Errorf("fs: sweep: %w", err)
	}
	for _, e := range tmps {
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			if os.Remove(filepath.Join(s.dir, "tmp", e.Name())) == nil {
				removed++
			}
		}
	}
	// Referenced data files: read every record.
	referenced := map[string]bool{}
	objs, err := os.ReadDir(filepath.Join(s.dir, "objects"))
	if err != nil {
		return removed, fmt.Errorf("fs: sweep: %w", err)
	}
	for _, e := range objs {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		r, err := readRecord(filepath.Join(s.dir, "objects", e.Name()), "")
		if err != nil {
			if errors.Is(err, blob.ErrNotFound) {
				continue
			}
			return removed, fmt.Errorf("fs: sweep: %w", err)
		}
		referenced[r.Data] = true
	}
	datas, err := os.ReadDir(filepath.Join(s.dir, "data"))
	if err != nil {
		return removed, fmt.Errorf("fs: sweep: %w", err)
	}
	for _, e := range datas {
		if referenced[e.Name()] {
			continue
		}
		// Written after the records were read, or too young: leave it.
		if info, err := e.Info(); err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if os.Remove(filepath.Join(s.dir, "data", e.Name())) == nil {
			removed++
		}
	}
	return removed, nil
}

// upload is the JSON file of an incomplete multipart upload.
type upload struct {
	Key         string            `json:"key"`
	Initiated   time.Time         `json:"initiated"`
	ContentType string            `json:"content_type,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

func (s *Store) uploadDir(id string) string { return filepath.Join(s.dir, "uploads", id) }

func (s *Store) readUpload(id string) (*upload, error) {
	if !isHexID(id) {
		return nil, fmt.Errorf("fs: upload %q: %w", id, blob.ErrNotFound)
	}
	b, err := readSmall(filepath.Join(s.uploadDir(id), "upload.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("fs: upload %s: %w", id, blob.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fs: upload %s: %w", id, err)
	}
	return decodeUpload(b, id)
}

// decodeUpload parses and checks an upload.json: a valid key and metadata.
func decodeUpload(b []byte, id string) (*upload, error) {
	var u upload
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, fmt.Errorf("fs: corrupt upload %s: %w", id, err)
	}
	if err := blob.ValidateKey(u.Key); err != nil {
		return nil, fmt.Errorf("fs: corrupt upload %s: %w", id, err)
	}
	if md, err := blob.NormalizeMetadata(u.Metadata); err != nil || len(md) != len(u.Metadata) {
		return nil, fmt.Errorf("fs: corrupt upload %s: metadata: %v", id, err)
	}
	return &u, nil
}

// CreateMultipart starts a multipart upload.
func (s *Store) CreateMultipart(ctx context.Context, key string, opts blob.PutOptions) (blob.Multipart, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, err
	}
	md, err := blob.NormalizeMetadata(opts.Metadata)
	if err != nil {
		return nil, fmt.Errorf("fs: create multipart %q: %w", key, err)
	}
	id := newID()
	u := upload{Key: key, Initiated: s.now().UTC(), ContentType: contentType(opts.ContentType), Metadata: md}
	b, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(s.uploadDir(id), 0o755); err != nil {
		return nil, fmt.Errorf("fs: create multipart %q: %w", key, err)
	}
	if err := s.syncDir(filepath.Join(s.dir, "uploads")); err != nil {
		return nil, fmt.Errorf("fs: create multipart %q: %w", key, err)
	}
	if err := s.writeFile(ctx, filepath.Join(s.uploadDir(id), "upload.json"), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		os.RemoveAll(s.uploadDir(id))
		return nil, fmt.Errorf("fs: create multipart %q: %w", key, err)
	}
	return &multipart{s: s, id: id, key: key}, nil
}

type multipart struct {
	s   *Store
	id  string
	key string
}

func (m *multipart) UploadID() string { return m.id }

func partName(n int) string { return fmt.Sprintf("part-%05d", n) }

// parsePartName returns the part number of a file named by partName: only
// that exact spelling counts ("part-1", "part-+0001" or "part-00000" are
// not parts), so no stray file can stand in for a part.
func parsePartName(name string) (int, bool) {
	num, ok := strings.CutPrefix(name, "part-")
	if !ok || len(num) != 5 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return 0, false
		}
		n = n*10 + int(num[i]-'0')
	}
	if blob.CheckPartNumber(n) != nil {
		return 0, false
	}
	return n, true
}

// UploadPart stores part n (written to a temporary file and renamed).
func (m *multipart) UploadPart(ctx context.Context, n int, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := blob.CheckPartNumber(n); err != nil {
		return fmt.Errorf("fs: upload part of %q: %w", m.key, err)
	}
	if _, err := m.s.readUpload(m.id); err != nil {
		return err
	}
	err := m.s.writeFile(ctx, filepath.Join(m.s.uploadDir(m.id), partName(n)), func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fs: upload %s aborted: %w", m.id, blob.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("fs: upload part %d of %q: %w", n, m.key, err)
	}
	return nil
}

// parts lists the part files of an upload: number → size.
func (s *Store) parts(id string) (map[int]int64, error) {
	ents, err := os.ReadDir(s.uploadDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("fs: upload %s: %w", id, blob.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	sizes := map[int]int64{}
	for _, e := range ents {
		n, ok := parsePartName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		sizes[n] = info.Size()
	}
	return sizes, nil
}

// Complete concatenates parts 1..N into the object.
func (m *multipart) Complete(ctx context.Context) (blob.Attrs, error) {
	if err := ctx.Err(); err != nil {
		return blob.Attrs{}, err
	}
	unlock := m.s.lockUpload(m.id)
	defer unlock()
	u, err := m.s.readUpload(m.id)
	if err != nil {
		return blob.Attrs{}, err
	}
	sizes, err := m.s.parts(m.id)
	if err != nil {
		return blob.Attrs{}, err
	}
	if err := blob.CheckCompleteParts(sizes, m.s.cfg.MinPartSize); err != nil {
		return blob.Attrs{}, fmt.Errorf("fs: complete %q: %w", m.key, err)
	}
	gen := newID()
	var total int64
	var sums bytes.Buffer
	err = m.s.writeFile(ctx, m.s.dataPath(gen), func(w io.Writer) error {
		for i := 1; i <= len(sizes); i++ {
			f, err := os.Open(filepath.Join(m.s.uploadDir(m.id), partName(i)))
			if err != nil {
				return err
			}
			h := md5.New()
			n, err := io.Copy(io.MultiWriter(w, h), &ctxReader{ctx, f})
			f.Close()
			if err != nil {
				return err
			}
			total += n
			sums.Write(h.Sum(nil))
		}
		return nil
	})
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("fs: complete %q: %w", m.key, err)
	}
	etag := md5.Sum(sums.Bytes())
	rec := &record{Version: recordVersion, Key: m.key, Data: gen, Size: total,
		ETag:     fmt.Sprintf("%s-%d", hex.EncodeToString(etag[:]), len(sizes)),
		Modified: m.s.now().UTC(), ContentType: u.ContentType, Metadata: u.Metadata}
	if err := m.s.commit(ctx, rec); err != nil {
		os.Remove(m.s.dataPath(gen))
		return blob.Attrs{}, err
	}
	if err := os.RemoveAll(m.s.uploadDir(m.id)); err != nil {
		m.s.log.Warn("fs: remove completed upload", "upload_id", m.id, "err", err)
	}
	return rec.attrs(), nil
}

// Abort removes the upload and its parts.
func (m *multipart) Abort(ctx context.Context) error {
	return m.s.AbortMultipart(ctx, m.key, m.id)
}

// ListMultipart lists incomplete uploads whose key starts with prefix,
// sorted by key, then initiation time.
func (s *Store) ListMultipart(ctx context.Context, prefix string) ([]blob.Upload, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "uploads"))
	if err != nil {
		return nil, fmt.Errorf("fs: list uploads: %w", err)
	}
	var out []blob.Upload
	for _, e := range ents {
		u, err := s.readUpload(e.Name())
		if errors.Is(err, blob.ErrNotFound) {
			continue // finished meanwhile, or created by a crashed CreateMultipart
		}
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(u.Key, prefix) {
			out = append(out, blob.Upload{Key: u.Key, UploadID: e.Name(), Initiated: u.Initiated})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Initiated.Before(out[j].Initiated)
	})
	return out, nil
}

// AbortMultipart removes an upload; blob.ErrNotFound if it does not exist
// or belongs to another key.
func (s *Store) AbortMultipart(ctx context.Context, key, uploadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock := s.lockUpload(uploadID)
	defer unlock()
	u, err := s.readUpload(uploadID)
	if err != nil {
		return err
	}
	if u.Key != key {
		return fmt.Errorf("fs: upload %s is for %q, not %q: %w", uploadID, u.Key, key, blob.ErrNotFound)
	}
	// Remove upload.json first so the upload stops existing at once.
	if err := os.Remove(filepath.Join(s.uploadDir(uploadID), "upload.json")); err != nil {
		return fmt.Errorf("fs: abort %s: %w", uploadID, err)
	}
	if err := os.RemoveAll(s.uploadDir(uploadID)); err != nil {
		return fmt.Errorf("fs: abort %s: %w", uploadID, err)
	}
	return nil
}
