package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

func TestLedgerPaths(t *testing.T) {
	cases := []struct {
		m    Manager
		id   int64
		want string
	}{
		{Hierarchical, 0, "/ledgers/00/0000/L0000"},
		{Hierarchical, 1, "/ledgers/00/0000/L0001"},
		{Hierarchical, 123456789, "/ledgers/01/2345/L6789"},
		{Hierarchical, 2147483646, "/ledgers/21/4748/L3646"},
		{Hierarchical, 2147483647, "/ledgers/000/0000/0021/4748/L3647"},
		{Hierarchical, 4294967296, "/ledgers/000/0000/0042/9496/L7296"},
		{Hierarchical, 9223372036854775807, "/ledgers/922/3372/0368/5477/L5807"},
		{LongHierarchical, 1, "/ledgers/000/0000/0000/0000/L0001"},
		{LegacyHierarchical, 2147483647, "/ledgers/21/4748/L3647"},
		{Flat, 1, "/ledgers/L0000000001"},
		{Flat, 12345678901, "/ledgers/L12345678901"},
	}
	for _, c := range cases {
		got, err := c.m.LedgerPath("/ledgers/", c.id)
		if err != nil || got != c.want {
			t.Errorf("%v.LedgerPath(%d) = %q, %v; want %q", c.m, c.id, got, err, c.want)
		}
	}
	if _, err := Hierarchical.LedgerPath("/ledgers", -1); !errors.Is(err, ErrInvalidID) {
		t.Errorf("negative id: %v", err)
	}
	if _, err := LegacyHierarchical.LedgerPath("/ledgers", 10000000000); !errors.Is(err, ErrInvalidID) {
		t.Errorf("legacy overflow: %v", err)
	}
}

func TestParseLayout(t *testing.T) {
	good := map[string]Manager{
		"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1":         Hierarchical,
		"2\norg.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1":     LongHierarchical,
		"2\norg.apache.bookkeeper.meta.LegacyHierarchicalLedgerManagerFactory:1":   LegacyHierarchical,
		"2\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1":                 Flat,
		"2\ndlshade.org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1": Hierarchical,
		"2\norg.apache.pulsar.metadata.bookkeeper.PulsarLedgerManagerFactory:1":    Hierarchical,
		"1\nflat:1":         Flat,
		"1\nhierarchical:1": Hierarchical,
	}
	for in, want := range good {
		l, err := ParseLayout([]byte(in))
		if err != nil || l.Manager != want || l.ManagerVersion != 1 {
			t.Errorf("ParseLayout(%q) = %+v, %v; want %v", in, l, err, want)
		}
	}
	for _, in := range []string{"", "x", "3\nflat:1", "0\nflat:1", "2", "2\nflat", "2\nflat:x",
		"2\norg.apache.bookkeeper.meta.MSLedgerManagerFactory:1", "2\nflat:1:2"} {
		if _, err := ParseLayout([]byte(in)); !errors.Is(err, ErrBadLayout) {
			t.Errorf("ParseLayout(%q): err %v, want ErrBadLayout", in, err)
		}
	}
}

func sample() *LedgerMetadata {
	return &LedgerMetadata{
		LedgerID: 42, FormatVersion: 3, EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2,
		State: StateClosed, LastEntryID: 9, Length: 1024,
		Segments: []Segment{
			{0, []string{"127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183"}},
			{5, []string{"127.0.0.1:3181", "127.0.0.1:3184", "127.0.0.1:3183"}},
		},
		HasPassword: true, DigestType: digest.CRC32C, Password: []byte{'p', 1, 'w'},
		Ctime: 1600000000000, CtimeStored: true,
		CustomMetadata: map[string][]byte{"application": []byte("pulsar"), "component": []byte("managed-ledger")},
		CToken:         7, HasCToken: true, Version: -1,
	}
}

// javaV2 is metadata as BookKeeper's TextFormat printer writes it (fields in
// number order, enums by name, bytes with octal escapes).
const javaV2 = "BookieMetadataFormatVersion\t2\n" + `quorumSize: 2
ensembleSize: 3
length: 1024
lastEntryId: 9
state: CLOSED
segment {
  ensembleMember: "127.0.0.1:3181"
  ensembleMember: "127.0.0.1:3182"
  ensembleMember: "127.0.0.1:3183"
  firstEntryId: 0
}
segment {
  ensembleMember: "127.0.0.1:3181"
  ensembleMember: "127.0.0.1:3184"
  ensembleMember: "127.0.0.1:3183"
  firstEntryId: 5
}
digestType: CRC32C
password: "p\001w"
ackQuorumSize: 2
ctime: 1600000000000
customMetadata {
  key: "application"
  value: "pulsar"
}
customMetadata {
  key: "component"
  value: "managed-ledger"
}
`

const javaV1 = "BookieMetadataFormatVersion\t1\n2\n3\n1024\n" +
	"0\t127.0.0.1:3181\t127.0.0.1:3182\t127.0.0.1:3183\n" +
	"5\t127.0.0.1:3181\t127.0.0.1:3184\t127.0.0.1:3183\n" +
	"9\tCLOSED"

func TestParseFormats(t *testing.T) {
	want := sample()

	// v3: hand-delimited generated-protobuf bytes.
	pb, err := proto.Marshal(want.Proto())
	if err != nil {
		t.Fatal(err)
	}
	v3 := append([]byte("BookieMetadataFormatVersion\t3\n"), binary.AppendUvarint(nil, uint64(len(pb)))...)
	v3 = append(v3, pb...)
	got, err := Parse(42, v3)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("v3:\n got %+v\nwant %+v", got, want)
	}
	if m3, _ := Marshal(want, 3); !bytes.Equal(m3, v3) {
		t.Fatalf("Marshal v3 differs:\n%x\n%x", m3, v3)
	}

	// v2 as Java writes it.
	got, err = Parse(42, []byte(javaV2))
	if err != nil {
		t.Fatal(err)
	}
	w2 := sample()
	w2.FormatVersion, w2.CToken, w2.HasCToken = 2, 0, false
	if !reflect.DeepEqual(got, w2) {
		t.Fatalf("v2:\n got %+v\nwant %+v", got, w2)
	}

	// v1: no digest, no password, ackQuorum = writeQuorum, no ctime.
	got, err = Parse(42, []byte(javaV1))
	if err != nil {
		t.Fatal(err)
	}
	w1 := &LedgerMetadata{LedgerID: 42, FormatVersion: 1, EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2,
		State: StateClosed, LastEntryID: 9, Length: 1024, Segments: want.Segments, Version: -1}
	if !reflect.DeepEqual(got, w1) {
		t.Fatalf("v1:\n got %+v\nwant %+v", got, w1)
	}
	if b, _ := Marshal(w1, 1); string(b) != javaV1 {
		t.Fatalf("Marshal v1:\n%q\nwant\n%q", b, javaV1)
	}

	// v1 in recovery and open.
	got, err = Parse(1, []byte("BookieMetadataFormatVersion\t1\n1\n1\n0\n0\t10.0.0.1:3181\n-102\tCLOSED"))
	if err != nil || got.State != StateInRecovery || got.LastEntryID != -1 {
		t.Fatalf("v1 in recovery: %+v %v", got, err)
	}
	got, err = Parse(1, []byte("BookieMetadataFormatVersion\t1\n1\n1\n0\n0\t10.0.0.1:3181\n"))
	if err != nil || got.State != StateOpen {
		t.Fatalf("v1 open: %+v %v", got, err)
	}
}

func TestRoundTripAllFormats(t *testing.T) {
	for _, v := range []int{1, 2, 3} {
		m := sample()
		m.FormatVersion = v
		if v < 3 {
			m.CToken, m.HasCToken = 0, false
		}
		if v == 1 {
			m.HasPassword, m.DigestType, m.Password, m.Ctime, m.CtimeStored, m.CustomMetadata = false, 0, nil, 0, false, nil
			m.AckQuorum = m.WriteQuorum
		}
		b, err := Marshal(m, v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(42, b)
		if err != nil {
			t.Fatalf("v%d: %v\n%s", v, err, b)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("v%d round trip:\n got %+v\nwant %+v", v, got, m)
		}
	}
}

func TestParseRejects(t *testing.T) {
	v3 := func(mut func(f *bkproto.LedgerMetadataFormat)) []byte {
		f := sample().Proto()
		mut(f)
		pb, err := proto.MarshalOptions{AllowPartial: true}.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		out := append([]byte("BookieMetadataFormatVersion\t3\n"), binary.AppendUvarint(nil, uint64(len(pb)))...)
		return append(out, pb...)
	}
	good, _ := Marshal(sample(), 3)
	cases := map[string][]byte{
		"empty":                  {},
		"garbled (pulsar#13480)": []byte("\x00\x00\x00\x00garbage"),
		"no newline":             []byte("BookieMetadataFormatVersion\t3"),
		"version 4":              []byte("BookieMetadataFormatVersion\t4\n"),
		"version x":              []byte("BookieMetadataFormatVersion\tx\n"),
		"long version":           []byte("BookieMetadataFormatVersion\t00000000003\n"),
		"v3 truncated":           good[:len(good)-3],
		"v3 bad varint":          []byte("BookieMetadataFormatVersion\t3\n\xff\xff\xff\xff\xff\xff"),
		"v3 no state":            v3(func(f *bkproto.LedgerMetadataFormat) { f.State = nil }),
		"v3 closed no last":      v3(func(f *bkproto.LedgerMetadataFormat) { f.LastEntryId = nil }),
		"v3 W > E":               v3(func(f *bkproto.LedgerMetadataFormat) { f.QuorumSize = proto.Int32(4) }),
		"v3 A > W":               v3(func(f *bkproto.LedgerMetadataFormat) { f.AckQuorumSize = proto.Int32(3) }),
		"v3 E = 0":               v3(func(f *bkproto.LedgerMetadataFormat) { f.EnsembleSize = proto.Int32(0) }),
		"v3 no segments":         v3(func(f *bkproto.LedgerMetadataFormat) { f.Segment = nil }),
		"v3 first segment 1":     v3(func(f *bkproto.LedgerMetadataFormat) { f.Segment[0].FirstEntryId = proto.Int64(1) }),
		"v3 segments unordered": v3(func(f *bkproto.LedgerMetadataFormat) {
			f.Segment[1].FirstEntryId = proto.Int64(0)
		}),
		"v3 short ensemble":  v3(func(f *bkproto.LedgerMetadataFormat) { f.Segment[1].EnsembleMember = f.Segment[1].EnsembleMember[:2] }),
		"v3 empty bookie":    v3(func(f *bkproto.LedgerMetadataFormat) { f.Segment[0].EnsembleMember[1] = "" }),
		"v3 negative length": v3(func(f *bkproto.LedgerMetadataFormat) { f.Length = proto.Int64(-5) }),
		"v2 garbage":         []byte("BookieMetadataFormatVersion\t2\nquorumSize: two\n"),
		"v2 missing field":   []byte("BookieMetadataFormatVersion\t2\nquorumSize: 2\n"),
		"v2 unknown enum":    []byte(strings.Replace(javaV2, "CRC32C", "SHA256", 1)),
		"v1 short":           []byte("BookieMetadataFormatVersion\t1\n2\n3\n"),
		"v1 bad number":      []byte("BookieMetadataFormatVersion\t1\n2\nthree\n0\n"),
		"v1 no tab":          []byte("BookieMetadataFormatVersion\t1\n1\n1\n0\n0\n"),
		"v1 no segments":     []byte("BookieMetadataFormatVersion\t1\n1\n1\n0\n9\tCLOSED"),
	}
	for name, b := range cases {
		if m, err := Parse(42, b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Parse = %+v, %v; want ErrCorrupt", name, m, err)
		}
	}
}

func TestWriteSet(t *testing.T) {
	m := sample()
	cases := map[int64][]string{
		0: {"127.0.0.1:3181", "127.0.0.1:3182"},
		1: {"127.0.0.1:3182", "127.0.0.1:3183"},
		2: {"127.0.0.1:3183", "127.0.0.1:3181"},
		4: {"127.0.0.1:3182", "127.0.0.1:3183"},
		5: {"127.0.0.1:3183", "127.0.0.1:3181"}, // second ensemble, index 5%3=2
		6: {"127.0.0.1:3181", "127.0.0.1:3184"},
		7: {"127.0.0.1:3184", "127.0.0.1:3183"},
	}
	for e, want := range cases {
		got, err := m.WriteSet(e)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("WriteSet(%d) = %v, %v; want %v", e, got, err, want)
		}
	}
	if _, err := m.WriteSet(-1); err == nil {
		t.Error("WriteSet(-1) succeeded")
	}
	// Large entry ids do not overflow.
	big := &LedgerMetadata{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 2, Segments: []Segment{{0, []string{"a", "b", "c"}}}}
	if ws, err := big.WriteSet(1<<62 + 1); err != nil || ws[0] != []string{"a", "b", "c"}[(1<<62+1)%3] {
		t.Errorf("big WriteSet: %v %v", ws, err)
	}
}

func TestBookieServiceInfo(t *testing.T) {
	in := &BookieServiceInfo{
		Endpoints: []Endpoint{
			{ID: "httpserver", Host: "10.0.0.5", Port: 8000, Protocol: "http"},
			{ID: "bookie", Host: "10.0.0.5", Port: 3181, Protocol: "bookie-rpc", Extensions: []string{"tls"}},
		},
		Properties: map[string]string{"rack": "/r1"},
	}
	b, err := MarshalBookieServiceInfo(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseBookieServiceInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	ep, ok := out.RPCEndpoint()
	if !ok || ep.Address() != "10.0.0.5:3181" || out.Properties["rack"] != "/r1" {
		t.Fatalf("parsed %+v", out)
	}
	if _, err := ParseBookieServiceInfo([]byte{0x32, 0x05, 0x0a}); !errors.Is(err, ErrBadBookieInfo) {
		t.Fatalf("garbage: %v", err)
	}
	// Field numbers: endpoints = 6, properties = 7 (a raw capture).
	raw := []byte{0x32, 0x1d, 0x0a, 0x06, 'b', 'o', 'o', 'k', 'i', 'e', 0x10, 0xdd, 0x18, 0x1a, 0x04, 'h', 'o', 's', 't',
		0x22, 0x0a, 'b', 'o', 'o', 'k', 'i', 'e', '-', 'r', 'p', 'c'}
	out, err = ParseBookieServiceInfo(raw)
	if err != nil {
		t.Fatal(err)
	}
	if ep, ok := out.RPCEndpoint(); !ok || ep.Address() != "host:3165" {
		t.Fatalf("raw capture parsed to %+v", out)
	}
}

func TestBookieIDs(t *testing.T) {
	for id, ok := range map[string]bool{"127.0.0.1:3181": true, "bookie-1.example.com:3181": true, "my_bookie": true,
		"": false, "..": false, "a/b": false, "a b": false} {
		if validBookieID(id) != ok {
			t.Errorf("validBookieID(%q) != %t", id, ok)
		}
	}
	for id, want := range map[string]string{"127.0.0.1:3181": "127.0.0.1:3181", "host:1": "host:1", "host": "", "host:0": "", ":3181": "", "h:99999": ""} {
		got, _ := hostPortOf(id)
		if got != want {
			t.Errorf("hostPortOf(%q) = %q, want %q", id, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, v := range []int{1, 2, 3} {
		m := sample()
		b, _ := Marshal(m, v)
		f.Add(b)
	}
	f.Add([]byte(javaV1))
	f.Add([]byte(javaV2))
	f.Add([]byte("BookieMetadataFormatVersion\t3\n\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(42, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("Parse accepted invalid metadata: %v", err)
		}
		// Every entry of a closed ledger has a write set of W bookies.
		if m.Closed() {
			for e := int64(0); e <= m.LastEntryID && e < 64; e++ {
				ws, err := m.WriteSet(e)
				if err != nil || len(ws) != m.WriteQuorum {
					t.Fatalf("WriteSet(%d) = %v, %v", e, ws, err)
				}
			}
		}
		// What parses re-encodes (as v3) to the same metadata.
		b3, err := Marshal(m, 3)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := Parse(42, b3)
		if err != nil {
			t.Fatalf("re-parse of v3 encoding: %v", err)
		}
		m2.FormatVersion = m.FormatVersion
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip differs:\n%+v\n%+v", m, m2)
		}
	})
}

func FuzzParseLayout(f *testing.F) {
	f.Add([]byte("2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"))
	f.Add([]byte("1\nflat:1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLayout(b)
		if err != nil {
			if !errors.Is(err, ErrBadLayout) {
				t.Fatalf("error does not wrap ErrBadLayout: %v", err)
			}
			return
		}
		if _, err := l.Manager.LedgerPath("/ledgers", 12345); err != nil {
			t.Fatalf("accepted layout has no path scheme: %v", err)
		}
	})
}

func FuzzParseBookieServiceInfo(f *testing.F) {
	b, _ := MarshalBookieServiceInfo(&BookieServiceInfo{Endpoints: []Endpoint{{ID: "bookie", Host: "h", Port: 3181, Protocol: "bookie-rpc"}}})
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ParseBookieServiceInfo(b)
		if err != nil {
			if !errors.Is(err, ErrBadBookieInfo) {
				t.Fatalf("error does not wrap ErrBadBookieInfo: %v", err)
			}
			return
		}
		if ep, ok := info.RPCEndpoint(); ok {
			_ = ep.Address()
		}
	})
}
