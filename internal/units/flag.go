package units

import "github.com/spf13/pflag"

// Size is a byte count that parses with ParseSize and prints with
// FormatBytes, in flags and in YAML configs (config.go). *Size implements
// pflag.Value, so a size flag is
//
//	var maxBytes units.Size = 2 * units.Size(units.GiB)
//	fs.Var(&maxBytes, "max-bytes", "bytes the benchmark may write")
//
// A zero Size prints as "0", which pflag treats as "no default shown".
type Size int64

var _ pflag.Value = (*Size)(nil)

// Set parses v (pflag.Value).
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

// String returns FormatBytes of s, "0" for zero (pflag.Value: no default
// shown) and "off" for a negative size (a setting turned off).
func (s Size) String() string {
	switch {
	case s == 0:
		return "0"
	case s < 0:
		return "off"
	}
	return FormatBytes(int64(s))
}

// Type returns "size" (pflag.Value).
func (s *Size) Type() string { return "size" }

// Bytes returns s as an int64.
func (s Size) Bytes() int64 { return int64(s) }

// SizeList is a comma-separated list of sizes ("4k,16k,64k"). *SizeList
// implements pflag.Value: the first Set replaces the default, later ones
// (a repeated flag) append.
type SizeList struct {
	v       []int64
	changed bool
}

var _ pflag.Value = (*SizeList)(nil)

// NewSizeList returns a list holding def.
func NewSizeList(def ...int64) *SizeList { return &SizeList{v: append([]int64(nil), def...)} }

// Set parses v and replaces the default or appends (pflag.Value).
func (l *SizeList) Set(v string) error {
	ns, err := ParseSizeList(v)
	if err != nil {
		return err
	}
	if !l.changed {
		l.v, l.changed = nil, true
	}
	l.v = append(l.v, ns...)
	return nil
}

// String returns the sizes joined by commas (pflag.Value).
func (l *SizeList) String() string { return FormatBytesList(l.v) }

// Type returns "sizes" (pflag.Value).
func (l *SizeList) Type() string { return "sizes" }

// Values returns the sizes.
func (l *SizeList) Values() []int64 { return append([]int64(nil), l.v...) }
