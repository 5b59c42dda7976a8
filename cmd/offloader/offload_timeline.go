package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/offloader/copytrace"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// timelineOptions are offload's --timeline flags.
type timelineOptions struct {
	path     string
	interval time.Duration
	procs    []string // name=pid
}

// parseProcs reads --timeline-procs: name=pid pairs.
func parseProcs(list []string) ([]copytrace.Proc, error) {
	var out []copytrace.Proc
	seen := map[string]bool{"offloader": true}
	for _, kv := range list {
		name, v, ok := strings.Cut(kv, "=")
		pid, err := strconv.Atoi(v)
		if !ok || name == "" || err != nil || pid <= 0 {
			return nil, fmt.Errorf("--timeline-procs %q: want name=pid", kv)
		}
		if seen[name] {
			return nil, fmt.Errorf("--timeline-procs %q: the name %s is taken", kv, name)
		}
		seen[name] = true
		out = append(out, copytrace.Proc{Name: name, PID: pid})
	}
	return out, nil
}

// timelineObserver samples a timeline of every ledger's copy step
// (copytrace) from the process's metrics registry, this process's CPU
// and that of the --timeline-procs, and writes them to a file at the end.
type timelineObserver struct {
	pipeline.Observer
	opts      copytrace.Options
	parts     int
	blockSize int

	mu      sync.Mutex
	cur     *copytrace.Sampler
	bytes   map[mledger.LedgerRef]int64
	ledgers []copytrace.Ledger
}

func newTimelineObserver(next pipeline.Observer, reg *prometheus.Registry, interval time.Duration, procs []copytrace.Proc, parts, blockSize int) *timelineObserver {
	all := append([]copytrace.Proc{{Name: "offloader", PID: os.Getpid()}}, procs...)
	return &timelineObserver{Observer: next, parts: parts, blockSize: blockSize, bytes: map[mledger.LedgerRef]int64{},
		opts: copytrace.Options{Interval: interval, Gatherer: reg, Metrics: copytrace.CopyMetrics(), Procs: all}}
}

func (o *timelineObserver) StepStarted(t mledger.LedgerRef, s pipeline.Step) {
	if s == pipeline.StepCopy {
		o.mu.Lock()
		o.cur = copytrace.Start(o.opts)
		o.mu.Unlock()
	}
	o.Observer.StepStarted(t, s)
}

func (o *timelineObserver) Copied(t mledger.LedgerRef, bytes, total int64) {
	o.mu.Lock()
	o.bytes[t] = total
	o.mu.Unlock()
	o.Observer.Copied(t, bytes, total)
}

func (o *timelineObserver) StepDone(t mledger.LedgerRef, s pipeline.Step, d time.Duration, err error) {
	o.Observer.StepDone(t, s, d, err)
	if s != pipeline.StepCopy {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur == nil {
		return
	}
	tl := o.cur.Stop()
	o.cur = nil
	o.ledgers = append(o.ledgers, copytrace.Ledger{ManagedLedger: t.ML, LedgerID: t.LedgerID, Bytes: o.bytes[t],
		PartsInFlight: o.parts, BlockSize: o.blockSize, Timeline: tl})
}

// write writes the timelines recorded to path.
func (o *timelineObserver) write(path string) error {
	o.mu.Lock()
	f := copytrace.File{Ledgers: o.ledgers}
	o.mu.Unlock()
	if f.Ledgers == nil {
		f.Ledgers = []copytrace.Ledger{}
	}
	raw, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return fmt.Errorf("--timeline: %w", err)
	}
	return nil
}
