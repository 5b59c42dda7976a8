package fs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Object records: the small JSON file per key that names its data file
// and holds its attributes.

const (
	maxRecordSize = 64 << 10
	recordVersion = 1
)

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
