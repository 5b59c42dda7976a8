package offloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// scrubRig is what a scrub test reads and writes besides Scrub itself.
type scrubRig struct {
	cfg     *Config
	sess    *tzk.Session
	ml      *mledger.Store
	ledgers *metadata.Store
	store   blob.Store
	offl    *pipeline.Pipeline
}

func newScrubRig(t *testing.T) (*scrubRig, func() (string, written)) {
	t.Helper()
	peers(t)
	cfg, s3, bucket := serviceConfig(t, "")
	return newScrubRigOn(t, cfg, s3, bucket)
}

// newScrubRigOn is newScrubRig on cfg's store (s3's bucket).
func newScrubRigOn(t *testing.T, cfg *Config, s3 *testenv.S3, bucket string) (*scrubRig, func() (string, written)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := cfg.connectZK(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	ledgers, err := metadata.NewStore(ctx, sess, metadata.StoreOptions{Root: cfg.BookKeeper.LedgersRoot})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := bkclient.New(bkclient.Options{Resolver: ledgers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bk.Close() })
	store, err := cfg.openStore(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	drv, err := cfg.driver()
	if err != nil {
		t.Fatal(err)
	}
	ml := mledger.New(sess, nil)
	offl, err := pipeline.New(pipeline.Deps{ML: ml, Ledgers: ledgers, Bookies: bk, Store: store},
		pipeline.Options{Driver: drv, BlockSize: format.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	r := &scrubRig{cfg: cfg, sess: sess, ml: ml, ledgers: ledgers, store: store, offl: offl}
	n := 0
	// topic writes a managed ledger and offloads every closed ledger.
	topic := func() (string, written) {
		n++
		name := fmt.Sprintf("tierkeeper/scrub/persistent/%s-%d-%d", t.Name(), time.Now().UnixNano(), n)
		w := peer.MLWrite(t, name, 40, 10, 512)
		snap := r.snap(t, name)
		tr, err := offl.RunTopic(context.Background(), name, pipeline.Candidates(snap.Info, -1, false))
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Ledgers) < 3 {
			t.Fatalf("%d ledgers offloaded", len(tr.Ledgers))
		}
		return name, written{w: w, s3: s3, bucket: bucket}
	}
	return r, topic
}

// written is a topic's entries and where its objects are.
type written struct {
	w      mltest.Written
	s3     *testenv.S3
	bucket string
}

func (r *scrubRig) snap(t *testing.T, name string) *mledger.Snapshot {
	t.Helper()
	s, err := r.ml.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// attempt is ledger i's id and stored attempt.
func (r *scrubRig) attempt(t *testing.T, name string, i int) (int64, uuid.UUID) {
	t.Helper()
	li := r.snap(t, name).Info.GetLedgerInfo()[i]
	u, _ := mledger.AttemptUUID(li.GetOffloadContext())
	return li.GetLedgerId(), u
}

func (r *scrubRig) keys(t *testing.T) []string {
	t.Helper()
	var ks []string
	if err := r.store.Iter(context.Background(), "", func(a blob.Attrs) error { ks = append(ks, a.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(ks)
	return ks
}

func (r *scrubRig) raw(t *testing.T, name string) string {
	t.Helper()
	data, st, err := r.sess.Conn.Get(mledger.Path(name))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%x", st.Version, data)
}

func verdicts(fs []scrub.Finding) map[int64]scrub.Verdict {
	m := map[int64]scrub.Verdict{}
	for _, f := range fs {
		m[f.LedgerID] = f.Verdict
	}
	return m
}

// The scrubber on real peers. One topic: ledger 0's data object deleted
// (repair), ledger 1 marked bookkeeperDeleted with its BookKeeper ledger
// still there (an interrupted trim), ledger 2 whole. Another: ledger 0's
// index deleted and its BookKeeper copy deleted too (lost). A dry run
// finds all of it and writes nothing; the real run clears ledger 0's
// context, reloads, offloads it again at once (a new attempt, BookKeeper
// still there), finishes ledger 1's BookKeeper deletion after checking
// its objects, leaves the lost ledger's metadata untouched and reports it
// (metric, error); Pulsar reads every entry of the repaired topic back.
func TestScrubRepairsFinishesTrimsReportsLost(t *testing.T) {
	r, topic := newScrubRig(t)
	ctx := context.Background()
	name, wr := topic()
	lost, _ := topic()
	id0, u0 := r.attempt(t, name, 0)
	id1, u1 := r.attempt(t, name, 1)
	id2, _ := r.attempt(t, name, 2)
	if err := r.store.Delete(ctx, format.DataKey(u0, id0)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ml.UpdateOffloadContexts(ctx, name, []mledger.Edit{mledger.MarkBookkeeperDeletedEdit(id1, u1)}); err != nil {
		t.Fatal(err)
	}
	lid, lu := r.attempt(t, lost, 0)
	if err := r.store.Delete(ctx, format.IndexKey(lu, lid)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ml.UpdateOffloadContexts(ctx, lost, []mledger.Edit{mledger.MarkBookkeeperDeletedEdit(lid, lu)}); err != nil {
		t.Fatal(err)
	}
	md, err := r.ledgers.ReadLedger(ctx, lid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ledgers.DeleteLedger(ctx, lid, metadata.Expect{LastEntryID: md.LastEntryID, Length: md.Length}); err != nil {
		t.Fatal(err)
	}

	// Dry run: everything found, nothing written.
	before, beforeLost, keys := r.raw(t, name), r.raw(t, lost), r.keys(t)
	rep, err := Scrub(ctx, r.cfg, ScrubOptions{Topics: []string{name, lost}, DryRun: true, Verbose: true}, nil)
	if !errors.Is(err, ErrScrubProblems) {
		t.Fatalf("dry run: %v", err)
	}
	v := verdicts(rep.Findings)
	if v[id0] != scrub.VerdictRepair || v[id1] != scrub.VerdictTrimLeftover || v[id2] != scrub.VerdictOK || v[lid] != scrub.VerdictLost {
		t.Fatalf("dry run verdicts %v (ledgers %d %d %d, lost %d)", v, id0, id1, id2, lid)
	}
	if rep.Requests != 2*rep.Ledgers+1 { // 2 a ledger; a missing object's check ends with a listing instead of the GET, the missing index's adds one
		t.Errorf("%d requests for %d ledgers", rep.Requests, rep.Ledgers)
	}
	if r.raw(t, name) != before || r.raw(t, lost) != beforeLost || fmt.Sprint(r.keys(t)) != fmt.Sprint(keys) {
		t.Fatal("the dry run wrote")
	}
	if _, err := r.ledgers.ReadLedger(ctx, id1); err != nil {
		t.Fatalf("the dry run trimmed: %v", err)
	}

	// The real run.
	rep, err = Scrub(ctx, r.cfg, ScrubOptions{Topics: []string{name, lost}, TrimWithoutReload: true, Verbose: true}, nil)
	if !errors.Is(err, ErrScrubProblems) {
		t.Fatalf("scrub: %v (the lost ledger must fail it)", err)
	}
	for _, f := range rep.Findings {
		switch f.LedgerID {
		case id0:
			if !f.Repaired || f.Action != "reoffloaded" {
				t.Errorf("ledger %d: %+v", id0, f)
			}
		case id1:
			if f.Action != "trimmed" {
				t.Errorf("ledger %d: %+v", id1, f)
			}
		}
	}
	if rep.Repaired != 1 || rep.Reoffloaded != 1 || rep.Trimmed != 1 || rep.Verdicts[scrub.VerdictLost] != 1 {
		t.Fatalf("report %+v", rep)
	}
	if _, nu := r.attempt(t, name, 0); nu == u0 || nu == uuid.Nil {
		t.Fatalf("ledger %d: attempt %s after the repair (was %s)", id0, nu, u0)
	}
	st := mledger.States(r.snap(t, name).Info)
	if st[0] != mledger.StateOffloaded || st[1] != mledger.StateOffloadedBKDeleted {
		t.Fatalf("states %v", st)
	}
	if _, err := r.ledgers.ReadLedger(ctx, id0); err != nil {
		t.Fatalf("ledger %d BookKeeper copy: %v", id0, err)
	}
	if _, err := r.ledgers.ReadLedger(ctx, id1); !errors.Is(err, metadata.ErrNoSuchLedger) {
		t.Fatalf("ledger %d: interrupted trim not finished: %v", id1, err)
	}
	if r.raw(t, lost) != beforeLost {
		t.Fatal("a lost ledger's metadata was written")
	}
	peer.PulsarReadsAll(t, wr.s3, wr.bucket, name, wr.w)

	// Again: nothing to repair; the lost ledger is still reported.
	rep, err = Scrub(ctx, r.cfg, ScrubOptions{Topics: []string{name, lost}}, nil)
	if !errors.Is(err, ErrScrubProblems) || rep.Repaired != 0 || rep.Verdicts[scrub.VerdictLost] != 1 || rep.Verdicts[scrub.VerdictOK] != rep.Ledgers-1 {
		t.Fatalf("second scrub: %+v %v", rep, err)
	}
}

// deleteAfterRead is a pipeline.LedgerStore whose first read of ledger id
// is followed by the ledger's deletion: a deleter that had marked it
// bookkeeperDeleted (the broker deletes right after its mark lands) acting
// between the scrubber's check and its repair.
type deleteAfterRead struct {
	pipeline.LedgerStore
	t    *testing.T
	id   int64
	done bool
}

func (d *deleteAfterRead) ReadLedger(ctx context.Context, id int64) (*metadata.LedgerMetadata, error) {
	md, err := d.LedgerStore.ReadLedger(ctx, id)
	if id == d.id && !d.done && err == nil {
		d.done = true
		if _, derr := d.LedgerStore.DeleteLedger(ctx, id, metadata.Expect{LastEntryID: md.LastEntryID, Length: md.Length}); derr != nil {
			d.t.Errorf("delete ledger %d: %v", id, derr)
		}
	}
	return md, err
}

// A ledger whose objects are gone and whose context a deleter marked
// bookkeeperDeleted, its BookKeeper copy deleted between the scrubber's
// check (which still saw it: a repair) and the repair's write: the repair
// clears the context, then finds the copy gone, and reports the ledger
// lost, not repaired (before, it said "cleared", and the metadata sent
// readers to a ledger that no longer existed with nothing left to tell).
func TestScrubRepairRacingADeleterReportsLost(t *testing.T) {
	r, topic := newScrubRig(t)
	ctx := context.Background()
	name, _ := topic()
	id0, u0 := r.attempt(t, name, 0)
	if err := r.store.Delete(ctx, format.DataKey(u0, id0)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ml.UpdateOffloadContexts(ctx, name, []mledger.Edit{mledger.MarkBookkeeperDeletedEdit(id0, u0)}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	sc, err := scrub.New(scrub.Deps{ML: r.ml, Ledgers: &deleteAfterRead{LedgerStore: r.ledgers, t: t, id: id0}, Store: r.store, Verifier: r.offl, Registerer: reg},
		scrub.Options{CallTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := sc.Repair(ctx, name, []int64{id0})
	if len(fs) != 1 {
		t.Fatalf("findings %+v %v", fs, err)
	}
	f := fs[0]
	if f.Repaired || f.Verdict != scrub.VerdictLost || !strings.Contains(f.Action, "BookKeeper ledger is gone") || err == nil {
		t.Errorf("repair racing the deleter: %+v, err %v", f, err)
	}
	if lost := sc.Lost(); len(lost) != 1 || lost[0].LedgerID != id0 {
		t.Errorf("lost set %+v", lost)
	}
	if _, err := r.ledgers.ReadLedger(ctx, id0); !errors.Is(err, metadata.ErrNoSuchLedger) {
		t.Fatalf("the deleter did not delete: %v", err)
	}
}

// The service's scrubber: once every closed ledger is offloaded by the
// policy, ledger 0's data object is deleted (BookKeeper still has it) and
// ledger 1's index and BookKeeper copy are deleted. The scrubber finds
// both; the scheduler runs the repair of ledger 0 under the topic's lease
// (context cleared; the policy offloads it again later); ledger 1 is
// reported lost in /status, its warnings and
// tierkeeper_scrub_lost_ledgers, and its metadata is left as it is.
func TestServiceScrubRepairsAndReportsLost(t *testing.T) {
	peers(t)
	ml := fmt.Sprintf("acme/scrub/persistent/svc-%d", time.Now().UnixNano())
	peer.MLWrite(t, ml, 30, 10, 500)
	cfg, s3, bucket := serviceConfig(t, `
policy:
  include: [acme/scrub]   # the package's other tests share the ZooKeeper
  default: {after: 0s, deletion_lag: never}
scrub: {interval: 2s, ledgers_per_second: 100}
`)
	var deps Deps
	if testing.Verbose() {
		deps.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	svc := startService(t, context.Background(), cfg, deps)
	sess := peer.ZK.Session(t, tzk.Options{})
	ctx := context.Background()
	r, _ := newScrubRigOn(t, cfg, s3, bucket)
	offloaded := func() bool {
		st := ledgerStates(t, sess, ml)
		for _, x := range st[:len(st)-1] {
			if x != mledger.StateOffloaded {
				return false
			}
		}
		return true
	}
	until(t, "the policy offloads every closed ledger", 3*time.Minute, offloaded)
	id0, u0 := r.attempt(t, ml, 0)
	id1, u1 := r.attempt(t, ml, 1)
	if err := r.store.Delete(ctx, format.DataKey(u0, id0)); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Delete(ctx, format.IndexKey(u1, id1)); err != nil {
		t.Fatal(err)
	}
	md, err := r.ledgers.ReadLedger(ctx, id1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ledgers.DeleteLedger(ctx, id1, metadata.Expect{LastEntryID: md.LastEntryID, Length: md.Length}); err != nil {
		t.Fatal(err)
	}
	lostRaw := func() string {
		li := r.snap(t, ml).Info.GetLedgerInfo()[1]
		return li.GetOffloadContext().String()
	}
	before := lostRaw()
	var st Status
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		_, nu := r.attempt(t, ml, 0)
		getJSON(t, svc.base+"/status", &st)
		// Cleared (nu is Nil), or already offloaded again: the scheduler
		// offloads it once its settle time after the first offload has
		// passed (30 s), which the CLI test's re-offload covers.
		if nu != u0 && st.Scrub != nil && len(st.Scrub.Lost) == 1 {
			break
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(st, "", "  ")
			t.Fatalf("not within 2m: ledger %d repaired (attempt %s, was %s; states %v) and ledger %d reported lost; status:\n%s",
				id0, nu, u0, ledgerStates(t, sess, ml), id1, b)
		}
	}
	if f := st.Scrub.Lost[0]; f.LedgerID != id1 || f.UUID != u1 || f.Verdict != scrub.VerdictLost {
		t.Fatalf("lost %+v", f)
	}
	if !strings.Contains(strings.Join(st.Warnings, "\n"), fmt.Sprintf("LOST: %s ledger %d", ml, id1)) {
		t.Errorf("warnings %q", st.Warnings)
	}
	if lostRaw() != before {
		t.Fatal("the lost ledger's context was written")
	}
	if _, err := r.ledgers.ReadLedger(ctx, id0); err != nil {
		t.Fatalf("ledger %d BookKeeper copy: %v", id0, err)
	}
	_, m := getText(t, svc.base+"/metrics")
	for _, w := range []string{"tierkeeper_scrub_lost_ledgers 1", "tierkeeper_scrub_repaired_total 1",
		`tierkeeper_offloader_scheduler_ledgers_total{action="repair",result="ok"} 1`} {
		if !strings.Contains(m, w) {
			t.Errorf("/metrics misses %q", w)
		}
	}
}
