package offloader

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestOpenPeers opens every peer on a real ZooKeeper and an fs store, and
// shows that each failure names the peer and what was waited for.
func TestOpenPeers(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	ctx := t.Context()
	store, err := client.Parse([]byte(`{"type": "fs", "config": {"dir": "` + t.TempDir() + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	servers, _, err := tzk.ParseServiceURI(z.Addr)
	if err != nil {
		t.Fatal(err)
	}
	pc := PeersConfig{ZKServers: servers, ZKOptions: tzk.Options{ConnectTimeout: 5 * time.Second}, LedgersRoot: "/peers-ledgers",
		Store: &store, StoreName: "--store s.yaml"}
	all := PeersOptions{Bookies: &bkclient.Options{}, Store: true}

	// No ledgers root yet: the ledger metadata says so.
	if _, err := OpenPeers(ctx, pc, all); !errors.Is(err, metadata.ErrNoCluster) || !strings.Contains(err.Error(), "/peers-ledgers") {
		t.Errorf("missing ledgers root: %v", err)
	}
	p, err := OpenPeers(ctx, pc, PeersOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ZK.Create("/peers-ledgers", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if p.Ledgers != nil || p.BK != nil || p.Store != nil || p.Admin != nil {
		t.Errorf("opened more than asked: %+v", p)
	}
	p.Close()

	p, err = OpenPeers(ctx, pc, all)
	if err != nil {
		t.Fatal(err)
	}
	if p.ZK == nil || p.ML == nil || p.Ledgers == nil || p.BK == nil || p.Store == nil || p.Admin != nil {
		t.Errorf("peers %+v", p)
	}
	if ids, err := p.Ledgers.ListLedgers(ctx); err != nil || len(ids) != 0 {
		t.Errorf("ledgers %v %v", ids, err)
	}
	if d := p.PipelineDeps(); d.Broker != nil || d.Bookies == nil || d.Ledgers == nil || d.Store == nil {
		t.Errorf("pipeline deps %+v", d)
	}
	p.Close()
	if err := p.ZK.Err(); err == nil {
		t.Error("session still open after Close")
	}

	// A store that cannot be opened: its name in the error.
	bad, err := client.Parse([]byte(`{"type": "fs", "config": {"dir": "` + filepath.Join("/proc", "no-such-dir") + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	bpc := pc
	bpc.Store = &bad
	if _, err := OpenPeers(ctx, bpc, all); err == nil || !strings.HasPrefix(err.Error(), "--store s.yaml: ") {
		t.Errorf("bad store: %v", err)
	}

	// ZooKeeper not answering: bounded by the connect timeout, the error
	// names the server and the bound.
	cpc := pc
	closed := testenv.ClosedAddr(t)
	cpc.ZKServers, cpc.ZKOptions.ConnectTimeout = []string{closed}, 500*time.Millisecond
	start := time.Now()
	_, err = OpenPeers(ctx, cpc, all)
	if !errors.Is(err, tzk.ErrConnectTimeout) || !strings.Contains(err.Error(), closed) || !strings.Contains(err.Error(), "500ms") {
		t.Errorf("closed ZooKeeper: %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %s with a 500ms connect timeout", el)
	}
}
