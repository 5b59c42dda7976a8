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
// GetRange(off, length): contentRange must be "bytes <first>-<last>/<size>"
// naming exactly the bytes asked for (first = off, last = off+n-1 where n
// is what ResolveRange gives for the size), and the body length got must
// be n. A server that answers another range than the one asked for (a
// proxy, a cache) is an error, not data at the wrong offset. It returns
// the object size. op names the provider in errors ("s3 get", "cos get").
func CheckRangeAnswer(op, key, contentRange string, got, off, length int64) (int64, error) {
	first, last, size, ok := parseContentRange(contentRange)
	if !ok {
		return 0, fmt.Errorf("%s %q: ranged response without a usable Content-Range %q", op, key, Clip(contentRange))
	}
	want, err := ResolveRange(off, length, size)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", op, key, err)
	}
	if want > 0 && (first != off || last != off+want-1) {
		return 0, fmt.Errorf("%s %q: server answered range %d-%d for %d-%d (Content-Range %q)", op, key, first, last, off, off+want-1, Clip(contentRange))
	}
	if got != want {
		return 0, fmt.Errorf("%s %q: server returned %d bytes for a %d-byte range", op, key, got, want)
	}
	return size, nil
}

// parseContentRange parses "bytes <first>-<last>/<size>" (RFC 9110 14.4,
// a satisfied range) with first <= last < size.
func parseContentRange(v string) (first, last, size int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	f, l, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var ok1, ok2, ok3 bool
	first, ok1 = parseDecimal(f)
	last, ok2 = parseDecimal(l)
	size, ok3 = parseDecimal(sz)
	if !ok1 || !ok2 || !ok3 || first > last || last >= size {
		return 0, 0, 0, false
	}
	return first, last, size, true
}

// parseDecimal accepts only ASCII digits (no sign, no blanks) that fit an
// int64.
func parseDecimal(s string) (int64, bool) {
	if s == "" || !allDigits(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
