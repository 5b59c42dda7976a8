package offloader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/mlmeta"
)

// zkLeases are per-topic leases: an ephemeral znode
// <root>/<managed-ledger name, URL-encoded> holding the replica id, created
// by this replica's session. ZooKeeper deletes it when the session ends, so
// a dead replica's topics are free again after its session timeout. A
// replica considers its leases lost as soon as it has not heard from
// ZooKeeper for half the session timeout (the server expires a session one
// timeout after it last heard from the client, and only then can another
// replica take the topic), so two replicas never work on a topic at once.
// It counts from the last answer, not from the client noticing a
// disconnection: on a connection that went silent (a partition) the client
// notices only after two thirds of the timeout.
type zkLeases struct {
	sess *tzk.Session
	root string
	id   string
	log  *slog.Logger

	mu     sync.Mutex
	lost   chan struct{}
	closed bool
	why    string
	stop   chan struct{}
}

func newZKLeases(sess *tzk.Session, root, id string, log *slog.Logger) *zkLeases {
	l := &zkLeases{sess: sess, root: root, id: id, log: log.With("component", "leases"),
		lost: make(chan struct{}), stop: make(chan struct{})}
	go l.watch()
	return l
}

// watch closes lost when the session is lost or ZooKeeper has been silent
// for half the session timeout.
func (l *zkLeases) watch() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.sess.Lost():
			l.markLost("zookeeper session lost")
			return
		case <-t.C:
			if silent := time.Since(l.sess.LastHeard()); silent > l.sess.SessionTimeout()/2 {
				l.markLost(fmt.Sprintf("no answer from zookeeper for %s (half the session timeout; state %s)",
					silent.Round(time.Millisecond), l.sess.State()))
				return
			}
		}
	}
}

func (l *zkLeases) markLost(why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed, l.why = true, why
		l.log.Warn("leases lost; stopping work", "why", why)
		close(l.lost)
	}
}

// reason says why the leases were lost ("" while held).
func (l *zkLeases) reason() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.why
}

// Lost implements scheduler.Leases.
func (l *zkLeases) Lost() <-chan struct{} { return l.lost }

func (l *zkLeases) close() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
}

func (l *zkLeases) path(ml string) string { return l.root + "/" + mlmeta.EncodeName(ml) }

// TryAcquire implements scheduler.Leases.
func (l *zkLeases) TryAcquire(ctx context.Context, ml string) (bool, string, error) {
	select {
	case <-l.lost:
		return false, "", errors.New("leases lost")
	default:
	}
	p := l.path(ml)
	for attempt := 0; attempt < 2; attempt++ {
		_, err := tzk.Do(ctx, func() (string, error) {
			return l.sess.Create(p, []byte(l.id), gozk.FlagEphemeral, l.sess.ACL())
		})
		switch {
		case err == nil:
			return true, l.id, nil
		case errors.Is(err, gozk.ErrNoNode) && attempt == 0:
			if err := l.makeRoot(ctx); err != nil {
				return false, "", err
			}
			continue
		case errors.Is(err, gozk.ErrNodeExists):
			data, st, gerr := tzk.Get(ctx, l.sess, p)
			if errors.Is(gerr, gozk.ErrNoNode) {
				continue // released meanwhile: try once more
			}
			if gerr != nil {
				return false, "", fmt.Errorf("lease %s: %w", p, gerr)
			}
			if st.EphemeralOwner == l.sess.SessionID() {
				return true, l.id, nil
			}
			return false, string(data), nil
		default:
			return false, "", fmt.Errorf("lease %s: %w", p, err)
		}
	}
	return false, "", nil
}

func (l *zkLeases) makeRoot(ctx context.Context) error {
	parts := strings.Split(strings.Trim(l.root, "/"), "/")
	for i := range parts {
		sub := "/" + strings.Join(parts[:i+1], "/")
		_, err := tzk.Do(ctx, func() (string, error) {
			return l.sess.Create(sub, nil, 0, l.sess.ACL())
		})
		if err != nil && !errors.Is(err, gozk.ErrNodeExists) {
			return fmt.Errorf("lease root %s: %w", sub, err)
		}
	}
	return nil
}

// Release implements scheduler.Leases: deletes the lease node if this
// session owns it.
func (l *zkLeases) Release(ctx context.Context, ml string) {
	p := l.path(ml)
	_, st, err := tzk.Get(ctx, l.sess, p)
	if err != nil || st.EphemeralOwner != l.sess.SessionID() {
		return
	}
	if err := tzk.Delete(ctx, l.sess, p, st.Version); err != nil && !errors.Is(err, gozk.ErrNoNode) {
		l.log.Debug("lease release", "ml", ml, "err", err)
	}
}
