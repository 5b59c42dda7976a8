package diskbench

import "fmt"

// FormatNs renders a latency in ns as "850ns", "12.3µs", "4.56ms", "1.20s".
func FormatNs(ns int64) string {
	if ns < 1000 {
		return fmt.Sprintf("%dns", ns)
	}
	return withNsUnit(float64(ns), trimFloat)
}

// withNsUnit writes ns in the largest of ns, µs, ms and s not above it, the
// number formatted by num.
func withNsUnit(ns float64, num func(float64) string) string {
	switch {
	case ns < 1e3:
		return num(ns) + "ns"
	case ns < 1e6:
		return num(ns/1e3) + "µs"
	case ns < 1e9:
		return num(ns/1e6) + "ms"
	default:
		return num(ns/1e9) + "s"
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
