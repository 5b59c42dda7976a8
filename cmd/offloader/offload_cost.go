package main

import (
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/proccost"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// costObserver measures every copy step (process CPU from /proc/self/stat,
// system calls from /proc/self/io, Go allocations) and, with a profile
// directory, records its CPU, block, mutex and allocation profiles; the
// rest goes to the wrapped observer.
type costObserver struct {
	pipeline.Observer
	profileDir string
	log        *slog.Logger

	mu    sync.Mutex
	start proccost.Sample
	prof  *proccost.Profiler
	costs map[mledger.LedgerRef]*offloader.CopyCost
}

func newCostObserver(next pipeline.Observer, profileDir string, log *slog.Logger) *costObserver {
	return &costObserver{Observer: next, profileDir: profileDir, log: log, costs: map[mledger.LedgerRef]*offloader.CopyCost{}}
}

func (o *costObserver) StepStarted(t mledger.LedgerRef, s pipeline.Step) {
	if s == pipeline.StepCopy {
		o.mu.Lock()
		if o.profileDir != "" {
			p, err := proccost.StartProfile(o.profileDir, "copy-ledger-"+strconv.FormatInt(t.LedgerID, 10))
			if err != nil {
				o.log.Warn("copy not profiled", "err", err)
			}
			o.prof = p
		}
		o.start = proccost.Now()
		o.mu.Unlock()
	}
	o.Observer.StepStarted(t, s)
}

func (o *costObserver) StepDone(t mledger.LedgerRef, s pipeline.Step, d time.Duration, err error) {
	if s == pipeline.StepCopy {
		o.mu.Lock()
		c := proccost.Now().Since(o.start)
		doc := &offloader.CopyCost{CPUSeconds: c.CPU.Seconds(), UserSeconds: c.User.Seconds(), SystemSeconds: c.System.Seconds(), PageFaults: c.PageFaults, AllocBytes: c.AllocBytes, Allocs: c.Allocs,
			GCCycles: c.GCCycles, GCPauseSeconds: c.GCPause.Seconds(), ReadCalls: c.ReadCalls, WriteCalls: c.WriteCalls}
		if c.CPUErr != nil {
			doc.CPUError = c.CPUErr.Error()
		}
		if c.IOErr != nil {
			doc.IOError = c.IOErr.Error()
		}
		if o.prof != nil {
			files, perr := o.prof.Stop()
			if perr != nil {
				o.log.Warn("copy profiles", "err", perr)
			}
			doc.Profiles, o.prof = files, nil
		}
		o.costs[t] = doc
		o.mu.Unlock()
	}
	o.Observer.StepDone(t, s, d, err)
}

// fill adds the measured process figures to every copied ledger of rep.
func (o *costObserver) fill(rep *offloader.OffloadReport) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range rep.ManagedLedgers {
		ml := &rep.ManagedLedgers[i]
		for j := range ml.Ledgers {
			l := &ml.Ledgers[j]
			m := o.costs[mledger.LedgerRef{ML: ml.Name, LedgerID: l.LedgerID}]
			if m == nil || l.CopyCost == nil {
				continue
			}
			c := *m
			c.CopyTimes = l.CopyCost.CopyTimes
			l.CopyCost = &c
		}
	}
}
