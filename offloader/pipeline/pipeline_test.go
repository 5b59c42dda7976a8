package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
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
	st := mledger.States(after.Info)
	for i := range cands {
		if st[i] != mledger.StateOffloaded {
			t.Fatalf("states after offload: %s", states(after))
		}
		oc := after.Info.GetLedgerInfo()[i].GetOffloadContext()
		d := mledger.DriverFromMetadata(oc.GetDriverMetadata())
		if d != (mledger.Driver{Name: "aws-s3", Provider: "AWS_S3", Bucket: r.bucket, Region: r.s3.Region, ServiceEndpoint: r.s3.Endpoint}) ||
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
		rep, err := p.VerifyLedger(ctx, mledger.LedgerRef{ML: name, LedgerID: id}, VerifyOptions{Full: true})
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
	if st := mledger.States(r.info(t, name).Info); st[0] != mledger.StateOffloadedBKDeleted || st[2] != mledger.StateOffloadedBKDeleted {
		t.Fatalf("states after trim: %v", st)
	}
	env.PulsarReadsAll(t, r.s3, r.bucket, name, w)
	// VerifyLedger without a BookKeeper copy: objects against the index.
	rep, err := p.VerifyLedger(ctx, mledger.LedgerRef{ML: name, LedgerID: cands[1]}, VerifyOptions{})
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
}

// Per-topic batching: five ledgers offloaded and trimmed (lag 0) cost two
// writes of the managed-ledger znode (every prepare in one; every commit
// with its bookkeeperDeleted mark in one), however many ledgers; a second
// batch bound splits them. Another offloader taking one ledger over
// between its verify and the commit makes only that ledger a conflict: its
// stored attempt is kept, this run's objects for it are removed, and the
// other ledgers commit in the same single write.
func TestRunTopicBatchesWrites(t *testing.T) {
	r := newRig(t, false)
	name, ids := r.topic(t, 5*30+3, 30, 2<<10)
	ctx := context.Background()
	if len(ids) != 5 {
		t.Fatalf("candidates %v", ids)
	}
	other := uuid.New()
	p := r.pipeline(t, func(d *Deps, o *Options) {
		o.Trim, o.TrimWithoutReload = true, true
		d.Failpoints = FailpointFunc(func(ctx context.Context, n string, tg mledger.LedgerRef) error {
			if n == FPAfterVerify && tg.LedgerID == ids[1] {
				if _, _, err := r.ml.PrepareOffload(ctx, name, ids[1], other, r.driver()); err != nil {
					t.Errorf("other offloader: %v", err)
				}
			}
			return nil
		})
	})
	_, v0 := r.raw(t, name)
	tr, err := p.RunTopic(ctx, name, ids)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("run with a takeover: %v", err)
	}
	_, v1 := r.raw(t, name)
	if v1 != v0+3 { // ours: prepare, commit; the other offloader's prepare
		t.Fatalf("znode version %d -> %d, want 3 writes", v0, v1)
	}
	for i, lr := range tr.Ledgers {
		switch {
		case i == 1:
			if !errors.Is(lr.Err, ErrConflict) || !isStepErr(lr.Err, StepCommit) || lr.Outcome != OutcomeFailed {
				t.Errorf("taken-over ledger: %+v", lr)
			}
		case lr.Err != nil || lr.Outcome != OutcomeOffloaded || !lr.Trim.Marked || !lr.Trim.Deleted:
			t.Errorf("ledger %d: %+v", lr.LedgerID, lr)
		}
	}
	info := r.info(t, name).Info
	if u, _ := mledger.AttemptUUID(info.GetLedgerInfo()[1].GetOffloadContext()); u != other || info.GetLedgerInfo()[1].GetOffloadContext().GetComplete() {
		t.Fatalf("the other offloader's attempt was overwritten: %v", info.GetLedgerInfo()[1].GetOffloadContext())
	}
	for _, k := range r.keys(t) {
		if strings.Contains(k, tr.Ledgers[1].UUID.String()) {
			t.Errorf("object of the conflicting attempt left: %s", k)
		}
	}

	// The other offloader gives up (its objects never came): this run
	// replaces it.
	lr, err := r.pipeline(t, nil).Run(ctx, mledger.LedgerRef{ML: name, LedgerID: ids[1]})
	if err != nil || lr.Outcome != OutcomeOffloaded || len(lr.Superseded) != 1 || lr.Superseded[0] != other {
		t.Fatalf("replacing the abandoned attempt: %+v %v", lr, err)
	}
	r.checkInvariants(t, name)

	// Batches of one ledger: two writes each.
	r2 := newRig(t, false)
	name2 := uniqueML(t)
	env.MLWrite(t, name2, 3*30+3, 30, 2<<10)
	ids2 := Candidates(r2.info(t, name2).Info, -1, false)
	p2 := r2.pipeline(t, func(_ *Deps, o *Options) { o.BatchBytes = 1 })
	_, v0 = r2.raw(t, name2)
	tr, err = p2.RunTopic(ctx, name2, append(slices.Clone(ids2), ids2[0])) // a ledger given twice is taken once
	if err != nil || len(tr.Ledgers) != len(ids2) {
		t.Fatalf("%d results: %v", len(tr.Ledgers), err)
	}
	if _, v1 := r2.raw(t, name2); v1 != v0+2*int32(len(ids2)) {
		t.Fatalf("batches of one ledger: version %d -> %d, want %d writes", v0, v1, 2*len(ids2))
	}
	for i, lr := range tr.Ledgers {
		if lr.LedgerID != ids2[i] || lr.Outcome != OutcomeOffloaded {
			t.Errorf("ledger %d (%d): %+v", i, ids2[i], lr)
		}
	}
	r2.checkInvariants(t, name2)
}

// fakeBroker stands in for a broker's admin API (fault injection): its
// in-memory view of the managed ledger is read from ZooKeeper at each
// unload, and the first failUnloads unloads are refused with 500, as a
// broker answers while it is closing or reopening the topic.
type fakeBroker struct {
	r           *rig
	t           *testing.T
	failUnloads int
	unloads     int // successful
	refused     int
	view        []brokeradmin.LedgerStats
}

func (f *fakeBroker) Unload(ctx context.Context, tn mledger.TopicName) error {
	if f.failUnloads > 0 {
		f.failUnloads--
		f.refused++
		return &brokeradmin.StatusError{Op: "unload " + tn.String(), Status: 500, Reason: "Topic is fenced"}
	}
	f.unloads++
	f.load(tn.MLName())
	return nil
}

// load reads the managed ledger, as a broker does when it opens the topic.
func (f *fakeBroker) load(ml string) *fakeBroker {
	f.view = nil
	for _, li := range f.r.info(f.t, ml).Info.GetLedgerInfo() {
		f.view = append(f.view, brokeradmin.LedgerStats{LedgerID: li.GetLedgerId(), Offloaded: li.GetOffloadContext().GetComplete()})
	}
	return f
}

func (f *fakeBroker) InternalStats(ctx context.Context, tn mledger.TopicName) (*brokeradmin.InternalStats, error) {
	return &brokeradmin.InternalStats{Ledgers: f.view}, nil
}

// With a broker: offload and trim (lag 0) of a topic's ledgers take one
// unload, after the commit that also marks bookkeeperDeleted; an unload
// the broker refuses while it reopens the topic is tried again.
func TestRunTopicOneReload(t *testing.T) {
	r := newRig(t, false)
	name, ids := r.topic(t, 4*30+3, 30, 2<<10)
	ctx := context.Background()
	fb := (&fakeBroker{r: r, t: t, failUnloads: 2}).load(name)
	p := r.pipeline(t, func(d *Deps, o *Options) { d.Broker, o.Trim = fb, true })
	_, v0 := r.raw(t, name)
	tr, err := p.RunTopic(ctx, name, ids)
	if err != nil {
		t.Fatal(err)
	}
	if _, v1 := r.raw(t, name); v1 != v0+2 || fb.unloads != 1 || fb.refused != 2 || !tr.Reload.Done || !tr.Reload.Unloaded {
		t.Fatalf("version %d -> %d, %d unloads (%d refused), reload %+v", v0, v1, fb.unloads, fb.refused, tr.Reload)
	}
	for _, lr := range tr.Ledgers {
		if lr.Outcome != OutcomeOffloaded || !lr.Trim.Marked || !lr.Trim.Deleted || lr.Trim.FreedBytes != lr.Bytes {
			t.Errorf("ledger %d: %+v", lr.LedgerID, lr)
		}
	}
	// A broker that goes on refusing: a clear error, the commit stands.
	name2 := uniqueML(t)
	env.MLWrite(t, name2, 2*30+3, 30, 2<<10)
	fb2 := (&fakeBroker{r: r, t: t, failUnloads: 100}).load(name2)
	p2 := r.pipeline(t, func(d *Deps, _ *Options) { d.Broker = fb2 })
	tr, err = p2.RunTopic(ctx, name2, Candidates(r.info(t, name2).Info, -1, false))
	if !errors.Is(err, ErrReload) || !isStepErr(err, StepReload) || fb2.refused != 5 {
		t.Fatalf("a broker refusing every unload: %v (%d refused)", err, fb2.refused)
	}
	for _, lr := range tr.Ledgers {
		if lr.Outcome != OutcomeOffloaded {
			t.Errorf("ledger %d after a failed reload: %s", lr.LedgerID, lr.Outcome)
		}
	}
}
