package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
)

// offloadProgress draws one status line on stderr when it is a terminal:
// the ledger being worked on (step, bytes, rate, ETA) and the whole run
// (bytes copied of all to copy, rate, ETA). It implements
// pipeline.Observer; with drawing off it only counts.
type offloadProgress struct {
	w  io.Writer
	on bool

	mu         sync.Mutex
	start      time.Time
	total      int64 // bytes to copy in the whole run
	doneBefore int64 // bytes copied by finished ledgers
	cur        pipeline.Target
	step       pipeline.Step
	curStart   time.Time
	copied     int64 // bytes the current ledger has copied
	curBytes   int64
	curTotal   int64
	last       time.Time
	drawn      bool
}

func newOffloadProgress(w io.Writer, enabled bool, totalBytes int64) *offloadProgress {
	return &offloadProgress{w: w, on: enabled && cli.IsTerminal(w), total: totalBytes, start: time.Now()}
}

func (p *offloadProgress) StepStarted(t pipeline.Target, s pipeline.Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t != p.cur {
		p.doneBefore += p.copied
		p.cur, p.copied, p.curBytes, p.curTotal, p.curStart = t, 0, 0, 0, time.Now()
	}
	p.step = s
	p.draw(true)
}

func (p *offloadProgress) StepDone(pipeline.Target, pipeline.Step, time.Duration, error) {}

func (p *offloadProgress) Copied(t pipeline.Target, bytes, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.copied, p.curBytes, p.curTotal = bytes, bytes, total
	p.draw(false)
}

func (p *offloadProgress) Verified(t pipeline.Target, bytes, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.curBytes, p.curTotal = bytes, total
	p.draw(false)
}

// draw redraws at most 5 times a second (or now when forced).
func (p *offloadProgress) draw(force bool) {
	if !p.on {
		return
	}
	now := time.Now()
	if !force && now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	ledger := fmt.Sprintf("ledger %d %-6s %s", p.cur.LedgerID, p.step, bar(p.curBytes, p.curTotal, 12))
	if p.curTotal > 0 {
		rate := float64(p.curBytes) / max(now.Sub(p.curStart).Seconds(), 1e-3)
		ledger += fmt.Sprintf(" %s/%s %s ETA %s", units.HumanBytes(p.curBytes), units.HumanBytes(p.curTotal),
			units.DecimalRate(rate), eta(p.curTotal-p.curBytes, rate))
	}
	all := p.doneBefore + p.copied
	rate := float64(all) / max(now.Sub(p.start).Seconds(), 1e-3)
	overall := fmt.Sprintf("all %s %s/%s %s ETA %s", bar(all, p.total, 12), units.HumanBytes(all), units.HumanBytes(p.total),
		units.DecimalRate(rate), eta(p.total-all, rate))
	fmt.Fprintf(p.w, "\r%-72s | %s  ", ledger, overall)
	p.drawn = true
}

// finish clears the line.
func (p *offloadProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 150))
	}
}

func bar(done, total int64, width int) string {
	frac := 0.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	fill := int(frac * float64(width))
	return fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), frac*100)
}

func eta(left int64, rate float64) string {
	if rate <= 0 || left < 0 {
		return "?"
	}
	return time.Duration(float64(left) / rate * float64(time.Second)).Round(time.Second).String()
}
