package main

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// A copy step that writes to and reads from a pipe 200 times gets a cost
// with at least those system calls; the pipeline's waits are kept beside
// the process figures in the report.
func TestCostObserverMeasuresTheCopyStep(t *testing.T) {
	o := newCostObserver(pipeline.NopObserver{}, "", slog.New(slog.DiscardHandler))
	ref := mledger.LedgerRef{ML: "t/n/persistent/x", LedgerID: 7}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	o.StepStarted(ref, pipeline.StepCopy)
	buf := make([]byte, 512)
	for range 200 {
		if _, err := w.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	o.StepDone(ref, pipeline.StepCopy, time.Second, nil)
	rep := &offloader.OffloadReport{ManagedLedgers: []offloader.OffloadedML{{Name: ref.ML,
		Ledgers: []offloader.OffloadedLedger{{LedgerID: 7, CopyCost: &offloader.CopyCost{CopyTimes: offloader.CopyTimes{ReadWaitSeconds: 1.5}}}}}}}
	o.fill(rep)
	c := rep.ManagedLedgers[0].Ledgers[0].CopyCost
	if c.CPUError != "" || c.IOError != "" {
		t.Fatalf("cost not measured: %q %q", c.CPUError, c.IOError)
	}
	if c.WriteCalls < 200 || c.ReadCalls < 200 || c.ReadWaitSeconds != 1.5 {
		t.Errorf("cost %+v: want >= 200 read and write calls and the pipeline's 1.5 s of waits", *c)
	}
}
