package blob

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// EmptyRange answers a zero-length range read for providers whose servers
// refuse empty HTTP ranges: it HEADs the object (ErrNotFound when missing),
// checks off lies within it, and returns an empty body with the attributes.
// op names the provider in errors ("s3 get", "cos get").
func EmptyRange(ctx context.Context, r Reader, op, key string, off, length int64) (io.ReadCloser, Attrs, error) {
	a, err := r.Head(ctx, key)
	if err != nil {
		return nil, Attrs{}, err
	}
	n, err := ResolveRange(off, length, a.Size)
	if err != nil {
		return nil, Attrs{}, fmt.Errorf("%s %q: %w", op, key, err)
	}
	if n != 0 {
		// The server refused a range that should be valid: the object
		// changed between the two requests.
		return nil, Attrs{}, fmt.Errorf("%s %q: %w: object changed while reading", op, key, ErrInvalidRange)
	}
	return io.NopCloser(bytes.NewReader(nil)), a, nil
}
