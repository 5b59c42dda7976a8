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
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// zkLeases are per-topic leases, fenced. Per managed ledger (its name
// URL-encoded, always holding a %2F, so it never clashes with "epochs"):
//
//   - the owner node <root>/<name>: ephemeral, created by the holder's
//     session, data = the replica id, data version 1 (created and set once
//     in the acquiring multi). ZooKeeper deletes it when the session ends,
//     so a dead replica's topics are free again after its session timeout.
//   - the epoch node <root>/epochs/<name>: persistent, its data version
//     bumped by every acquisition, in the same multi that creates the owner
//     node: multi(Create(owner), SetData(owner, v0), SetData(epoch, any)).
//
// The epoch node is never deleted: re-created, it would start again at
// version 0, and a stale holder's Check(epoch, E) could pass against a
// later generation that reached the same E.
//
// One acquisition is one generation, fenced by
// Fence{Check(owner, 1), Check(epoch, E)} with E the epoch version the
// acquiring multi produced. Every ZooKeeper write of a job (the managed
// ledger's compare-and-set, the BookKeeper ledger deletion, the release)
// is one multi of these checks and the write: a lease lost with its
// session fails the owner check (NoNode); a lease taken since by anyone,
// this replica's own new session included, fails the epoch check. A
// release deletes only its own generation's owner node (a fenced delete).
//
// Leases of releases before fencing (an ephemeral <root>/<name> at data
// version 0, no epoch node) still exclude and are excluded: both layouts
// create the same owner node, so a mixed fleet during a rolling upgrade
// never has two holders; an old-layout holder's owner node is at version 0
// and fails the version-1 check, so a fenced write never passes against
// it. Old-layout replicas write unfenced, as before: finish the upgrade.
//
// A replica considers its leases lost as soon as it has not heard from
// ZooKeeper for half the session timeout (the server expires a session one
// timeout after it last heard from the client, and only then can another
// replica take the topic), and stops its jobs; the fence is what stops a
// write that was already on its way.
type zkLeases struct {
	sess LeaseSession
	root string
	id   string
	log  *slog.Logger

	mu     sync.Mutex
	lost   chan struct{}
	closed bool
	why    string
	stop   chan struct{}
	gens   map[string]*zkLease // generations held (acquired, not released)
}

func newZKLeases(sess LeaseSession, root, id string, log *slog.Logger) *zkLeases {
	l := &zkLeases{sess: sess, root: root, id: id, log: log.With("component", "leases"),
		lost: make(chan struct{}), stop: make(chan struct{}), gens: map[string]*zkLease{}}
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

func (l *zkLeases) path(ml string) string { return l.root + "/" + mledger.EncodeName(ml) }

func (l *zkLeases) epochPath(ml string) string {
	return l.root + "/" + epochsDir + "/" + mledger.EncodeName(ml)
}

// epochsDir holds the epoch nodes under the lease root.
const epochsDir = "epochs"

// ownerVersion is the data version of an owner node this layout creates
// (created, then set once in the same multi); an old-layout lease is at 0.
const ownerVersion = 1

// zkLease is one generation of a topic's lease.
type zkLease struct {
	l     *zkLeases
	ml    string
	fence *tzk.Fence
}

// Fence implements scheduler.Lease.
func (g *zkLease) Fence(ctx context.Context) context.Context { return tzk.WithFence(ctx, g.fence) }

// Release implements scheduler.Lease: a fenced delete of this
// generation's owner node (a later generation's is never touched).
func (g *zkLease) Release(ctx context.Context) { g.l.release(ctx, g) }

// TryAcquire implements scheduler.Leases: a new generation of ml's lease,
// or nil and the holder when another replica (or an old-layout one) holds
// it.
func (l *zkLeases) TryAcquire(ctx context.Context, ml string) (scheduler.Lease, string, error) {
	select {
	case <-l.lost:
		return nil, "", errors.New("leases lost")
	default:
	}
	l.mu.Lock()
	stale := l.gens[ml]
	l.mu.Unlock()
	if stale != nil {
		// An earlier release failed: finish it before a new generation.
		l.release(ctx, stale)
	}
	owner, epoch := l.path(ml), l.epochPath(ml)
	for attempt := 0; attempt < 3; attempt++ {
		res, err := tzk.Multi(ctx, l.sess,
			&gozk.CreateRequest{Path: owner, Data: []byte(l.id), Acl: l.sess.ACL(), Flags: gozk.FlagEphemeral},
			&gozk.SetDataRequest{Path: owner, Data: []byte(l.id), Version: 0},
			&gozk.SetDataRequest{Path: epoch, Data: []byte(l.id), Version: -1})
		switch {
		case err == nil:
			g := &zkLease{l: l, ml: ml, fence: tzk.NewFence("lease of "+ml,
				tzk.PathVersion{Path: owner, Version: ownerVersion}, tzk.PathVersion{Path: epoch, Version: res[2].Stat.Version})}
			l.mu.Lock()
			l.gens[ml] = g
			l.mu.Unlock()
			return g, l.id, nil
		case errors.Is(err, gozk.ErrNoNode) && attempt < 2:
			// The root or the epoch node does not exist yet.
			if err := l.makePath(ctx, l.root+"/"+epochsDir); err != nil {
				return nil, "", err
			}
			if _, err := tzk.Do(ctx, func() (string, error) {
				return l.sess.Create(epoch, nil, 0, l.sess.ACL())
			}); err != nil && !errors.Is(err, gozk.ErrNodeExists) {
				return nil, "", fmt.Errorf("lease epoch %s: %w", epoch, err)
			}
			continue
		case errors.Is(err, gozk.ErrNodeExists):
			data, st, gerr := tzk.Get(ctx, l.sess, owner)
			if errors.Is(gerr, gozk.ErrNoNode) {
				continue // released meanwhile: try again
			}
			if gerr != nil {
				return nil, "", fmt.Errorf("lease %s: %w", owner, gerr)
			}
			holder := string(data)
			switch {
			case st.Version != ownerVersion:
				holder += " (a lease of an older tierkeeper release, not fenced)"
			case st.EphemeralOwner == l.sess.SessionID():
				// This session's node with no generation known (it cannot
				// be one handed out: those are in gens): not ours to use.
				holder += " (this session, an earlier lease not released)"
			}
			return nil, holder, nil
		default:
			return nil, "", fmt.Errorf("lease %s: %w", owner, err)
		}
	}
	return nil, "", fmt.Errorf("lease %s: not acquired after 3 tries (the node came and went)", owner)
}

// makePath creates p and its missing parents (persistent, empty).
func (l *zkLeases) makePath(ctx context.Context, p string) error {
	parts := strings.Split(strings.Trim(p, "/"), "/")
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

// release deletes g's owner node, fenced by g: only while g is the
// current generation. g is forgotten once its node is gone or not its own
// any more; kept (and retried at the next TryAcquire) when ZooKeeper did
// not answer.
func (l *zkLeases) release(ctx context.Context, g *zkLease) {
	_, err := g.fence.Multi(ctx, l.sess, &gozk.DeleteRequest{Path: l.path(g.ml), Version: ownerVersion})
	if err != nil && !errors.Is(err, tzk.ErrFenced) && !errors.Is(err, gozk.ErrNoNode) {
		l.log.Debug("lease release", "ml", g.ml, "err", err)
		return
	}
	l.mu.Lock()
	if l.gens[g.ml] == g {
		delete(l.gens, g.ml)
	}
	l.mu.Unlock()
}

// DefaultLeaseRoot is the default leases.root: the znode under which the
// service's replicas and `offloader offload` take their per-topic leases.
const DefaultLeaseRoot = "/tierkeeper/leases"

// TopicLeases are the fenced per-topic leases of one ZooKeeper session, as
// the service's replicas take them, for other writers of managed ledgers
// (`offloader offload`): a topic is written by one of them at a time.
// TryAcquire returns a new generation or the holder; run the topic's
// writes under Lease.Fence's context, then Release it. Lost is closed when
// the session is lost or ZooKeeper has been silent for half the session
// timeout: stop writing then.
type TopicLeases struct{ *zkLeases }

// NewTopicLeases returns the leases of sess under root for replica id.
// Close them when done.
func NewTopicLeases(sess *tzk.Session, root, id string, log *slog.Logger) *TopicLeases {
	return &TopicLeases{newZKLeases(sess, root, id, log)}
}

// Close stops watching the session (it does not release leases).
func (t *TopicLeases) Close() { t.close() }

var _ scheduler.Leases = (*zkLeases)(nil)

// Break ends the lease of ml held by holder (the id TryAcquire named) when
// the caller knows that holder can write no more (a killed process of this
// host: its ZooKeeper session outlives it by up to the session timeout). It
// deletes the owner node in one multi with a check of the epoch read
// before it, so a lease taken meanwhile by anyone is never deleted; and a
// holder that could still write is fenced out anyway, as every generation
// after it bumps the epoch. It returns whether it deleted the node.
func (l *zkLeases) Break(ctx context.Context, ml, holder string) (bool, error) {
	owner, epoch := l.path(ml), l.epochPath(ml)
	_, est, err := tzk.Get(ctx, l.sess, epoch)
	if err != nil {
		return false, fmt.Errorf("lease epoch %s: %w", epoch, err)
	}
	data, st, err := tzk.Get(ctx, l.sess, owner)
	if errors.Is(err, gozk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", owner, err)
	}
	if string(data) != holder || st.Version != ownerVersion {
		return false, nil
	}
	_, err = tzk.Multi(ctx, l.sess,
		&gozk.CheckVersionRequest{Path: epoch, Version: est.Version},
		&gozk.DeleteRequest{Path: owner, Version: ownerVersion})
	switch {
	case err == nil:
		l.log.Warn("lease broken", "ml", ml, "holder", holder)
		return true, nil
	case errors.Is(err, gozk.ErrBadVersion), errors.Is(err, gozk.ErrNoNode):
		return false, nil
	}
	return false, fmt.Errorf("break lease %s: %w", owner, err)
}
