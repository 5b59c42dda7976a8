package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// A ZooKeeper session lost between verify and commit (the network cut for
// longer than the session timeout, so the server expires it): the commit
// fails with an error naming ZooKeeper, nothing is committed, and the next
// run (a new session) adopts the verified objects and commits them.
func TestZooKeeperSessionLostBeforeCommit(t *testing.T) {
	peers(t)
	px := testenv.StartFaultProxy(t, env.ZK.Addr)
	r := newRigWith(t, rigOptions{zkAddr: px.Addr, sessionTimeout: 2 * time.Second})
	name, ids := r.topic(t, 25, 10, 4<<10)
	p := r.pipeline(t, func(d *Deps, _ *Options) {
		d.Failpoints = FailpointFunc(func(_ context.Context, n string, _ mledger.LedgerRef) error {
			if n == FPAfterVerify {
				px.Cut()
				select {
				case <-r.sess.Lost():
				case <-time.After(20 * time.Second):
				}
				px.Heal()
			}
			return nil
		})
	})
	start := time.Now()
	lr, err := p.Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: ids[0]})
	if err == nil || !isStepErr(err, StepCommit) || !strings.Contains(err.Error(), "ZooKeeper unavailable") {
		t.Fatalf("run across a lost session: %+v %v", lr, err)
	}
	if !errors.Is(r.sess.Err(), tkzk.ErrSessionLost) {
		t.Fatalf("session state %v", r.sess.Err())
	}
	t.Logf("commit refused %s after the start: %v", time.Since(start).Round(time.Millisecond), err)
	r2 := newRig(t, false)
	r2.store, r2.bucket = r.store, r.bucket
	if st := mledger.States(r2.info(t, name).Info)[0]; st != mledger.StateOffloading {
		t.Fatalf("state after the lost session: %s", st)
	}
	lr, err = r2.pipeline(t, nil).Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: ids[0]})
	if err != nil || lr.Outcome != OutcomeAdopted {
		t.Fatalf("rerun: %+v %v", lr, err)
	}
	r2.checkInvariants(t, name)
}

// The S3 server killed in the middle of an upload: the copy fails with an
// error naming the server, the attempt stays recorded (its incomplete
// multipart upload cannot be aborted while the server is down and is
// listed as left over), nothing is committed; once the server is back the
// next run replaces the attempt, aborts the old upload and commits.
func TestS3KilledMidUpload(t *testing.T) {
	peers(t)
	s3 := testenv.StartPrivateS3(t)
	r := newRigWith(t, rigOptions{s3: s3, s3Attempts: 2})
	name := uniqueML(t)
	env.MLWrite(t, name, 300+5, 300, 20<<10) // one ledger of 300 x 20 KiB: two 5 MiB blocks
	id := Candidates(r.info(t, name).Info, -1, false)[0]
	p := r.pipeline(t, func(d *Deps, _ *Options) {
		d.Failpoints = FailpointFunc(func(_ context.Context, n string, _ mledger.LedgerRef) error {
			if n == FPMidCopy {
				s3.Kill()
			}
			return nil
		})
	})
	lr, err := p.Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: id})
	if err == nil || !isStepErr(err, StepCopy) || !strings.Contains(err.Error(), s3.Addr) {
		t.Fatalf("run with the S3 server killed: %+v %v", lr, err)
	}
	if len(lr.Leftovers) == 0 {
		t.Errorf("no leftovers listed after an upload the server could not abort: %+v", lr)
	}
	if st := mledger.States(r.info(t, name).Info)[0]; st != mledger.StateOffloading {
		t.Fatalf("state after the failed upload: %s", st)
	}
	t.Logf("copy failed: %v; left over: %v", err, lr.Leftovers)
	if err := s3.Restart(); err != nil {
		t.Fatal(err)
	}
	lr, err = r.pipeline(t, nil).Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: id})
	if err != nil || lr.Outcome != OutcomeOffloaded || len(lr.Superseded) != 1 {
		t.Fatalf("rerun: %+v %v", lr, err)
	}
	r.checkInvariants(t, name)
}

// A bookie killed in the middle of the copy: with two replicas per entry
// the reads fail over and the offload completes; with both replicas of
// some entries down the copy fails with an error naming the bookies, and
// the metadata is left as it was.
func TestBookieKilledMidRead(t *testing.T) {
	r := newRig(t, false)
	name, ids := r.topic(t, 2*200+5, 200, 16<<10)
	killed := map[int]bool{}
	t.Cleanup(func() {
		for i := range killed {
			env.BK.StartBookie(t, i)
		}
	})
	kill := func(n int) Failpoints {
		return FailpointFunc(func(_ context.Context, fp string, _ mledger.LedgerRef) error {
			if fp == FPMidCopy {
				for i := 0; len(killed) < n; i++ {
					if !killed[i] {
						env.BK.KillBookie(i)
						killed[i] = true
					}
				}
			}
			return nil
		})
	}
	lr, err := r.pipeline(t, func(d *Deps, _ *Options) { d.Failpoints = kill(1) }).Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: ids[0]})
	if err != nil || lr.Outcome != OutcomeOffloaded || lr.Verify.Level != LevelFull {
		t.Fatalf("one bookie down: %+v %v", lr, err)
	}
	before, ver := r.raw(t, name)
	// The read window (by default a block, more than this whole ledger)
	// bounded to 4 entries: the entries past mid-copy are still on the
	// bookies when they die, not already read ahead.
	lr, err = r.pipeline(t, func(d *Deps, o *Options) { d.Failpoints, o.ReadWindowBytes = kill(2), 64<<10 }).Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: ids[1]})
	if err == nil || !isStepErr(err, StepCopy) || !strings.Contains(err.Error(), "127.0.0.1:") {
		t.Fatalf("two bookies down: %+v %v", lr, err)
	}
	if after, ver2 := r.raw(t, name); string(after) != string(before) || ver2 != ver+2 {
		t.Fatalf("a failed copy changed the metadata (version %d -> %d)", ver, ver2)
	}
	t.Logf("two bookies down: %v", err)
	for i := range killed {
		env.BK.StartBookie(t, i)
		delete(killed, i)
	}
	if lr, err := r.pipeline(t, nil).Run(context.Background(), mledger.LedgerRef{ML: name, LedgerID: ids[1]}); err != nil || lr.Outcome != OutcomeOffloaded {
		t.Fatalf("bookies back: %+v %v", lr, err)
	}
	r.checkInvariants(t, name)
}

// A writer doing 1000 ledger rollovers on the same znode (close the last
// ledger, append a new open one, compare-and-set, re-read on BadVersion, as
// a broker's managed ledger would if it did not fence) while the pipeline
// offloads and commits the closed ledgers: no rollover is lost, every
// offload context is kept, and no ledger that was the last one when written
// ever gets an offload context.
func TestConcurrentRolloversLoseNothing(t *testing.T) {
	r := newRig(t, false)
	name, real := r.topic(t, 5*40+5, 40, 1<<10)
	const rollovers = 1000
	const firstFake = 1_000_000
	ctx := context.Background()
	var writerErr error
	var retries int
	var commitsDuring atomic.Int64
	done := make(chan struct{})
	// At least 1000 rollovers, and on until one commit has happened
	// during them (a slow pipeline may not commit within the first 1000),
	// for at most a minute.
	n := 0
	go func() {
		defer close(done)
		until := time.Now().Add(time.Minute)
		for ; n < rollovers || (commitsDuring.Load() == 0 && time.Now().Before(until)); n++ {
			for {
				data, st, err := r.zk.Get(mledger.Path(name))
				if err != nil {
					writerErr = err
					return
				}
				info, _, err := mledger.Decode(data, mledger.Limits{})
				if err != nil {
					writerErr = err
					return
				}
				ls := info.LedgerInfo
				last := ls[len(ls)-1]
				if last.GetEntries() == 0 {
					last.Entries, last.Size = proto.Int64(1), proto.Int64(1)
				}
				last.Timestamp = proto.Int64(time.Now().UnixMilli())
				info.LedgerInfo = append(ls, &mlproto.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(firstFake + int64(n)), Timestamp: proto.Int64(0)})
				out, err := mledger.Encode(info, mledger.EncodeOptions{})
				if err != nil {
					writerErr = err
					return
				}
				_, err = r.zk.Set(mledger.Path(name), out, st.Version)
				if errors.Is(err, zk.ErrBadVersion) {
					retries++
					continue
				}
				if err != nil {
					writerErr = err
					return
				}
				break
			}
		}
	}()
	p := r.pipeline(t, func(d *Deps, _ *Options) {
		d.Failpoints = FailpointFunc(func(_ context.Context, n string, _ mledger.LedgerRef) error {
			if n == FPAfterCommit {
				select {
				case <-done:
				default:
					commitsDuring.Add(1)
				}
			}
			return nil
		})
	})
	offloaded := map[int64]bool{}
	for round := 0; len(offloaded) < len(real) && round < 20; round++ {
		var todo []int64
		for _, id := range real {
			if !offloaded[id] {
				todo = append(todo, id)
			}
		}
		tr, err := p.RunTopic(ctx, name, todo)
		for _, lr := range tr.Ledgers {
			if lr.Err == nil {
				offloaded[lr.LedgerID] = true
			} else if !errors.Is(lr.Err, mledger.ErrContention) {
				t.Fatalf("ledger %d: %v", lr.LedgerID, lr.Err)
			}
		}
		if err != nil {
			t.Logf("round %d: %v", round, err)
		}
	}
	<-done
	if writerErr != nil {
		t.Fatal(writerErr)
	}
	if len(offloaded) != len(real) {
		t.Fatalf("offloaded %d of %d ledgers", len(offloaded), len(real))
	}
	if commitsDuring.Load() == 0 {
		t.Fatalf("no commit happened while the writer was rolling over")
	}
	info := r.info(t, name).Info
	ls := info.GetLedgerInfo()
	if len(ls) != len(real)+1+n {
		t.Fatalf("%d ledgers after %d rollovers, want %d", len(ls), n, len(real)+1+n)
	}
	for i, li := range ls {
		switch {
		case i < len(real):
			if li.GetLedgerId() != real[i] || !li.GetOffloadContext().GetComplete() {
				t.Fatalf("real ledger %d: %v", i, li)
			}
		case i == len(real):
			// ml-write's last ledger: the first rollover closed it.
		default:
			if want := int64(firstFake + i - len(real) - 1); li.GetLedgerId() != want || li.OffloadContext != nil {
				t.Fatalf("rollover ledger %d: %v (want id %d, no offload context)", i, li, want)
			}
		}
	}
	t.Logf("%d rollovers (%d lost races retried by the writer) while %d ledgers were offloaded (%d commits during the rollovers)",
		n, retries, len(real), commitsDuring.Load())
}
