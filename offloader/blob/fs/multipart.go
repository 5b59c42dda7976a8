package fs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Multipart uploads: a directory per upload holding its record and one
// file per part, concatenated into a data file by Complete.

// upload is the JSON file of an incomplete multipart upload.
type upload struct {
	Key         string            `json:"key"`
	Initiated   time.Time         `json:"initiated"`
	ContentType string            `json:"content_type,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

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
