package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// progressBar draws one status line on a terminal:
//
//	[=========           ]  45%  3/11 journal writers=4 bs=64KiB  measure  123MiB/s  ETA 32s
type progressBar struct{ line *cli.Line }

// newProgressBar returns nil unless w is a terminal.
func newProgressBar(w io.Writer) *progressBar {
	l := cli.NewLine(w, true)
	if !l.On() {
		return nil
	}
	return &progressBar{line: l}
}

func (b *progressBar) update(ev diskbench.ProgressEvent) {
	frac := 0.0
	if ev.Estimate > 0 {
		frac = min(1, ev.Elapsed.Seconds()/ev.Estimate.Seconds())
	}
	rate := ""
	if ev.BytesPerSec > 0 {
		rate = units.HumanRate(ev.BytesPerSec)
	}
	b.line.Draw(strings.TrimRight(fmt.Sprintf("%s  %d/%d %s %s  %s  %s  ETA %s", cli.Bar(int64(1000*frac), 1000, 20),
		ev.Point, ev.Points, ev.Workload, ev.Label, ev.Phase, rate, cli.Left(ev.Estimate-ev.Elapsed)), " "))
}

// finish clears the status line. It is safe on a nil bar.
func (b *progressBar) finish() {
	if b != nil {
		b.line.Clear()
	}
}
