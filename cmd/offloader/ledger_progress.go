package main

import (
	"fmt"
	"io"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// progressBar draws a one-line progress bar with rate and ETA on stderr
// when stderr is a terminal; otherwise it draws nothing.
type progressBar struct {
	line    *cli.Line
	label   string
	total   int64 // bytes expected (0: unknown)
	start   time.Time
	entries int64
	bytes   int64
}

func newProgressBar(w io.Writer, enabled bool, label string, totalBytes int64) *progressBar {
	return &progressBar{line: cli.NewLine(w, enabled), label: label, total: totalBytes, start: time.Now()}
}

// add records progress and redraws at most 5 times a second.
func (p *progressBar) add(entries, bytes int64) {
	p.entries += entries
	p.bytes += bytes
	if now := time.Now(); p.line.Due(now) {
		p.line.Draw(p.text(now))
	}
}

func (p *progressBar) text(now time.Time) string {
	rate := cli.Rate(float64(p.bytes), now.Sub(p.start))
	eta := "?"
	if p.total > 0 {
		eta = cli.ETA(float64(p.total-p.bytes), rate)
	}
	return fmt.Sprintf("%s %s %d entries %s %s ETA %s", p.label, cli.Bar(p.bytes, p.total, 30), p.entries,
		units.HumanBytes(p.bytes), units.HumanRate(rate), eta)
}

// finish clears the bar.
func (p *progressBar) finish() { p.line.Clear() }
