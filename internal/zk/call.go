package zk

import (
	"context"
	"errors"

	gozk "github.com/go-zookeeper/zk"
)

// Do runs call, one blocking go-zookeeper request, and returns its result,
// or ctx's error as soon as ctx ends (the request then finishes in the
// background and its result is dropped: for a write, its outcome is
// unknown).
func Do[T any](ctx context.Context, call func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := call()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-ch: // finished as ctx ended: keep the answer
			return r.v, r.err
		default:
			return zero, ctx.Err()
		}
	}
}

// Reader is the read side of a ZooKeeper client; *zk.Conn and *Session
// implement it.
type Reader interface {
	Get(path string) ([]byte, *gozk.Stat, error)
	Children(path string) ([]string, *gozk.Stat, error)
}

// Setter writes a znode with a compare-and-set on its version.
type Setter interface {
	Set(path string, data []byte, version int32) (*gozk.Stat, error)
}

// Deleter deletes a znode with a compare-and-set on its version.
type Deleter interface {
	Delete(path string, version int32) error
}

var (
	_ Reader  = (*Session)(nil)
	_ Setter  = (*Session)(nil)
	_ Deleter = (*Session)(nil)
)

type getResult struct {
	data []byte
	stat *gozk.Stat
}

// Get reads a znode's data and stat under ctx.
func Get(ctx context.Context, c Reader, path string) ([]byte, *gozk.Stat, error) {
	r, err := Do(ctx, func() (getResult, error) {
		d, st, err := c.Get(path)
		return getResult{d, st}, err
	})
	return r.data, r.stat, err
}

// Children lists a znode's children (unsorted, as the server sends them)
// under ctx.
func Children(ctx context.Context, c Reader, path string) ([]string, error) {
	return Do(ctx, func() ([]string, error) {
		kids, _, err := c.Children(path)
		return kids, err
	})
}

// Set writes data at version under ctx and returns the new stat.
func Set(ctx context.Context, c Setter, path string, data []byte, version int32) (*gozk.Stat, error) {
	return Do(ctx, func() (*gozk.Stat, error) { return c.Set(path, data, version) })
}

// Delete deletes path at version under ctx.
func Delete(ctx context.Context, c Deleter, path string, version int32) error {
	_, err := Do(ctx, func() (struct{}, error) { return struct{}{}, c.Delete(path, version) })
	return err
}

// Unavailable reports whether err means that no further request of the
// operation it came from can succeed soon, so an operation of many
// requests should stop at once: no server reachable (zk.ErrNoServer, sent
// by go-zookeeper after each failed round of reconnects), the connection
// dropped with the request in flight (zk.ErrConnectionClosed), the session
// expired, moved or lost, authentication failed, or the client closed.
// Answers about a znode (zk.ErrNoNode, zk.ErrBadVersion, ...) and context
// errors are not.
func Unavailable(err error) bool {
	for _, e := range []error{gozk.ErrNoServer, gozk.ErrConnectionClosed, gozk.ErrSessionExpired,
		gozk.ErrSessionMoved, gozk.ErrClosing, gozk.ErrAuthFailed, ErrSessionLost, ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
