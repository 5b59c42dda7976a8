package blob

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
)

// FirstEnv returns the first non-empty of the environment variables
// names, read through getenv (os.Getenv, or a test's lookup): how the
// providers find credentials under their alternative variable names.
func FirstEnv(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Secret is a credential read from a config (a secret key, a session
// token). It never prints: fmt verbs, slog, JSON and text marshalling all
// give "<redacted>" (or "" when empty). Reveal returns the value for the
// one place that needs it, the request signer.
type Secret string

const redacted = "<redacted>"

// Reveal returns the secret value.
func (s Secret) Reveal() string { return string(s) }

// String returns "<redacted>", or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString is String, so %#v does not print the value either.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.String()) }

// Format prints String for every verb (%v, %s, %q, %x ...).
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s.String())
		return
	}
	_, _ = io.WriteString(f, s.String())
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON writes the redacted form.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText writes the redacted form (YAML and other text encoders).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
