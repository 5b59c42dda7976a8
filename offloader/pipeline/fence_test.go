package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	gozk "github.com/go-zookeeper/zk"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// A replica that lost its lease between copy and verify (another replica
// took it: the fence's epoch moved) and whose verify then fails deletes
// nothing: the undo of its prepare is refused by the fence, so the
// attempt stays recorded and its objects stay for the new holder (which
// adopts or replaces them). Before, the objects were removed at once on
// the failed verify, before any fenced write.
func TestStaleReplicaDeletesNoObjects(t *testing.T) {
	r := newRig(t, false)
	name, ids := r.topic(t, 20, 10, 100)
	id := ids[0]
	epoch := "/fence-test/" + strings.ReplaceAll(mledger.EncodeName(name), "%", "_")
	if _, err := r.zk.Create("/fence-test", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil && !errors.Is(err, gozk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := r.zk.Create(epoch, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx := tkzk.WithFence(context.Background(), tkzk.NewFence("test lease", tkzk.PathVersion{Path: epoch, Version: 0}))
	var attempt string
	p := r.pipeline(t, func(d *Deps, _ *Options) {
		d.Failpoints = FailpointFunc(func(ctx context.Context, n string, tg mledger.LedgerRef) error {
			if n != FPAfterCopy || tg.LedgerID != id {
				return nil
			}
			// Another replica takes the topic; the objects turn out wrong.
			if _, err := r.zk.Set(epoch, []byte("replica-2"), 0); err != nil {
				return err
			}
			snap, err := r.ml.Get(ctx, name)
			if err != nil {
				return err
			}
			for _, li := range snap.Info.GetLedgerInfo() {
				if li.GetLedgerId() == id {
					u, _ := mledger.AttemptUUID(li.GetOffloadContext())
					attempt = format.IndexKey(u, id)
				}
			}
			_, err = r.store.Put(ctx, attempt, strings.NewReader("not an index"), int64(len("not an index")), blob.PutOptions{})
			return err
		})
	})
	before, _ := r.raw(t, name)
	lr, err := p.Run(ctx, mledger.LedgerRef{ML: name, LedgerID: id})
	if err == nil || lr.Outcome != OutcomeFailed {
		t.Fatalf("run with wrong objects: %v %+v", err, lr)
	}
	if attempt == "" {
		t.Fatal("the failpoint did not run")
	}
	if keys := r.keys(t); !slices.Contains(keys, attempt) {
		t.Fatalf("the stale replica deleted the attempt's objects (%s) after losing its lease; store: %v", attempt, keys)
	}
	after, _ := r.raw(t, name)
	if string(after) == string(before) {
		t.Fatal("the prepare did not land")
	}
	snap := r.info(t, name)
	for _, li := range snap.Info.GetLedgerInfo() {
		if li.GetLedgerId() == id {
			if u, ok := mledger.AttemptUUID(li.GetOffloadContext()); !ok || format.IndexKey(u, id) != attempt || li.GetOffloadContext().GetComplete() {
				t.Fatalf("the attempt's prepare was undone or changed by a replica without the lease: %v", li.GetOffloadContext())
			}
		}
	}
}
