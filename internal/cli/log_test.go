package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLogLevelAndLogger(t *testing.T) {
	if l, err := ParseLogLevel("--log-level", "debug"); err != nil || l != slog.LevelDebug {
		t.Errorf("debug: %v %v", l, err)
	}
	if _, err := ParseLogLevel("--log-level", "loud"); err == nil || !strings.HasPrefix(err.Error(), `--log-level "loud": `) {
		t.Errorf("bad level: %v", err)
	}
	var b bytes.Buffer
	log := Logger(&b, slog.LevelWarn)
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	if s := b.String(); strings.Contains(s, "hidden") || !strings.Contains(s, "level=WARN msg=shown k=1") {
		t.Errorf("log %q", s)
	}
}
