package zk

import (
	"sync"

	gozk "github.com/go-zookeeper/zk"
)

// watchHub fans the client's watch events out to the session's
// subscribers (Session.OnWatchEvent). go-zookeeper calls dispatch from its
// receive loop, for every event, before it wakes the watch's own channel.
type watchHub struct {
	mu   sync.RWMutex
	next int
	subs map[int]func(gozk.Event)
}

func (h *watchHub) dispatch(ev gozk.Event) {
	if ev.Type == gozk.EventSession {
		return // session states: Session.watch follows them
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, fn := range h.subs {
		fn(ev)
	}
}

func (h *watchHub) add(fn func(gozk.Event)) (cancel func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[int]func(gozk.Event){}
	}
	id := h.next
	h.next++
	h.subs[id] = fn
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, id)
			h.mu.Unlock()
		})
	}
}

// OnWatchEvent subscribes fn to every watch event of the session: the
// node events (created, deleted, data changed, children changed, with the
// znode's path) of every watch armed through it (GetW, ChildrenW, ExistsW,
// by anyone), and one zk.EventNotWatching per watched path, with Err set,
// when the client drops its watches (the session expired or the client
// closed: no watch of this session fires again). Watches armed before a
// reconnect within the session stay armed (the client re-registers them
// with the server) and keep reporting here.
//
// One subscription serves any number of watches, so a caller watching
// many znodes can drop the per-watch channels the W calls return instead
// of parking a goroutine on each. A fired watch is gone: the caller
// re-arms it by reading again. fn is called from the client's receive
// loop, one event at a time in the order the server sent them: it must
// not block nor call the client (queue the event and return). cancel ends
// the subscription (idempotent).
func (s *Session) OnWatchEvent(fn func(gozk.Event)) (cancel func()) {
	return s.hub.add(fn)
}
