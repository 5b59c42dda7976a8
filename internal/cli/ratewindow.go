package cli

import "time"

// RateWindow is the rate of a growing count over about the last Span (a
// watch's "copied 12 MiB/s over 30s").
type RateWindow struct {
	Span time.Duration
	at   []time.Time
	v    []int64
}

// Add records v at now and returns the rate since the oldest sample kept
// (at most Span old, but always one before now) and how long ago that was.
func (w *RateWindow) Add(now time.Time, v int64) (rate float64, over time.Duration) {
	w.at, w.v = append(w.at, now), append(w.v, v)
	for len(w.at) > 2 && now.Sub(w.at[1]) >= w.Span {
		w.at, w.v = w.at[1:], w.v[1:]
	}
	if over = now.Sub(w.at[0]); over > 0 {
		rate = float64(v-w.v[0]) / over.Seconds()
	}
	return rate, over
}
