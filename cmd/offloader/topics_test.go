package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger/status"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// topicsFixture writes managed ledgers under chroot in the shared ZooKeeper
// (startZK, mkdirs and run come from ledger_test.go).
func topicsFixture(t *testing.T, chroot string) (addr string, attempt uuid.UUID) {
	t.Helper()
	z := startZK(t)
	c := z.Session(t, tkzk.Options{})
	defer c.Close()
	closedAt := time.Now().Add(-3 * time.Hour).UnixMilli()
	ledgers := func(first int64, n int) *mlproto.ManagedLedgerInfo {
		info := &mlproto.ManagedLedgerInfo{}
		for i := 0; i < n; i++ {
			li := &mlproto.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(first + int64(i)), Timestamp: proto.Int64(0)}
			if i < n-1 {
				li.Entries, li.Size, li.Timestamp = proto.Int64(100), proto.Int64(2048), proto.Int64(closedAt)
			}
			info.LedgerInfo = append(info.LedgerInfo, li)
		}
		return info
	}
	events := ledgers(1, 4)
	attempt = uuid.MustParse("123e4567-e89b-12d3-a456-426614174000")
	msb, lsb := mledger.UUIDToBits(attempt)
	md, _ := mledger.Driver{Name: "aws-s3", Bucket: "cold", ServiceEndpoint: "http://s3"}.Metadata()
	events.LedgerInfo[0].OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(msb), UidLsb: proto.Int64(lsb),
		Complete: proto.Bool(true), Timestamp: proto.Int64(closedAt), DriverMetadata: md}
	events.LedgerInfo[1].OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(1), UidLsb: proto.Int64(2), DriverMetadata: md}
	enc := func(info *mlproto.ManagedLedgerInfo, codec mlproto.CompressionType) []byte {
		b, err := mledger.Encode(info, mledger.EncodeOptions{Codec: codec})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	nodes := map[string][]byte{
		"public/default/persistent/events":             enc(events, mlproto.CompressionType_ZSTD),
		"public/default/persistent/events/my-sub":      {0x08, 0x01}, // cursor
		"public/default/persistent/orders-partition-0": enc(ledgers(10, 2), mlproto.CompressionType_NONE),
		"public/default/persistent/orders-partition-1": enc(ledgers(20, 3), mlproto.CompressionType_LZ4),
		"public/default/persistent/my+topic":           nil,
		"pulsar/us-west/ns1/persistent/legacy":         enc(ledgers(30, 2), mlproto.CompressionType_NONE),
		"bad/ns/persistent/garbage":                    {0xff, 0xff, 0xff},
	}
	keys := slices.Sorted(maps.Keys(nodes)) // parents before their cursors
	for _, ml := range keys {
		testenv.CreatePath(t, c.Conn, chroot+mledger.Path(ml), nodes[ml])
	}
	return z.Addr, attempt
}

func TestTopicsJSON(t *testing.T) {
	addr, attempt := topicsFixture(t, "/topics-json")
	out, _, err := run(t, "topics", "--zk", addr, "--ml-chroot", "/topics-json", "-o", "json")
	if err == nil || !strings.Contains(err.Error(), "1 of 6 managed ledgers could not be read") {
		t.Fatalf("err = %v, want the corrupt node reported", err)
	}
	var doc status.Report
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var names []string
	for _, m := range doc.ManagedLedgers {
		names = append(names, m.Name)
	}
	want := []string{
		"public/default/persistent/events", "public/default/persistent/my+topic",
		"public/default/persistent/orders-partition-0", "public/default/persistent/orders-partition-1",
		"pulsar/us-west/ns1/persistent/legacy",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("managed ledgers %q, want %q", names, want)
	}
	if len(doc.Errors) != 1 || doc.Errors[0].Name != "bad/ns/persistent/garbage" || !strings.Contains(doc.Errors[0].Error, "corrupt") {
		t.Errorf("errors = %+v", doc.Errors)
	}
	ev := doc.ManagedLedgers[0]
	if ev.Topic != "persistent://public/default/events" || ev.Codec != "ZSTD" || ev.Path != "/topics-json/managed-ledgers/public/default/persistent/events" {
		t.Errorf("events: %+v", ev)
	}
	var states []string
	for _, l := range ev.Ledgers {
		states = append(states, l.State)
	}
	if !slices.Equal(states, []string{"offloaded", "offloading", "bookkeeper", "open"}) {
		t.Fatalf("states %q", states)
	}
	l0 := ev.Ledgers[0]
	if l0.Offload == nil || l0.Offload.UUID != attempt.String() || l0.Offload.Provider != "AWS_S3" || l0.Offload.Bucket != "cold" ||
		l0.Size != 2048 || l0.Entries != 100 || l0.AgeSeconds == nil || *l0.AgeSeconds < 3*3600-60 || *l0.AgeSeconds > 3*3600+600 {
		t.Errorf("ledger 1: %+v %+v", l0, l0.Offload)
	}
	if ev.Ledgers[3].AgeSeconds != nil {
		t.Errorf("open ledger has an age")
	}
	if doc.ManagedLedgers[1].Topic != "persistent://public/default/my topic" || len(doc.ManagedLedgers[1].Ledgers) != 0 {
		t.Errorf("0-byte node: %+v", doc.ManagedLedgers[1])
	}
	if doc.ManagedLedgers[4].Topic != "persistent://pulsar/us-west/ns1/legacy" {
		t.Errorf("v1 topic: %+v", doc.ManagedLedgers[4])
	}
	tot := doc.Totals
	if tot.ManagedLedgers != 5 || tot.Ledgers != 11 || tot.Bytes != 7*2048 || tot.BytesByState["offloaded"] != 2048 || tot.LedgersByState["open"] != 4 {
		t.Errorf("totals %+v", tot)
	}
}

func TestTopicsTextAndFilters(t *testing.T) {
	addr, attempt := topicsFixture(t, "/topics-text")
	base := []string{"topics", "--zk", addr, "--ml-chroot", "/topics-text"}

	out, _, err := run(t, append(base, "--namespace", "public/default")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("text output:\n%s", out)
	for _, s := range []string{"TOPIC", "persistent://public/default/events", attempt.String(), "offloaded", "3h0", "2.0 KiB",
		"4 managed ledgers, 9 ledgers"} {
		if !strings.Contains(out, s) {
			t.Errorf("text output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "legacy") || strings.Contains(out, "my-sub") {
		t.Errorf("namespace filter or cursor leak:\n%s", out)
	}

	out, _, err = run(t, append(base, "--summary", "--topic", "persistent://public/default/orders")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary output:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.Contains(lines[1], "orders-partition-0") || !strings.Contains(lines[2], "orders-partition-1") ||
		!strings.Contains(lines[2], "LZ4") {
		t.Errorf("partitioned topic summary:\n%s", out)
	}

	out, _, err = run(t, append(base, "--topic", "persistent://pulsar/us-west/ns1/legacy", "--topic", "PERSISTENT://pulsar/us-west/ns1/legacy", "-o", "json")...)
	var doc status.Report
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || len(doc.ManagedLedgers) != 1 {
		t.Errorf("v1 topic: %v\n%s", err, out)
	}

	for _, bad := range [][]string{
		{"--topic", "non-persistent://public/default/x"},
		{"--topic", "persistent://public/default/nope"},
		{"--namespace", "public/default", "--topic", "x"},
		{"--concurrency", "0"},
		{"--namespace", "bad"},
		{"--topic", "pulsar/us-west/ns1/legacy"}, // v1 names have no short form
	} {
		if _, _, err := run(t, append(base, bad...)...); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestTopicsHumanFormats(t *testing.T) {
	for sec, want := range map[float64]string{5: "5s", 125: "2m05s", 3*3600 + 60: "3h01m", 50 * 3600: "2d02h", -5: "-5s"} {
		if got := topicsAge(sec); got != want {
			t.Errorf("topicsAge(%v) = %q, want %q", sec, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 2048: "2.0 KiB", 5 << 30: "5.0 GiB"} {
		if got := topicsBytes(n); got != want {
			t.Errorf("topicsBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestTopicsProgressETA(t *testing.T) {
	var buf bytes.Buffer
	// Half done after 20 s: the other half takes 20 s more.
	p := &topicsProgress{line: cli.NewSizedLine(&buf, func() (int, int) { return 80, 24 }), total: 20, start: time.Now().Add(-20 * time.Second)}
	p.update(10)
	if out := buf.String(); !strings.Contains(out, "read 10/20 managed ledgers") || !strings.Contains(out, "ETA 20s") {
		t.Fatalf("progress line %q", out)
	}
}
