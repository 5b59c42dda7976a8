package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

func TestParseFailpoints(t *testing.T) {
	fs, err := ParseFailpoints("after-copy@2=error, mid-copy=sleep:10ms")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tg := mledger.LedgerRef{ML: "t/ns/persistent/x", LedgerID: 7}
	if err := fs.Hit(ctx, FPAfterCopy, tg); err != nil {
		t.Fatalf("first hit fired: %v", err)
	}
	if err := fs.Hit(ctx, FPAfterCopy, tg); !errors.Is(err, ErrFailpoint) || !strings.Contains(err.Error(), "ledger 7") {
		t.Fatalf("second hit: %v", err)
	}
	if err := fs.Hit(ctx, FPAfterCopy, tg); err != nil {
		t.Fatalf("third hit fired: %v", err)
	}
	start := time.Now()
	if err := fs.Hit(ctx, FPMidCopy, tg); err != nil || time.Since(start) < 10*time.Millisecond {
		t.Fatalf("sleep: %v after %s", err, time.Since(start))
	}
	killed := 0
	fs, _ = ParseFailpoints("after-commit=kill")
	fs.kill = func() { killed++ }
	if err := fs.Hit(ctx, FPAfterCommit, tg); !errors.Is(err, ErrFailpoint) || killed != 1 {
		t.Fatalf("kill: %v (%d)", err, killed)
	}
	if fs, err := ParseFailpoints(" "); fs != nil || err != nil {
		t.Fatalf("empty spec: %v %v", fs, err)
	}
	var nilSet *FailpointSet
	if err := nilSet.Hit(ctx, FPAfterCopy, tg); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"after-copy", "nope=error", "after-copy=explode", "after-copy@0=error", "after-copy=sleep:x"} {
		if _, err := ParseFailpoints(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// crashAt returns failpoints that end the calling goroutine (deferred calls
// run, nothing else: no cleanup, no further step, upload parts in flight
// left as they are) the first time name is reached for ledger id: an
// in-process stand-in for a SIGKILL at exactly that point. The
// SIGKILL-a-real-process test is in cmd/offloader.
func crashAt(name string, id int64, crashed *bool) Failpoints {
	return FailpointFunc(func(_ context.Context, n string, t mledger.LedgerRef) error {
		if n == name && t.LedgerID == id && !*crashed {
			*crashed = true
			runtime.Goexit()
		}
		return nil
	})
}

// runCrashing runs RunTopic in a goroutine that a crashing failpoint may
// end; it reports whether the run returned normally.
func runCrashing(p *Pipeline, ml string, ids []int64) (returned bool, err error) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err = p.RunTopic(context.Background(), ml, ids)
		returned = true
	}()
	wg.Wait()
	return returned, err
}

// A crash at every failpoint of the copy path, each on its own ledger,
// then a plain run: every ledger ends offloaded, no object is left that no
// ledger references, no multipart upload is left incomplete, and the
// outcome shows that the resumed run used what the crashed one left (an
// uploaded but uncommitted attempt is adopted, not copied again).
func TestCrashAtEveryFailpointResumes(t *testing.T) {
	r := newRig(t, false)
	name, ids := r.topic(t, 7*280+5, 280, 20<<10) // 7 ledgers of 280 x 20 KiB (two 5 MiB blocks) + a last one
	if len(ids) != 7 {
		t.Fatalf("candidates %v", ids)
	}
	cases := []struct {
		fp   string
		want Outcome             // outcome of the resumed run
		mid  mledger.LedgerState // stored state right after the crash
	}{
		{FPAfterSelect, OutcomeOffloaded, mledger.StateBookKeeper},
		{FPAfterPrepare, OutcomeOffloaded, mledger.StateOffloading},
		{FPMidCopy, OutcomeOffloaded, mledger.StateOffloading},
		{FPAfterCopy, OutcomeAdopted, mledger.StateOffloading},
		{FPAfterVerify, OutcomeAdopted, mledger.StateOffloading},
		{FPAfterCommit, OutcomeAlreadyOffloaded, mledger.StateOffloaded},
	}
	for i, c := range cases {
		id := ids[i]
		crashed := false
		p := r.pipeline(t, func(d *Deps, _ *Options) { d.Failpoints = crashAt(c.fp, id, &crashed) })
		if returned, err := runCrashing(p, name, []int64{id}); returned || !crashed {
			t.Fatalf("%s: run returned (%v) without crashing", c.fp, err)
		}
		if c.fp == FPMidCopy {
			time.Sleep(200 * time.Millisecond) // let the orphaned part uploads finish
		}
		if st := mledger.States(r.info(t, name).Info)[i]; st != c.mid {
			t.Errorf("%s: state after the crash %s, want %s", c.fp, st, c.mid)
		}
		lr, err := r.pipeline(t, nil).Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: id})
		if err != nil {
			t.Fatalf("%s: resumed run: %v", c.fp, err)
		}
		if lr.Outcome != c.want {
			t.Errorf("%s: resumed run %s, want %s (superseded %v)", c.fp, lr.Outcome, c.want, lr.Superseded)
		}
		if c.mid == mledger.StateOffloading && c.want == OutcomeOffloaded && len(lr.Superseded) != 1 {
			t.Errorf("%s: the crashed attempt was not superseded: %+v", c.fp, lr)
		}
		r.checkInvariants(t, name)
	}

	// A failed copy (not a crash) undoes its prepare: the metadata is as it
	// was, byte for byte, and no object is left.
	id := ids[6]
	before, _ := r.raw(t, name)
	p := r.pipeline(t, func(d *Deps, _ *Options) {
		d.Failpoints = FailpointFunc(func(_ context.Context, n string, _ mledger.LedgerRef) error {
			if n == FPMidCopy {
				return fmt.Errorf("%w: injected", ErrFailpoint)
			}
			return nil
		})
	})
	lr, err := p.Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: id})
	if !errors.Is(err, ErrFailpoint) || !isStepErr(err, StepCopy) || lr.Outcome != OutcomeFailed {
		t.Fatalf("failed copy: %v %+v", err, lr)
	}
	if after, _ := r.raw(t, name); string(after) != string(before) {
		a, _, _ := mledger.Decode(after, mledger.Limits{})
		b, _, _ := mledger.Decode(before, mledger.Limits{})
		t.Fatalf("a failed copy left the metadata changed (%v):\nbefore %v\nafter  %v", lr.Err, b, a)
	}
	r.checkInvariants(t, name)

	// Trim crashes: after the mark (bookkeeperDeleted set, BookKeeper
	// ledger still there) and after the delete; the next run finishes.
	for _, fp := range []string{FPAfterMarkDeleted, FPAfterTrim} {
		id := ids[0]
		if fp == FPAfterTrim {
			id = ids[1]
		}
		crashed := false
		p := r.pipeline(t, func(d *Deps, o *Options) {
			d.Failpoints = crashAt(fp, id, &crashed)
			o.Trim, o.TrimWithoutReload = true, true
		})
		if returned, _ := runCrashing(p, name, []int64{id}); returned || !crashed {
			t.Fatalf("%s: no crash", fp)
		}
		_, err := r.ledgers.ReadLedger(context.Background(), id)
		if gone := errors.Is(err, metadata.ErrNoSuchLedger); gone != (fp == FPAfterTrim) {
			t.Fatalf("%s: BookKeeper ledger gone=%v (%v)", fp, gone, err)
		}
		p = r.pipeline(t, func(_ *Deps, o *Options) { o.Trim, o.TrimWithoutReload = true, true })
		lr, err := p.Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: id})
		if err != nil || !lr.Trim.Deleted {
			t.Fatalf("%s: resumed trim %+v: %v", fp, lr.Trim, err)
		}
		if _, err := r.ledgers.ReadLedger(context.Background(), id); !errors.Is(err, metadata.ErrNoSuchLedger) {
			t.Fatalf("%s: ledger %d still in BookKeeper after the resumed trim: %v", fp, id, err)
		}
		r.checkInvariants(t, name)
	}
}

// An unfinished attempt whose recorded UUID is also the one its objects
// are named by (an older tierkeeper's, tag 0x74b, or the broker's own) is
// not adopted, even with whole objects: a broker that holds it in memory
// cleans those objects up when it next prepares an offload of the ledger
// (cleanupOffloaded of the UUID it holds), and that would take the
// objects of a committed offload. The run makes a fresh attempt (a
// prepare UUID that names no object) and supersedes the old one.
func TestAttemptNamingItsObjectsNotAdopted(t *testing.T) {
	r := newRig(t, false)
	name, ids := r.topic(t, 2*280+5, 280, 20<<10)
	id := ids[0]
	crashed := false
	p := r.pipeline(t, func(d *Deps, _ *Options) { d.Failpoints = crashAt(FPAfterCopy, id, &crashed) })
	if returned, err := runCrashing(p, name, []int64{id}); returned || !crashed {
		t.Fatalf("run returned (%v) without crashing", err)
	}
	// Record the objects' UUID itself, as such an attempt does.
	data, version := r.raw(t, name)
	info, _, err := mledger.Decode(data, mledger.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var named uuid.UUID
	for _, li := range info.GetLedgerInfo() {
		if li.GetLedgerId() == id {
			prep, _ := mledger.AttemptUUID(li.GetOffloadContext())
			named = mledger.ObjectUUID(prep)
			msb, lsb := mledger.UUIDToBits(named)
			li.OffloadContext.UidMsb, li.OffloadContext.UidLsb = proto.Int64(msb), proto.Int64(lsb)
		}
	}
	out, err := mledger.Encode(info, mledger.EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.zk.Set(mledger.Path(name), out, version); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.keys(t), format.DataKey(named, id)) {
		t.Fatalf("the crashed attempt's objects %s are not there: %v", format.DataKey(named, id), r.keys(t))
	}
	lr, err := r.pipeline(t, nil).Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: id})
	if err != nil {
		t.Fatal(err)
	}
	if lr.Outcome != OutcomeOffloaded || lr.UUID == named || len(lr.Superseded) != 1 {
		t.Errorf("resumed run %s with %s (superseded %v), want a fresh attempt superseding %s", lr.Outcome, lr.UUID, lr.Superseded, named)
	}
	for _, li := range r.info(t, name).Info.GetLedgerInfo() {
		if li.GetLedgerId() == id {
			if stored, _ := mledger.AttemptUUID(li.GetOffloadContext()); stored == named || !li.GetOffloadContext().GetComplete() {
				t.Errorf("committed %s (complete %v)", stored, li.GetOffloadContext().GetComplete())
			}
		}
	}
	r.checkInvariants(t, name)
}
