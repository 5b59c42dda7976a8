package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/mlmeta"
)

// The main path against the real peers: Pulsar's managed-ledger library
// writes a topic over four ledgers; the pipeline offloads every closed
// ledger but the last to versitygw (multi-block ledgers, multipart), verifies
// them entry by entry and commits; Pulsar's own reader (jcloud offloader)
// reads every entry back. A second run changes nothing. Trim then deletes
// the BookKeeper copies (compare-and-delete) and Pulsar still reads
// everything, now from the object store only.
func TestOffloadTopicPulsarReadsBack(t *testing.T) {
	r := newRig(t, true)
	name := uniqueML(t)
	w := env.MLWrite(t, name, 310, 100, 64<<10) // 100+100+100+10 entries of 64 KiB: two blocks of 5 MiB each
	ctx := context.Background()
	snap := r.info(t, name)
	cands := Candidates(snap.Info, -1, false)
	if len(cands) != 3 {
		t.Fatalf("candidates %v of %s", cands, states(snap))
	}
	p := r.pipeline(t, nil)
	tr, err := p.RunTopic(ctx, name, cands)
	if err != nil {
		t.Fatal(err)
	}
	for _, lr := range tr.Ledgers {
		if lr.Outcome != OutcomeOffloaded || lr.Verify.Level != LevelFull || lr.Verify.Entries != lr.Entries ||
			lr.Verify.Bytes != lr.Bytes || lr.Blocks < 1 || lr.ObjectBytes <= lr.Bytes {
			t.Errorf("ledger %d: %+v", lr.LedgerID, lr)
		}
		if lr.Reload.Done || lr.Reload.Note != NoBrokerNote {
			t.Errorf("ledger %d reload %+v without a broker", lr.LedgerID, lr.Reload)
		}
	}
	after := r.info(t, name)
	st := mlmeta.States(after.Info)
	for i := range cands {
		if st[i] != mlmeta.StateOffloaded {
			t.Fatalf("states after offload: %s", states(after))
		}
		oc := after.Info.GetLedgerInfo()[i].GetOffloadContext()
		d := mlmeta.DriverFromMetadata(oc.GetDriverMetadata())
		if d != (mlmeta.Driver{Name: "aws-s3", Provider: "AWS_S3", Bucket: r.bucket, Region: r.s3.Region, ServiceEndpoint: r.s3.Endpoint}) ||
			oc.GetTimestamp() <= 0 {
			t.Errorf("ledger %d offload context %v", cands[i], oc)
		}
	}
	r.checkInvariants(t, name)
	env.PulsarReadsAll(t, r.s3, r.bucket, name, w)

	// Again: nothing to do, nothing written.
	raw, ver := r.raw(t, name)
	keys := r.keys(t)
	tr, err = p.RunTopic(ctx, name, cands)
	if err != nil {
		t.Fatal(err)
	}
	for _, lr := range tr.Ledgers {
		if lr.Outcome != OutcomeAlreadyOffloaded {
			t.Errorf("second run, ledger %d: %s", lr.LedgerID, lr.Outcome)
		}
	}
	raw2, ver2 := r.raw(t, name)
	if ver2 != ver || string(raw2) != string(raw) || len(r.keys(t)) != len(keys) {
		t.Fatalf("a second run changed the metadata (version %d -> %d) or the store", ver, ver2)
	}

	// VerifyLedger against the bookies, in full.
	for _, id := range cands {
		rep, err := p.VerifyLedger(ctx, Target{ML: name, LedgerID: id}, VerifyOptions{Full: true})
		if err != nil || rep.Level != LevelFull || rep.Entries != 100 {
			t.Fatalf("verify ledger %d: %+v %v", id, rep, err)
		}
	}

	// Trim: no broker here, so TrimWithoutReload; lag 0.
	pt := r.pipeline(t, func(_ *Deps, o *Options) { o.Trim, o.TrimWithoutReload = true, true })
	tr, err = pt.RunTopic(ctx, name, Candidates(r.info(t, name).Info, -1, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Ledgers) != 3 {
		t.Fatalf("trim candidates: %d", len(tr.Ledgers))
	}
	for _, lr := range tr.Ledgers {
		if !lr.Trim.Marked || !lr.Trim.Deleted || lr.Trim.FreedBytes != lr.Bytes {
			t.Errorf("trim of ledger %d: %+v", lr.LedgerID, lr.Trim)
		}
		if _, err := r.ledgers.ReadLedger(ctx, lr.LedgerID); !errors.Is(err, metadata.ErrNoSuchLedger) {
			t.Errorf("ledger %d still in BookKeeper: %v", lr.LedgerID, err)
		}
	}
	if st := mlmeta.States(r.info(t, name).Info); st[0] != mlmeta.StateOffloadedBKDeleted || st[2] != mlmeta.StateOffloadedBKDeleted {
		t.Fatalf("states after trim: %v", st)
	}
	env.PulsarReadsAll(t, r.s3, r.bucket, name, w)
	// VerifyLedger without a BookKeeper copy: objects against the index.
	rep, err := p.VerifyLedger(ctx, Target{ML: name, LedgerID: cands[1]}, VerifyOptions{})
	if err != nil || rep.Level != LevelObjects || rep.Entries != 100 {
		t.Fatalf("verify after trim: %+v %v", rep, err)
	}
	// Trimming again finds nothing to delete.
	tr, err = pt.RunTopic(ctx, name, cands)
	if err != nil {
		t.Fatal(err)
	}
	for _, lr := range tr.Ledgers {
		if lr.Trim.FreedBytes != 0 || !lr.Trim.Deleted {
			t.Errorf("second trim of %d: %+v", lr.LedgerID, lr.Trim)
		}
	}
	_ = time.Second
}
