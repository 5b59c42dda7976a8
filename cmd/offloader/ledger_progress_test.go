package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/cli"
)

func TestProgressBarETA(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	p := &progressBar{line: cli.NewSizedLine(&buf, func() (int, int) { return 200, 50 }), label: "ledger 1", total: 100 << 20, start: start, bytes: 10 << 20, entries: 10}
	p.line.Draw(p.text(start.Add(2 * time.Second))) // 10 MiB in 2 s: 90 MiB left take 18 s
	if out := buf.String(); !strings.Contains(out, " 10% ") || !strings.Contains(out, "10.0 MiB 5.0 MiB/s ETA 18s") {
		t.Fatalf("progress line %q", out)
	}
}
