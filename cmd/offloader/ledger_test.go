package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/bookietest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/cli/clitest"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

var scope = testenv.NewSharedTB("cmd-offloader")

// runMainEnv makes the test binary run main() with its arguments instead
// of the tests (exit-code tests run it as a child process).
const runMainEnv = "TK_OFFLOADER_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Args = append([]string{"offloader"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	code := m.Run()
	scope.Close()
	os.Exit(code)
}

var sharedZK testenv.Shared[*testenv.ZooKeeper]

func startZK(t *testing.T) *testenv.ZooKeeper {
	t.Helper()
	return sharedZK.Get(t, scope, "zookeeper", testenv.StartZooKeeper)
}

// fixture: a ZooKeeper ledgers root with LAYOUT, fake bookies registered
// under available/ (BookieServiceInfo pointing at the fakes), and a closed
// ledger written to them.
type fixture struct {
	zkAddr  string
	root    string
	cluster *bookietest.Cluster
	md      *metadata.LedgerMetadata
	data    [][]byte
}

func newFixture(t *testing.T, root string, ledgerID int64) *fixture {
	t.Helper()
	z := startZK(t)
	conn := z.Session(t, tkzk.Options{})
	defer conn.Close()
	testenv.CreatePath(t, conn.Conn, root+"/LAYOUT", []byte("2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"))
	cl := bookietest.StartCluster(t, 3)
	for _, id := range cl.IDs {
		host, port, _ := net.SplitHostPort(cl.Bookies[id].Addr)
		p, _ := strconv.Atoi(port)
		info, _ := metadata.MarshalBookieServiceInfo(&metadata.BookieServiceInfo{Endpoints: []metadata.Endpoint{
			{ID: "bookie", Host: host, Port: p, Protocol: metadata.ProtocolBookieRPC}}})
		testenv.CreatePath(t, conn.Conn, root+"/available/"+id, info)
	}
	data := make([][]byte, 25)
	for i := range data {
		data[i] = bytes.Repeat([]byte{byte(i)}, 100+i*37)
	}
	md, err := cl.Write(bookietest.Ledger{LedgerID: ledgerID, Ensemble: 3, WriteQuorum: 2, DigestType: digest.CRC32C}, data)
	if err != nil {
		t.Fatal(err)
	}
	md.CustomMetadata = map[string][]byte{"application": []byte("pulsar"), "pulsar/managed-ledger": []byte("public/default/persistent/t")}
	p, _ := metadata.Hierarchical.LedgerPath(root, ledgerID)
	b, _ := metadata.Marshal(md, 3)
	testenv.CreatePath(t, conn.Conn, p, b)
	open := *md
	open.LedgerID, open.State, open.LastEntryID, open.Length = ledgerID+1, metadata.StateOpen, -1, 0
	p, _ = metadata.Hierarchical.LedgerPath(root, ledgerID+1)
	b, _ = metadata.Marshal(&open, 3)
	testenv.CreatePath(t, conn.Conn, p, b)
	t.Cleanup(func() {
		for _, r := range cl.Requests() {
			if r.HasFlag || r.MasterKey != nil {
				t.Errorf("fencing request sent: %+v", r)
			}
		}
	})
	return &fixture{zkAddr: z.Addr, root: root, cluster: cl, md: md, data: data}
}

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return clitest.Run(ctx, newRootCmd(), args...)
}

func TestLedgerReadJSON(t *testing.T) {
	f := newFixture(t, "/cli-json/ledgers", 4242)
	out, _, err := run(t, "ledger", "read", "--zk", f.zkAddr, "--ledgers-root", f.root, "--ledger", "4242", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	var n int
	for sc.Scan() {
		var e entryJSON
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		payload, _ := base64.StdEncoding.DecodeString(e.Payload)
		sum := sha256.Sum256(f.data[n])
		if e.Entry != int64(n) || e.Ledger != 4242 || !bytes.Equal(payload, f.data[n]) || e.SHA256 != hex.EncodeToString(sum[:]) || e.Size != len(f.data[n]) {
			t.Fatalf("entry %d: %+v", n, e)
		}
		n++
	}
	if n != len(f.data) {
		t.Fatalf("%d entries printed, want %d", n, len(f.data))
	}
	out, _, err = run(t, "ledger", "read", "--zk", f.zkAddr, "--ledgers-root", f.root, "--ledger", "4242", "--verify-only", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var sum readSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if sum.Entries != int64(len(f.data)) || sum.Bytes != f.md.Length || !sum.Verified || sum.DigestType != "CRC32C" || sum.To != 24 {
		t.Fatalf("verify-only summary %+v", sum)
	}
}

func TestLedgerReadTextRangeAndURI(t *testing.T) {
	f := newFixture(t, "/cli-text/ledgers", 77)
	// The ledgers root taken from a BookKeeper metadata service URI.
	out, stderr, err := run(t, "ledger", "read", "--zk", "zk+hierarchical://"+f.zkAddr+f.root, "--ledger", "77", "--from", "3", "--to", "5")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "3\tsize=211\t") || !strings.HasPrefix(lines[2], "5\t") {
		t.Fatalf("text output:\n%s", out)
	}
	if !strings.Contains(stderr, "read 3 entries") {
		t.Fatalf("summary missing from stderr: %q", stderr)
	}
	// A replica down: still every entry.
	f.cluster.Bookies["bookie-0"].Stop()
	out, _, err = run(t, "ledger", "read", "--zk", f.zkAddr+f.root, "--ledger", "77")
	if err != nil || strings.Count(out, "\n") != len(f.data) {
		t.Fatalf("with bookie-0 down: %v\n%s", err, out)
	}
}

func TestLedgerInfoListAndErrors(t *testing.T) {
	f := newFixture(t, "/cli-info/ledgers", 9000)
	out, _, err := run(t, "ledger", "info", "--zk", f.zkAddr, "--ledgers-root", f.root, "--ledger", "9000", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var li metadata.LedgerInfo
	if err := json.Unmarshal([]byte(out), &li); err != nil {
		t.Fatal(err)
	}
	if li.State != "CLOSED" || li.LastEntryID != 24 || li.Length != f.md.Length || li.DigestType != "CRC32C" ||
		li.Path != f.root+"/00/0000/L9000" || li.CustomMetadata["pulsar/managed-ledger"] != "public/default/persistent/t" {
		t.Fatalf("info: %+v", li)
	}
	out, _, err = run(t, "ledger", "info", "--zk", f.zkAddr, "--ledgers-root", f.root, "--ledger", "9000")
	if err != nil || !strings.Contains(out, "E=3 W=2 A=2") || strings.Contains(out, "password") {
		t.Fatalf("text info: %v\n%s", err, out)
	}
	out, _, err = run(t, "ledger", "list", "--zk", f.zkAddr, "--ledgers-root", f.root, "-o", "json")
	if err != nil || strings.TrimSpace(out) != "[9000,9001]" {
		t.Fatalf("list: %v %q", err, out)
	}
	out, _, err = run(t, "ledger", "list", "--zk", f.zkAddr, "--ledgers-root", f.root, "--details")
	if err != nil || !strings.Contains(out, "9000\tCLOSED\tentries=25") || !strings.Contains(out, "9001\tOPEN") {
		t.Fatalf("list --details: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ledger", "read", "--ledger", "9001"}, "not closed"},
		{[]string{"ledger", "read", "--ledger", "12345"}, "no such ledger"},
		{[]string{"ledger", "read", "--ledger", "9000", "--to", "99"}, "ends at entry 24"},
		{[]string{"ledger", "read"}, "--ledger is required"},
		{[]string{"ledger", "read", "--ledger", "9000", "--payload", "xml"}, "--payload"},
		// A non-positive read timeout is refused, not replaced by 5 s.
		{[]string{"ledger", "read", "--ledger", "9000", "--read-timeout", "-1s"}, "--read-timeout -1s: must be positive"},
		{[]string{"ledger", "read", "--ledger", "9000", "--read-timeout", "0s"}, "--read-timeout 0s: must be positive"},
		{[]string{"ledger", "info", "--ledger", "9000", "-o", "yaml"}, "--output"},
	} {
		args := append(c.args, "--zk", f.zkAddr, "--ledgers-root", f.root)
		if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
	// Every replica missing an entry: the read stops with a clear error.
	ws, _ := f.md.WriteSet(10)
	for _, b := range ws {
		f.cluster.Bookies[b].Delete(9000, 10)
	}
	out, _, err = run(t, "ledger", "read", "--zk", f.zkAddr, "--ledgers-root", f.root, "--ledger", "9000")
	if err == nil || !strings.Contains(err.Error(), "missing on every replica") || strings.Count(out, "\n") != 10 {
		t.Fatalf("missing entry: %v\n%s", err, out)
	}
}
