package cli

import (
	"fmt"
	"io"
	"log/slog"
)

// Logger returns the commands' logger: text records at level and above on
// w (stderr).
func Logger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// ParseLogLevel parses a --log-level value (debug, info, warn, error);
// the error names flag.
func ParseLogLevel(flag, s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("%s %q: %w", flag, s, err)
	}
	return l, nil
}
