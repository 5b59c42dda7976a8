package pipeline

import "math/rand/v2"

func randInt63n(n int64) int64 { return rand.Int64N(n) }
