package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// progressBar draws a one-line progress bar with rate and ETA on stderr
// when stderr is a terminal; otherwise it draws nothing.
type progressBar struct {
	w       io.Writer
	on      bool
	label   string
	total   int64 // bytes expected (0: unknown)
	start   time.Time
	last    time.Time
	drawn   bool
	entries int64
	bytes   int64
}

func newProgressBar(w io.Writer, enabled bool, label string, totalBytes int64) *progressBar {
	now := time.Now()
	return &progressBar{w: w, on: enabled && cli.IsTerminal(w), label: label, total: totalBytes, start: now}
}

// add records progress and redraws at most 5 times a second.
func (p *progressBar) add(entries, bytes int64) {
	p.entries += entries
	p.bytes += bytes
	if !p.on {
		return
	}
	if now := time.Now(); now.Sub(p.last) >= 200*time.Millisecond {
		p.last = now
		p.draw(now)
	}
}

func (p *progressBar) draw(now time.Time) {
	el := now.Sub(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(p.bytes) / el
	}
	eta := "?"
	if rate > 0 && p.total > 0 {
		eta = time.Duration(float64(p.total-p.bytes) / rate * float64(time.Second)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r%s %s %d entries %s %s ETA %s   ", p.label, bar(p.bytes, p.total, 30), p.entries,
		units.HumanBytes(p.bytes), units.HumanRate(rate), eta)
	p.drawn = true
}

// finish clears the bar.
func (p *progressBar) finish() {
	if p.drawn {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 100))
	}
}
