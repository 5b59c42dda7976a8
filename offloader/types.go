package offloader

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
)

// Duration is a time.Duration in a config ("30s", "1h30m"; "off" gives -1
// where a setting can be turned off): units.Duration.
type Duration = units.Duration

// Size is a byte count in a config ("64MiB", "10GiB", "4k"; "off" gives
// -1 where a setting can be off): units.Size.
type Size = units.Size

// DeletionLag is "broker" (leave BookKeeper deletion to the broker),
// "never" or a duration after the offload commit.
type DeletionLag struct{ policy.DeletionLag }

// UnmarshalYAML parses broker, never or a duration.
func (d *DeletionLag) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: deletion_lag: want broker, never or a duration", n.Line)
	}
	switch strings.ToLower(n.Value) {
	case "broker":
		d.DeletionLag = policy.DeletionLag{Mode: policy.LagBroker}
	case "never":
		d.DeletionLag = policy.DeletionLag{Mode: policy.LagNever}
	default:
		v, err := time.ParseDuration(n.Value)
		if err != nil || v < 0 {
			return fmt.Errorf("line %d: deletion_lag %q: want broker, never or a duration such as 4h", n.Line, n.Value)
		}
		d.DeletionLag = policy.DeletionLag{Mode: policy.LagAfter, After: v}
	}
	return nil
}

// MarshalYAML writes broker, never or the duration.
func (d DeletionLag) MarshalYAML() (any, error) { return d.DeletionLag.String(), nil }
