package blob

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits every provider enforces the same way, so a key or metadata map that
// works on fs also works on S3 and COS.
const (
	// MaxKeyLen is the longest key accepted, in bytes.
	MaxKeyLen = 1024
	// MaxMetadataSize bounds the sum of len(key)+len(value) of user
	// metadata (S3 and COS allow 2 KiB).
	MaxMetadataSize = 2048
	// MaxParts is the highest part number of a multipart upload.
	MaxParts = 10000
)

// Clip shortens a value read from a store or a file (a header, a record
// field) to quote it in an error: at most 100 bytes, then "...". A corrupt
// or hostile value then costs a short message, whatever its size.
func Clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// ValidateKey checks that key is non-empty, at most MaxKeyLen bytes, valid
// UTF-8 and free of control characters. The error wraps ErrInvalidArgument.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key of %d bytes exceeds %d", ErrInvalidArgument, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key %q is not valid UTF-8", ErrInvalidArgument, key)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: key %q contains a control character", ErrInvalidArgument, key)
		}
	}
	return nil
}

// NormalizeMetadata returns a copy of md with lower-case keys after checking
// that every key is made of [a-z0-9._-] (any case on input), every value is
// printable ASCII without leading or trailing blanks (so it survives an HTTP
// header round trip unchanged), no two keys collide after lower-casing, and
// the total size is at most MaxMetadataSize. A nil or empty map gives nil.
func NormalizeMetadata(md map[string]string) (map[string]string, error) {
	if len(md) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(md))
	size := 0
	for k, v := range md {
		lk := strings.ToLower(k)
		if lk == "" {
			return nil, fmt.Errorf("%w: empty metadata key", ErrInvalidArgument)
		}
		for i := 0; i < len(lk); i++ {
			c := lk[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return nil, fmt.Errorf("%w: metadata key %q: only letters, digits, '-', '_' and '.' are allowed", ErrInvalidArgument, k)
			}
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return nil, fmt.Errorf("%w: metadata %q: value must be printable ASCII", ErrInvalidArgument, k)
			}
		}
		if strings.TrimSpace(v) != v {
			return nil, fmt.Errorf("%w: metadata %q: value has leading or trailing blanks", ErrInvalidArgument, k)
		}
		if _, dup := out[lk]; dup {
			return nil, fmt.Errorf("%w: metadata key %q given twice (keys are case-insensitive)", ErrInvalidArgument, lk)
		}
		out[lk] = v
		size += len(lk) + len(v)
	}
	if size > MaxMetadataSize {
		return nil, fmt.Errorf("%w: user metadata of %d bytes exceeds %d", ErrInvalidArgument, size, MaxMetadataSize)
	}
	return out, nil
}

// ResolveRange checks a GetRange request against the object size and returns
// the number of bytes to read. See ErrInvalidRange for the rules.
func ResolveRange(off, length, size int64) (n int64, err error) {
	switch {
	case off < 0:
		return 0, fmt.Errorf("%w: negative offset %d", ErrInvalidRange, off)
	case off > size:
		return 0, fmt.Errorf("%w: offset %d past the end of a %d-byte object", ErrInvalidRange, off, size)
	case length < 0:
		return size - off, nil
	case length > size-off:
		return 0, fmt.Errorf("%w: %d bytes at offset %d run past the end of a %d-byte object", ErrInvalidRange, length, off, size)
	}
	return length, nil
}

// CheckPartNumber checks 1 <= n <= MaxParts.
func CheckPartNumber(n int) error {
	if n < 1 || n > MaxParts {
		return fmt.Errorf("%w: part number %d outside 1..%d", ErrInvalidArgument, n, MaxParts)
	}
	return nil
}

// CheckCompleteParts checks that the uploaded part numbers are exactly
// 1..N and every part but the last has at least minPart bytes. sizes maps
// part number to size.
func CheckCompleteParts(sizes map[int]int64, minPart int64) error {
	n := len(sizes)
	if n == 0 {
		return fmt.Errorf("%w: no part uploaded", ErrMissingPart)
	}
	for i := 1; i <= n; i++ {
		sz, ok := sizes[i]
		if !ok {
			return fmt.Errorf("%w: part %d missing (%d parts uploaded)", ErrMissingPart, i, n)
		}
		if i < n && sz < minPart {
			return fmt.Errorf("%w: part %d has %d bytes, minimum %d", ErrPartTooSmall, i, sz, minPart)
		}
	}
	return nil
}

// OrderParts checks the parts recorded by a multipart upload (part number
// → part) with CheckCompleteParts and returns them in part-number order, so
// parts[i] is part i+1, with their total size. size gives a part's length.
func OrderParts[P any](parts map[int]P, size func(P) int64, minPart int64) ([]P, int64, error) {
	sizes := make(map[int]int64, len(parts))
	for n, p := range parts {
		sizes[n] = size(p)
	}
	if err := CheckCompleteParts(sizes, minPart); err != nil {
		return nil, 0, err
	}
	out := make([]P, len(parts))
	var total int64
	for i := range out {
		out[i] = parts[i+1]
		total += sizes[i+1]
	}
	return out, total, nil
}
