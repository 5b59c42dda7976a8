package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/format/upload"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// brokerModel is the owning broker of the topic as Pulsar 4.0.8's
// ManagedLedgerImpl behaves:
//
//   - it reads the managed-ledger znode once, when the topic loads, and
//     keeps the LedgerInfo list and the znode version in memory; it never
//     watches the node;
//   - on load it recovers the last listed ledger from BookKeeper (closing
//     it and replacing its LedgerInfo by entries/size/timestamp, dropping
//     its offload context), drops empty ledgers and appends a new open
//     ledger, in one compare-and-set;
//   - every later write (rollover, its own offload, trim) is a
//     compare-and-set of the in-memory list on the in-memory version; a
//     BadVersion fences the managed ledger and the topic closes (the next
//     producer or admin request loads it again);
//   - its own offloader (offloadPrefix → prepareLedgerInfoForOffloaded)
//     picks the oldest non-last ledger that its in-memory list shows not
//     complete, deletes the objects of the attempt its in-memory context
//     names (cleanupOffloaded(oldUuid)) before its compare-and-set, even
//     when that then fails; writes the objects; marks complete;
//   - its trim marks bookkeeperDeleted on complete ledgers whose offload
//     timestamp is older than its deletion lag (compare-and-set), then
//     deletes them from BookKeeper;
//   - unload closes the topic without writing the znode (the current
//     ledger is closed in BookKeeper); internalStats load the topic and
//     answer from memory.
//
// Not modelled: retention and consumers (ledgers are never removed from
// the list), the threshold arithmetic (offload is an action the schedule
// chooses), cursors, terminate, the read path (invariants read the stored
// state, which a reloaded broker serves).
type brokerModel struct {
	w      *World
	sess   int64
	loaded bool
	info   *mlproto.ManagedLedgerInfo // in memory while loaded
	ver    int32
	cur    *bkLedger // the open ledger
	off    *brokerOffload
}

// brokerOffload is the broker's own offload in progress.
type brokerOffload struct {
	ledger int64
	id     uuid.UUID
	stage  string // copy, complete
}

func newBroker(w *World) *brokerModel {
	b := &brokerModel{w: w, sess: w.zk.newSession()}
	return b
}

func (b *brokerModel) path() string { return mledger.Root + "/" + Topic }

// load opens the managed ledger from the znode (w.mu held).
func (b *brokerModel) load() error {
	data, st, err := b.w.zk.get(b.path())
	if err != nil {
		return err
	}
	info, _, err := mledger.Decode(data, mledger.Limits{})
	if err != nil {
		return err
	}
	ls := info.GetLedgerInfo()
	if n := len(ls); n > 0 {
		last := ls[n-1]
		if l := b.w.bk.ledgers[last.GetLedgerId()]; l != nil && !l.deleted {
			l.closed = true // recovery closes it
			ls[n-1] = &mlproto.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(l.id), Entries: proto.Int64(int64(len(l.entries))),
				Size: proto.Int64(l.length), Timestamp: proto.Int64(b.w.now().UnixMilli())}
		} else {
			ls = ls[:n-1]
		}
	}
	var kept []*mlproto.ManagedLedgerInfo_LedgerInfo
	for _, li := range ls {
		if li.GetEntries() > 0 {
			kept = append(kept, li)
		}
	}
	nl := b.w.bk.create()
	kept = append(kept, &mlproto.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(nl.id), Timestamp: proto.Int64(0)})
	info.LedgerInfo = kept
	ver, err := b.cas(info, st.Version)
	if err != nil {
		b.w.tracef("broker load: %v", err)
		return err
	}
	b.loaded, b.info, b.ver, b.cur, b.off = true, info, ver, nl, nil
	b.w.tracef("broker loaded the topic (znode v%d): %s", ver, b.w.describe(info))
	return nil
}

// cas writes info at version ver (w.mu held).
func (b *brokerModel) cas(info *mlproto.ManagedLedgerInfo, ver int32) (int32, error) {
	data, err := mledger.Encode(info, mledger.EncodeOptions{})
	if err != nil {
		return 0, err
	}
	res, err := b.w.zk.multi(b.sess, b.w.now(), []op{{kind: "set", path: b.path(), data: data, version: ver}})
	if err != nil {
		return 0, err
	}
	return res[0].Stat.Version, nil
}

// write compare-and-sets the in-memory list after fn changed a copy of
// it; BadVersion fences and closes the topic (w.mu held).
func (b *brokerModel) write(what string, fn func(info *mlproto.ManagedLedgerInfo)) bool {
	next := proto.Clone(b.info).(*mlproto.ManagedLedgerInfo)
	fn(next)
	ver, err := b.cas(next, b.ver)
	if err != nil {
		b.w.tracef("broker %s: CAS v%d failed (%v): managed ledger fenced, topic closed", what, b.ver, err)
		b.close()
		return false
	}
	b.info, b.ver = next, ver
	b.w.tracef("broker %s: v%d", what, ver)
	return true
}

// close closes the topic: the current ledger is closed in BookKeeper; the
// znode is not written (w.mu held).
func (b *brokerModel) close() {
	if b.cur != nil {
		b.cur.closed = true
	}
	b.loaded, b.info, b.cur, b.off = false, nil, nil, nil
}

func (b *brokerModel) ensureLoaded() bool {
	if b.loaded {
		return true
	}
	return b.load() == nil
}

// ledger returns the in-memory LedgerInfo of id and whether it is the last.
func (b *brokerModel) ledger(info *mlproto.ManagedLedgerInfo, id int64) (*mlproto.ManagedLedgerInfo_LedgerInfo, bool) {
	ls := info.GetLedgerInfo()
	for i, li := range ls {
		if li.GetLedgerId() == id {
			return li, i == len(ls)-1
		}
	}
	return nil, false
}

// act performs one broker action (w.mu held).
func (b *brokerModel) act(what string) {
	switch what {
	case "produce":
		if !b.ensureLoaded() {
			return
		}
		e := b.cur.add()
		b.w.acked[b.cur.id] = e + 1
		b.w.tracef("broker produce: ledger %d entry %d acknowledged", b.cur.id, e)
	case "rollover":
		if !b.loaded || len(b.cur.entries) == 0 {
			return
		}
		old := b.cur
		old.closed = true
		nl := b.w.bk.create()
		if b.write(fmt.Sprintf("rollover %d→%d", old.id, nl.id), func(info *mlproto.ManagedLedgerInfo) {
			li, _ := b.ledger(info, old.id)
			li.Entries, li.Size, li.Timestamp = proto.Int64(int64(len(old.entries))), proto.Int64(old.length), proto.Int64(b.w.now().UnixMilli())
			info.LedgerInfo = append(info.LedgerInfo, &mlproto.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(nl.id), Timestamp: proto.Int64(0)})
		}) {
			b.cur = nl
		}
	case "unload":
		if b.loaded {
			b.w.tracef("broker unload (no znode write)")
			b.close()
		}
	case "trim":
		b.trim()
	case "offload":
		b.offload()
	}
}

// trim is internalTrimLedgers' offloaded-ledger deletion (w.mu held).
func (b *brokerModel) trim() {
	if !b.loaded || b.w.cfg.BrokerLag < 0 {
		return
	}
	now := b.w.now()
	var del []int64
	ls := b.info.GetLedgerInfo()
	for _, li := range ls[:len(ls)-1] {
		oc := li.GetOffloadContext()
		if oc.GetComplete() && !oc.GetBookkeeperDeleted() && now.Sub(time.UnixMilli(oc.GetTimestamp())) > b.w.cfg.BrokerLag {
			del = append(del, li.GetLedgerId())
		}
	}
	if len(del) == 0 {
		return
	}
	if !b.write(fmt.Sprintf("trim: bookkeeperDeleted on %v", del), func(info *mlproto.ManagedLedgerInfo) {
		for _, id := range del {
			li, _ := b.ledger(info, id)
			li.OffloadContext.BookkeeperDeleted = proto.Bool(true)
		}
	}) {
		return
	}
	for _, id := range del {
		b.w.bk.delete("broker", id)
	}
}

// offload advances the broker's own offloader by one step (w.mu held).
func (b *brokerModel) offload() {
	if !b.ensureLoaded() {
		return
	}
	if b.off == nil {
		ls := b.info.GetLedgerInfo()
		var pick *mlproto.ManagedLedgerInfo_LedgerInfo
		for _, li := range ls[:len(ls)-1] {
			if !li.GetOffloadContext().GetComplete() && li.GetSize() > 0 {
				pick = li
				break
			}
		}
		if pick == nil {
			return
		}
		id := b.w.newUUID()
		lid := pick.GetLedgerId()
		// prepareLedgerInfoForOffloaded: the in-memory context's attempt
		// is cleaned up before the compare-and-set.
		if old, had := mledger.StoredUUID(pick.GetOffloadContext()); had {
			b.w.tracef("broker offload L%d: cleanupOffloaded(%s) of its in-memory context", lid, b.w.alias(old))
			for _, k := range []string{format.DataKey(old, lid), format.IndexKey(old, lid)} {
				if _, _, ok := b.w.store.Object(k); ok {
					b.w.tracef("  object %s deleted by broker", b.w.aliasKeys(k))
					b.w.deletedBy[k] = fmt.Sprintf("broker at step %d", b.w.step)
				}
				_ = b.w.store.Delete(context.Background(), k)
			}
		}
		md, _ := SimDriver.Metadata()
		msb, lsb := mledger.UUIDToBits(id)
		if b.write(fmt.Sprintf("offload L%d: prepare %s", lid, b.w.alias(id)), func(info *mlproto.ManagedLedgerInfo) {
			li, _ := b.ledger(info, lid)
			oc := proto.Clone(li.GetOffloadContext()).(*mlproto.OffloadContext)
			if oc == nil {
				oc = &mlproto.OffloadContext{}
			}
			oc.UidMsb, oc.UidLsb, oc.DriverMetadata = proto.Int64(msb), proto.Int64(lsb), md
			li.OffloadContext = oc
		}) {
			b.off = &brokerOffload{ledger: lid, id: id, stage: "copy"}
		}
		return
	}
	o := b.off
	switch o.stage {
	case "copy":
		l := b.w.bk.ledgers[o.ledger]
		if l == nil || l.deleted {
			b.off = nil
			return
		}
		if err := b.w.writeObjects(o.id, l); err != nil {
			b.w.tracef("broker offload L%d: upload failed: %v", o.ledger, err)
			b.off = nil
			return
		}
		b.w.tracef("broker offload L%d: objects of %s written", o.ledger, b.w.alias(o.id))
		o.stage = "complete"
	case "complete":
		b.off = nil
		li, _ := b.ledger(b.info, o.ledger)
		if cur, _ := mledger.StoredUUID(li.GetOffloadContext()); cur != o.id {
			b.w.tracef("broker offload L%d: conflict", o.ledger)
			return
		}
		b.write(fmt.Sprintf("offload L%d: complete %s", o.ledger, b.w.alias(o.id)), func(info *mlproto.ManagedLedgerInfo) {
			li, _ := b.ledger(info, o.ledger)
			li.OffloadContext.Complete = proto.Bool(true)
			li.OffloadContext.Timestamp = proto.Int64(b.w.now().UnixMilli())
		})
	}
}

// writeObjects writes attempt id's objects of ledger l with the real
// format writer, as the broker's offloader does (w.mu held).
func (w *World) writeObjects(id uuid.UUID, l *bkLedger) error {
	ctx := context.Background()
	up, err := upload.New(w.store, &upload.Options{MaxBlockSize: format.MinPartSize})
	if err != nil {
		return err
	}
	md := l.metadata()
	ixmd, err := format.IndexMetadata(md.Proto())
	if err != nil {
		return err
	}
	sess, err := up.Begin(ctx, upload.Request{UUID: id, Ledger: format.Ledger{ID: l.id, LastEntryID: md.LastEntryID, Length: md.Length},
		Metadata: ixmd, ManagedLedgerName: Topic})
	if err != nil {
		return err
	}
	for e, p := range l.entries {
		if err := sess.Add(ctx, int64(e), p); err != nil {
			return err
		}
	}
	_, err = sess.Finish(ctx)
	return err
}

// newUUID is a v4 UUID from the run's random source (w.mu held).
func (w *World) newUUID() uuid.UUID {
	var u uuid.UUID
	for i := range u {
		u[i] = byte(w.rng.UintN(256))
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// brokerAdmin is one actor's broker admin client (pipeline.Broker); each
// request is a yield point answered from the model.
type brokerAdmin struct {
	w *World
	a *actor
}

var _ pipeline.Broker = (*brokerAdmin)(nil)

var errBrokerUnavailable = errors.New("sim: broker could not load the topic")

func (c *brokerAdmin) Unload(ctx context.Context, t mledger.TopicName) error {
	if _, err := c.w.gate(c.a, "admin unload"); err != nil {
		return err
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.w.broker.act("unload")
	return nil
}

func (c *brokerAdmin) InternalStats(ctx context.Context, t mledger.TopicName) (*brokeradmin.InternalStats, error) {
	if _, err := c.w.gate(c.a, "admin internal-stats"); err != nil {
		return nil, err
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	b := c.w.broker
	if !b.ensureLoaded() {
		return nil, errBrokerUnavailable
	}
	st := &brokeradmin.InternalStats{State: "LedgerOpened"}
	for _, li := range b.info.GetLedgerInfo() {
		st.Ledgers = append(st.Ledgers, brokeradmin.LedgerStats{LedgerID: li.GetLedgerId(), Entries: li.GetEntries(), Size: li.GetSize(),
			Offloaded: li.GetOffloadContext().GetComplete()})
	}
	return st, nil
}

// storedInfo reads the managed ledger as stored (w.mu held).
func (w *World) storedInfo() (*mlproto.ManagedLedgerInfo, int32, error) {
	data, st, err := w.zk.get(mledger.Root + "/" + Topic)
	if err != nil {
		return nil, 0, err
	}
	info, _, err := mledger.Decode(data, mledger.Limits{})
	if err != nil {
		return nil, 0, err
	}
	return info, st.Version, nil
}

// describe renders the ledgers of info for the trace.
func (w *World) describe(info *mlproto.ManagedLedgerInfo) string {
	s := ""
	for _, li := range info.GetLedgerInfo() {
		oc := li.GetOffloadContext()
		s += fmt.Sprintf("L%d", li.GetLedgerId())
		if u, ok := mledger.AttemptUUID(oc); ok {
			s += "(" + w.alias(u)
			if oc.GetComplete() {
				s += ",complete"
			}
			if oc.GetBookkeeperDeleted() {
				s += ",bkdel"
			}
			s += ")"
		}
		s += " "
	}
	return s
}

var _ = gozk.ErrNoNode
