package metadata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/internal/retry"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

// Conn is the part of a ZooKeeper client the Store uses; *zk.Conn and
// internal/zk's *Session implement it. Delete is the only write; Multi
// carries it when the context holds a lease fence (internal/zk.WithFence).
type Conn interface {
	Get(path string) ([]byte, *zk.Stat, error)
	Children(path string) ([]string, *zk.Stat, error)
	Delete(path string, version int32) error
	Multi(ops ...any) ([]zk.MultiResponse, error)
}

var _ Conn = (*zk.Conn)(nil)

// DefaultRoot is BookKeeper's default ledgers root znode.
const DefaultRoot = "/ledgers"

// StoreOptions configures a Store. The zero value reads LAYOUT under
// /ledgers and logs nothing.
type StoreOptions struct {
	// Root is the ledgers root znode. Default "/ledgers".
	Root string
	// Manager overrides the ledger manager named in LAYOUT. Default: read
	// LAYOUT; when the root has no LAYOUT znode, Hierarchical.
	Manager Manager
	// Logger receives debug and warning messages. Default: discard.
	Logger *slog.Logger
	// RequireFence makes DeleteLedger refuse a context without a lease
	// fence (internal/zk.WithFence) with internal/zk.ErrUnfenced, so a
	// deletion path that forgot its lease fails instead of deleting
	// unfenced. The offload service and `offloader offload` set it.
	RequireFence bool
}

// Store reads (and compare-and-deletes) ledger metadata in ZooKeeper. It is
// safe for concurrent use if its Conn is.
type Store struct {
	zk     Conn
	root   string
	layout Layout
	log    *slog.Logger
	fence  bool // RequireFence
}

// NewStore checks that the ledgers root exists and reads its LAYOUT.
func NewStore(ctx context.Context, conn Conn, opts StoreOptions) (*Store, error) {
	s := &Store{zk: conn, root: strings.TrimRight(opts.Root, "/"), log: opts.Logger, fence: opts.RequireFence}
	if opts.Root == "" {
		s.root = DefaultRoot
	}
	if !strings.HasPrefix(s.root, "/") {
		return nil, fmt.Errorf("metadata: ledgers root %q is not an absolute znode path", opts.Root)
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	data, _, err := tkzk.Get(ctx, conn, s.root+"/LAYOUT")
	switch {
	case errors.Is(err, zk.ErrNoNode):
		if _, _, err := tkzk.Get(ctx, conn, s.root); err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				return nil, fmt.Errorf("%w: %s", ErrNoCluster, s.root)
			}
			return nil, fmt.Errorf("read %s: %w", s.root, err)
		}
		s.layout = Layout{FormatVersion: 2, ManagerVersion: 1, Manager: Hierarchical}
		s.log.Warn("no LAYOUT znode; assuming the hierarchical ledger manager", "root", s.root)
	case err != nil:
		return nil, fmt.Errorf("read %s/LAYOUT: %w", s.root, err)
	default:
		if s.layout, err = ParseLayout(data); err != nil && opts.Manager == ManagerUnset {
			return nil, fmt.Errorf("%s/LAYOUT: %w", s.root, err)
		}
	}
	if opts.Manager != ManagerUnset {
		s.layout.Manager = opts.Manager
	}
	return s, nil
}

// Root returns the ledgers root znode.
func (s *Store) Root() string { return s.root }

// Layout returns the layout in use (Manager reflects StoreOptions.Manager).
func (s *Store) Layout() Layout { return s.layout }

// LedgerPath returns the znode path of ledger id.
func (s *Store) LedgerPath(id int64) (string, error) { return s.layout.Manager.LedgerPath(s.root, id) }

// ReadLedger reads and parses a ledger's metadata; Version is the znode
// version and Ctime falls back to the znode's creation time. A missing
// znode yields ErrNoSuchLedger.
func (s *Store) ReadLedger(ctx context.Context, id int64) (*LedgerMetadata, error) {
	p, err := s.LedgerPath(id)
	if err != nil {
		return nil, err
	}
	data, stat, err := tkzk.Get(ctx, s.zk, p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%w: ledger %d (%s)", ErrNoSuchLedger, id, p)
	}
	if err != nil {
		return nil, fmt.Errorf("read ledger %d metadata %s: %w", id, p, err)
	}
	m, err := Parse(id, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	m.Version = stat.Version
	if !m.CtimeStored {
		m.Ctime = stat.Ctime
	}
	return m, nil
}

// ListLedgers returns the ids of all ledgers with a metadata znode, in
// ascending order. Nodes that are not ledger nodes (available, cookies,
// LAYOUT, INSTANCEID, underreplication, idgen, ...) are skipped, and so are
// ledger-like nodes that are not where the layout keeps that id (a long-form
// path of a small id under the hierarchical manager, extra leading zeros):
// every id listed is one ReadLedger finds at the node listed. Subtrees that
// vanish while walking are ignored; any other ZooKeeper error ends the
// listing at once.
func (s *Store) ListLedgers(ctx context.Context) ([]int64, error) {
	top, err := s.children(ctx, s.root)
	if err != nil {
		return nil, err
	}
	m := s.layout.Manager
	var ids []int64
	add := func(rel []string) {
		if id, ok := ledgerIDOf(m, rel); ok {
			ids = append(ids, id)
		} else {
			s.log.Debug("skipping ledger-like node that is not a ledger's path in this layout", "path", s.root+"/"+strings.Join(rel, "/"), "manager", m)
		}
	}
	switch m {
	case Flat:
		for _, n := range top {
			if len(n) >= 11 && n[0] == 'L' && isDigits(n[1:], len(n)-1) {
				add([]string{n})
			}
		}
	default:
		short := m != LongHierarchical
		long := m != LegacyHierarchical
		for _, l1 := range top {
			switch {
			case short && isDigits(l1, 2):
				err = s.walk(ctx, []string{l1}, []int{4}, 4, add)
			case long && isDigits(l1, 3):
				err = s.walk(ctx, []string{l1}, []int{4, 4, 4}, 4, add)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// ledgerIDOf returns the ledger id whose znode under manager m is at rel
// (the child names below the root), if there is one.
func ledgerIDOf(m Manager, rel []string) (int64, bool) {
	if len(rel) == 0 {
		return 0, false
	}
	last := rel[len(rel)-1]
	if len(last) < 2 || last[0] != 'L' {
		return 0, false
	}
	var digits strings.Builder
	for _, r := range rel[:len(rel)-1] {
		digits.WriteString(r)
	}
	digits.WriteString(last[1:])
	d := digits.String()
	if !isDigits(d, len(d)) {
		return 0, false
	}
	id, err := strconv.ParseInt(d, 10, 64)
	if err != nil || id < 0 {
		return 0, false
	}
	p, err := m.LedgerPath("", id)
	if err != nil || p != "/"+strings.Join(rel, "/") {
		return 0, false
	}
	return id, true
}

// walk descends through intermediate levels of the given digit widths
// below rel, then passes leaves "L" + leafWidth digits to add.
func (s *Store) walk(ctx context.Context, rel []string, widths []int, leafWidth int, add func([]string)) error {
	kids, err := s.children(ctx, path.Join(s.root, path.Join(rel...)))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if len(widths) == 0 {
			if _, ok := leafDigits(k, leafWidth); ok {
				add(append(slices.Clip(rel), k))
			}
			continue
		}
		if !isDigits(k, widths[0]) {
			continue
		}
		if err := s.walk(ctx, append(slices.Clip(rel), k), widths[1:], leafWidth, add); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) children(ctx context.Context, p string) ([]string, error) {
	kids, err := tkzk.Children(ctx, s.zk, p)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	slices.Sort(kids)
	return kids, nil
}

// ResolveBookie returns the host:port to connect to for a bookie id: the
// bookie-rpc endpoint of its registration under available/ (writable) or
// available/readonly/, or the id itself when the registration is empty
// (legacy bookies) or missing and the id is a host:port.
func (s *Store) ResolveBookie(ctx context.Context, id string) (string, error) {
	if !validBookieID(id) {
		return "", fmt.Errorf("%w: invalid bookie id %q", ErrBookieNotFound, id)
	}
	for _, dir := range []string{"/available/", "/available/readonly/"} {
		p := s.root + dir + id
		data, _, err := tkzk.Get(ctx, s.zk, p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("resolve bookie %s: %w", id, err)
		}
		if len(data) == 0 {
			if hp, ok := hostPortOf(id); ok {
				return hp, nil
			}
			return "", fmt.Errorf("%w: %s registered without service info", ErrBookieNotFound, id)
		}
		info, err := ParseBookieServiceInfo(data)
		if err != nil {
			return "", fmt.Errorf("bookie %s (%s): %w", id, p, err)
		}
		ep, ok := info.RPCEndpoint()
		if !ok || ep.Host == "" || ep.Port <= 0 {
			return "", fmt.Errorf("%w: bookie %s (%s) has no bookie-rpc endpoint", ErrBadBookieInfo, id, p)
		}
		return ep.Address(), nil
	}
	if hp, ok := hostPortOf(id); ok {
		s.log.Debug("bookie not registered; using its id as address", "bookie", id)
		return hp, nil
	}
	return "", fmt.Errorf("%w: %s", ErrBookieNotFound, id)
}

// Bookies lists the registered bookie ids: writable and read-only.
func (s *Store) Bookies(ctx context.Context) (writable, readonly []string, err error) {
	kids, err := s.children(ctx, s.root+"/available")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, nil, err
	}
	for _, k := range kids {
		if k != "readonly" {
			writable = append(writable, k)
		}
	}
	readonly, err = s.children(ctx, s.root+"/available/readonly")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, nil, err
	}
	return writable, readonly, nil
}

// Expect is what DeleteLedger requires of a ledger before deleting it: the
// lastEntryId and length that were copied.
type Expect struct {
	LastEntryID int64
	Length      int64
}

// DeleteResult tells what DeleteLedger did.
type DeleteResult int

const (
	// Deleted means this call deleted the metadata znode.
	Deleted DeleteResult = iota + 1
	// AlreadyDeleted means the znode did not exist (deleted earlier).
	AlreadyDeleted
)

// String names the result.
func (r DeleteResult) String() string {
	switch r {
	case Deleted:
		return "deleted"
	case AlreadyDeleted:
		return "already-deleted"
	}
	return "unknown"
}

// deleteRetry is DeleteLedger's policy on BadVersion: at most 10
// read-check-delete rounds, 10 ms to 1 s apart.
var deleteRetry = retry.Policy{Attempts: 10, Backoff: retry.Backoff{Initial: 10 * time.Millisecond, Max: time.Second}}

// DeleteLedger deletes a ledger's metadata znode by compare-and-delete: it
// reads the metadata, requires CLOSED with want's lastEntryId and length
// (else ErrChanged, ErrNotClosed), and deletes at exactly the version read.
// If the znode changed in between (BadVersion) it re-reads and re-checks, at
// most 10 times, with jittered backoff. A missing znode is AlreadyDeleted.
// When ctx carries a lease fence (internal/zk.WithFence) the delete is one
// multi of the fence's checks and the delete: a lost lease fails it with
// internal/zk.ErrFenced and nothing is deleted.
func (s *Store) DeleteLedger(ctx context.Context, id int64, want Expect) (DeleteResult, error) {
	p, err := s.LedgerPath(id)
	if err != nil {
		return 0, err
	}
	pol := deleteRetry
	pol.Retryable = func(err error) bool { return errors.Is(err, zk.ErrBadVersion) }
	pol.OnRetry = func(attempt int, wait time.Duration, _ error) {
		s.log.Info("ledger metadata changed while deleting; re-checking", "ledger", id, "attempt", attempt, "wait", wait)
	}
	res, err := retry.Do(ctx, pol, func(ctx context.Context) (DeleteResult, error) {
		m, err := s.ReadLedger(ctx, id)
		if errors.Is(err, ErrNoSuchLedger) {
			return AlreadyDeleted, nil
		}
		if err != nil {
			return 0, fmt.Errorf("delete ledger %d: %w", id, err)
		}
		if !m.Closed() {
			return 0, fmt.Errorf("delete ledger %d: %w (state %v)", id, ErrNotClosed, m.State)
		}
		if m.LastEntryID != want.LastEntryID || m.Length != want.Length {
			return 0, fmt.Errorf("delete ledger %d: %w: lastEntryId %d length %d, expected %d and %d",
				id, ErrChanged, m.LastEntryID, m.Length, want.LastEntryID, want.Length)
		}
		err = tkzk.DeleteFenced(ctx, s.zk, p, m.Version, s.fence)
		switch {
		case err == nil:
			s.log.Info("deleted ledger metadata", "ledger", id, "path", p, "version", m.Version)
			return Deleted, nil
		case errors.Is(err, zk.ErrNoNode):
			return AlreadyDeleted, nil
		default:
			return 0, fmt.Errorf("delete ledger %d (%s) at version %d: %w", id, p, m.Version, err)
		}
	})
	if errors.Is(err, zk.ErrBadVersion) && ctx.Err() == nil {
		return 0, fmt.Errorf("delete ledger %d: metadata kept changing (%d attempts): %w", id, pol.Attempts, err)
	}
	return res, err
}
