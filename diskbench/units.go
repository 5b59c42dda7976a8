package diskbench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a byte size: a plain number of bytes or a number with a
// binary suffix k/K/KiB, m/M/MiB, g/G/GiB, t/T/TiB (all powers of 1024, as
// fio and BookKeeper read them). "4k" is 4096.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty size", ErrInvalidOptions)
	}
	lower := strings.ToLower(t)
	lower = strings.TrimSuffix(strings.TrimSuffix(lower, "ib"), "b")
	mult := int64(1)
	if n := len(lower); n > 0 {
		switch lower[n-1] {
		case 'k':
			mult, lower = KiB, lower[:n-1]
		case 'm':
			mult, lower = MiB, lower[:n-1]
		case 'g':
			mult, lower = GiB, lower[:n-1]
		case 't':
			mult, lower = 1<<40, lower[:n-1]
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(lower), 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: bad size %q (want e.g. 4k, 64KiB, 1m, 2G)", ErrInvalidOptions, s)
	}
	v := f * float64(mult)
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("%w: size %q too large", ErrInvalidOptions, s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%w: size %q is not a whole number of bytes", ErrInvalidOptions, s)
	}
	return int64(v), nil
}

// ParseSizes parses a comma-separated list of sizes ("4k,16k,64k").
func ParseSizes(s string) ([]int64, error) {
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
		return nil, fmt.Errorf("%w: empty size list %q", ErrInvalidOptions, s)
	}
	return out, nil
}

// FormatBytes renders n with a binary unit: "4KiB", "1.5MiB", "512B".
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(n)
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f%s", v, units[i])
	}
	if math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f%s", v, units[i])
	}
	if math.Abs(v) >= 10 {
		return fmt.Sprintf("%.1f%s", v, units[i])
	}
	return fmt.Sprintf("%.2f%s", v, units[i])
}

// FormatRate renders a throughput in MiB/s (or KiB/s / GiB/s when that
// reads better).
func FormatRate(bps float64) string {
	return FormatBytes(int64(bps)) + "/s"
}

// FormatNs renders a latency in ns as "850ns", "12.3µs", "4.56ms", "1.20s".
func FormatNs(ns int64) string {
	d := float64(ns)
	switch {
	case ns < 1000:
		return fmt.Sprintf("%dns", ns)
	case ns < 1000_000:
		return trimFloat(d/1e3) + "µs"
	case ns < 1000_000_000:
		return trimFloat(d/1e6) + "ms"
	default:
		return trimFloat(d/1e9) + "s"
	}
}

func trimFloat(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
