package fs

import (
	"context"
	"crypto/md5"
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
	_ blob.PartCRC32CUser  = (*Store)(nil)
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

// UsesPartCRC32C is false: parts are written to files, no part CRC-32C
// is checked.
func (s *Store) UsesPartCRC32C() bool { return false }

// Close releases nothing; the store stays usable.
func (s *Store) Close() error { return nil }

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

func (s *Store) crash(step string) {
	if s.crashPoint != nil {
		s.crashPoint(step)
	}
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
