package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/offloader/blob/memblob"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Config describes one simulated run.
type Config struct {
	// Seed drives every choice (which actor proceeds, faults, actions).
	Seed uint64
	// Steps bounds the scheduling decisions of the run.
	Steps int
	// Replicas is the number of offloader service replicas (0–3).
	Replicas int
	// Ledgers is the number of closed ledgers the topic starts with
	// (default 3).
	Ledgers int
	// CLI adds `offloader offload` runs (a pipeline without a lease), two
	// of which (cli1, cli2) may run at once.
	CLI bool
	// BrokerOffload lets the broker model run its own offloader on the
	// topic because its namespace policy says so (a threshold: the
	// offloader's topic guard refuses the topic).
	BrokerOffload bool
	// OperatorOffload lets the broker model run its own offloader on the
	// topic although no policy makes it (an operator's pulsar-admin
	// topics offload): the topic guard sees nothing to refuse.
	OperatorOffload bool
	// LegacyAttempt starts the topic with an unfinished offload attempt
	// of an older tierkeeper on its first ledger: a UUID tagged 0x74b
	// that also names its objects, which are whole, held in the broker's
	// memory as loaded.
	LegacyAttempt bool
	// BrokerLag is the broker's managedLedgerOffloadDeletionLagMs
	// (negative: the broker never deletes offloaded BookKeeper ledgers).
	BrokerLag time.Duration
	// Lag is the offloader's deletion lag (its policy's deletionLag).
	Lag time.Duration
	// Faults are the probabilities of the injected faults.
	Faults Faults
	// Script, when set, replays these decisions instead of choosing at
	// random (shrinking); decisions that do not apply are skipped.
	Script []Decision
	// Wait blocks until every other goroutine of the run is blocked
	// (synctest.Wait): the run must execute inside a synctest bubble.
	Wait func()
	// Trace, when set, receives every trace line as it happens.
	Trace func(string)
	// Debug records the pending requests at every decision
	// (Result.Pending).
	Debug bool
}

// Faults are per-decision probabilities.
type Faults struct {
	// Loss: a granted ZooKeeper request is lost (not applied) or its
	// answer is (applied); either way the caller sees a connection loss.
	Loss float64
	// Crash: a replica (or the CLI) reaching a failpoint dies there.
	Crash float64
	// Fail: a failpoint fails its step (a transient error: a bookie read,
	// a store request), the process lives on.
	Fail float64
	// Expire: a replica's session is expired by the server.
	Expire float64
	// Partition: a replica is cut off from ZooKeeper (healed later, or
	// its session expires meanwhile).
	Partition float64
}

// DefaultFaults are the fault rates of the random runs.
var DefaultFaults = Faults{Loss: 0.02, Crash: 0.02, Fail: 0.03, Expire: 0.003, Partition: 0.003}

// Decision is one scheduling decision: what happened at one step.
type Decision struct {
	Kind  string // grant, time, broker, offer, cli, expire, partition, heal, restart
	Call  string // grant: the pending call's description
	Fault string // grant: "", lose-request, lose-reply, crash
	Actor string // offer, expire, partition, heal, restart, pause, cli
	N     int    // pause: for this many decisions
	What  string // broker: the action
	D     time.Duration
}

func (d Decision) String() string {
	switch d.Kind {
	case "grant":
		if d.Fault != "" {
			return d.Call + " [" + d.Fault + "]"
		}
		return d.Call
	case "time":
		return "time +" + d.D.String()
	case "broker":
		return "broker " + d.What
	case "cli":
		return d.Actor + " start"
	case "pause":
		return fmt.Sprintf("pause %s for %d decisions", d.Actor, d.N)
	}
	return d.Kind + " " + d.Actor
}

// Violation is a broken invariant.
type Violation struct {
	Invariant string
	Detail    string
	Step      int
}

func (v *Violation) Error() string {
	return fmt.Sprintf("invariant %q broken at step %d: %s", v.Invariant, v.Step, v.Detail)
}

// Invariants.
const (
	InvCompleteObjects = "complete-context-has-objects"       // no complete context points at missing or wrong objects
	InvBKDeleteChecked = "bk-deleted-only-when-verified"      // no BK ledger deleted while its objects are not verified
	InvOneWriter       = "one-replica-writes-a-topic"         // a replica writes a topic's metadata only under its lease
	InvReadable        = "acknowledged-entries-stay-readable" // from BookKeeper or the store
)

// Result is the outcome of a run.
type Result struct {
	Seed      uint64
	Steps     int
	Trace     []string
	Decisions []Decision
	Violation *Violation
	// Grants counts calls granted (yield points passed).
	Grants int
	// Pending is the pending requests at each decision (Config.Debug).
	Pending []string
	// Config is the run's configuration (set by Shrink: the smallest one
	// that still breaks the invariant).
	Config Config
}

// call is a yield point: an actor's request waiting for its turn.
type call struct {
	a     *actor
	sess  *session // ZooKeeper requests: the session they were sent on
	desc  string
	ready chan struct{}
	fault string
	err   error
}

// World is the simulated cluster of one run.
type World struct {
	cfg Config
	rng *rand.Rand

	mu        sync.Mutex
	start     time.Time
	zk        *zkServer
	bk        *bkModel
	store     *memblob.Store
	broker    *brokerModel
	actors    []*actor // every incarnation, in creation order
	pending   []*call
	trace     []string
	viol      *Violation
	step      int
	grants    int
	aliases   map[uuid.UUID]string
	acked     map[int64]int64 // ledger → entries acknowledged to producers
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	cliRuns   int
	decisions []Decision
	deletedBy map[string]string // object key → who deleted it, at which step
	pendHist  []string
	notes     []note             // trace lines of actors, held until the run is quiescent (notef)
	swarm     map[string]float64 // this run's weight factor of each kind of decision
	speed     map[string]float64 // each actor's share of the grants, redrawn every few steps
}

// Topic is the simulated topic's managed ledger.
const Topic = "public/default/persistent/sim"

var errCrashed = errors.New("sim: process crashed")
var errEnded = errors.New("sim: run ended")

func newWorld(cfg Config) *World {
	w := &World{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		zk: newZKServer(), store: memblob.New(), aliases: map[uuid.UUID]string{}, acked: map[int64]int64{}, deletedBy: map[string]string{}}
	w.start = time.Now()
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.bk = &bkModel{w: w, ledgers: map[int64]*bkLedger{}, next: 1}
	// Swarm testing: every run weighs the kinds of decision (and scales
	// the fault rates) differently, so that some runs are all broker
	// churn, others all CLI overlap or all failures.
	w.swarm = map[string]float64{}
	for _, k := range []string{"grant", "time", "broker", "offer", "cli", "restart", "loss", "crash", "fail", "expire", "partition", "pause"} {
		w.swarm[k] = []float64{0.1, 0.5, 1, 1, 2, 4}[w.rng.IntN(6)]
	}
	w.zk.onWrite = w.checkWrite
	return w
}

func (w *World) now() time.Time { return time.Now() }

// tracef records a trace line (w.mu held).
func (w *World) tracef(format string, args ...any) {
	line := fmt.Sprintf("%4d %8s ", w.step, time.Since(w.start).Round(time.Millisecond)) + fmt.Sprintf(format, args...)
	w.trace = append(w.trace, line)
	if w.cfg.Trace != nil {
		w.cfg.Trace(line)
	}
}

// notef records a trace line of actor a's goroutines that is no answer
// to a granted request (a scheduler's stop, a CLI run's end). Such lines
// come from goroutines that one event (timers firing at one instant) may
// wake together, so they are held until the run is quiescent and then
// traced by actor, each actor's in its order (w.mu held).
func (w *World) notef(a *actor, format string, args ...any) {
	w.notes = append(w.notes, note{a.name, fmt.Sprintf(format, args...)})
}

// flushNotes traces the held notes, ordered by actor (w.mu held).
func (w *World) flushNotes() {
	slices.SortStableFunc(w.notes, func(x, y note) int { return strings.Compare(x.actor, y.actor) })
	for _, n := range w.notes {
		w.tracef("%s", n.line)
	}
	w.notes = w.notes[:0]
}

type note struct{ actor, line string }

// alias names attempt UUIDs by order of appearance (U1, U2, ...), so
// traces of one seed compare equal although uuid.New is random.
func (w *World) alias(u uuid.UUID) string {
	if u == uuid.Nil {
		return "-"
	}
	a, ok := w.aliases[u]
	if !ok {
		a = fmt.Sprintf("U%d", len(w.aliases)+1)
		w.aliases[u] = a
	}
	return a
}

// aliasKeys replaces UUIDs in s by their aliases.
func (w *World) aliasKeys(s string) string {
	for i := 0; i+36 <= len(s); i++ {
		if u, err := uuid.Parse(s[i : i+36]); err == nil && s[i+8] == '-' {
			a := w.alias(u)
			s = s[:i] + a + s[i+36:]
			i += len(a) - 1
		}
	}
	return s
}

// violate records the first violation (w.mu held).
func (w *World) violate(inv, format string, args ...any) {
	if w.viol != nil {
		return
	}
	w.viol = &Violation{Invariant: inv, Detail: w.aliasKeys(fmt.Sprintf(format, args...)), Step: w.step}
	w.tracef("VIOLATION %s: %s", inv, w.viol.Detail)
}

// gate is a yield point: the calling goroutine of actor a waits until the
// driver grants its call, and returns the fault chosen for it.
func (w *World) gate(a *actor, desc string) (string, error) {
	return w.gateOn(a, nil, desc)
}

// gateOn is gate for a request on ZooKeeper session s.
func (w *World) gateOn(a *actor, s *session, desc string) (string, error) {
	w.mu.Lock()
	if a.dead {
		w.mu.Unlock()
		return "", errCrashed
	}
	if w.ctx.Err() != nil {
		w.mu.Unlock()
		return "", errEnded
	}
	c := &call{a: a, sess: s, desc: a.name + " " + w.aliasKeys(desc), ready: make(chan struct{})}
	w.pending = append(w.pending, c)
	w.mu.Unlock()
	<-c.ready
	return c.fault, c.err
}

// release wakes c with err (w.mu held).
func (w *World) release(c *call, fault string, err error) {
	w.pending = slices.DeleteFunc(w.pending, func(x *call) bool { return x == c })
	c.fault, c.err = fault, err
	close(c.ready)
}

// autoRelease fails one pending call that can only fail (its process
// crashed, its session expired), the first by description; it reports
// whether there was one. Calls are failed one at a time, with the run
// quiescent in between, so that a crash or an expiry wakes one goroutine
// at a time (w.mu held).
func (w *World) autoRelease() bool {
	ps := slices.Clone(w.pending)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].desc < ps[j].desc })
	for _, c := range ps {
		switch {
		case c.a.dead:
			w.release(c, "", errCrashed)
			return true
		case c.sess != nil && c.sess.lostClosed:
			w.release(c, "", gozk.ErrSessionExpired)
			return true
		}
	}
	return false
}

// grantable returns the pending calls that may proceed, sorted by
// description (w.mu held).
func (w *World) grantable() []*call {
	var out []*call
	for _, c := range w.pending {
		if (c.a.partitioned && c.sess != nil) || c.a.pausedUntil >= w.step {
			continue
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].desc < out[j].desc })
	return out
}

// Run runs one simulation; it must be called inside a synctest bubble
// (cfg.Wait = synctest.Wait).
func Run(cfg Config) *Result {
	w := newWorld(cfg)
	w.setup()
	w.loop()
	w.shutdown()
	w.mu.Lock()
	defer w.mu.Unlock()
	return &Result{Config: cfg, Seed: cfg.Seed, Steps: w.step, Trace: w.trace, Decisions: w.decisions, Violation: w.viol, Grants: w.grants, Pending: w.pendHist}
}

// setup creates the topic: a managed ledger with a few closed ledgers
// and the open one, loaded by the broker, and starts the replicas.
func (w *World) setup() {
	w.mu.Lock()
	now := w.now()
	w.zk.mkdirs(mledger.Root+"/"+strings.TrimSuffix(Topic, "/sim"), nil, now)
	w.zk.mkdirs(mledger.Root+"/"+Topic, nil, now)
	w.zk.mkdirs(LeaseRoot, nil, now)
	if w.cfg.BrokerOffload {
		// The broker offloads the topic by itself because its namespace
		// says so (pulsar-admin namespaces set-offload-threshold 0).
		w.zk.mkdirs("/admin/policies/public/default", []byte(`{"offload_threshold":0}`), now)
	}
	w.broker = newBroker(w)
	w.mu.Unlock()
	n := w.cfg.Ledgers
	if n <= 0 {
		n = 3
	}
	for i := 0; i < n; i++ {
		w.mu.Lock()
		w.broker.act("produce")
		w.broker.act("produce")
		w.broker.act("rollover")
		w.mu.Unlock()
	}
	if w.cfg.LegacyAttempt {
		w.mu.Lock()
		w.legacyAttempt()
		w.mu.Unlock()
	}
	for i := 1; i <= w.cfg.Replicas; i++ {
		w.startReplica(fmt.Sprintf("r%d", i))
	}
}

// legacyAttempt records an older tierkeeper's unfinished attempt on the
// topic's first ledger, its objects whole (Config.LegacyAttempt), through
// the broker's write: the broker holds it in memory as if it had loaded
// it (w.mu held).
func (w *World) legacyAttempt() {
	ls := w.broker.info.GetLedgerInfo()
	if len(ls) < 2 {
		return
	}
	lid := ls[0].GetLedgerId()
	id := w.newUUID()
	id[6], id[7] = 0x87, 0x4b // tierkeeper's tag before the prepare/object split
	if err := w.writeObjects(id, w.bk.ledgers[lid]); err != nil {
		panic(fmt.Sprintf("sim: legacy attempt's objects: %v", err))
	}
	md, _ := SimDriver.Metadata()
	msb, lsb := mledger.UUIDToBits(id)
	w.broker.write(fmt.Sprintf("(an older tierkeeper) prepare L%d %s", lid, w.alias(id)), func(info *mlproto.ManagedLedgerInfo) {
		for _, li := range info.GetLedgerInfo() {
			if li.GetLedgerId() == lid {
				li.OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(msb), UidLsb: proto.Int64(lsb), DriverMetadata: md}
			}
		}
	})
}

// Decisions made so far.
func (w *World) record(d Decision) {
	w.decisions = append(w.decisions, d)
}

// loop makes the run's decisions: after every one, once every goroutine
// of the run is blocked again, the invariants are checked.
func (w *World) loop() {
	next := 0 // of the script
	// w.step changes only here, with every goroutine of the run blocked:
	// the lines a woken goroutine traces carry the step of the decision
	// that woke it, whenever it runs.
	for w.step = 0; ; {
		w.cfg.Wait()
		w.mu.Lock()
		w.flushNotes()
		if w.autoRelease() || w.expireOne() {
			w.mu.Unlock()
			continue
		}
		w.step++
		w.checkState()
		if w.viol != nil || w.step > w.cfg.Steps || (w.cfg.Script != nil && next >= len(w.cfg.Script)) {
			w.step--
			w.mu.Unlock()
			return
		}
		if w.cfg.Debug {
			var ds []string
			for _, c := range w.grantable() {
				ds = append(ds, c.desc)
			}
			w.pendHist = append(w.pendHist, fmt.Sprintf("%d: %s", w.step, strings.Join(ds, " | ")))
		}
		var d Decision
		if w.cfg.Script != nil {
			d = w.cfg.Script[next]
			next++
		} else {
			d = w.choose()
		}
		sleep := w.apply(d)
		w.mu.Unlock()
		if sleep > 0 {
			// Goroutines whose timers fire at the instant the sleep ends
			// run now too: the driver touches nothing until they are
			// blocked again (the Wait above); the sessions whose timeout
			// passed are expired there, one at a time.
			time.Sleep(sleep)
		}
	}
}

// timeSteps are the durations a time decision advances by: odd values,
// so that timers started at different steps rarely fire together.
var timeSteps = []time.Duration{1 * time.Millisecond, 3 * time.Millisecond, 17 * time.Millisecond, 131 * time.Millisecond,
	1013 * time.Millisecond, 4099 * time.Millisecond}

// choose picks the next decision at random (w.mu held).
func (w *World) choose() Decision {
	r := w.rng
	calls := w.grantable()
	type option struct {
		weight float64
		d      func() Decision
	}
	var opts []option
	if len(calls) > 0 {
		opts = append(opts, option{10 * w.swarm["grant"], func() Decision {
			// Actors run at different speeds, changing every 16 steps
			// (a slow process, a pause): windows between two requests
			// of one actor open wide while another makes many.
			if w.step%16 == 1 || w.speed == nil {
				w.speed = map[string]float64{}
			}
			total := 0.0
			ws := make([]float64, len(calls))
			for i, c := range calls {
				sp, ok := w.speed[c.a.name]
				if !ok {
					sp = []float64{0.05, 0.3, 1, 1, 3, 10}[r.IntN(6)]
					w.speed[c.a.name] = sp
				}
				ws[i] = sp
				total += sp
			}
			x := r.Float64() * total
			c := calls[len(calls)-1]
			for i, wi := range ws {
				if x < wi {
					c = calls[i]
					break
				}
				x -= wi
			}
			d := Decision{Kind: "grant", Call: c.desc}
			isZK := strings.HasPrefix(c.desc, c.a.name+" zk ")
			isFP := strings.HasPrefix(c.desc, c.a.name+" fp ")
			f, sw := w.cfg.Faults, w.swarm
			loss, crash, fail := f.Loss*sw["loss"], f.Crash*sw["crash"], f.Fail*sw["fail"]
			switch x := r.Float64(); {
			case isZK && x < loss/2:
				d.Fault = "lose-request"
			case isZK && x < loss:
				d.Fault = "lose-reply"
			case isFP && x < crash:
				d.Fault = "crash"
			case isFP && x < crash+fail:
				d.Fault = "fail"
			}
			return d
		}})
	}
	opts = append(opts, option{w.swarm["time"], func() Decision { return Decision{Kind: "time", D: timeSteps[r.IntN(len(timeSteps))]} }})
	opts = append(opts, option{1.5 * w.swarm["broker"], func() Decision {
		acts := []string{"produce", "produce", "produce", "rollover", "trim", "unload"}
		if w.cfg.BrokerOffload || w.cfg.OperatorOffload {
			acts = append(acts, "offload", "offload", "offload")
		}
		return Decision{Kind: "broker", What: acts[r.IntN(len(acts))]}
	}})
	var live []*actor
	var deadNames []string
	for _, name := range w.replicaNames() {
		a := w.current(name)
		if a != nil && !a.dead {
			live = append(live, a)
		} else {
			deadNames = append(deadNames, name)
		}
	}
	if len(live) > 0 {
		opts = append(opts, option{w.swarm["offer"], func() Decision { return Decision{Kind: "offer", Actor: live[r.IntN(len(live))].name} }})
		f := w.cfg.Faults
		opts = append(opts, option{f.Expire * 20 * w.swarm["expire"], func() Decision { return Decision{Kind: "expire", Actor: live[r.IntN(len(live))].name} }})
		opts = append(opts, option{f.Partition * 20 * w.swarm["partition"], func() Decision {
			a := live[r.IntN(len(live))]
			if a.partitioned {
				return Decision{Kind: "heal", Actor: a.name}
			}
			return Decision{Kind: "partition", Actor: a.name}
		}})
	}
	// A process pause (GC, CPU starvation): one actor with requests
	// pending makes no progress for a while.
	if len(calls) > 0 {
		opts = append(opts, option{0.3 * w.swarm["pause"], func() Decision {
			return Decision{Kind: "pause", Actor: calls[r.IntN(len(calls))].a.name, N: 4 + r.IntN(80)}
		}})
	}
	if len(deadNames) > 0 {
		opts = append(opts, option{0.5 * w.swarm["restart"], func() Decision { return Decision{Kind: "restart", Actor: deadNames[r.IntN(len(deadNames))]} }})
	}
	if w.cfg.CLI {
		for _, name := range []string{"cli1", "cli2"} {
			if a := w.current(name); a == nil || a.done {
				opts = append(opts, option{0.5 * w.swarm["cli"], func() Decision { return Decision{Kind: "cli", Actor: name} }})
			}
		}
	}
	total := 0.0
	for _, o := range opts {
		total += o.weight
	}
	x := r.Float64() * total
	for _, o := range opts {
		if x < o.weight {
			return o.d()
		}
		x -= o.weight
	}
	return opts[len(opts)-1].d()
}

// apply carries out d and records it if it applied; it returns how long
// the driver is to sleep (a time decision) (w.mu held).
func (w *World) apply(d Decision) time.Duration {
	switch d.Kind {
	case "grant":
		for _, c := range w.grantable() {
			if !matches(c.desc, d.Call) {
				continue
			}
			w.record(d)
			w.grants++
			if d.Fault != "" {
				w.tracef("%s [%s]", c.desc, d.Fault)
			} else {
				w.tracef("%s", c.desc)
			}
			if d.Fault == "crash" {
				w.release(c, "crash", nil)
				w.crash(c.a)
				return 0
			}
			w.release(c, d.Fault, nil)
			// Identical reads of one actor (two goroutines reading the
			// same znode: a late lease Release and a TryAcquire) are
			// indistinguishable here; they go together, so the schedule
			// does not depend on which of them arrived first.
			if isRead(c.desc) {
				for _, o := range w.grantable() {
					if o.a == c.a && o.desc == c.desc {
						w.release(o, d.Fault, nil)
					}
				}
			}
			return 0
		}
	case "time":
		w.record(d)
		w.tracef("time +%s", d.D)
		return d.D
	case "broker":
		w.record(d)
		w.broker.act(d.What)
	case "offer":
		if a := w.current(d.Actor); a != nil && !a.dead && a.sched != nil {
			w.record(d)
			a.offer()
		}
	case "expire":
		if a := w.current(d.Actor); a != nil && !a.dead && a.sess != nil && !a.sess.lostClosed {
			w.record(d)
			w.tracef("%s session expired by the server", a.name)
			w.expire(a.sess)
		}
	case "partition":
		if a := w.current(d.Actor); a != nil && !a.dead && !a.partitioned && a.sess != nil {
			w.record(d)
			w.tracef("%s partitioned from zookeeper", a.name)
			a.partitioned, a.partitionedAt = true, w.now()
		}
	case "pause":
		if a := w.current(d.Actor); a != nil && !a.dead {
			w.record(d)
			w.tracef("%s paused for %d decisions", a.name, d.N)
			a.pausedUntil = w.step + d.N
		}
	case "heal":
		if a := w.current(d.Actor); a != nil && a.partitioned {
			w.record(d)
			w.tracef("%s partition healed", a.name)
			a.partitioned = false
		}
	case "restart":
		if a := w.current(d.Actor); a == nil || a.dead {
			w.record(d)
			w.mu.Unlock()
			w.startReplica(d.Actor)
			w.mu.Lock()
		}
	case "cli":
		if a := w.current(d.Actor); w.cfg.CLI && (a == nil || a.done) {
			w.record(d)
			w.mu.Unlock()
			w.startCLI(d.Actor)
			w.mu.Lock()
		}
	}
	return 0
}

// isRead tells a request that changes nothing.
func isRead(desc string) bool {
	for _, r := range []string{" zk get ", " zk children ", " store get ", " store head ", " store get-range ", " bk read-"} {
		if strings.Contains(desc, r) {
			return true
		}
	}
	return false
}

// matches says whether pending call desc is the one decision call names:
// equal but for znode versions (a replayed schedule with decisions left
// out meets other versions), or, for a call ending in "*", any call that
// starts with the rest.
func matches(desc, call string) bool {
	if p, ok := strings.CutSuffix(call, "*"); ok {
		return strings.HasPrefix(desc, p)
	}
	return desc == call || stripVersions(desc) == stripVersions(call)
}

func stripVersions(s string) string {
	f := strings.Fields(s)
	out := f[:0]
	for _, x := range f {
		if len(x) > 1 && x[0] == 'v' && strings.Trim(x[1:], "0123456789") == "" {
			continue
		}
		out = append(out, x)
	}
	return strings.Join(out, " ")
}

// expireOne expires the first session (in creation order) of a
// partitioned or crashed process whose session timeout has passed, and
// reports whether there was one. As autoRelease does, it ends one session
// at a time with the run quiescent in between: two sessions expiring at
// once would wake two processes together, whose steps until they block
// again (trace lines, a scheduler's stop) would interleave as the Go
// scheduler happens to run them (w.mu held).
func (w *World) expireOne() bool {
	now := w.now()
	for _, a := range w.actors {
		s := a.sess
		if s == nil || s.lostClosed {
			continue
		}
		var since time.Time
		switch {
		case a.dead:
			since = a.diedAt
		case a.partitioned:
			since = a.partitionedAt
		default:
			continue
		}
		if now.Sub(since) >= s.timeout {
			w.tracef("%s session expired (no contact for %s)", a.name, now.Sub(since).Round(time.Millisecond))
			w.expire(s)
			return true
		}
	}
	return false
}

// expire ends session s at the server and tells its client (w.mu held).
func (w *World) expire(s *session) {
	gone := w.zk.expire(s.id)
	for _, p := range gone {
		w.tracef("  ephemeral %s deleted", p)
	}
	s.lostClosed = true
	close(s.lost)
}

// crash kills actor a: its pending calls fail, later ones fail at once,
// its contexts end; its session lives on at the server until it times
// out (w.mu held).
func (w *World) crash(a *actor) {
	w.tracef("%s CRASHED", a.name)
	a.dead, a.diedAt = true, w.now()
	if a.cancel != nil {
		a.cancel()
	}
}

// shutdown ends every actor and waits for their goroutines.
func (w *World) shutdown() {
	w.mu.Lock()
	w.cancel()
	for _, a := range w.actors {
		if !a.dead {
			a.dead = true
			if a.cancel != nil {
				a.cancel()
			}
		}
	}
	for _, c := range slices.Clone(w.pending) {
		w.release(c, "", errEnded)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

func (w *World) replicaNames() []string {
	var out []string
	for i := 1; i <= w.cfg.Replicas; i++ {
		out = append(out, fmt.Sprintf("r%d", i))
	}
	return out
}

// current returns the latest incarnation of the named actor (w.mu held).
func (w *World) current(name string) *actor {
	for i := len(w.actors) - 1; i >= 0; i-- {
		if w.actors[i].name == name {
			return w.actors[i]
		}
	}
	return nil
}
