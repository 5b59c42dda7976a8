package zk_test

import (
	"context"
	"errors"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// A fenced write lands only while the fence's znodes are at their
// versions: with the owner node gone (NoNode) or the epoch bumped
// (BadVersion) it is refused with ErrFenced and writes nothing; the write's
// own lost compare-and-set still reads as zk.ErrBadVersion (not ErrFenced);
// a required fence that is missing refuses the write (ErrUnfenced).
func TestFencedWrites(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	s := z.Session(t, zk.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acl := gozk.WorldACL(gozk.PermAll)
	for _, p := range []string{"/epoch", "/target", "/victim"} {
		if _, err := s.Create(p, []byte("0"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	// The owner node as a lease takes it: created and set once (version 1).
	if _, err := zk.Multi(ctx, s, &gozk.CreateRequest{Path: "/owner", Data: []byte("r1"), Acl: acl, Flags: gozk.FlagEphemeral},
		&gozk.SetDataRequest{Path: "/owner", Data: []byte("r1"), Version: 0}); err != nil {
		t.Fatal(err)
	}
	st, err := zk.Set(ctx, s, "/epoch", []byte("r1"), -1)
	if err != nil {
		t.Fatal(err)
	}
	f := zk.NewFence("lease of t", zk.PathVersion{Path: "/owner", Version: 1}, zk.PathVersion{Path: "/epoch", Version: st.Version})
	fctx := zk.WithFence(ctx, f)

	wst, err := zk.SetFenced(fctx, s, "/target", []byte("a"), 0, true)
	if err != nil || wst.Version != 1 {
		t.Fatalf("fenced write under a held lease: %v %+v", err, wst)
	}
	if err := f.Check(ctx, s); err != nil {
		t.Fatalf("check under a held lease: %v", err)
	}
	// A lost compare-and-set is the write's own BadVersion, retryable.
	if _, err := zk.SetFenced(fctx, s, "/target", []byte("b"), 0, true); !errors.Is(err, gozk.ErrBadVersion) || errors.Is(err, zk.ErrFenced) {
		t.Fatalf("stale version under a held lease: %v, want zk.ErrBadVersion", err)
	}
	if _, err := zk.SetFenced(ctx, s, "/target", []byte("c"), 1, true); !errors.Is(err, zk.ErrUnfenced) {
		t.Fatalf("unfenced write with a fence required: %v, want ErrUnfenced", err)
	}
	if _, err := zk.SetFenced(ctx, s, "/target", []byte("c"), 1, false); err != nil {
		t.Fatalf("unfenced write with no fence required: %v", err)
	}

	// The lease is taken since: the epoch moved on.
	if _, err := zk.Set(ctx, s, "/epoch", []byte("r2"), -1); err != nil {
		t.Fatal(err)
	}
	_, err = zk.SetFenced(fctx, s, "/target", []byte("d"), 2, true)
	if !errors.Is(err, zk.ErrFenced) || errors.Is(err, gozk.ErrBadVersion) {
		t.Fatalf("write after the epoch moved: %v, want ErrFenced (not BadVersion)", err)
	}
	if err := zk.DeleteFenced(fctx, s, "/victim", 0, true); !errors.Is(err, zk.ErrFenced) {
		t.Fatalf("fenced delete after the epoch moved: %v", err)
	}
	if err := f.Check(ctx, s); !errors.Is(err, zk.ErrFenced) {
		t.Fatalf("check after the epoch moved: %v", err)
	}

	// The lease is gone (owner node deleted, as at session expiry).
	_, st, _ = s.Exists("/epoch")
	f2 := zk.NewFence("lease of t", zk.PathVersion{Path: "/owner", Version: 1}, zk.PathVersion{Path: "/epoch", Version: st.Version})
	if err := s.Delete("/owner", -1); err != nil {
		t.Fatal(err)
	}
	if _, err := zk.SetFenced(zk.WithFence(ctx, f2), s, "/target", []byte("e"), 2, true); !errors.Is(err, zk.ErrFenced) || errors.Is(err, gozk.ErrNoNode) {
		t.Fatalf("write after the owner node went: %v, want ErrFenced", err)
	}
	// Nothing was written by the refused writes.
	if data, st, _ := s.Get("/target"); string(data) != "c" || st.Version != 2 {
		t.Fatalf("/target = %q version %d, want the last accepted write (c, version 2)", data, st.Version)
	}
	if ok, _, _ := s.Exists("/victim"); !ok {
		t.Fatal("/victim deleted by a refused fenced delete")
	}
	// A context without cancellation keeps the fence (cleanup writes).
	if zk.FenceOf(context.WithoutCancel(fctx)) != f {
		t.Fatal("context.WithoutCancel dropped the fence")
	}
}

// BenchmarkSet compares a plain compare-and-set with a fenced one (a multi
// of two version checks and the Set) against a real server: the price of
// fencing per write.
func BenchmarkSet(b *testing.B) {
	z := testenv.StartZooKeeper(b)
	s := z.Session(b, zk.Options{})
	ctx := context.Background()
	acl := gozk.WorldACL(gozk.PermAll)
	for _, p := range []string{"/bench-owner", "/bench-epoch", "/bench-target"} {
		if _, err := s.Create(p, nil, 0, acl); err != nil {
			b.Fatal(err)
		}
	}
	f := zk.NewFence("bench", zk.PathVersion{Path: "/bench-owner", Version: 0}, zk.PathVersion{Path: "/bench-epoch", Version: 0})
	data := make([]byte, 4096)
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"plain", ctx}, {"fenced", zk.WithFence(ctx, f)}} {
		b.Run(c.name, func(b *testing.B) {
			_, st, err := s.Get("/bench-target")
			if err != nil {
				b.Fatal(err)
			}
			v := st.Version
			for b.Loop() {
				st, err := zk.SetFenced(c.ctx, s, "/bench-target", data, v, false)
				if err != nil {
					b.Fatal(err)
				}
				v = st.Version
			}
		})
	}
}
