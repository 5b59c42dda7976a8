package bookieagent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Byte multiples.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// ParseSize parses a byte size such as "4096", "64k", "64KiB", "4g", "2GB",
// "1.5GiB" or "512m". Suffixes are binary (k = KiB) as in the JVM's -Xmx
// and BookKeeper's documentation; "B" is optional. Negative, empty and
// overflowing values are rejected with ErrBadSize.
func ParseSize(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadSize)
	}
	lower := strings.ToLower(s)
	lower = strings.TrimSuffix(lower, "ib")
	lower = strings.TrimSuffix(lower, "b")
	mult := int64(1)
	if n := len(lower); n > 0 {
		switch lower[n-1] {
		case 'k':
			mult = KiB
		case 'm':
			mult = MiB
		case 'g':
			mult = GiB
		case 't':
			mult = TiB
		}
		if mult != 1 {
			lower = lower[:n-1]
		}
	}
	if lower == "" {
		return 0, fmt.Errorf("%w: %q", ErrBadSize, orig)
	}
	if !strings.ContainsAny(lower, ".eE") {
		v, err := strconv.ParseInt(lower, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%w: %q", ErrBadSize, orig)
		}
		if v > math.MaxInt64/mult {
			return 0, fmt.Errorf("%w: %q overflows", ErrBadSize, orig)
		}
		return v * mult, nil
	}
	f, err := strconv.ParseFloat(lower, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: %q", ErrBadSize, orig)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%w: %q overflows", ErrBadSize, orig)
	}
	return int64(v), nil
}

// FormatSize renders n bytes in the largest binary unit that divides it
// exactly ("64MiB", "4KiB", "1000B"), so the text parses back to n.
func FormatSize(n int64) string {
	units := []struct {
		v int64
		s string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}}
	for _, u := range units {
		if n != 0 && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// humanBytes renders n approximately with one decimal ("1.4 GiB") for
// evidence text.
func humanBytes(n float64) string {
	a := math.Abs(n)
	switch {
	case a >= float64(TiB):
		return fmt.Sprintf("%.1f TiB", n/float64(TiB))
	case a >= float64(GiB):
		return fmt.Sprintf("%.1f GiB", n/float64(GiB))
	case a >= float64(MiB):
		return fmt.Sprintf("%.1f MiB", n/float64(MiB))
	case a >= float64(KiB):
		return fmt.Sprintf("%.1f KiB", n/float64(KiB))
	}
	return fmt.Sprintf("%.0f B", n)
}

// humanRate renders bytes per second in decimal MB/s, the unit disk
// vendors and fio's summaries use.
func humanRate(bps float64) string {
	return fmt.Sprintf("%.1f MB/s", bps/1e6)
}

// JVMMemory is what JVMDirectMemory found in a JVM option string.
type JVMMemory struct {
	// DirectBytes is the direct-memory limit in bytes.
	DirectBytes int64
	// Source names the flag that produced DirectBytes:
	// "-XX:MaxDirectMemorySize" or "-Xmx (JVM default for direct memory)".
	Source string
	// HeapBytes is -Xmx, or 0 when absent.
	HeapBytes int64
}

// JVMDirectMemory finds the JVM's maximum direct memory in an option string
// such as PULSAR_MEM or BOOKIE_MEM ("-Xms2g -Xmx2g
// -XX:MaxDirectMemorySize=4g"). Without -XX:MaxDirectMemorySize the JVM's
// limit equals the maximum heap, so -Xmx is used (Source says so). It
// returns ErrNoDirectMemory when neither flag is present and ErrBadSize when
// a value does not parse. The last occurrence of a flag wins, as in the JVM.
func JVMDirectMemory(opts string) (JVMMemory, error) {
	var m JVMMemory
	var direct int64 = -1
	for _, f := range strings.Fields(opts) {
		f = strings.Trim(f, `"'`)
		switch {
		case strings.HasPrefix(f, "-XX:MaxDirectMemorySize="):
			v, err := parseJVMSize(strings.TrimPrefix(f, "-XX:MaxDirectMemorySize="))
			if err != nil {
				return JVMMemory{}, fmt.Errorf("%s: %w", f, err)
			}
			direct = v
		case strings.HasPrefix(f, "-Xmx"):
			v, err := parseJVMSize(strings.TrimPrefix(f, "-Xmx"))
			if err != nil {
				return JVMMemory{}, fmt.Errorf("%s: %w", f, err)
			}
			m.HeapBytes = v
		}
	}
	switch {
	case direct > 0:
		m.DirectBytes, m.Source = direct, "-XX:MaxDirectMemorySize"
	case m.HeapBytes > 0:
		m.DirectBytes, m.Source = m.HeapBytes, "-Xmx (JVM default for direct memory)"
	default:
		return JVMMemory{}, fmt.Errorf("%w: no -XX:MaxDirectMemorySize or -Xmx in %q", ErrNoDirectMemory, opts)
	}
	return m, nil
}

// parseJVMSize parses a JVM memory value: digits with an optional k/m/g/t
// suffix (no "B", no fractions).
func parseJVMSize(s string) (int64, error) {
	if s == "" || strings.ContainsAny(s, ".bB") {
		return 0, fmt.Errorf("%w: %q", ErrBadSize, s)
	}
	v, err := ParseSize(s)
	if err != nil {
		return 0, err
	}
	if v == 0 {
		return 0, fmt.Errorf("%w: %q is zero", ErrBadSize, s)
	}
	return v, nil
}
