package mledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/internal/retry"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

// ZK is the part of a ZooKeeper client the store uses; *zk.Conn and
// internal/zk's *Session satisfy it. Get and Children read; Set is the
// only write, always a compare-and-set on the version read; Multi carries
// it when the context holds a lease fence (internal/zk.WithFence): one
// multi of the fence's version checks and the Set.
type ZK interface {
	Get(path string) ([]byte, *zk.Stat, error)
	Children(path string) ([]string, *zk.Stat, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
}

var _ ZK = (*zk.Conn)(nil)

// Options configure a Store. The zero value (or nil) gives the defaults.
type Options struct {
	// Chroot is prepended to every znode path, for metadata stores whose
	// URL has a chroot suffix (e.g. "zk:host:2181/pulsar" → "/pulsar").
	// Default: none.
	Chroot string

	// Limits bound decoding; see Limits.
	Limits Limits

	// WriteCodec compresses written values. Default NONE: plain protobuf,
	// which every broker reads whatever its managedLedgerInfoCompressionType
	// (its reader detects the wrapper by its magic).
	WriteCodec mlproto.CompressionType

	// PreserveCodec re-compresses a value with the codec it was read with
	// (a plain value stays plain), so an operator who enabled compression
	// to keep large infos under ZooKeeper's jute.maxbuffer keeps that
	// property. It takes precedence over WriteCodec for compressed values.
	PreserveCodec bool

	// CompressThresholdBytes: WriteCodec applies only when the serialized
	// info is larger, as with the broker's
	// managedLedgerInfoCompressionThresholdInBytes. Zero means
	// DefaultCompressThresholdBytes (16 KiB, the broker default); negative
	// means always compress (the broker's 0). PreserveCodec ignores it.
	CompressThresholdBytes int64

	// MaxValueBytes is the largest value the store writes. A plain value
	// above it is written compressed with the codec it was read with (so a
	// broker that compressed a big info to fit keeps fitting); a value
	// still above it fails with ErrTooLarge before anything is sent
	// (ZooKeeper drops the connection of a request over jute.maxbuffer,
	// 1 MiB by default). Zero means DefaultMaxValueBytes.
	MaxValueBytes int

	// RequireFence refuses every write whose context carries no lease
	// fence (internal/zk.WithFence) with internal/zk.ErrUnfenced, so a
	// write path that forgot its lease fails instead of writing unfenced.
	// The offload service and `offloader offload` set it. Default false:
	// unfenced writes are plain compare-and-sets.
	RequireFence bool

	// MaxRetries bounds how often an update re-reads after losing a
	// compare-and-set race (ZooKeeper BadVersion). Zero means 16.
	MaxRetries int

	// RetryBackoff is the first pause after a lost race; it doubles, with
	// jitter, up to one second. Zero means 10ms.
	RetryBackoff time.Duration

	// ListConcurrency bounds concurrent ZooKeeper reads in List and
	// GetMany. Zero means 8.
	ListConcurrency int

	// Now returns the current time (offload completion timestamps).
	// Default time.Now.
	Now func() time.Time

	// Logger receives debug logs of retries and writes. Default: discard.
	Logger *slog.Logger

	// Registerer registers the store's metrics
	// (tierkeeper_mlmeta_updates_total{result},
	// tierkeeper_mlmeta_cas_retries_total); stores sharing a registerer
	// share the series. Default: none.
	Registerer prometheus.Registerer
}

// Store reads and compare-and-set-updates Pulsar managed-ledger metadata in
// ZooKeeper. It is safe for concurrent use.
type Store struct {
	zk   ZK
	opts Options
	log  *slog.Logger

	updates *prometheus.CounterVec
	retries prometheus.Counter
}

// New returns a Store on conn with opts (nil means defaults).
func New(conn ZK, opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 16
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 10 * time.Millisecond
	}
	if o.ListConcurrency <= 0 {
		o.ListConcurrency = 8
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxValueBytes <= 0 {
		o.MaxValueBytes = DefaultMaxValueBytes
	}
	if o.CompressThresholdBytes == 0 {
		o.CompressThresholdBytes = DefaultCompressThresholdBytes
	}
	o.Chroot = strings.TrimRight(o.Chroot, "/")
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	s := &Store{zk: conn, opts: o, log: lg.With("component", "mledger")}
	f := metrics.New(o.Registerer, "mlmeta")
	s.updates = f.CounterVec("updates_total",
		"Managed-ledger offload-context updates by result (written, unchanged, rejected, error).",
		metrics.Label{Name: "result", Values: []string{"written", "unchanged", "rejected", "error"}})
	s.retries = f.Counter("cas_retries_total",
		"Compare-and-set writes of managed-ledger metadata lost to a concurrent writer and retried.")
	if err := f.Err(); err != nil {
		s.log.Error("metrics not registered", "err", err)
	}
	return s
}

// zpath returns the absolute znode path of p (relative to the store root).
func (s *Store) zpath(p string) string { return s.opts.Chroot + p }

func (s *Store) get(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	return tkzk.Get(ctx, s.zk, s.zpath(p))
}

func (s *Store) children(ctx context.Context, p string) ([]string, error) {
	return tkzk.Children(ctx, s.zk, s.zpath(p))
}

// Snapshot is one read of a managed-ledger znode.
type Snapshot struct {
	// Name is the managed-ledger name (tenant/namespace/persistent/topic).
	Name string
	// Info is the decoded metadata; ledgers are in stored order
	// (ascending ids as the broker writes them).
	Info *mlproto.ManagedLedgerInfo
	// Version is the znode version a compare-and-set must match.
	Version int32
	// Codec is the compression the value was stored with (NONE = plain).
	Codec mlproto.CompressionType
	// StoredBytes is the size of the znode value.
	StoredBytes int
	// Modified is the znode's last modification time.
	Modified time.Time
}

// Get reads and decodes one managed ledger. A missing znode gives
// ErrNotFound; an undecodable value ErrCorrupt or ErrTooLarge.
func (s *Store) Get(ctx context.Context, ml string) (*Snapshot, error) {
	if ml == "" || strings.HasPrefix(ml, "/") || strings.HasSuffix(ml, "/") {
		return nil, fmt.Errorf("%w: managed ledger name %q", ErrInvalidName, ml)
	}
	p := Path(ml)
	data, st, err := s.get(ctx, p)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, s.zpath(p))
		}
		return nil, fmt.Errorf("read %s: %w", s.zpath(p), err)
	}
	info, codec, err := Decode(data, s.opts.Limits)
	if err != nil {
		return nil, fmt.Errorf("%s (version %d): %w", s.zpath(p), st.Version, err)
	}
	return &Snapshot{
		Name:        ml,
		Info:        info,
		Version:     st.Version,
		Codec:       codec,
		StoredBytes: len(data),
		Modified:    time.UnixMilli(st.Mtime),
	}, nil
}

// List returns the names of every managed ledger under Root, sorted.
//
// Pulsar keeps a topic's managed ledger at
// /managed-ledgers/<namespace>/persistent/<encoded topic> and lists a
// namespace's topics as the children of <namespace>/persistent
// (TopicResources.listPersistentTopicsAsync); the children of a
// managed-ledger node are its cursors and are never returned. Namespaces
// are tenant/namespace (v2) or tenant/cluster/namespace (v1); a node
// tenant/X whose children include "persistent" is a v2 namespace, and each
// other child Y of tenant/X whose children include "persistent" is a v1
// namespace tenant/X/Y. (A v1 namespace literally named "persistent" cannot
// be told apart from a v2 domain node and is read as one.) Non-persistent
// topics have no managed ledger and no node.
func (s *Store) List(ctx context.Context) ([]string, error) {
	nss, err := s.ListNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	return s.listTopics(ctx, nss)
}

// ListNamespace returns the managed ledgers of one namespace ("tenant/ns" or
// "tenant/cluster/ns"), sorted. A namespace without persistent topics gives
// an empty list.
func (s *Store) ListNamespace(ctx context.Context, ns string) ([]string, error) {
	parts := strings.Split(ns, "/")
	if len(parts) != 2 && len(parts) != 3 {
		return nil, fmt.Errorf("%w: namespace %q: want tenant/namespace or tenant/cluster/namespace", ErrInvalidName, ns)
	}
	for _, p := range parts {
		if err := checkEntity("namespace part", p); err != nil {
			return nil, fmt.Errorf("namespace %q: %w", ns, err)
		}
	}
	return s.listTopics(ctx, []string{ns})
}

// ListNamespaces returns every namespace path under Root that has a
// persistent domain node, sorted.
func (s *Store) ListNamespaces(ctx context.Context) ([]string, error) {
	tenants, err := s.childrenOrEmpty(ctx, Root)
	if err != nil {
		return nil, err
	}
	var nss []string
	for _, t := range tenants {
		xs, err := s.childrenOrEmpty(ctx, Root+"/"+t)
		if err != nil {
			return nil, err
		}
		for _, x := range xs {
			kids, err := s.childrenOrEmpty(ctx, Root+"/"+t+"/"+x)
			if err != nil {
				return nil, err
			}
			for _, y := range kids {
				if y == DomainPersistent {
					nss = append(nss, t+"/"+x)
					continue
				}
				grand, err := s.childrenOrEmpty(ctx, Root+"/"+t+"/"+x+"/"+y)
				if err != nil {
					return nil, err
				}
				if slices.Contains(grand, DomainPersistent) {
					nss = append(nss, t+"/"+x+"/"+y)
				}
			}
		}
	}
	sort.Strings(nss)
	return nss, nil
}

func (s *Store) listTopics(ctx context.Context, nss []string) ([]string, error) {
	var out []string
	for _, ns := range nss {
		topics, err := s.childrenOrEmpty(ctx, Root+"/"+ns+"/"+DomainPersistent)
		if err != nil {
			return nil, err
		}
		for _, tp := range topics {
			out = append(out, ns+"/"+DomainPersistent+"/"+tp)
		}
	}
	sort.Strings(out)
	return out, nil
}

// childrenOrEmpty lists p's children; a node deleted meanwhile has none.
func (s *Store) childrenOrEmpty(ctx context.Context, p string) ([]string, error) {
	c, err := s.children(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.zpath(p), err)
	}
	sort.Strings(c)
	return c, nil
}

// Result is the outcome of reading one managed ledger in GetMany.
type Result struct {
	Name     string
	Snapshot *Snapshot // nil when Err is set
	Err      error
}

// GetMany reads the named managed ledgers with up to
// Options.ListConcurrency reads in flight and returns one Result per name,
// in order. Per-ledger errors (deleted meanwhile, corrupt) are reported in
// the Result. The returned error is set when ctx ends, and when ZooKeeper
// becomes unavailable (no server reachable, session lost: internal/zk's
// Unavailable): then the whole read stops at once, reads in flight are
// abandoned, and the error wraps the first such failure. progress, if not
// nil, is called after each read with the number done (never
// concurrently).
func (s *Store) GetMany(ctx context.Context, names []string, progress func(done int)) ([]Result, error) {
	out := make([]Result, len(names))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, s.opts.ListConcurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	stop := func() error {
		wg.Wait()
		err := context.Cause(ctx)
		if tkzk.Unavailable(err) {
			return fmt.Errorf("read managed ledgers: stopped after %d of %d: %w", done, len(names), err)
		}
		return err
	}
launch:
	for i, n := range names {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break launch
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			snap, err := s.Get(ctx, n)
			if tkzk.Unavailable(err) {
				cancel(err)
			}
			mu.Lock()
			defer mu.Unlock()
			out[i] = Result{Name: n, Snapshot: snap, Err: err}
			if ctx.Err() != nil {
				return
			}
			done++
			if progress != nil {
				progress(done)
			}
		}()
	}
	return out, stop()
}

// Mutator changes one ledger's offload context. oc is a private copy of
// the stored context (an empty one if the ledger has none; unknown fields
// included) that the mutator edits in place; li is the stored LedgerInfo,
// read only. It returns whether it changed oc. It is called again, on
// fresh data, after every lost compare-and-set race, so it must decide from
// its arguments alone. An error aborts the update and is returned as is.
type Mutator func(oc *mlproto.OffloadContext, li *mlproto.ManagedLedgerInfo_LedgerInfo) (changed bool, err error)

// UpdateResult describes a finished update of one ledger.
type UpdateResult struct {
	// Written is false when the mutator made no change (nothing written).
	Written bool
	// Version is the znode version after the update (or as read when
	// nothing was written).
	Version int32
	// Retries counts compare-and-set races lost and retried.
	Retries int
	// Before and After are the ledger's offload context before and after
	// (equal when nothing was written). Before is nil if there was none.
	Before, After *mlproto.OffloadContext
}

// Edit is one ledger's part of a batch update: Fn changes the ledger's
// offload context as for UpdateOffloadContext.
type Edit struct {
	LedgerID int64
	Fn       Mutator
}

// LedgerUpdate is one ledger's outcome in a batch update.
type LedgerUpdate struct {
	LedgerID int64
	// Changed: the mutator changed the context (stored when the batch's
	// Written is true).
	Changed bool
	// Before and After are the context before and after (equal when not
	// changed). Before is nil if there was none.
	Before, After *mlproto.OffloadContext
	// Err is this ledger's refusal (ErrLedgerNotFound, ErrLastLedger, or
	// the mutator's error, wrapped with the ledger's name): its context
	// is left as stored; the other ledgers' edits still apply.
	Err error
}

// BatchResult describes a finished batch update.
type BatchResult struct {
	// Written is false when no edit changed anything (nothing written).
	Written bool
	// Version is the znode version after the write (or as read).
	Version int32
	// Retries counts compare-and-set races lost and retried.
	Retries int
	// Ledgers are the edits' outcomes, in the order given.
	Ledgers []LedgerUpdate
}

// UpdateOffloadContext changes the OffloadContext of one ledger and
// nothing else, with a compare-and-set on the version read:
//
//  1. read and decode the znode (the version is remembered);
//  2. refuse an unknown ledger (ErrLedgerNotFound) and the last ledger, or
//     the one with the highest id (ErrLastLedger);
//  3. let fn edit a copy of the ledger's context;
//  4. encode (every other field, known or unknown, byte for byte as
//     decoded) and check the result decodes to the intended info;
//  5. Set with the version read; on BadVersion start again at 1, at most
//     Options.MaxRetries times (then ErrContention), pausing with jittered
//     exponential backoff.
//
// A write either lands whole or not at all. When ZooKeeper fails during the
// Set (connection loss, session expiry) the outcome is unknown and the error
// is returned; the helpers below are idempotent, so the caller may simply
// call again once ZooKeeper is back.
func (s *Store) UpdateOffloadContext(ctx context.Context, ml string, ledgerID int64, fn Mutator) (*UpdateResult, error) {
	br, err := s.UpdateOffloadContexts(ctx, ml, []Edit{{LedgerID: ledgerID, Fn: fn}})
	if err != nil {
		return nil, err
	}
	lu := br.Ledgers[0]
	if lu.Err != nil {
		return nil, lu.Err
	}
	return &UpdateResult{Written: br.Written, Version: br.Version, Retries: br.Retries, Before: lu.Before, After: lu.After}, nil
}

// UpdateOffloadContexts applies the edits of several ledgers of one
// managed ledger in a single compare-and-set, as UpdateOffloadContext does
// for one: on BadVersion every edit is re-applied to the fresh value, so
// each touches only its own ledger. A ledger whose edit is refused (its
// LedgerUpdate.Err) is left as stored and does not stop the others; the
// returned error is for the whole batch (ZooKeeper, encoding, contention)
// and means nothing of it was written (or, on a connection loss during the
// Set, that the outcome is unknown). One write instead of one per ledger
// means fewer BadVersion failures for a broker writing the same znode.
func (s *Store) UpdateOffloadContexts(ctx context.Context, ml string, edits []Edit) (*BatchResult, error) {
	seen := make(map[int64]bool, len(edits))
	for _, e := range edits {
		if seen[e.LedgerID] {
			return nil, fmt.Errorf("%s: ledger %d edited twice in one update", ml, e.LedgerID)
		}
		seen[e.LedgerID] = true
	}
	res, err := s.update(ctx, ml, edits)
	rejected := err == nil && !res.Written && slices.ContainsFunc(res.Ledgers, func(l LedgerUpdate) bool { return l.Err != nil })
	switch {
	case err == nil && res.Written:
		s.updates.WithLabelValues("written").Inc()
	case rejected:
		s.updates.WithLabelValues("rejected").Inc()
	case err == nil:
		s.updates.WithLabelValues("unchanged").Inc()
	default:
		s.updates.WithLabelValues("error").Inc()
	}
	return res, err
}

func (s *Store) update(ctx context.Context, ml string, edits []Edit) (*BatchResult, error) {
	p := Path(ml)
	attempt := 0
	ids := make([]int64, len(edits))
	for i, e := range edits {
		ids[i] = e.LedgerID
	}
	pol := retry.Policy{
		Attempts:  s.opts.MaxRetries + 1,
		Backoff:   retry.Backoff{Initial: s.opts.RetryBackoff, Max: time.Second},
		Retryable: func(err error) bool { return errors.Is(err, zk.ErrBadVersion) },
		OnRetry: func(n int, wait time.Duration, _ error) {
			s.retries.Inc()
			s.log.Debug("compare-and-set lost, re-reading", "ml", ml, "ledgers", ids, "attempt", n+1, "wait", wait)
		},
	}
	res, err := retry.Do(ctx, pol, func(ctx context.Context) (*BatchResult, error) {
		defer func() { attempt++ }()
		snap, err := s.Get(ctx, ml)
		if err != nil {
			return nil, err
		}
		info := snap.Info
		index, lastID := ledgerIndexes(info)
		out := &BatchResult{Version: snap.Version, Retries: attempt, Ledgers: make([]LedgerUpdate, len(edits))}
		changed := false
		for i, e := range edits {
			lu := &out.Ledgers[i]
			lu.LedgerID = e.LedgerID
			idx, ok := index[e.LedgerID]
			switch {
			case !ok:
				lu.Err = fmt.Errorf("%s ledger %d: %w", ml, e.LedgerID, ErrLedgerNotFound)
				continue
			case idx == len(info.LedgerInfo)-1 || e.LedgerID == lastID:
				lu.Err = fmt.Errorf("%s ledger %d: %w", ml, e.LedgerID, ErrLastLedger)
				continue
			}
			li := info.LedgerInfo[idx]
			if li.OffloadContext != nil {
				lu.Before = proto.Clone(li.OffloadContext).(*mlproto.OffloadContext)
			}
			lu.After = lu.Before
			oc := &mlproto.OffloadContext{}
			if lu.Before != nil {
				oc = proto.Clone(lu.Before).(*mlproto.OffloadContext)
			}
			ch, err := e.Fn(oc, li)
			if err != nil {
				lu.Err = fmt.Errorf("%s ledger %d: %w", ml, e.LedgerID, err)
				continue
			}
			if !ch {
				continue
			}
			lu.Changed, changed = true, true
			lu.After = proto.Clone(oc).(*mlproto.OffloadContext)
			li.OffloadContext = oc
			if proto.Size(oc) == 0 {
				// An emptied context is removed: Pulsar reports a ledger with
				// any context, even an empty one, as offloaded (internal-info).
				li.OffloadContext = nil
			}
		}
		if !changed {
			return out, nil
		}
		data, err := s.encode(info, snap.Codec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ml, err)
		}
		st, err := tkzk.SetFenced(ctx, s.zk, s.zpath(p), data, snap.Version, s.opts.RequireFence)
		switch {
		case err == nil:
			s.log.Debug("offload contexts written", "ml", ml, "ledgers", ids,
				"version", st.Version, "retries", attempt, "bytes", len(data))
			out.Written, out.Version = true, st.Version
			return out, nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, fmt.Errorf("%w: %s deleted during update", ErrNotFound, s.zpath(p))
		default:
			// BadVersion (a lost race) is retried by the policy.
			return nil, fmt.Errorf("write %s (version %d): %w", s.zpath(p), snap.Version, err)
		}
	})
	if errors.Is(err, zk.ErrBadVersion) && ctx.Err() == nil {
		return nil, fmt.Errorf("%s ledgers %v: %w (%d retries): %w", ml, ids, ErrContention, attempt-1, err)
	}
	return res, err
}

// CheckFence checks the lease fence ctx carries (internal/zk.Fence.Check):
// nil while the lease is held; an error wrapping internal/zk.ErrFenced
// once it is not, or internal/zk.ErrUnfenced when ctx carries no fence and
// Options.RequireFence is set. Callers run it before an irreversible
// action that follows no fenced write of theirs (deleting objects).
func (s *Store) CheckFence(ctx context.Context) error {
	return tkzk.CheckFence(ctx, s.zk, s.opts.RequireFence)
}

// DefaultMaxValueBytes is the default Options.MaxValueBytes: ZooKeeper's
// default jute.maxbuffer (1 MiB) less room for the request's path and
// header.
const DefaultMaxValueBytes = 1000 << 10

// encode serializes info for writing per the options, and checks that the
// bytes decode back to exactly info (unknown fields included).
func (s *Store) encode(info *mlproto.ManagedLedgerInfo, readCodec mlproto.CompressionType) ([]byte, error) {
	eo := EncodeOptions{Codec: s.opts.WriteCodec, ThresholdBytes: max(s.opts.CompressThresholdBytes, 0)}
	if s.opts.PreserveCodec && readCodec != mlproto.CompressionType_NONE {
		eo = EncodeOptions{Codec: readCodec, ThresholdBytes: 0}
	}
	data, err := Encode(info, eo)
	if err != nil {
		return nil, err
	}
	if len(data) > s.opts.MaxValueBytes && readCodec != mlproto.CompressionType_NONE && eo.Codec != readCodec {
		s.log.Info("value too large for plain; keeping the stored compression", "bytes", len(data), "codec", readCodec)
		if data, err = Encode(info, EncodeOptions{Codec: readCodec}); err != nil {
			return nil, err
		}
	}
	if len(data) > s.opts.MaxValueBytes {
		return nil, fmt.Errorf("%w: value of %d bytes exceeds %d (ZooKeeper jute.maxbuffer); set Options.WriteCodec",
			ErrTooLarge, len(data), s.opts.MaxValueBytes)
	}
	lim := s.opts.Limits
	lim.MaxDecompressedBytes = max(lim.max(), len(data)*4)
	back, _, err := Decode(data, lim)
	if err != nil {
		return nil, fmt.Errorf("encoded metadata does not decode: %w", err)
	}
	if !proto.Equal(back, info) {
		return nil, errors.New("encoded metadata does not decode to the intended value")
	}
	return data, nil
}

// ledgerIndexes maps each ledger id to its index and returns the highest
// id (the last ledger, or the one with the highest id, is never edited).
func ledgerIndexes(info *mlproto.ManagedLedgerInfo) (map[int64]int, int64) {
	index := make(map[int64]int, len(info.LedgerInfo))
	var maxID int64 = -1 << 63
	for i, li := range info.LedgerInfo {
		index[li.GetLedgerId()] = i
		maxID = max(maxID, li.GetLedgerId())
	}
	return index, maxID
}
