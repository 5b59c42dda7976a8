package units

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in configs as a Go duration string
// ("30s", "1h30m", "250ms"). In YAML the word "off" gives -1 where a
// setting can be turned off; JSON (the store providers' configs) takes
// duration strings only.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats like time.Duration, "off" for a negative value.
func (d Duration) String() string {
	if d < 0 {
		return "off"
	}
	return time.Duration(d).String()
}

// UnmarshalYAML parses a duration string or "off".
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

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// UnmarshalYAML parses a size (ParseSize) or "off" (-1, where a setting
// can be turned off).
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a size such as 64MiB or 10GiB", n.Line)
	}
	if strings.EqualFold(n.Value, "off") {
		*s = -1
		return nil
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a size (want e.g. 16MiB, 10GiB, 4096)", n.Line, n.Value)
	}
	*s = Size(v)
	return nil
}

// MarshalYAML writes the size with a unit (FormatBytes), "off" for a
// negative one.
func (s Size) MarshalYAML() (any, error) {
	if s < 0 {
		return "off", nil
	}
	return FormatBytes(int64(s)), nil
}
