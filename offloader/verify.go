package offloader

import (
	"context"
	"fmt"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// VerifySelection is which offloaded ledgers of a topic VerifyTopic
// checks: every one with an offload attempt, or only Ledger (>= 0).
type VerifySelection struct {
	Ledger int64
	// Sample compares three windows of entries with BookKeeper, as the
	// offload's verify step does for large ledgers, instead of all.
	Sample bool
}

// VerifyReport is the outcome of VerifyTopic (offloader verify -o json).
type VerifyReport struct {
	Topic   string           `json:"topic"`
	Ledgers []VerifiedLedger `json:"ledgers"`
	OK      bool             `json:"ok"`
}

// VerifiedLedger is one ledger's check.
type VerifiedLedger struct {
	ManagedLedger string                 `json:"managedLedger"`
	LedgerID      int64                  `json:"ledgerId"`
	State         string                 `json:"state"`
	UUID          string                 `json:"uuid"`
	Report        *pipeline.VerifyReport `json:"report,omitempty"`
	Seconds       float64                `json:"seconds"`
	OK            bool                   `json:"ok"`
	Error         string                 `json:"error,omitempty"`
}

// VerifyLedgers are the topic's ledgers with an offload attempt recorded
// (mledger.TopicLedgers), those sel names, and their bytes in all.
func VerifyLedgers(ctx context.Context, p *Peers, topic string, sel VerifySelection) ([]mledger.Ledger, int64, error) {
	_, all, err := p.ML.TopicLedgers(ctx, topic)
	if err != nil {
		return nil, 0, p.ZKFailed(err)
	}
	var out []mledger.Ledger
	var total int64
	for _, l := range all {
		if !l.HasAttempt || (sel.Ledger >= 0 && l.ID != sel.Ledger) {
			continue
		}
		out = append(out, l)
		total += l.Size
	}
	if len(out) == 0 {
		if sel.Ledger >= 0 {
			return nil, 0, fmt.Errorf("ledger %d of %s has no offload attempt to verify", sel.Ledger, topic)
		}
		return nil, 0, fmt.Errorf("%s has no offloaded ledger to verify", topic)
	}
	return out, total, nil
}

// VerifyTopic checks each of ledgers (VerifyLedgers) as pipeline's
// VerifyLedger does: the objects against the bookies entry by entry while
// the BookKeeper copy exists, else decoded in full against their index.
// It writes nothing. The error counts the ledgers that failed.
func VerifyTopic(ctx context.Context, p *Peers, topic string, ledgers []mledger.Ledger, sel VerifySelection, obs pipeline.Observer) (*VerifyReport, error) {
	// A verify records no driver; any valid one makes the pipeline.
	drv, err := p.Driver("aws-s3")
	if err != nil {
		return nil, err
	}
	d := p.PipelineDeps()
	d.Broker, d.Observer = nil, obs
	pl, err := pipeline.New(d, pipeline.Options{Driver: drv})
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{Topic: topic, OK: true}
	failed := 0
	for _, l := range ledgers {
		t := mledger.LedgerRef{ML: l.ML, LedgerID: l.ID}
		if obs != nil {
			obs.StepStarted(t, pipeline.StepVerify)
		}
		start := time.Now()
		vr, err := pl.VerifyLedger(ctx, t, pipeline.VerifyOptions{Full: !sel.Sample})
		v := VerifiedLedger{ManagedLedger: l.ML, LedgerID: l.ID, State: l.State.String(), UUID: l.Attempt.String(),
			Report: &vr, Seconds: time.Since(start).Seconds(), OK: err == nil}
		if err != nil {
			v.Error = err.Error()
			failed++
			rep.OK = false
		}
		rep.Ledgers = append(rep.Ledgers, v)
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	if failed > 0 {
		return rep, fmt.Errorf("%d of %d ledgers failed verification", failed, len(rep.Ledgers))
	}
	return rep, nil
}
