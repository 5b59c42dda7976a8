package zk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gozk "github.com/go-zookeeper/zk"
)

// Errors of fenced writes.
var (
	// ErrFenced is returned by a fenced write when the fence no longer
	// holds: the lease it stands for was lost (its owner znode is gone) or
	// taken since (its epoch znode was bumped), by another replica or by
	// this one on a new session. Nothing was written. It never wraps the
	// check's own go-zookeeper error, so a caller that retries
	// zk.ErrBadVersion (a lost compare-and-set) does not retry a refused
	// fence.
	ErrFenced = errors.New("fenced: the lease this write depends on is no longer held")
	// ErrUnfenced is returned by SetFenced and DeleteFenced when a fence is
	// required and the context carries none (a write path that forgot to
	// carry the job's lease). Nothing was written.
	ErrUnfenced = errors.New("write refused: no lease fence in its context")
)

// PathVersion is one condition of a Fence: znode Path at data version
// Version.
type PathVersion struct {
	Path    string
	Version int32
}

// Fence is one generation of a lease, as the version checks that prove it
// is still held. A fenced write is one ZooKeeper multi of the fence's
// checks followed by the write, so it lands only while every checked znode
// is at its recorded version: a replica whose lease is gone cannot write,
// even when go-zookeeper has silently opened a new session and sends
// requests that were queued on the old one. A Fence is immutable and safe
// for concurrent use.
type Fence struct {
	name   string
	checks []PathVersion
}

// NewFence returns a fence named name (for errors, e.g. "lease of X") that
// holds while every check holds.
func NewFence(name string, checks ...PathVersion) *Fence {
	return &Fence{name: name, checks: append([]PathVersion(nil), checks...)}
}

// Checks returns the fence's conditions.
func (f *Fence) Checks() []PathVersion { return append([]PathVersion(nil), f.checks...) }

// String names the fence and its conditions.
func (f *Fence) String() string {
	parts := make([]string, len(f.checks))
	for i, c := range f.checks {
		parts[i] = fmt.Sprintf("%s@%d", c.Path, c.Version)
	}
	return f.name + " (" + strings.Join(parts, ", ") + ")"
}

type fenceKey struct{}

// WithFence returns ctx carrying f: the writes of stores that honour
// fences (pulsar/mledger, bookkeeper/metadata) made under it are fenced
// by f. context.WithoutCancel keeps it, so cleanup writes stay fenced.
func WithFence(ctx context.Context, f *Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceOf returns the fence ctx carries, or nil.
func FenceOf(ctx context.Context) *Fence {
	f, _ := ctx.Value(fenceKey{}).(*Fence)
	return f
}

// Multier runs a ZooKeeper multi (atomic batch); *zk.Conn and *Session
// implement it.
type Multier interface {
	Multi(ops ...any) ([]gozk.MultiResponse, error)
}

var _ Multier = (*Session)(nil)

// Multi runs ops in one multi under ctx and returns their responses. When
// the multi fails it returns the failing op's error (wrapped with its
// path); the other responses are then meaningless.
func Multi(ctx context.Context, c Multier, ops ...any) ([]gozk.MultiResponse, error) {
	res, err := Do(ctx, func() ([]gozk.MultiResponse, error) { return c.Multi(ops...) })
	if err == nil {
		for _, r := range res {
			if r.Error != nil {
				err = r.Error // defensive: a server that reports per op only
				break
			}
		}
	}
	if err == nil {
		return res, nil
	}
	if i := failedOp(res); i >= 0 {
		return res, fmt.Errorf("%s: %w", opPath(ops[i]), res[i].Error)
	}
	return res, err
}

// failedOp is the index of the op a failed multi stopped at: the first
// with an error (the ops after it report a runtime inconsistency), or -1.
func failedOp(res []gozk.MultiResponse) int {
	for i, r := range res {
		if r.Error != nil {
			return i
		}
	}
	return -1
}

func opPath(op any) string {
	switch o := op.(type) {
	case *gozk.CreateRequest:
		return o.Path
	case *gozk.SetDataRequest:
		return o.Path
	case *gozk.DeleteRequest:
		return o.Path
	case *gozk.CheckVersionRequest:
		return o.Path
	}
	return fmt.Sprintf("%T", op)
}

// Multi runs f's checks and then ops in one multi under ctx. It returns
// the responses of ops (the checks' left out); an error wrapping
// ErrFenced when a check failed (nothing was applied); else, on failure,
// the failing op's go-zookeeper error as is (zk.ErrBadVersion for a lost
// compare-and-set, as the plain request would return it).
func (f *Fence) Multi(ctx context.Context, c Multier, ops ...any) ([]gozk.MultiResponse, error) {
	all := make([]any, 0, len(f.checks)+len(ops))
	for _, ch := range f.checks {
		all = append(all, &gozk.CheckVersionRequest{Path: ch.Path, Version: ch.Version})
	}
	all = append(all, ops...)
	res, err := Do(ctx, func() ([]gozk.MultiResponse, error) { return c.Multi(all...) })
	if err == nil {
		if i := failedOp(res); i >= 0 {
			err = res[i].Error
		}
	}
	if err != nil {
		i := failedOp(res)
		switch {
		case i >= 0 && i < len(f.checks):
			ch := f.checks[i]
			// %v, not %w: a refused fence must not look like a lost
			// compare-and-set (zk.ErrBadVersion) or a missing target.
			return nil, fmt.Errorf("%w: %s: %s at version %d: %v", ErrFenced, f.name, ch.Path, ch.Version, res[i].Error)
		case i >= 0:
			return nil, res[i].Error // the write's own answer, as a plain request gives it
		}
		return nil, err
	}
	if len(res) < len(all) {
		return nil, fmt.Errorf("multi of %d ops: %d responses", len(all), len(res))
	}
	return res[len(f.checks):], nil
}

// Check runs f's checks alone (one multi of version checks): nil while the
// lease is held, an error wrapping ErrFenced once it is not. Use it before
// an irreversible action that follows no fenced write (an object
// deletion).
func (f *Fence) Check(ctx context.Context, c Multier) error {
	_, err := f.Multi(ctx, c)
	return err
}

// SetMultier writes a znode plainly or in a multi.
type SetMultier interface {
	Setter
	Multier
}

// DeleteMultier deletes a znode plainly or in a multi.
type DeleteMultier interface {
	Deleter
	Multier
}

// SetFenced is Set fenced by ctx's fence: one multi of the fence's checks
// and the compare-and-set. Without a fence in ctx it is a plain Set, or,
// with require, fails with ErrUnfenced. The write's own failure (e.g.
// zk.ErrBadVersion) is returned wrapped, as Set returns it.
func SetFenced(ctx context.Context, c SetMultier, path string, data []byte, version int32, require bool) (*gozk.Stat, error) {
	f := FenceOf(ctx)
	if f == nil {
		if require {
			return nil, fmt.Errorf("set %s: %w", path, ErrUnfenced)
		}
		return Set(ctx, c, path, data, version)
	}
	res, err := f.Multi(ctx, c, &gozk.SetDataRequest{Path: path, Data: data, Version: version})
	if err != nil {
		return nil, err
	}
	return res[0].Stat, nil
}

// DeleteFenced is Delete fenced by ctx's fence, as SetFenced is Set.
func DeleteFenced(ctx context.Context, c DeleteMultier, path string, version int32, require bool) error {
	f := FenceOf(ctx)
	if f == nil {
		if require {
			return fmt.Errorf("delete %s: %w", path, ErrUnfenced)
		}
		return Delete(ctx, c, path, version)
	}
	_, err := f.Multi(ctx, c, &gozk.DeleteRequest{Path: path, Version: version})
	return err
}

// CheckFence checks ctx's fence (Fence.Check); nil when ctx carries none
// and require is false, ErrUnfenced when it carries none and require is
// true.
func CheckFence(ctx context.Context, c Multier, require bool) error {
	f := FenceOf(ctx)
	if f == nil {
		if require {
			return ErrUnfenced
		}
		return nil
	}
	return f.Check(ctx, c)
}
