package mledger

import (
	"errors"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// Vectors follow java.net.URLEncoder.encode(s, UTF_8): the Javadoc example
// ("The string ü@foo-bar" → "The+string+%C3%BC%40foo-bar") and the
// DONT_NEED_ENCODING table (a-z A-Z 0-9 . - * _, space → +).
var javaEncodeVectors = []struct{ in, out string }{
	{"my-topic", "my-topic"},
	{"", ""},
	{"The string ü@foo-bar", "The+string+%C3%BC%40foo-bar"},
	{"a b", "a+b"},
	{"  ", "++"},
	{"*", "*"},
	{"~", "%7E"},
	{"a.b-c_d*e", "a.b-c_d*e"},
	{"%", "%25"},
	{"100%", "100%25"},
	{"a+b", "a%2Bb"},
	{"a/b", "a%2Fb"},
	{":=", "%3A%3D"},
	{"'()!", "%27%28%29%21"},
	{"?&#", "%3F%26%23"},
	{"\t\n", "%09%0A"},
	{"\x7f", "%7F"},
	{"ü", "%C3%BC"},
	{"日本", "%E6%97%A5%E6%9C%AC"},
	{"€", "%E2%82%AC"},
	{"😀", "%F0%9F%98%80"}, // U+1F600: a surrogate pair in Java, one 4-byte UTF-8 sequence
	{"topic-partition-3", "topic-partition-3"},
	{"ZZ09az", "ZZ09az"},
}

func TestEncodeNameJavaVectors(t *testing.T) {
	for _, v := range javaEncodeVectors {
		if got := EncodeName(v.in); got != v.out {
			t.Errorf("EncodeName(%q) = %q, want %q", v.in, got, v.out)
		}
		back, err := DecodeName(v.out)
		if err != nil || back != v.in {
			t.Errorf("DecodeName(%q) = %q, %v; want %q", v.out, back, err, v.in)
		}
	}
}

// Go's url.QueryEscape is not Java's URLEncoder: the two differ on '*' and '~'.
func TestEncodeNameDiffersFromQueryEscape(t *testing.T) {
	for _, s := range []string{"*", "~"} {
		if EncodeName(s) == url.QueryEscape(s) {
			t.Errorf("%q: EncodeName equals url.QueryEscape (%q); the test premise is wrong", s, EncodeName(s))
		}
	}
}

func TestDecodeNameJavaRules(t *testing.T) {
	ok := []struct{ in, out string }{
		{"a+b", "a b"},
		{"%2b", "+"}, // lower-case hex
		{"%2B%2b", "++"},
		{"~*", "~*"}, // kept as is
		{"ü", "ü"},   // raw non-ASCII passes through
		{"%+F", "\x0f"},
		{"%-0", "\x00"},
		{"%C3%BC%40", "ü@"},
		{"plain", "plain"},
	}
	for _, v := range ok {
		got, err := DecodeName(v.in)
		if err != nil || got != v.out {
			t.Errorf("DecodeName(%q) = %q, %v; want %q", v.in, got, err, v.out)
		}
	}
	bad := []string{
		"%",      // incomplete trailing escape
		"%A",     // incomplete
		"abc%4",  // incomplete
		"%zz",    // illegal hex
		"%-1",    // negative value
		"%G0",    // illegal hex
		"%C3",    // valid escape, invalid UTF-8 (Java: U+FFFD; rejected here)
		"%FF%FE", // invalid UTF-8
		"a%%20",  // '%' followed by "%2"
	}
	for _, in := range bad {
		if got, err := DecodeName(in); !errors.Is(err, ErrInvalidName) {
			t.Errorf("DecodeName(%q) = %q, %v; want ErrInvalidName", in, got, err)
		}
	}
}

func TestNameRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("aZ09 .-*_~%+/:=!@#$&'()üß日本€😀\t")
	for i := 0; i < 2000; i++ {
		n := r.IntN(20)
		var b strings.Builder
		for j := 0; j < n; j++ {
			if r.IntN(10) == 0 {
				b.WriteRune(rune(r.IntN(0x10FFFF)))
			} else {
				b.WriteRune(alphabet[r.IntN(len(alphabet))])
			}
		}
		s := strings.ToValidUTF8(b.String(), "?")
		enc := EncodeName(s)
		for k := 0; k < len(enc); k++ {
			c := enc[k]
			if !(keepUnescaped(c) && c != ' ' || c == '+' || c == '%' || 'A' <= c && c <= 'F') {
				t.Fatalf("EncodeName(%q) = %q has byte %q", s, enc, c)
			}
		}
		back, err := DecodeName(enc)
		if err != nil || back != s {
			t.Fatalf("round trip %q → %q → %q, %v", s, enc, back, err)
		}
	}
}

func FuzzDecodeName(f *testing.F) {
	for _, v := range javaEncodeVectors {
		f.Add(v.out)
	}
	for _, s := range []string{"%", "%-0", "%+F", "%C3", "a+b%2", "%%%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := DecodeName(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("DecodeName(%q): error %v does not wrap ErrInvalidName", s, err)
			}
			return
		}
		if utf8.ValidString(s) && !utf8.ValidString(d) {
			t.Fatalf("DecodeName(%q) = %q is not valid UTF-8", s, d)
		}
		if !utf8.ValidString(d) {
			return // raw invalid bytes passed through, as Java would keep its chars
		}
		d2, err := DecodeName(EncodeName(d))
		if err != nil || d2 != d {
			t.Fatalf("DecodeName(EncodeName(%q)) = %q, %v", d, d2, err)
		}
	})
}

func TestParseTopic(t *testing.T) {
	cases := []struct {
		in        string
		ml        string // "" = MLNameForTopic must fail
		complete  string
		partition int
		v2        bool
	}{
		{"persistent://public/default/my-topic", "public/default/persistent/my-topic", "persistent://public/default/my-topic", -1, true},
		{"my-topic", "public/default/persistent/my-topic", "persistent://public/default/my-topic", -1, true},
		{"t/ns/x", "t/ns/persistent/x", "persistent://t/ns/x", -1, true},
		{"PERSISTENT://t/ns/x", "t/ns/persistent/x", "persistent://t/ns/x", -1, true},
		{"persistent://t/ns/my topic*~", "t/ns/persistent/my+topic*%7E", "persistent://t/ns/my topic*~", -1, true},
		{"persistent://t/ns/ü", "t/ns/persistent/%C3%BC", "persistent://t/ns/ü", -1, true},
		{"persistent://t/ns/x-partition-3", "t/ns/persistent/x-partition-3", "persistent://t/ns/x-partition-3", 3, true},
		{"persistent://t/ns/x-partition-03", "t/ns/persistent/x-partition-03", "persistent://t/ns/x-partition-03", -1, true},
		{"persistent://t/ns/x-partition--1", "t/ns/persistent/x-partition--1", "persistent://t/ns/x-partition--1", -1, true},
		{"persistent://t/ns/x-partition-+1", "t/ns/persistent/x-partition-%2B1", "persistent://t/ns/x-partition-+1", -1, true},
		{"persistent://t/ns/x-partition-1-partition-2", "t/ns/persistent/x-partition-1-partition-2", "persistent://t/ns/x-partition-1-partition-2", 2, true},
		{"persistent://t/ns/x-partition-99999999999", "t/ns/persistent/x-partition-99999999999", "persistent://t/ns/x-partition-99999999999", -1, true},
		{"persistent://prop/use/ns/x", "prop/use/ns/persistent/x", "persistent://prop/use/ns/x", -1, false},
		{"persistent://prop/use/ns/a/b", "prop/use/ns/persistent/a%2Fb", "persistent://prop/use/ns/a/b", -1, false},
		{"persistent://prop/use/ns/x-partition-0", "prop/use/ns/persistent/x-partition-0", "persistent://prop/use/ns/x-partition-0", 0, false},
		{"non-persistent://t/ns/x", "", "non-persistent://t/ns/x", -1, true},
		{"persistent://t-1/ns.a=b:c/x", "t-1/ns.a=b:c/persistent/x", "persistent://t-1/ns.a=b:c/x", -1, true},
	}
	for _, c := range cases {
		tn, err := ParseTopic(c.in)
		if err != nil {
			t.Errorf("ParseTopic(%q): %v", c.in, err)
			continue
		}
		if tn.String() != c.complete || tn.Partition != c.partition || tn.IsV2() != c.v2 {
			t.Errorf("ParseTopic(%q) = %+v (%s)", c.in, tn, tn)
		}
		ml, err := MLNameForTopic(c.in)
		if c.ml == "" {
			if !errors.Is(err, ErrInvalidName) {
				t.Errorf("MLNameForTopic(%q) = %q, %v; want ErrInvalidName", c.in, ml, err)
			}
			continue
		}
		if err != nil || ml != c.ml {
			t.Errorf("MLNameForTopic(%q) = %q, %v; want %q", c.in, ml, err, c.ml)
			continue
		}
		back, err := ParseMLName(ml)
		if err != nil || back != tn {
			t.Errorf("ParseMLName(%q) = %+v, %v; want %+v", ml, back, err, tn)
		}
		if Path(ml) != "/managed-ledgers/"+c.ml {
			t.Errorf("Path(%q) = %q", ml, Path(ml))
		}
		if n, err := NameFromPath(Path(ml)); err != nil || n != ml {
			t.Errorf("NameFromPath(Path(%q)) = %q, %v", ml, n, err)
		}
	}
}

func TestParseTopicInvalid(t *testing.T) {
	for _, in := range []string{
		"persistent://t/ns",    // too few parts
		"persistent://t/ns/",   // empty local name
		"foo://t/ns/x",         // bad domain
		"persistent://t!/ns/x", // bad tenant
		"persistent://t/n s/x", // bad namespace
		"persistent:///ns/x",   // empty tenant
		"persistent://t//ns/x", // empty cluster
		"a/b",                  // short name with two parts
		"a/b/c/d",              // short name with four parts
		"",                     // empty
	} {
		if tn, err := ParseTopic(in); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ParseTopic(%q) = %+v, %v; want ErrInvalidName", in, tn, err)
		}
	}
	for _, in := range []string{
		"t/ns/x",                           // three parts
		"t/c/ns/persistent/x/cursor",       // six parts (a cursor path)
		"t/ns/bogus/x",                     // bad domain
		"t/ns/persistent/%zz",              // bad escape
		"t/ns/persistent/",                 // empty topic
		"t!/ns/persistent/x",               // bad tenant
		"t/c!/ns/persistent/x",             // bad cluster
		"t/ns/persistent/x%2",              // incomplete escape
		"/managed-ledgers/t/ns/persistent", // a path, not a name
	} {
		if tn, err := ParseMLName(in); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ParseMLName(%q) = %+v, %v; want ErrInvalidName", in, tn, err)
		}
	}
	if _, err := NameFromPath("/ledgers/x"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("NameFromPath outside root: %v", err)
	}
}

func TestPartitions(t *testing.T) {
	tn, err := ParseTopic("persistent://t/ns/orders")
	if err != nil {
		t.Fatal(err)
	}
	p := tn.PartitionTopic(7)
	if p.String() != "persistent://t/ns/orders-partition-7" || p.Partition != 7 || p.MLName() != "t/ns/persistent/orders-partition-7" {
		t.Errorf("PartitionTopic(7) = %+v", p)
	}
	if p.PartitionTopic(7) != p {
		t.Errorf("PartitionTopic on its own index changed the name")
	}
	if got := p.PartitionedTopic(); got != tn {
		t.Errorf("PartitionedTopic() = %+v, want %+v", got, tn)
	}
	if tn.PartitionedTopic() != tn || tn.PartitionTopic(-1) != tn {
		t.Errorf("non-partitioned topic changed")
	}
}

func FuzzParseTopic(f *testing.F) {
	for _, s := range []string{"persistent://t/ns/x", "x", "t/ns/x-partition-1", "persistent://a/b/c/d/e", "non-persistent://t/ns/%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tn, err := ParseTopic(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("ParseTopic(%q): %v does not wrap ErrInvalidName", s, err)
			}
			return
		}
		if !utf8.ValidString(tn.Local) {
			return // MLName escapes invalid bytes one by one; DecodeName rejects them
		}
		back, err := ParseMLName(tn.MLName())
		if err != nil || back != tn {
			t.Fatalf("ParseMLName(MLName(%q)) = %+v, %v; want %+v", s, back, err, tn)
		}
	})
}
