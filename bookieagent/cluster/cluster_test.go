package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger/status"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func profileRec(t *testing.T, name string) *bookieagent.Recommendation {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "profiles", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var in bookieagent.Input
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	r, err := bookieagent.Recommend(in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hungServer returns the URL of a server that never answers (until the
// request or the test ends).
func hungServer(t *testing.T) string {
	t.Helper()
	hang := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(hang) })
	return hung.URL
}

// TestClusterRealBookies reads a real cluster: ZooKeeper, 4 BookKeeper
// 4.17 bookies, ledgers written by BookKeeper's Java client (E=3 W=2 A=2
// and E=2 W=2 A=2), a Pulsar managed ledger owning some of them (one
// offloaded, one closed, one the open last ledger), an under-replicated
// mark as AutoRecovery's auditor writes it, and two real agents.
func TestClusterRealBookies(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	bk := testenv.StartBookies(t, z, 4)
	java := testenv.Java(t)
	m3 := java.WriteLedgers(t, bk, testenv.WriteLedgersOptions{Digests: []string{"CRC32C", "CRC32C", "CRC32C"}, Entries: 24,
		Extra: []string{"--ensemble", "3", "--write-quorum", "2", "--ack-quorum", "2"}})
	m2 := java.WriteLedgers(t, bk, testenv.WriteLedgersOptions{Digests: []string{"CRC32C"}, Entries: 12, Seed: 50,
		Extra: []string{"--ensemble", "2", "--write-quorum", "2", "--ack-quorum", "2"}})
	written := append(append([]testenv.WrittenLedger{}, m3.Ledgers...), m2.Ledgers...)
	off, closed, open := m3.Ledgers[0], m3.Ledgers[1], m3.Ledgers[2]

	sess := z.Session(t, tkzk.Options{SessionTimeout: 10 * time.Second, ConnectTimeout: 10 * time.Second})
	conn := sess.Conn
	c := mltest.NewCreator(conn)
	now := time.Now()
	if err := c.CreateML("public/default/persistent/orders", mltest.Info(
		mltest.Ledger{ID: off.LedgerID, Entries: off.EntryCount, Size: off.Length, Closed: now.Add(-2 * time.Hour), Offloaded: now.Add(-time.Hour)},
		mltest.Ledger{ID: closed.LedgerID, Entries: closed.EntryCount, Size: closed.Length, Closed: now.Add(-time.Hour)},
		mltest.Ledger{ID: open.LedgerID},
	)); err != nil {
		t.Fatal(err)
	}
	// AutoRecovery's mark: <root>/underreplication/ledgers/<hex path>/urL<id>.
	ur := fmt.Sprintf("/ledgers/underreplication/ledgers/%04x/%04x/%04x/%04x/urL%010d",
		m2.Ledgers[0].LedgerID>>48&0xffff, m2.Ledgers[0].LedgerID>>32&0xffff, m2.Ledgers[0].LedgerID>>16&0xffff, m2.Ledgers[0].LedgerID&0xffff, m2.Ledgers[0].LedgerID)
	missing := m2.Ledgers[0].Ensembles[0].Bookies[0]
	if err := c.Create(ur, []byte(fmt.Sprintf("replica: \"%s\"\nctime: 1\n", missing))); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	ids := bk.RunningBookies()
	slices.Sort(ids)
	// A hanging agent: its bookie's figures are an error within the bound.
	hung := hungServer(t)
	agents := map[string]string{
		ids[0]: mltest.AgentServer(t, 0.40, profileRec(t, "nvme")),
		ids[1]: mltest.AgentServer(t, 0.50, profileRec(t, "sata-ssd")),
		ids[2]: mltest.AgentServer(t, 0.30, profileRec(t, "nvme")),
		ids[3]: hung,
	}
	read := func() *View {
		t.Helper()
		start := time.Now()
		v, err := Read(ctx, Options{Conn: sess, ManagedLedgers: status.LedgerOwners(mledger.New(sess, nil)), Agents: agents, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > 20*time.Second {
			t.Errorf("read took %v: the hanging agent was not bounded", el)
		}
		return v
	}
	v := read()

	// Bookies, ledgers, quorums.
	if len(v.Bookies) != 4 || v.LedgerCount != len(written) || v.MaxEnsemble != 3 || v.MaxWrite != 2 || v.MaxAck != 2 {
		t.Fatalf("view: %d bookies, %d ledgers (want %d), E/W/A %d/%d/%d", len(v.Bookies), v.LedgerCount, len(written), v.MaxEnsemble, v.MaxWrite, v.MaxAck)
	}
	state := map[int64]string{}
	for _, l := range v.Ledgers {
		state[l.ID] = l.ManagedState
	}
	if state[off.LedgerID] != "offloaded" || state[closed.LedgerID] != "bookkeeper" || state[open.LedgerID] != "open" || state[m2.Ledgers[0].LedgerID] != "none" {
		t.Errorf("managed states %v", state)
	}
	if len(v.UnderReplicated) != 1 || v.UnderReplicated[0].Ledger != m2.Ledgers[0].LedgerID || !slices.Equal(v.UnderReplicated[0].Replicas, []string{missing}) {
		t.Errorf("under-replicated %+v", v.UnderReplicated)
	}
	var hangErr string
	for _, b := range v.Bookies {
		if b.ID == ids[3] {
			hangErr = b.AgentError
		} else if b.Recommendation == nil || b.Report == nil {
			t.Errorf("agent of %s: %q", b.ID, b.AgentError)
		}
	}
	if !strings.Contains(hangErr, "no answer within 2s") {
		t.Errorf("hanging agent: %q", hangErr)
	}

	// Bytes: every closed ledger is stored W times over its ensemble, so
	// the per-bookie figures add up to Σ length × W; a bookie holds the
	// ledgers whose ensembles name it (from the Java client's manifest).
	var sum, want float64
	for _, b := range v.Bookies {
		d := dataOf(v, b.ID)
		sum += d.Total.Bytes
		n := 0
		for _, w := range written {
			for _, e := range w.Ensembles {
				if slices.Contains(e.Bookies, b.ID) {
					n++
					break
				}
			}
		}
		if d.Total.Ledgers != n {
			t.Errorf("%s: %d ledgers, the manifest says %d", b.ID, d.Total.Ledgers, n)
		}
	}
	for _, w := range written {
		want += float64(w.Length) * float64(w.WriteQuorum)
	}
	if math.Abs(sum-want) > 1 {
		t.Errorf("bytes over all bookies %.0f, want Σ length × W = %.0f", sum, want)
	}

	// A scale-in of a bookie holding the offloaded ledger.
	victim := off.Ensembles[0].Bookies[0]
	p, err := PlanScaleIn(v, PlanOptions{Remove: []string{victim}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Check{}
	for _, c := range p.Checks {
		byName[c.Name] = c
	}
	if !byName["room for new ledgers"].OK || byName["nothing under-replicated now"].OK || p.Feasible {
		t.Errorf("checks %+v: want room for new ledgers, the under-replicated mark failing the plan", p.Checks)
	}
	// No AutoRecovery runs here: no auditor is elected, and the plan says
	// so instead of waiting for one forever.
	if c, ok := byName["auditor elected"]; !ok || c.OK || v.Auditor != "" {
		t.Errorf("auditor elected %+v (auditor %q) with no AutoRecovery process", c, v.Auditor)
	}
	// The hanging agent's bookie has no report: the plan is refused.
	if len(p.Refused) != 1 || !strings.Contains(p.Refused[0], ids[3]) {
		t.Errorf("refused %q, want the hanging agent of %s", p.Refused, ids[3])
	}
	d := p.Data[0]
	if math.Abs(d.Offloaded.Bytes-float64(off.Length)*2/3) > 1 || d.Offloaded.Ledgers != 1 {
		t.Errorf("offloaded share %+v, want the offloaded ledger's %d × 2/3", d.Offloaded, off.Length)
	}
	if slices.Contains(closed.Ensembles[0].Bookies, victim) != (d.Offloadable.Ledgers == 1) {
		t.Errorf("offloadable %+v for ensemble %v", d.Offloadable, closed.Ensembles[0].Bookies)
	}
	if p.AfterOffload.Bytes >= p.AsIs.Bytes || p.AsIs.Seconds <= 0 {
		t.Errorf("estimates as is %+v, after offload %+v", p.AsIs, p.AfterOffload)
	}
	last := p.Steps[len(p.Steps)-1]
	if last.Bookie != victim || !slices.Contains(last.Commands, "bin/bookkeeper shell decommissionbookie -bookieid "+victim) || len(p.Rollback) == 0 {
		t.Errorf("steps %+v", p.Steps)
	}
	// The offload-first step uses the offloader's real flags.
	for _, s := range p.Steps {
		for _, c := range s.Commands {
			if strings.HasPrefix(c, "offloader ") && (!strings.Contains(c, "offloader offload ") || !strings.Contains(c, " --delete-bookkeeper ") || strings.Contains(c, "--trim")) {
				t.Errorf("offload command %q", c)
			}
		}
	}
	// Once AutoRecovery has caught up, only the missing auditor and the
	// silent agent stand in the way; removing two of four bookies leaves
	// fewer than the largest ensemble.
	if err := conn.Delete(ur, -1); err != nil {
		t.Fatal(err)
	}
	v = read()
	p, _ = PlanScaleIn(v, PlanOptions{Remove: []string{victim}})
	for _, c := range p.Checks {
		if !c.OK && c.Name != "auditor elected" && c.Name != "room on the remaining bookies" {
			t.Errorf("after recovery: %+v", c)
		}
	}
	if p, _ = PlanScaleIn(v, PlanOptions{RemoveCount: 2}); p.Feasible {
		t.Errorf("removing 2 of 4 with E=3: %+v", p.Checks)
	} else if c, _ := checkNamed(p, "room for new ledgers"); c.OK {
		t.Errorf("removing 2 of 4 with E=3: %+v", c)
	}
	if _, err := PlanScaleIn(v, PlanOptions{Remove: []string{"10.9.9.9:3181"}}); !errors.Is(err, ErrBadRemove) {
		t.Errorf("unknown bookie: %v", err)
	}
	// The measured rate comes from the remaining bookies' agents.
	if p, _ = PlanScaleIn(v, PlanOptions{Remove: []string{victim}}); !strings.Contains(p.AsIs.Basis, "measured sustained ledger-disk rate") {
		t.Errorf("estimate basis %q", p.AsIs.Basis)
	}
}
