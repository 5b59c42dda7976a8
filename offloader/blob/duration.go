package blob

import "github.com/tierkeeper/tierkeeper/internal/units"

// Duration is a time.Duration written in configs as a Go duration string
// ("30s", "1m30s", "250ms"): units.Duration.
type Duration = units.Duration
