package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// offloadProgress draws one status line on stderr when it is a terminal:
// the ledger being worked on (step, bytes, rate, ETA) and the whole run
// (bytes copied of all to copy, rate, ETA). It implements
// pipeline.Observer; with drawing off it only counts.
type offloadProgress struct {
	line *cli.Line

	mu         sync.Mutex
	start      time.Time
	total      int64 // bytes to copy in the whole run
	doneBefore int64 // bytes copied by finished ledgers
	cur        mledger.LedgerRef
	step       pipeline.Step
	curStart   time.Time
	copied     int64 // bytes the current ledger has copied
	curBytes   int64
	curTotal   int64
}

func newOffloadProgress(w io.Writer, enabled bool, totalBytes int64) *offloadProgress {
	return &offloadProgress{line: cli.NewLine(w, enabled), total: totalBytes, start: time.Now()}
}

func (p *offloadProgress) StepStarted(t mledger.LedgerRef, s pipeline.Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t != p.cur {
		p.doneBefore += p.copied
		p.cur, p.copied, p.curBytes, p.curTotal, p.curStart = t, 0, 0, 0, time.Now()
	}
	p.step = s
	p.draw(true)
}

func (p *offloadProgress) StepDone(mledger.LedgerRef, pipeline.Step, time.Duration, error) {}

func (p *offloadProgress) Copied(t mledger.LedgerRef, bytes, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.copied, p.curBytes, p.curTotal = bytes, bytes, total
	p.draw(false)
}

func (p *offloadProgress) Verified(t mledger.LedgerRef, bytes, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.curBytes, p.curTotal = bytes, total
	p.draw(false)
}

// draw redraws at most 5 times a second (or now when forced).
func (p *offloadProgress) draw(force bool) {
	now := time.Now()
	if !p.line.On() || (!force && !p.line.Due(now)) {
		return
	}
	ledger := fmt.Sprintf("ledger %d %-6s %s", p.cur.LedgerID, p.step, cli.Bar(p.curBytes, p.curTotal, 12))
	if p.curTotal > 0 {
		rate := cli.Rate(float64(p.curBytes), max(now.Sub(p.curStart), time.Millisecond))
		ledger += fmt.Sprintf(" %s/%s %s ETA %s", units.HumanBytes(p.curBytes), units.HumanBytes(p.curTotal),
			units.DecimalRate(rate), cli.ETA(float64(p.curTotal-p.curBytes), rate))
	}
	all := p.doneBefore + p.copied
	rate := cli.Rate(float64(all), max(now.Sub(p.start), time.Millisecond))
	overall := fmt.Sprintf("all %s %s/%s %s ETA %s", cli.Bar(all, p.total, 12), units.HumanBytes(all), units.HumanBytes(p.total),
		units.DecimalRate(rate), cli.ETA(float64(p.total-all), rate))
	p.line.Draw(fmt.Sprintf("%-72s | %s", ledger, overall))
}

// finish clears the line.
func (p *offloadProgress) finish() { p.line.Clear() }
