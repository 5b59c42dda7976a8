package zk_test

import (
	"context"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// One subscription receives the events of every watch the session arms
// (their channels dropped unread), keeps receiving them after a reconnect
// within the session (the client re-registers the watches), and gets
// EventNotWatching for the watches still armed when the session is lost.
func TestOnWatchEvent(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	px := testenv.StartFaultProxy(t, z.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := zk.Connect(ctx, []string{px.Addr}, zk.Options{SessionTimeout: testenv.ReconnectSessionTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	w := z.Session(t, zk.Options{})
	for _, p := range []string{"/a", "/p"} {
		if _, err := w.Create(p, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	events := make(chan gozk.Event, 64)
	stop := s.OnWatchEvent(func(ev gozk.Event) {
		select {
		case events <- ev:
		default:
			t.Errorf("event %+v: queue full", ev)
		}
	})
	defer stop()
	cancelled := make(chan gozk.Event, 8)
	s.OnWatchEvent(func(ev gozk.Event) { cancelled <- ev })() // subscribed and cancelled at once
	next := func(what string) gozk.Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatalf("no watch event: %s", what)
		}
		return gozk.Event{}
	}
	want := func(what string, typ gozk.EventType, path string) {
		t.Helper()
		if ev := next(what); ev.Type != typ || ev.Path != path {
			t.Fatalf("%s: event %+v, want %v on %s", what, ev, typ, path)
		}
	}
	arm := func() {
		t.Helper()
		if _, _, _, err := s.GetW("/a"); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := s.ChildrenW("/p"); err != nil {
			t.Fatal(err)
		}
	}
	arm()
	if _, err := w.Set("/a", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	want("data watch", gozk.EventNodeDataChanged, "/a")
	if _, err := w.Create("/p/c1", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	want("child watch", gozk.EventNodeChildrenChanged, "/p")
	// Fired watches are gone: a second change reports nothing until re-armed.
	if _, err := w.Set("/a", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		t.Fatalf("event %+v from a watch that already fired", ev)
	case <-time.After(300 * time.Millisecond):
	}

	// A reconnect within the session keeps the re-armed watches.
	arm()
	id := s.SessionID()
	px.Cut()
	testenv.WaitFor(t, "the client to notice the cut", 10*time.Second, 10*time.Millisecond, func() bool { return s.State() != gozk.StateHasSession })
	px.Heal()
	testenv.WaitFor(t, "the reconnect", 10*time.Second, 10*time.Millisecond, func() bool { return s.State() == gozk.StateHasSession })
	if s.SessionID() != id || s.Err() != nil {
		t.Fatalf("a new session after the cut: %x → %x (%v)", id, s.SessionID(), s.Err())
	}
	if _, err := w.Set("/a", []byte("3"), -1); err != nil {
		t.Fatal(err)
	}
	want("data watch after the reconnect", gozk.EventNodeDataChanged, "/a")
	if _, err := w.Create("/p/c2", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	want("child watch after the reconnect", gozk.EventNodeChildrenChanged, "/p")

	// The session is lost (behind a partition): the watches still armed
	// are reported as no longer watching, with an Unavailable error.
	if _, _, _, err := s.ChildrenW("/p"); err != nil {
		t.Fatal(err)
	}
	px.Partition()
	select {
	case <-s.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("session not lost behind the partition")
	}
	// The client closes itself once it knows; a reconnect attempt behind
	// the partition waits for its answer (up to 10 × 2/3 of the timeout)
	// before the client can drop its watches: heal, so it hears at once.
	px.Heal()
	ev := next("the session's loss")
	if ev.Type != gozk.EventNotWatching || ev.Path != "/p" || !zk.Unavailable(ev.Err) {
		t.Fatalf("after the loss: %+v, want EventNotWatching on /p with an Unavailable error", ev)
	}
	t.Logf("after the loss: %v on %s: %v", ev.Type, ev.Path, ev.Err)
	select {
	case ev := <-events:
		t.Errorf("second event after the loss: %+v", ev)
	case ev := <-cancelled:
		t.Errorf("a cancelled subscription received %+v", ev)
	case <-time.After(300 * time.Millisecond):
	}
	if len(cancelled) != 0 {
		t.Errorf("a cancelled subscription received %d events", len(cancelled))
	}
}
