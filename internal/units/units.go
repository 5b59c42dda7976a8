// Package units parses and formats byte sizes for every tierkeeper command
// and library: one parser, one family of formatters, and pflag values for
// size flags.
//
// # Units
//
// All multiples are binary, as fio, the JVM (-Xmx4g) and BookKeeper's
// documentation read them: k, K, KB, KiB = 1024; m, M, MB, MiB = 1024²;
// g, t, p and e likewise. "B" is optional, case does not matter, and a space
// may separate the number from the unit ("1.5 GiB").
//
// # Formatters
//
//   - FormatBytes is exact: it writes n in the largest binary unit that
//     divides it ("64MiB", "4KiB", "1025B"), so ParseSize(FormatBytes(n)) == n
//     for every n ≥ 0. Use it wherever the text may be read back (flag
//     defaults, configuration, labels of block sizes).
//   - HumanBytes is approximate, one decimal ("1.4 GiB", "512 B"), for
//     figures a person reads (free space, bytes written, progress).
//   - HumanRate is HumanBytes per second ("123.4 MiB/s"); DecimalRate is in
//     decimal megabytes ("123.4 MB/s"), the unit of disk data sheets and of
//     fio's summary lines.
package units

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
)

// Binary multiples.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
	PiB int64 = 1 << 50
	EiB int64 = 1 << 60
)

// ErrBadSize is wrapped by every error ParseSize and ParseSizeList return.
var ErrBadSize = errors.New("unparseable size")

// maxSizeLen bounds the text ParseSize looks at, so a huge input cannot make
// the exact fraction arithmetic allocate much.
const maxSizeLen = 64

// suffixes maps a lower-case unit letter to its multiple.
var suffixes = map[byte]int64{'k': KiB, 'm': MiB, 'g': GiB, 't': TiB, 'p': PiB, 'e': EiB}

// ParseSize parses a byte count: digits with an optional fraction and an
// optional binary unit ("4096", "64k", "64KiB", "1.5GiB", "2 g"). The result
// must be a whole number of bytes that fits in an int64; negative numbers,
// exponents, hex, NaN and the like are refused. Every error wraps ErrBadSize.
func ParseSize(s string) (int64, error) {
	if len(s) > maxSizeLen {
		return 0, fmt.Errorf("%w: %d characters (at most %d)", ErrBadSize, len(s), maxSizeLen)
	}
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s (want e.g. 4096, 64k, 64KiB or 1.5GiB)", ErrBadSize, s, why)
	}
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, bad("empty")
	}
	if t[0] == '-' {
		return 0, bad("negative")
	}
	num, unit := t, ""
	if i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i >= 0 {
		num, unit = t[:i], strings.TrimLeft(t[i:], " ")
	}
	mult := int64(1)
	switch {
	case unit == "" || unit == "b":
	case len(unit) >= 1 && suffixes[unit[0]] != 0 && (len(unit) == 1 || unit[1:] == "b" || unit[1:] == "ib"):
		mult = suffixes[unit[0]]
	default:
		return 0, bad("unknown unit")
	}
	whole, frac, hasDot := strings.Cut(num, ".")
	if whole == "" && frac == "" || strings.Contains(frac, ".") || !digits(whole) || !digits(frac) || hasDot && frac == "" {
		return 0, bad("not a number")
	}
	// Exact arithmetic: "1.5" KiB is 3/2 × 1024 bytes.
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, bad("not a number")
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, bad("not a whole number of bytes")
	}
	if !r.Num().IsInt64() {
		return 0, bad("too large")
	}
	return r.Num().Int64(), nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ParseSizeList parses a comma-separated list of sizes ("4k,16k, 64k").
// Empty items are skipped; an empty list is an error.
func ParseSizeList(s string) ([]int64, error) {
	var out []int64
	for _, p := range strings.Split(s, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		v, err := ParseSize(p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty size list %q", ErrBadSize, s)
	}
	return out, nil
}

var exactUnits = []struct {
	v int64
	s string
}{{EiB, "EiB"}, {PiB, "PiB"}, {TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}}

// FormatBytes writes n exactly, as a whole number of the largest binary unit
// that divides it: "64MiB", "4KiB", "1536B", "1025B", "0B". ParseSize reads
// every result back to n.
func FormatBytes(n int64) string {
	for _, u := range exactUnits {
		if n != 0 && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// FormatBytesList joins FormatBytes of each size with commas ("4KiB,64KiB").
func FormatBytesList(ns []int64) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = FormatBytes(n)
	}
	return strings.Join(parts, ",")
}

// Number is any numeric type the approximate formatters accept.
type Number interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64 | ~float64
}

var humanUnits = []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// HumanBytes writes n approximately with one decimal in the largest binary
// unit not above it: "1.4 GiB", "2.0 KiB", "1023 B". It is for reading, not
// for parsing back (use FormatBytes for that).
func HumanBytes[T Number](n T) string {
	v := float64(n)
	if math.Abs(v) < float64(KiB) {
		return fmt.Sprintf("%.0f B", v)
	}
	i := -1
	for math.Abs(v) >= 1024 && i < len(humanUnits)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, humanUnits[i])
}

// HumanRate writes a rate in bytes per second as HumanBytes + "/s"
// ("123.4 MiB/s").
func HumanRate(bytesPerSec float64) string { return HumanBytes(bytesPerSec) + "/s" }

// DecimalRate writes a rate in decimal megabytes per second ("123.4 MB/s"),
// the unit of disk data sheets and fio's summaries.
func DecimalRate(bytesPerSec float64) string { return fmt.Sprintf("%.1f MB/s", bytesPerSec/1e6) }
