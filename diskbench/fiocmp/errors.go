package fiocmp

import "errors"

// ErrNoLatencySamples is returned when a fio report has no latency
// percentiles for the case's writes (reads): fio recorded no IO after its
// ramp_time. A size-bound case (journal, entry log) does that when its file
// fills during the warm-up, so the measured window is empty; a larger file
// or a shorter warm-up measures it.
var ErrNoLatencySamples = errors.New("fio recorded no latency samples after its ramp time")
