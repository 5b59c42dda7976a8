package offloader

import (
	"context"
	"log/slog"
	"time"

	gozk "github.com/go-zookeeper/zk"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
)

// LeaseSession is the ZooKeeper session the topic leases run on;
// internal/zk's *Session implements it (the deterministic simulation
// implements it too).
type LeaseSession interface {
	tzk.Reader
	tzk.Deleter
	Create(path string, data []byte, flags int32, acl []gozk.ACL) (string, error)
	Multi(ops ...any) ([]gozk.MultiResponse, error)
	ACL() []gozk.ACL
	SessionID() int64
	State() gozk.State
	Lost() <-chan struct{}
	LastHeard() time.Time
	SessionTimeout() time.Duration
}

var _ LeaseSession = (*tzk.Session)(nil)

// NewLeases returns per-topic leases on sess (see zkLeases) with their
// Lost channel watched until stop is called; the service builds its own,
// this is for the deterministic simulation.
func NewLeases(sess LeaseSession, root, id string, log *slog.Logger) (l scheduler.Leases, stop func()) {
	zl := newZKLeases(sess, root, id, log)
	return zl, zl.close
}

// RunLeased runs the pipeline on ledgers ids of ml as `offloader offload`
// does: under a fresh generation of ml's lease (the service's), its writes
// fenced by it, cancelled when the leases are lost, the lease released
// after. A topic leased elsewhere is not touched: it returns a nil result
// and the holder. A lease that breakable says can be broken (its holder is
// known dead) is broken (TopicLeases.Break) and taken; breakable may be nil.
func RunLeased(ctx context.Context, leases scheduler.Leases, p *pipeline.Pipeline, ml string, ids []int64,
	breakable func(holder string) bool) (tr *pipeline.TopicResult, holder string, err error) {
	g, holder, err := leases.TryAcquire(ctx, ml)
	if tl, ok := leases.(interface {
		Break(ctx context.Context, ml, holder string) (bool, error)
	}); ok && err == nil && g == nil && breakable != nil && breakable(holder) {
		var broke bool
		if broke, err = tl.Break(ctx, ml, holder); err == nil && broke {
			g, holder, err = leases.TryAcquire(ctx, ml)
		}
	}
	if err != nil || g == nil {
		return nil, holder, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		g.Release(rctx)
	}()
	jctx, cancel := context.WithCancel(g.Fence(ctx))
	defer cancel()
	go func() {
		select {
		case <-leases.Lost():
			cancel()
		case <-jctx.Done():
		}
	}()
	tr, err = p.RunTopic(jctx, ml, ids)
	return tr, holder, err
}
