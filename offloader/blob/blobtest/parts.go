package blobtest

import (
	"context"
	"errors"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// UploadParts stores data under key with blob.Parts: parts of partSize
// bytes (the last one shorter), inFlight at a time, the upload aborted on
// any failure. The acceptance, fault and benchmark suites drive the
// multipart pipeline through it.
func UploadParts(ctx context.Context, w blob.Writer, key string, data []byte, partSize, inFlight int) (blob.Attrs, error) {
	p, err := blob.StartParts(ctx, w, key, blob.PutOptions{}, blob.PartsOptions{InFlight: inFlight})
	if err != nil {
		return blob.Attrs{}, err
	}
	for n, off := 1, 0; off < len(data) || n == 1; n, off = n+1, off+partSize {
		if err := p.Send(ctx, n, data[off:min(off+partSize, len(data))], nil); err != nil {
			return blob.Attrs{}, errors.Join(err, p.Abort(ctx))
		}
	}
	a, err := p.Complete(ctx)
	if err != nil {
		return blob.Attrs{}, errors.Join(err, p.Abort(ctx))
	}
	return a, nil
}
