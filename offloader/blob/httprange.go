package blob

import (
	"fmt"
	"strconv"
	"strings"
)

// HTTPRange returns the Range header HTTP providers send for
// GetRange(off, length) with length != 0: "" for the whole object (off 0,
// length < 0), else "bytes=<off>-" or "bytes=<off>-<last>".
func HTTPRange(off, length int64) string {
	switch {
	case off == 0 && length < 0:
		return ""
	case length < 0:
		return fmt.Sprintf("bytes=%d-", off)
	}
	return fmt.Sprintf("bytes=%d-%d", off, off+length-1)
}

// CheckRangeAnswer checks the answer to a ranged GET sent for
// GetRange(off, length): the object size is read from contentRange
// ("bytes <first>-<last>/<size>") and the body length got must be what
// ResolveRange gives for it. It returns the object size. op names the
// provider in errors ("s3 get", "cos get").
func CheckRangeAnswer(op, key, contentRange string, got, off, length int64) (int64, error) {
	size := int64(-1)
	if i := strings.LastIndexByte(contentRange, '/'); i >= 0 {
		size, _ = strconv.ParseInt(contentRange[i+1:], 10, 64)
	}
	if size < 0 {
		return 0, fmt.Errorf("%s %q: ranged response without a usable Content-Range %q", op, key, contentRange)
	}
	want, err := ResolveRange(off, length, size)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", op, key, err)
	}
	if got != want {
		return 0, fmt.Errorf("%s %q: server returned %d bytes for a %d-byte range", op, key, got, want)
	}
	return size, nil
}
