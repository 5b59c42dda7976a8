// Package discovery keeps an up-to-date view of every managed ledger under
// /managed-ledgers for the policy: it watches each managed-ledger znode and
// each namespace's topic list, and rescans the whole tree periodically,
// reading a managed ledger's value only when its znode version changed.
//
// # How
//
//   - Scan lists the namespaces and their topics (mledger.Store.List), then
//     asks ZooKeeper for each known managed ledger's stat (Exists, no data)
//     and reads (GetW: data + a data watch) only new ones and those whose
//     version differs from the one cached. Requests are pipelined on the
//     session, Options.Concurrency at a time; the stats go round robin
//     over the session and Options.StatConns (Concurrency per session),
//     since ZooKeeper serves one session's requests in order on one
//     thread. Managed ledgers that disappeared are dropped.
//   - Watch events come through one subscription to the session's events
//     (tzk.Session.OnWatchEvent), queued for Run: no goroutine waits on
//     a watch, whatever their number. A fired data watch re-reads that
//     managed ledger (re-arming the watch); a fired child watch on
//     <namespace>/persistent re-lists the namespace; a fired child watch
//     on the root, a tenant or a namespace node (a new tenant, namespace
//     or first topic of a namespace) runs a rescan. When the queue is
//     full, the managed ledger (or list) is marked unwatched and the next
//     rescan reads it.
//   - The cache holds the policy's small view of each managed ledger
//     (policy.Topic: ids, sizes, times, states), not the protobuf.
//
// go-zookeeper re-arms watches after a reconnect within the session; when
// the session is lost (the client drops its watches), Run returns an error
// and the caller starts over on a new session (Scan from scratch re-arms
// everything).
package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Conn is the part of a ZooKeeper client discovery uses; *tzk.Session
// implements it.
type Conn interface {
	Get(path string) ([]byte, *gozk.Stat, error)
	Children(path string) ([]string, *gozk.Stat, error)
	Set(path string, data []byte, version int32) (*gozk.Stat, error)
	Multi(ops ...any) ([]gozk.MultiResponse, error)
	GetW(path string) ([]byte, *gozk.Stat, <-chan gozk.Event, error)
	ChildrenW(path string) ([]string, *gozk.Stat, <-chan gozk.Event, error)
	Exists(path string) (bool, *gozk.Stat, error)
	ExistsW(path string) (bool, *gozk.Stat, <-chan gozk.Event, error)
	// OnWatchEvent subscribes to every watch event of the session (see
	// tzk.Session.OnWatchEvent).
	OnWatchEvent(fn func(gozk.Event)) (cancel func())
}

var _ Conn = (*tzk.Session)(nil)

// Statter is what a rescan needs of a session for its stats; *tzk.Session
// implements it.
type Statter interface {
	Exists(path string) (bool, *gozk.Stat, error)
}

// Options configure a Discovery.
type Options struct {
	// Chroot of Pulsar's metadata store in ZooKeeper (as mledger.Options).
	Chroot string
	// Concurrency bounds ZooKeeper requests in flight during a scan, per
	// session. Default 32 (requests are pipelined on a session).
	Concurrency int
	// StatConns are more sessions a scan sends its stats through, round
	// robin with the Discovery's own; value reads and watches stay on its
	// own. ZooKeeper serves one session's requests in order, on one worker
	// thread (its commit processor assigns them by session), so a rescan
	// of a large tree through one session is bound by one server core.
	// A stat through another session may come from a server behind the
	// one the Discovery's session reads (ZooKeeper orders each session
	// alone): a version it reports as unchanged is trusted only for a
	// managed ledger whose data watch is armed, which reports any later
	// change; any other answer (another version, no such node) only
	// causes a read through its own session. Not used with
	// NoWatches. One that fails a stat is left out from then on (the stat
	// is asked again through the own session): it never fails a scan.
	StatConns []Statter
	// RescanInterval is the period of full rescans in Run. Default 5m.
	RescanInterval time.Duration
	// NoWatches turns watches off (scans only; for one-shot tools).
	NoWatches bool
	// Limits bound decoding of values.
	Limits mledger.Limits
	Logger *slog.Logger
	// Registerer receives tierkeeper_offloader_discovery_* metrics.
	Registerer prometheus.Registerer
}

type entry struct {
	version int32
	topic   policy.Topic
	err     error
	watched bool
}

// Discovery is the cache of managed ledgers. It is safe for concurrent use.
type Discovery struct {
	conn  Conn
	store *mledger.Store
	o     Options
	log   *slog.Logger
	root  string // Chroot + mledger.Root
	unsub func()

	mu       sync.Mutex
	entries  map[string]*entry
	nsWatch  map[string]bool
	tree     map[string]bool // tree nodes (root, tenants, namespaces) with a child watch
	lastScan ScanStats

	statDead []atomic.Bool // StatConns that failed a stat, left out since

	changed chan struct{}
	events  chan gozk.Event // watch events under root, for Run
	lost    chan error      // the session dropped the watches

	scans     prometheus.Histogram
	reads     *prometheus.CounterVec
	mls       prometheus.Gauge
	readErrs  prometheus.Counter
	watchFire prometheus.Counter
}

// New returns a Discovery reading through conn.
func New(conn Conn, o Options) *Discovery {
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.RescanInterval <= 0 {
		o.RescanInterval = 5 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Discovery{
		conn:     conn,
		store:    mledger.New(conn, &mledger.Options{Chroot: o.Chroot, Limits: o.Limits, ListConcurrency: o.Concurrency}),
		o:        o,
		log:      o.Logger.With("component", "discovery"),
		entries:  map[string]*entry{},
		nsWatch:  map[string]bool{},
		tree:     map[string]bool{},
		root:     o.Chroot + mledger.Root,
		statDead: make([]atomic.Bool, len(o.StatConns)),
		changed:  make(chan struct{}, 1),
		events:   make(chan gozk.Event, 4096),
		lost:     make(chan error, 1),
	}
	f := metrics.New(o.Registerer, "offloader")
	d.scans = f.Histogram("discovery_scan_duration_seconds", "Duration of full rescans of /managed-ledgers.",
		[]float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120})
	d.reads = f.CounterVec("discovery_reads_total", "Managed-ledger values read, by why (new, changed, watch).",
		metrics.Label{Name: "reason", Values: []string{"new", "changed", "watch"}})
	d.mls = f.Gauge("discovery_managed_ledgers", "Managed ledgers known.")
	d.readErrs = f.Counter("discovery_read_errors_total", "Managed ledgers that could not be read or decoded.")
	d.watchFire = f.Counter("discovery_watch_events_total", "ZooKeeper watch events received.")
	if !o.NoWatches {
		d.unsub = conn.OnWatchEvent(d.onEvent)
	}
	return d
}

// Close ends the subscription to the session's watch events (the watches
// armed stay with the session until they fire). The Discovery serves
// Scan and Snapshot still, without watch updates.
func (d *Discovery) Close() {
	if d.unsub != nil {
		d.unsub()
	}
}

// Changed receives a value after any managed ledger changed (coalesced).
func (d *Discovery) Changed() <-chan struct{} { return d.changed }

func (d *Discovery) notify() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// ScanStats describe one full scan.
type ScanStats struct {
	Started     time.Time
	Took        time.Duration
	Namespaces  int
	Listed      int // managed ledgers listed
	Statted     int // stat-only checks
	Read        int // values read (new or changed)
	Removed     int
	Errors      int
	Ledgers     int // ledgers in the cache after the scan
	CachedBytes int64
}

// Scan does one full rescan. It returns an error only when the listing
// fails (ZooKeeper unavailable, ctx); per-managed-ledger errors are kept
// with the entry (Errors) and counted.
func (d *Discovery) Scan(ctx context.Context) (ScanStats, error) {
	st := ScanStats{Started: time.Now()}
	// Watches first, then the listing: a node created after its parent's
	// watch is armed fires it; one created before is in the listing.
	if !d.o.NoWatches {
		if err := d.watchTree(ctx); err != nil {
			return st, err
		}
	}
	nss, err := d.store.ListNamespaces(ctx)
	if err != nil {
		return st, fmt.Errorf("discovery: list namespaces: %w", err)
	}
	st.Namespaces = len(nss)
	var names []string
	for _, ns := range nss {
		mls, err := d.listNamespace(ctx, ns)
		if err != nil {
			return st, err
		}
		names = append(names, mls...)
	}
	st.Listed = len(names)
	listed := make(map[string]bool, len(names))
	for _, n := range names {
		listed[n] = true
	}
	d.mu.Lock()
	for n := range d.entries {
		if !listed[n] {
			delete(d.entries, n)
			st.Removed++
		}
	}
	d.mu.Unlock()

	var mu sync.Mutex
	ss := d.statRing()
	err = d.each(ctx, names, d.o.Concurrency*len(ss.conns), func(ml string) error {
		d.mu.Lock()
		e := d.entries[ml]
		d.mu.Unlock()
		reason := "new"
		if e != nil {
			ok, stat, own, err := ss.stat(ctx, d.path(ml))
			mu.Lock()
			st.Statted++
			mu.Unlock()
			if err != nil {
				return err
			}
			switch {
			case !ok && own:
				d.drop(ml)
				return nil
			case ok && stat.Version == e.version && e.err == nil && (e.watched || d.o.NoWatches):
				return nil
			}
			// Changed, or gone by another session's view, which may be
			// behind the own session's: the read through the own
			// session tells (and drops it if it is gone).
			reason = "changed"
		}
		if err := d.refresh(ctx, ml, reason); err != nil {
			return err
		}
		mu.Lock()
		st.Read++
		mu.Unlock()
		return nil
	})
	if err != nil {
		return st, err
	}
	d.mu.Lock()
	for _, e := range d.entries {
		if e.err != nil {
			st.Errors++
		}
		st.Ledgers += len(e.topic.Ledgers)
	}
	d.mls.Set(float64(len(d.entries)))
	d.mu.Unlock()
	st.Took = time.Since(st.Started)
	d.scans.Observe(st.Took.Seconds())
	d.mu.Lock()
	d.lastScan = st
	d.mu.Unlock()
	d.notify()
	return st, nil
}

// LastScan returns the stats of the last full scan.
func (d *Discovery) LastScan() ScanStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastScan
}

func (d *Discovery) path(ml string) string { return d.o.Chroot + mledger.Path(ml) }

// watchTree arms child watches on the root, every tenant, every node below
// a tenant (a v2 namespace, or a v1 cluster) and every v1 namespace node,
// so that a new tenant, namespace or the "persistent" domain node of a
// namespace's first topic triggers a rescan at once instead of at the next
// periodic one. The nodes appear one by one as the broker creates the
// path, so each level is watched before the level below it exists.
func (d *Discovery) watchTree(ctx context.Context) error {
	root := d.o.Chroot + mledger.Root
	tenants, err := tzk.Children(ctx, d.conn, root)
	if errors.Is(err, gozk.ErrNoNode) {
		// No topic yet anywhere: watch for the root to appear.
		return d.arm(ctx, root, true)
	}
	if err != nil {
		return fmt.Errorf("discovery: list %s: %w", root, err)
	}
	if err := d.arm(ctx, root, false); err != nil {
		return err
	}
	for _, t := range tenants {
		tp := root + "/" + t
		if err := d.arm(ctx, tp, false); err != nil {
			return err
		}
		xs, err := d.childrenOrNone(ctx, tp)
		if err != nil {
			return err
		}
		for _, x := range xs {
			xp := tp + "/" + x
			if err := d.arm(ctx, xp, false); err != nil {
				return err
			}
			ys, err := d.childrenOrNone(ctx, xp)
			if err != nil {
				return err
			}
			for _, y := range ys {
				if y == mledger.DomainPersistent {
					continue // a v2 namespace's domain node: listNamespace watches it
				}
				if err := d.arm(ctx, xp+"/"+y, false); err != nil { // a v1 namespace
					return err
				}
			}
		}
	}
	return nil
}

func (d *Discovery) childrenOrNone(ctx context.Context, p string) ([]string, error) {
	kids, err := tzk.Children(ctx, d.conn, p)
	if errors.Is(err, gozk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: list %s: %w", p, err)
	}
	return kids, nil
}

// arm sets a child watch on p (an exists watch when missing is true),
// once per path until it fires.
func (d *Discovery) arm(ctx context.Context, p string, missing bool) error {
	d.mu.Lock()
	armed := d.tree[p]
	d.tree[p] = true
	d.mu.Unlock()
	if armed {
		return nil
	}
	// The watch reports through onEvent; its own channel is dropped.
	_, err := tzk.Do(ctx, func() (struct{}, error) {
		if missing {
			_, _, _, err := d.conn.ExistsW(p)
			return struct{}{}, err
		}
		_, _, _, err := d.conn.ChildrenW(p)
		return struct{}{}, err
	})
	if err != nil {
		d.mu.Lock()
		delete(d.tree, p)
		d.mu.Unlock()
		if errors.Is(err, gozk.ErrNoNode) {
			return nil // gone meanwhile: its parent's watch covers it
		}
		return fmt.Errorf("discovery: watch %s: %w", p, err)
	}
	return nil
}

// listNamespace lists a namespace's managed ledgers and arms a child watch
// on its topic list (once).
func (d *Discovery) listNamespace(ctx context.Context, ns string) ([]string, error) {
	p := d.o.Chroot + mledger.Root + "/" + ns + "/" + mledger.DomainPersistent
	// Marked watched before the watch is armed, so an event that fires
	// at once finds the mark (onEvent); unmarked if arming fails.
	d.mu.Lock()
	watched := d.nsWatch[ns]
	if !d.o.NoWatches {
		d.nsWatch[ns] = true
	}
	d.mu.Unlock()
	var kids []string
	var err error
	if watched || d.o.NoWatches {
		kids, err = tzk.Children(ctx, d.conn, p)
	} else {
		kids, err = childrenW(ctx, d.conn, p)
		if err != nil {
			d.mu.Lock()
			delete(d.nsWatch, ns)
			d.mu.Unlock()
		}
	}
	if errors.Is(err, gozk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: list %s: %w", p, err)
	}
	out := make([]string, 0, len(kids))
	for _, k := range kids {
		out = append(out, ns+"/"+mledger.DomainPersistent+"/"+k)
	}
	sort.Strings(out)
	return out, nil
}

// onEvent receives every watch event of the session, from the client's
// receive loop: it queues those under the root for Run and returns.
func (d *Discovery) onEvent(ev gozk.Event) {
	if ev.Path != d.root && !strings.HasPrefix(ev.Path, d.root+"/") {
		return // another user's watch on the session
	}
	d.watchFire.Inc()
	if ev.Type == gozk.EventNotWatching {
		// The session is gone: Run returns, the next Scan on a new
		// session re-arms.
		select {
		case d.lost <- ev.Err:
		default:
		}
		return
	}
	select {
	case d.events <- ev:
	default:
		// The queue is full: the periodic rescan catches it. Mark the
		// entry unwatched so the rescan reads it.
		if key := d.keyOf(ev); key != "" {
			d.unwatch(key)
		}
	}
}

// keyOf names what a watch event asks to refresh: "tree:<path>" for a
// watched tree node (the root, a tenant, a namespace node), "ns:<ns>" for
// a namespace's topic list, else the managed ledger; "" for none. Data
// watches are only set on managed ledgers, child watches on tree nodes
// and topic lists, an exists watch only on the root.
func (d *Discovery) keyOf(ev gozk.Event) string {
	d.mu.Lock()
	tree := d.tree[ev.Path]
	d.mu.Unlock()
	if tree || ev.Path == d.root {
		return "tree:" + ev.Path
	}
	rel := strings.TrimPrefix(ev.Path, d.root+"/")
	ns, isList := strings.CutSuffix(rel, "/"+mledger.DomainPersistent)
	switch ev.Type {
	case gozk.EventNodeDataChanged:
		return rel
	case gozk.EventNodeChildrenChanged:
		if isList {
			return "ns:" + ns
		}
	case gozk.EventNodeDeleted:
		d.mu.Lock()
		listed := d.nsWatch[ns]
		d.mu.Unlock()
		if isList && listed {
			return "ns:" + ns
		}
		return rel
	}
	return ""
}

func (d *Discovery) unwatch(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := strings.CutPrefix(key, "tree:"); ok {
		delete(d.tree, p)
		return
	}
	if len(key) > 3 && key[:3] == "ns:" {
		delete(d.nsWatch, key[3:])
		return
	}
	if e := d.entries[key]; e != nil {
		e.watched = false
	}
}

// refresh reads one managed ledger (arming a data watch) into the cache.
func (d *Discovery) refresh(ctx context.Context, ml, reason string) error {
	var data []byte
	var stat *gozk.Stat
	var err error
	if d.o.NoWatches {
		data, stat, err = tzk.Get(ctx, d.conn, d.path(ml))
	} else {
		data, stat, err = getW(ctx, d.conn, d.path(ml))
	}
	if errors.Is(err, gozk.ErrNoNode) {
		d.drop(ml)
		return nil
	}
	if err != nil {
		if tzk.Unavailable(err) || ctx.Err() != nil {
			return fmt.Errorf("discovery: read %s: %w", d.path(ml), err)
		}
		d.setErr(ml, err)
		return nil
	}
	d.reads.WithLabelValues(reason).Inc()
	e := &entry{version: stat.Version, watched: !d.o.NoWatches}
	info, _, derr := mledger.Decode(data, d.o.Limits)
	if derr == nil {
		e.topic, derr = policy.TopicFromInfo(ml, info)
	}
	if derr != nil {
		e.err = fmt.Errorf("%s (version %d): %w", d.path(ml), stat.Version, derr)
		e.topic = policy.Topic{ML: ml}
		d.readErrs.Inc()
	}
	d.mu.Lock()
	d.entries[ml] = e
	d.mu.Unlock()
	return nil
}

func (d *Discovery) setErr(ml string, err error) {
	d.readErrs.Inc()
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entries[ml]
	if e == nil {
		e = &entry{version: -1, topic: policy.Topic{ML: ml}}
		d.entries[ml] = e
	}
	e.err = err
}

func (d *Discovery) drop(ml string) {
	d.mu.Lock()
	delete(d.entries, ml)
	d.mu.Unlock()
}

// statRing is a scan's round robin of sessions for its stats: the own
// session and the StatConns that have not failed (none with NoWatches).
type statRing struct {
	d     *Discovery
	conns []Statter
	idx   []int // index in Options.StatConns; -1: the own session
	turn  atomic.Uint64
}

func (d *Discovery) statRing() *statRing {
	r := &statRing{d: d, conns: []Statter{d.conn}, idx: []int{-1}}
	if !d.o.NoWatches {
		for i, sc := range d.o.StatConns {
			if !d.statDead[i].Load() {
				r.conns, r.idx = append(r.conns, sc), append(r.idx, i)
			}
		}
	}
	return r
}

// stat asks the next session for p's stat; own says whether the answer is
// the own session's. A stat session that fails never fails a scan: the
// stat is asked again through the own session, and the failed one is left
// out from then on.
func (r *statRing) stat(ctx context.Context, p string) (ok bool, st *gozk.Stat, own bool, err error) {
	k := r.turn.Add(1) % uint64(len(r.conns))
	ok, st, err = exists(ctx, r.conns[k], p)
	i := r.idx[k]
	if i < 0 || err == nil || ctx.Err() != nil {
		return ok, st, i < 0, err
	}
	if r.d.statDead[i].CompareAndSwap(false, true) {
		r.d.log.Warn("a session for the rescans' stats failed; its stats go through the discovery's own session from now on", "session", i+1, "err", err)
	}
	ok, st, err = exists(ctx, r.d.conn, p)
	return ok, st, true, err
}

// each runs fn for every name, width at a time; the first error stops it.
func (d *Discovery) each(ctx context.Context, names []string, width int, fn func(string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, n := range names {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(n); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// Run scans, then serves watch events and rescans every RescanInterval
// until ctx ends (nil) or ZooKeeper becomes unavailable (the error; also
// when the session drops the watches: it was lost). A caller that needs
// the first scan's result calls Scan and then Run, which does not scan
// again first (once a Scan has completed, Run begins with the watch
// events that came meanwhile). Scan is not to be called beside Run: two
// scans at once read every managed ledger twice.
func (d *Discovery) Run(ctx context.Context) error {
	if d.LastScan().Started.IsZero() {
		if _, err := d.Scan(ctx); err != nil {
			return err
		}
	}
	t := time.NewTicker(d.o.RescanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			st, err := d.Scan(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			d.log.Debug("rescan", "took", st.Took, "listed", st.Listed, "read", st.Read, "removed", st.Removed)
		case err := <-d.lost:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("discovery: the session dropped the watches: %w", err)
		case ev := <-d.events:
			key := d.keyOf(ev)
			if key == "" {
				continue
			}
			if err := d.handle(ctx, key); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}

func (d *Discovery) handle(ctx context.Context, key string) error {
	if p, ok := strings.CutPrefix(key, "tree:"); ok {
		// A tenant, namespace or domain node appeared or went: rescan (the
		// known managed ledgers cost a stat each).
		d.mu.Lock()
		delete(d.tree, p)
		d.mu.Unlock()
		_, err := d.Scan(ctx)
		return err
	}
	if len(key) > 3 && key[:3] == "ns:" {
		ns := key[3:]
		d.mu.Lock()
		delete(d.nsWatch, ns)
		d.mu.Unlock()
		names, err := d.listNamespace(ctx, ns)
		if err != nil {
			return err
		}
		listed := map[string]bool{}
		for _, n := range names {
			listed[n] = true
			d.mu.Lock()
			_, known := d.entries[n]
			d.mu.Unlock()
			if !known {
				if err := d.refresh(ctx, n, "new"); err != nil {
					return err
				}
			}
		}
		d.mu.Lock()
		prefix := ns + "/" + mledger.DomainPersistent + "/"
		for n := range d.entries {
			if len(n) > len(prefix) && n[:len(prefix)] == prefix && !listed[n] {
				delete(d.entries, n)
			}
		}
		d.mls.Set(float64(len(d.entries)))
		d.mu.Unlock()
		d.notify()
		return nil
	}
	if err := d.refresh(ctx, key, "watch"); err != nil {
		return err
	}
	d.notify()
	return nil
}

// Snapshot returns every managed ledger read without error, sorted by
// name, and the errors of those that could not be read.
func (d *Discovery) Snapshot() (topics []policy.Topic, errs map[string]error) {
	errs = map[string]error{}
	d.mu.Lock()
	ents := make([]*entry, 0, len(d.entries))
	for n, e := range d.entries {
		if e.err != nil {
			errs[n] = e.err
			continue
		}
		ents = append(ents, e)
	}
	d.mu.Unlock()
	// An entry's topic is never changed once the entry is in the map
	// (a newer read replaces the entry), so it is read without the lock.
	// Sorting the pointers moves 8 bytes where sorting the topics would
	// move a whole Topic.
	slices.SortFunc(ents, func(a, b *entry) int { return strings.Compare(a.topic.ML, b.topic.ML) })
	topics = make([]policy.Topic, len(ents))
	for i, e := range ents {
		topics[i] = e.topic
	}
	return topics, errs
}

type existsResult struct {
	ok   bool
	stat *gozk.Stat
}

func exists(ctx context.Context, c Statter, p string) (bool, *gozk.Stat, error) {
	r, err := tzk.Do(ctx, func() (existsResult, error) {
		ok, st, err := c.Exists(p)
		return existsResult{ok, st}, err
	})
	return r.ok, r.stat, err
}

type getResult struct {
	data []byte
	stat *gozk.Stat
}

// getW reads p and arms a data watch, which reports through onEvent (its
// channel is dropped).
func getW(ctx context.Context, c Conn, p string) ([]byte, *gozk.Stat, error) {
	r, err := tzk.Do(ctx, func() (getResult, error) {
		d, st, _, err := c.GetW(p)
		return getResult{data: d, stat: st}, err
	})
	return r.data, r.stat, err
}

// childrenW lists p and arms a child watch, which reports through onEvent.
func childrenW(ctx context.Context, c Conn, p string) ([]string, error) {
	return tzk.Do(ctx, func() ([]string, error) {
		k, _, _, err := c.ChildrenW(p)
		return k, err
	})
}
