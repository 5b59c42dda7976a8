package diskbench

import "fmt"

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
