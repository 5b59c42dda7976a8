package offloader

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
)

// Duration is a time.Duration written as a Go duration string ("30s",
// "1h30m"). The word "off" gives -1 where a setting can be turned off.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string {
	if d < 0 {
		return "off"
	}
	return time.Duration(d).String()
}

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 30s or 24h", n.Line)
	}
	if strings.EqualFold(n.Value, "off") {
		*d = -1
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (want e.g. 30s, 15m, 24h)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// Size is a byte count written as a number or with a binary suffix
// ("64MiB", "10GiB", "4k"); "off" gives -1 where a setting can be off.
type Size int64

// UnmarshalYAML parses a size.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a size such as 64MiB or 10GiB", n.Line)
	}
	if strings.EqualFold(n.Value, "off") {
		*s = -1
		return nil
	}
	v, err := units.ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a size (want e.g. 16MiB, 10GiB, 4096)", n.Line, n.Value)
	}
	*s = Size(v)
	return nil
}

func (s Size) String() string {
	if s < 0 {
		return "off"
	}
	return units.FormatBytes(int64(s))
}

// MarshalYAML writes the size with a unit.
func (s Size) MarshalYAML() (any, error) { return s.String(), nil }

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
