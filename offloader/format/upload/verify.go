package upload

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
)

// VerifyOptions configure Verify. The zero value checks sizes, metadata and
// the index.
type VerifyOptions struct {
	// BlockHeaders also reads every block's 128-byte header with a ranged
	// GET and checks magic, length and first entry id against the index
	// (one small request per block).
	BlockHeaders bool
}

// Verify checks uploaded objects before the managed-ledger metadata is
// committed: both objects exist with the expected sizes and metadata
// (format version 1, role), and the stored index is byte for byte the one
// uploaded and parses. A mismatch is ErrVerify; a missing object
// blob.ErrNotFound.
func Verify(ctx context.Context, store blob.Reader, res *Result, opts *VerifyOptions) error {
	if opts == nil {
		opts = &VerifyOptions{}
	}
	data, err := store.Head(ctx, res.DataKey)
	if err != nil {
		return fmt.Errorf("verify: head %s: %w", res.DataKey, err)
	}
	if data.Size != res.DataObjectLength {
		return fmt.Errorf("%w: %s has %d bytes, want %d", ErrVerify, res.DataKey, data.Size, res.DataObjectLength)
	}
	if err := checkMetadata(res.DataKey, data.Metadata, res.DataMetadata); err != nil {
		return err
	}
	rc, index, err := store.Get(ctx, res.IndexKey)
	if err != nil {
		return fmt.Errorf("verify: get %s: %w", res.IndexKey, err)
	}
	defer rc.Close()
	if index.Size != int64(len(res.IndexBytes)) {
		return fmt.Errorf("%w: %s has %d bytes, want %d", ErrVerify, res.IndexKey, index.Size, len(res.IndexBytes))
	}
	if err := checkMetadata(res.IndexKey, index.Metadata, res.IndexMetadata); err != nil {
		return err
	}
	raw := make([]byte, len(res.IndexBytes))
	if _, err := io.ReadFull(rc, raw); err != nil {
		return fmt.Errorf("verify: read %s: %w", res.IndexKey, err)
	}
	if !bytes.Equal(raw, res.IndexBytes) {
		return fmt.Errorf("%w: stored %s differs from the uploaded index", ErrVerify, res.IndexKey)
	}
	ix, err := format.ParseIndex(raw)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrVerify, res.IndexKey, err)
	}
	if ix.DataObjectLength != data.Size {
		return fmt.Errorf("%w: index says %d data bytes, object has %d", ErrVerify, ix.DataObjectLength, data.Size)
	}
	if !opts.BlockHeaders {
		return nil
	}
	for i, b := range ix.Blocks {
		start, end := ix.BlockRange(i)
		if err := verifyHeader(ctx, store, res.DataKey, b, end-start); err != nil {
			return err
		}
	}
	return nil
}

func verifyHeader(ctx context.Context, store blob.Reader, key string, b format.IndexEntry, size int64) error {
	rc, attrs, err := store.GetRange(ctx, key, b.Offset, format.BlockHeaderSize)
	if err != nil {
		return fmt.Errorf("verify: get %s block %d header: %w", key, b.PartID, err)
	}
	defer rc.Close()
	if err := format.CheckVersion(key, attrs.Metadata); err != nil {
		return fmt.Errorf("%w: %w", ErrVerify, err)
	}
	var h [format.BlockHeaderSize]byte
	if _, err := io.ReadFull(rc, h[:]); err != nil {
		return fmt.Errorf("verify: read %s block %d header: %w", key, b.PartID, err)
	}
	bh, err := format.ParseBlockHeader(h[:])
	if err != nil {
		return fmt.Errorf("%w: %s block %d: %w", ErrVerify, key, b.PartID, err)
	}
	if bh.FirstEntryID != b.FirstEntryID || bh.BlockLength != size {
		return fmt.Errorf("%w: %s block %d header says entry %d, %d bytes; index says entry %d, %d bytes",
			ErrVerify, key, b.PartID, bh.FirstEntryID, bh.BlockLength, b.FirstEntryID, size)
	}
	return nil
}

// checkMetadata requires the format version and every key that was sent.
func checkMetadata(key string, got, sent map[string]string) error {
	if err := format.CheckVersion(key, got); err != nil {
		return fmt.Errorf("%w: %w", ErrVerify, err)
	}
	for k, v := range sent {
		if got[k] != v {
			return fmt.Errorf("%w: %s metadata %s=%q, sent %q", ErrVerify, key, k, got[k], v)
		}
	}
	return nil
}
