package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// confAgent is a real agent server whose /conf serves the bookie's
// bookkeeper.conf (serve --conf) and whose capacity figures are fixed.
func confAgent(t *testing.T, confPath string) string {
	t.Helper()
	jdir, ldir := t.TempDir(), t.TempDir()
	s, err := bookieagent.NewSampler(bookieagent.SamplerOptions{
		Dirs: []bookieagent.DirRole{{Dir: jdir, Role: bookieagent.RoleJournal}, {Dir: ldir, Role: bookieagent.RoleLedger}},
		Statfs: func(context.Context, string) (bookieagent.FSUsage, error) {
			return bookieagent.FSUsage{Size: 1 << 40, Avail: 1 << 39, FSType: "xfs"}, nil
		},
		Host: bookieagent.HostFS{ProcPath: t.TempDir(), SysPath: t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Sample(context.Background())
	f, err := os.Open(confPath)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := bookieagent.ParseConf(confPath, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := bookieagent.NewServer(bookieagent.ServerOptions{Sampler: s, Conf: conf})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetBench(bookieagent.BenchState{Status: "done", Recommendation: profileRec(t, "nvme")})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

// writeOn writes one ledger per ensemble with BookKeeper's Java client
// (a placement policy that takes the ensemble from the ledger's custom
// metadata), W=2 A=2 capped at the ensemble size.
func writeOn(t *testing.T, java *testenv.JavaTools, bk *testenv.BookKeeperCluster, entries int, ensembles ...[]string) []testenv.WrittenLedger {
	t.Helper()
	var parts []string
	for _, e := range ensembles {
		parts = append(parts, strings.Join(e, ","))
	}
	m := java.WriteLedgers(t, bk, testenv.WriteLedgersOptions{Digests: []string{"CRC32C"}, Entries: entries,
		Extra: []string{"--ensembles", strings.Join(parts, ";"), "--write-quorum", "2", "--ack-quorum", "2"}})
	if len(m.Ledgers) != len(ensembles) {
		t.Fatalf("wrote %d ledgers, want %d", len(m.Ledgers), len(ensembles))
	}
	for i, l := range m.Ledgers {
		if !slices.Equal(l.Ensembles[0].Bookies, ensembles[i]) {
			t.Fatalf("ledger %d has ensemble %v, want the chosen %v", l.LedgerID, l.Ensembles[0].Bookies, ensembles[i])
		}
	}
	return m.Ledgers
}

func checkNamed(p *Plan, name string) (Check, bool) {
	for _, c := range p.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// TestScaleInPlanRealBookies plans scale-ins of 5 real BookKeeper 4.17
// bookies (AutoRecovery running in bookie 0, HTTP admin servers on) holding
// ledgers the Java client wrote on chosen ensembles: removing the two
// bookies that hold every copy of a ledger is infeasible and names it;
// a removal that keeps a copy of everything is feasible, one bookie at a
// time; a ledger isolated to a group with no bookie left outside its
// ensemble, or whose replacement would put a write quorum on one rack, is
// not; a silent agent and a bookie named by ledgers but not registered
// refuse the plan. The same cluster, started with different settings per
// bookie, gives the fleet's running configuration.
func TestScaleInPlanRealBookies(t *testing.T) {
	start := time.Now()
	z := testenv.StartZooKeeper(t)
	bk := testenv.StartBookiesWith(t, z, 5, testenv.BookieOptions{HTTP: true, ExtraFor: map[int][]string{
		0: {"autoRecoveryDaemonEnabled=true"},
		2: {"httpServerEnabled=false"},
		3: {"readBufferSizeBytes=8192"},
		4: {"journalMaxGroupWaitMSec=7"},
	}})
	b := make([]string, 5)
	for i := range b {
		b[i] = bk.Bookie(i).ID
	}
	java := testenv.Java(t)
	ls := writeOn(t, java, bk, 6, []string{b[0], b[1]}, []string{b[1], b[2], b[3]}, []string{b[2], b[3]}, []string{b[3], b[4], b[0]})
	t.Logf("cluster and ledgers ready after %s", time.Since(start).Round(time.Millisecond))

	sess := z.Session(t, tkzk.Options{SessionTimeout: 10 * time.Second, ConnectTimeout: 10 * time.Second})
	agents := map[string]string{}
	for i, id := range b {
		if i == 2 {
			agents[id] = confAgent(t, bk.Bookie(2).Conf)
		} else {
			agents[id] = mltest.AgentServer(t, 0.30, profileRec(t, "nvme"))
		}
	}
	closed := testenv.ClosedAddr(t) // nothing listens: bookie 2's HTTP port
	_, closedPort, _ := strings.Cut(closed, ":")
	var httpPort int
	fmt.Sscan(closedPort, &httpPort)
	ctx := context.Background()
	// A generous bound: a bookie's HTTP admin server answers its first
	// request slowly on a loaded machine.
	timeout := 15 * time.Second
	read := func(agents map[string]string) *View {
		t.Helper()
		v, err := Read(ctx, Options{Conn: sess, Agents: agents, Timeout: timeout, RunningConfig: true, BookieHTTPPort: httpPort})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var v *View
	testenv.WaitFor(t, "bookie 0's AutoRecovery votes for auditor", 30*time.Second, 200*time.Millisecond, func() bool {
		v = read(agents)
		return v.Auditor != ""
	})
	if v.Auditor != b[0] || !slices.Equal(v.AutoRecovery, []string{b[0]}) {
		t.Errorf("auditor %q, AutoRecovery %v: want bookie 0 %s", v.Auditor, v.AutoRecovery, b[0])
	}
	if got := v.Bookies[slices.IndexFunc(v.Bookies, func(x Bookie) bool { return x.ID == b[0] })].HTTP; got != bk.Bookie(0).HTTPAddr {
		t.Errorf("bookie 0's HTTP endpoint from its registration %q, want %q", got, bk.Bookie(0).HTTPAddr)
	}

	t.Run("stranded", func(t *testing.T) {
		p, err := PlanScaleIn(v, PlanOptions{Remove: []string{b[0], b[1]}})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := checkNamed(p, "no ledger stranded")
		if p.Feasible || c.OK || len(p.Stranded) != 1 || p.Stranded[0].Ledger != ls[0].LedgerID || !slices.Equal(p.Stranded[0].WriteSet, []string{b[0], b[1]}) {
			t.Fatalf("removing both bookies of ledger %d: feasible %v, check %+v, stranded %+v", ls[0].LedgerID, p.Feasible, c, p.Stranded)
		}
		if !strings.Contains(c.Detail, fmt.Sprintf("ledger %d segment 0", ls[0].LedgerID)) {
			t.Errorf("detail does not name the ledger: %s", c.Detail)
		}
		// The command prints the plan and exits 1.
		bin := testenv.BuiltCommand(t, "bookieagent")
		var agentFlags []string
		for id, u := range agents {
			agentFlags = append(agentFlags, id+"="+u)
		}
		cmd := exec.Command(bin, "cluster", "--zk", z.Addr, "--no-managed-ledgers", "--agents", strings.Join(agentFlags, ","),
			"--bookie-http-port", closedPort, "--remove", b[0]+","+b[1])
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("exit %v, want 1; stderr %s", err, errb.String())
		}
		if !strings.Contains(out.String(), "NOT FEASIBLE") || !strings.Contains(out.String(), fmt.Sprintf("stranded: ledger %d segment 0", ls[0].LedgerID)) {
			t.Errorf("output:\n%s", out.String())
		}
		t.Logf("bookieagent cluster --remove %s,%s:\n%s%s", b[0], b[1], out.String(), errb.String())
		// The same as JSON.
		out.Reset()
		cmd = exec.Command(bin, "cluster", "--zk", z.Addr, "--no-managed-ledgers", "--agents", strings.Join(agentFlags, ","),
			"--bookie-http-port", closedPort, "--remove", b[0]+","+b[1], "--output", "json")
		cmd.Stdout = &out
		if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("--output json: exit %v, want 1", err)
		}
		var doc struct {
			Plan  Plan  `json:"scale_in"`
			Drift Drift `json:"running_config"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("--output json: %v\n%s", err, out.String())
		}
		if doc.Plan.Feasible || len(doc.Plan.Stranded) != 1 || len(doc.Drift.Bookies) != 5 || len(doc.Drift.Differing()) == 0 {
			t.Errorf("--output json: plan %+v, drift %+v", doc.Plan.Stranded, doc.Drift.Bookies)
		}
	})

	t.Run("feasible", func(t *testing.T) {
		p, err := PlanScaleIn(v, PlanOptions{Remove: []string{b[4], b[2]}})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Feasible || len(p.Refused) > 0 {
			t.Fatalf("removing bookies 2 and 4: refused %v, checks %+v, unplaceable %+v", p.Refused, p.Checks, p.Unplaceable)
		}
		// One at a time, least data first, each with its command and gate.
		if len(p.Remove) != 2 || len(p.Risks) != 2 {
			t.Fatalf("order %v, risks %+v", p.Remove, p.Risks)
		}
		var removal []Step
		for _, s := range p.Steps {
			if s.Bookie != "" {
				removal = append(removal, s)
			}
		}
		if len(removal) != 2 || removal[0].Bookie != p.Remove[0] || removal[1].Bookie != p.Remove[1] {
			t.Fatalf("removal steps %+v", removal)
		}
		for _, s := range removal {
			if !slices.Contains(s.Commands, "bin/bookkeeper shell decommissionbookie -bookieid "+s.Bookie) || len(s.Gate) == 0 || len(s.Watch) == 0 {
				t.Errorf("step %+v", s)
			}
		}
		// W=2, A=2: while a bookie is down its segments keep one copy,
		// below their ack quorum until re-replicated.
		for _, r := range p.Risks {
			if r.MinCopies != 1 || r.BelowAck != r.Segments || r.Segments == 0 {
				t.Errorf("risk %+v", r)
			}
		}
		if len(p.Rollback) < 3 || !strings.Contains(p.Rollback[0], "stop the running decommissionbookie") || !strings.Contains(p.Rollback[1], "cookie is deleted OR its disk is wiped") {
			t.Errorf("rollback %q", p.Rollback)
		}
		var text bytes.Buffer
		if err := WriteText(&text, v, nil, p, nil, nil); err != nil {
			t.Fatal(err)
		}
		t.Logf("plan:\n%s", text.String())
		// Before anything ran, the first step's gate does not pass.
		if g := CheckGate(v, p.Remove[0]); g.Passed || g.LedgersLeft == 0 {
			t.Errorf("gate before the step: %+v", g)
		}
	})

	t.Run("groups and racks", func(t *testing.T) {
		c := mltest.NewCreator(sess.Conn)
		rack := func(r string) map[string]string { return map[string]string{"rack": r} }
		m := map[string]map[string]map[string]string{
			"iso":    {b[2]: rack("/r1"), b[3]: rack("/r2")},
			"shared": {b[0]: rack("/r1"), b[1]: rack("/r2"), b[4]: rack("/r1")},
		}
		raw, _ := json.Marshal(m)
		if err := c.Create("/bookies", raw); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sess.Conn.Delete("/bookies", -1) }()
		vg := read(agents)
		if !vg.Racks {
			t.Fatal("racks not read")
		}
		// Ledger 2 lives in group iso, whose only other bookie is in its
		// ensemble: removing bookie 2 leaves AutoRecovery no target there,
		// although three bookies outside the ensemble remain.
		p, _ := PlanScaleIn(vg, PlanOptions{Remove: []string{b[2]}})
		if p.Feasible || len(p.Unplaceable) != 1 || p.Unplaceable[0].Ledger != ls[2].LedgerID {
			t.Errorf("isolation group: feasible %v, unplaceable %+v", p.Feasible, p.Unplaceable)
		}
		// Bookie 1 is the only /r2 bookie outside group iso. Ledger 0
		// (bookies 0 /r1 and 1 /r2, group shared): its only replacement in
		// the group is bookie 4 on /r1, beside bookie 0. Ledger 1 (bookies
		// 1 /r2, 2 /r1, 3 /r2, no common group): the candidates outside
		// its ensemble, 0 and 4, are both on /r1, so the write set
		// {1, 2} would end on one rack.
		p, _ = PlanScaleIn(vg, PlanOptions{Remove: []string{b[1]}})
		if p.Feasible || len(p.Unplaceable) != 2 || p.Unplaceable[0].Ledger != ls[0].LedgerID || p.Unplaceable[1].Ledger != ls[1].LedgerID ||
			!strings.Contains(p.Unplaceable[0].Detail, "two racks") || !strings.Contains(p.Unplaceable[1].Detail, "write set "+b[1]+","+b[2]) {
			t.Errorf("racks: feasible %v, unplaceable %+v", p.Feasible, p.Unplaceable)
		}
	})

	t.Run("running configuration", func(t *testing.T) {
		d := ComputeDrift(v, nil)
		if len(d.Bookies) != 5 || !slices.Equal(d.FromAgent, []string{b[2]}) {
			t.Fatalf("read %v, from agent %v, unread %v", d.Bookies, d.FromAgent, d.Unread)
		}
		key := func(d *Drift, k string) DriftKey {
			for _, x := range d.Keys {
				if x.Key == k {
					return x
				}
			}
			t.Fatalf("no key %s", k)
			return DriftKey{}
		}
		g := key(d, "journalMaxGroupWaitMSec")
		if g.Bookies[b[4]] != (DriftValue{Value: "7", Source: "running"}) || g.Bookies[b[0]] != (DriftValue{Value: "2", Source: "BookKeeper default"}) ||
			!slices.Equal(g.Values["7"], []string{b[4]}) || len(g.Values) != 2 {
			t.Errorf("journalMaxGroupWaitMSec: %+v", g)
		}
		r := key(d, "readBufferSizeBytes")
		if r.Bookies[b[3]].Value != "8192" || !slices.Equal(r.Values["8192"], []string{b[3]}) {
			t.Errorf("readBufferSizeBytes: %+v", r)
		}
		if w := key(d, "journalWriteBufferSizeKB"); w.Bookies[b[2]] != (DriftValue{Value: "256", Source: "agent conf"}) || len(w.Values) != 0 {
			t.Errorf("journalWriteBufferSizeKB (bookie 2 from its agent's conf): %+v", w)
		}
		// Against the merged recommendation.
		recs := map[string]*bookieagent.Recommendation{}
		for _, x := range v.Bookies {
			recs[x.ID] = x.Recommendation
		}
		merged, err := Merge(recs)
		if err != nil {
			t.Fatal(err)
		}
		dm := ComputeDrift(v, merged)
		g = key(dm, "journalMaxGroupWaitMSec")
		if g.Recommended == "" || len(g.OffRecommendation) == 0 {
			t.Errorf("journalMaxGroupWaitMSec against %q: %+v", g.Recommended, g)
		}
		var text bytes.Buffer
		if err := WriteText(&text, v, nil, nil, dm, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "journalMaxGroupWaitMSec") || !strings.Contains(text.String(), "from the agent's conf: "+b[2]) {
			t.Errorf("text:\n%s", text.String())
		}
		t.Logf("running configuration:\n%s", text.String())
	})

	t.Run("refused", func(t *testing.T) {
		// An agent that does not answer.
		silent := map[string]string{}
		for k, u := range agents {
			silent[k] = u
		}
		silent[b[1]] = hungServer(t)
		timeout = 2 * time.Second
		p, _ := PlanScaleIn(read(silent), PlanOptions{Remove: []string{b[4]}})
		if p.Feasible || len(p.Refused) != 1 || !strings.Contains(p.Refused[0], b[1]) || !strings.Contains(p.Refused[0], "no answer within") {
			t.Errorf("silent agent: feasible %v, refused %q", p.Feasible, p.Refused)
		}
		// A bookie named by ledgers but not registered.
		bk.StopBookie(4)
		vs := read(agents)
		p, _ = PlanScaleIn(vs, PlanOptions{Remove: []string{b[2]}})
		if p.Feasible || len(p.Refused) != 1 || !strings.Contains(p.Refused[0], "bookie "+b[4]+" is named by 1 ledger segments but not registered") {
			t.Errorf("stopped bookie: feasible %v, refused %q", p.Feasible, p.Refused)
		}
	})
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// TestDecommissionByPlan removes a real bookie by the plan's steps with
// BookKeeper's own tools: AutoRecovery runs in bookies 0 and 1, the plan is
// feasible, the bookie is set read-only through its HTTP admin server,
// stopped, and `bookkeeper shell decommissionbookie -bookieid ID` (the
// plan's command) runs until AutoRecovery has re-replicated its ledgers
// and it deletes the cookie; the plan's gate passes only then, and every
// ledger is read back whole by the Go client from its new ensembles.
func TestDecommissionByPlan(t *testing.T) {
	start := time.Now()
	z := testenv.StartZooKeeper(t)
	bk := testenv.StartBookiesWith(t, z, 4, testenv.BookieOptions{HTTP: true, ExtraFor: map[int][]string{
		0: {"autoRecoveryDaemonEnabled=true"},
		1: {"autoRecoveryDaemonEnabled=true"},
	}})
	b := make([]string, 4)
	for i := range b {
		b[i] = bk.Bookie(i).ID
	}
	java := testenv.Java(t)
	ls := writeOn(t, java, bk, 8, []string{b[3], b[0]}, []string{b[1], b[3], b[2]}, []string{b[2], b[3]}, []string{b[0], b[1]})
	sess := z.Session(t, tkzk.Options{SessionTimeout: 10 * time.Second, ConnectTimeout: 10 * time.Second})
	agents := map[string]string{}
	for _, id := range b {
		agents[id] = mltest.AgentServer(t, 0.30, profileRec(t, "nvme"))
	}
	ctx := context.Background()
	read := func() *View {
		t.Helper()
		v, err := Read(ctx, Options{Conn: sess, Agents: agents, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var v *View
	testenv.WaitFor(t, "two AutoRecovery votes", 30*time.Second, 200*time.Millisecond, func() bool {
		v = read()
		return len(v.AutoRecovery) == 2
	})
	victim := b[3]
	p, err := PlanScaleIn(v, PlanOptions{Remove: []string{victim}, ZK: z.Addr})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Feasible {
		t.Fatalf("plan: refused %v checks %+v", p.Refused, p.Checks)
	}
	var step Step
	for _, s := range p.Steps {
		if s.Bookie == victim {
			step = s
		}
	}
	dec := "bin/bookkeeper shell decommissionbookie -bookieid " + victim
	if !slices.Contains(step.Commands, dec) {
		t.Fatalf("removal step %+v", step)
	}
	t.Logf("cluster, ledgers and plan ready after %s", time.Since(start).Round(time.Millisecond))

	// Read-only through the bookie's HTTP admin server, as the plan's curl.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+bk.Bookie(3).HTTPAddr+"/api/v1/bookie/state/readonly", strings.NewReader(`{"readOnly":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT readonly: %s", resp.Status)
	}
	testenv.WaitFor(t, victim+" registered read-only", 15*time.Second, 100*time.Millisecond, func() bool {
		for _, x := range read().Bookies {
			if x.ID == victim {
				return x.ReadOnly
			}
		}
		return false
	})
	bk.StopBookie(3)
	if g := CheckGate(read(), victim); g.Passed || g.LedgersLeft != 3 {
		t.Fatalf("gate before decommission: %+v", g)
	}
	bin := testenv.BuiltCommand(t, "bookieagent")
	gate := func() error {
		cmd := exec.Command(bin, "cluster", "--zk", z.Addr, "--no-managed-ledgers", "--gate", victim)
		out, err := cmd.CombinedOutput()
		t.Logf("bookieagent cluster --gate %s: %v\n%s", victim, err, out)
		return err
	}
	if err := gate(); err == nil {
		t.Errorf("--gate %s exits 0 before the decommission", victim)
	}
	decStart := time.Now()
	out, err := bk.Shell(ctx, 3*time.Minute, strings.Fields(strings.TrimPrefix(dec, "bin/bookkeeper shell "))...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", dec, err, out)
	}
	t.Logf("%s took %s", dec, time.Since(decStart).Round(time.Millisecond))
	v = read()
	if g := CheckGate(v, victim); !g.Passed {
		t.Fatalf("gate after decommission: %+v", g)
	}
	if err := gate(); err != nil {
		t.Errorf("--gate %s after the decommission: %v", victim, err)
	}

	// Every ledger, read back whole from its new ensemble.
	store, err := metadata.NewStore(ctx, sess, metadata.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Options{Resolver: store, ReadTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, w := range ls {
		md, err := store.ReadLedger(ctx, w.LedgerID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range md.Segments {
			if slices.Contains(s.Bookies, victim) {
				t.Errorf("ledger %d still names %s: %v", w.LedgerID, victim, s.Bookies)
			}
		}
		l, err := c.Open(md)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range w.Entries {
			got, err := l.ReadEntry(ctx, e.EntryID)
			if err != nil {
				t.Fatalf("ledger %d entry %d: %v", w.LedgerID, e.EntryID, err)
			}
			sum := sha256.Sum256(got.Payload)
			if hex.EncodeToString(sum[:]) != e.SHA256 || len(got.Payload) != e.Length {
				t.Errorf("ledger %d entry %d differs from what the Java client wrote", w.LedgerID, e.EntryID)
			}
		}
	}
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// TestStatefulSetOrder: with --statefulset the plan removes the highest
// ordinals first (whatever their data), --remove-count picks them, and a
// removal of other ordinals fails the check: a StatefulSet's scale-in
// would stop other bookies than the plan's. The view is built by hand:
// StatefulSet host names cannot be bookie ids of local test bookies.
func TestStatefulSetOrder(t *testing.T) {
	id := func(n int) string {
		return fmt.Sprintf("pulsar-bookie-%d.pulsar-bookie.pulsar.svc.cluster.local:3181", n)
	}
	v := &View{AutoRecovery: []string{"autorecovery-0"}, Auditor: "autorecovery-0", LostBookieRecoveryDelay: -1}
	for n := range 5 {
		v.Bookies = append(v.Bookies, Bookie{ID: id(n), Writable: true, Report: &bookieagent.Report{LedgerWarnHeadroomBytes: 1 << 40}})
	}
	// Ordinal 4 holds much more than ordinal 3.
	seg := func(first int64, ids ...int) metadata.Segment {
		s := metadata.Segment{FirstEntryID: first}
		for _, n := range ids {
			s.Bookies = append(s.Bookies, id(n))
		}
		return s
	}
	closed := metadata.StateClosed.String()
	v.Ledgers = []Ledger{
		{ID: 1, Ensemble: 2, WriteQuorum: 2, AckQuorum: 2, State: closed, Length: 1 << 30, LastEntryID: 99, Segments: []metadata.Segment{seg(0, 4, 0)}},
		{ID: 2, Ensemble: 2, WriteQuorum: 2, AckQuorum: 2, State: closed, Length: 1 << 10, LastEntryID: 9, Segments: []metadata.Segment{seg(0, 3, 1)}},
		{ID: 3, Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, State: closed, Length: 1 << 20, LastEntryID: 9, Segments: []metadata.Segment{seg(0, 1, 2, 4), seg(5, 1, 2, 0)}},
	}
	v.MaxEnsemble, v.MaxWrite, v.MaxAck = 3, 2, 2
	p, err := PlanScaleIn(v, PlanOptions{RemoveCount: 2, StatefulSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Feasible || !slices.Equal(p.Remove, []string{id(4), id(3)}) || !strings.Contains(p.Order, "highest StatefulSet ordinal first") {
		t.Fatalf("feasible %v, order %v (%s), checks %+v", p.Feasible, p.Remove, p.Order, p.Checks)
	}
	var cmds []string
	for _, s := range p.Steps {
		if s.Bookie != "" {
			cmds = append(cmds, s.Commands[0])
		}
	}
	if len(cmds) != 2 || !strings.HasPrefix(cmds[0], "kubectl scale statefulset pulsar-bookie --replicas=4 ") || !strings.HasPrefix(cmds[1], "kubectl scale statefulset pulsar-bookie --replicas=3 ") {
		t.Errorf("stop commands %q", cmds)
	}
	// The scale-down keeps the PVC only with whenScaled Retain, and stops
	// the named ordinals only when they start at 0: checked first.
	if c := p.Steps[0].Commands; len(c) != 1 || !strings.HasPrefix(c[0], "kubectl get statefulset pulsar-bookie -o jsonpath='{.spec.persistentVolumeClaimRetentionPolicy.whenScaled} {.spec.ordinals.start}'") {
		t.Errorf("check step commands %q", c)
	}
	// Without --statefulset the least data goes first.
	if p, _ := PlanScaleIn(v, PlanOptions{Remove: []string{id(4), id(3)}}); !slices.Equal(p.Remove, []string{id(3), id(4)}) {
		t.Errorf("order without --statefulset %v", p.Remove)
	}
	// Ordinal 2 is not the top: refused by the check.
	p, _ = PlanScaleIn(v, PlanOptions{Remove: []string{id(4), id(2)}, StatefulSet: true})
	if c, _ := checkNamed(p, "StatefulSet ordinals"); p.Feasible || c.OK || !strings.Contains(c.Detail, "not "+id(2)) {
		t.Errorf("removing ordinals 4 and 2: %+v", c)
	}
	// Segment 1 of ledger 3 (entries 5–9 on 1, 2, 0) was not on ordinal 4;
	// its first segment was. A segment without entries is no risk.
	v.Ledgers[2].Segments = append(v.Ledgers[2].Segments, seg(10, 4, 3, 2))
	if p, _ := PlanScaleIn(v, PlanOptions{Remove: []string{id(4), id(3)}, StatefulSet: true}); !p.Feasible {
		t.Errorf("an empty last segment on the removed bookies made the plan infeasible: %+v %+v", p.Checks, p.Stranded)
	}
	// Ids that are not pod host names are refused with --statefulset.
	v.Bookies[0].ID = "10.0.0.1:3181"
	if _, err := PlanScaleIn(v, PlanOptions{RemoveCount: 1, StatefulSet: true}); !errors.Is(err, ErrBadRemove) {
		t.Errorf("IP bookie ids with --statefulset: %v", err)
	}
}
