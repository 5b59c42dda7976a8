package offloader

import (
	"log/slog"
	"time"

	gozk "github.com/go-zookeeper/zk"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
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
