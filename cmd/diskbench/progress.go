package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// progressBar draws one status line on a terminal:
//
//	[=========>           ] 45%  3/11 journal writers=4 bs=64KiB  measure  123MiB/s  ETA 0:32
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	drawn bool
}

// newProgressBar returns nil unless w is a terminal.
func newProgressBar(w io.Writer) *progressBar {
	if !cli.IsTerminal(w) {
		return nil
	}
	width, _, err := term.GetSize(int(w.(*os.File).Fd()))
	if err != nil || width < 40 {
		width = 80
	}
	return &progressBar{w: w, width: width}
}

func (b *progressBar) update(ev diskbench.ProgressEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	frac := 0.0
	if ev.Estimate > 0 {
		frac = min(1, ev.Elapsed.Seconds()/ev.Estimate.Seconds())
	}
	eta := max(0, ev.Estimate-ev.Elapsed).Round(time.Second)
	const barW = 20
	filled := int(frac * barW)
	bar := strings.Repeat("=", filled)
	if filled < barW {
		bar += ">" + strings.Repeat(" ", barW-filled-1)
	}
	rate := ""
	if ev.BytesPerSec > 0 {
		rate = units.HumanRate(ev.BytesPerSec)
	}
	line := fmt.Sprintf("[%s] %3.0f%%  %d/%d %s %s  %s  %s  ETA %d:%02d", bar, 100*frac, ev.Point, ev.Points,
		ev.Workload, ev.Label, ev.Phase, rate, int(eta.Minutes()), int(eta.Seconds())%60)
	if len(line) > b.width-1 {
		line = line[:b.width-1]
	}
	fmt.Fprintf(b.w, "\r\x1b[K%s", line)
	b.drawn = true
}

// finish clears the status line. It is safe on a nil bar.
func (b *progressBar) finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.drawn = false
	}
}
