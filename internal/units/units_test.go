package units

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"4096": 4096, "4k": 4096, "4K": 4096, "4KiB": 4096, "4kb": 4096, "4KB": 4096, "64k": 64 * KiB,
		"1m": MiB, "1MiB": MiB, "32MiB": 32 * MiB, "2G": 2 * GiB, "2GiB": 2 * GiB, "1.5k": 1536, "1.5GiB": 3 * GiB / 2,
		" 512 ": 512, "1t": TiB, " 1t ": TiB, "1p": PiB, "7e": 7 * EiB, "0": 0, "10B": 10,
		".5k": 512, "007": 7, "1025B": 1025, "9223372036854775807": 1<<63 - 1,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{
		"", " ", "k", "KiB", "-4k", "-1", "4x", "4q", "1.3", "1.4 GiB", "NaN", "inf", "1e3", "1e30g", "1e400",
		"4 k b", "0x10", "1..2m", "5.", ".", "8e", "9223372036854775808", "99999999999t", "9999999999999999999",
		"1,5k", strings.Repeat("1", 65),
	} {
		if v, err := ParseSize(bad); !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseSize(%q) = %d, %v; want ErrBadSize", bad, v, err)
		}
	}
	if _, err := ParseSize("-4k"); err == nil || !strings.Contains(err.Error(), `"-4k"`) || !strings.Contains(err.Error(), "negative") {
		t.Errorf("error does not quote the input and say why: %v", err)
	}
}

func TestParseSizeList(t *testing.T) {
	got, err := ParseSizeList("4k, 16k,,64k")
	if err != nil || len(got) != 3 || got[2] != 64*KiB {
		t.Errorf("ParseSizeList = %v, %v", got, err)
	}
	for _, bad := range []string{" , ", "", "4k,4q"} {
		if _, err := ParseSizeList(bad); !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseSizeList(%q): %v", bad, err)
		}
	}
}

// TestFormatBytesExact: diskbench's old FormatBytes
// rounded 1025 to "1.00KiB", which parses back to 1024.
func TestFormatBytesExact(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0B", 1: "1B", 512: "512B", 1000: "1000B", 1025: "1025B", 1536: "1536B", 4096: "4KiB", MiB: "1MiB",
		32 * MiB: "32MiB", 3 * GiB: "3GiB", 5 * TiB: "5TiB", 2 * PiB: "2PiB", EiB: "1EiB", 1<<63 - 1: "9223372036854775807B",
		MiB + KiB: "1025KiB", -4096: "-4KiB",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
		if n < 0 {
			continue
		}
		if back, err := ParseSize(FormatBytes(n)); err != nil || back != n {
			t.Errorf("%d -> %q -> %d, %v", n, FormatBytes(n), back, err)
		}
	}
	if got := FormatBytesList([]int64{4 * KiB, 64 * KiB, 1025}); got != "4KiB,64KiB,1025B" {
		t.Errorf("FormatBytesList = %q", got)
	}
}

func TestHuman(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1025: "1.0 KiB", 2048: "2.0 KiB",
		1536: "1.5 KiB", 5 << 30: "5.0 GiB", 3 * EiB: "3.0 EiB", -2048: "-2.0 KiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	if got := HumanBytes(1.5 * float64(MiB)); got != "1.5 MiB" {
		t.Errorf("HumanBytes(float) = %q", got)
	}
	if got := HumanRate(100 * float64(MiB)); got != "100.0 MiB/s" {
		t.Errorf("HumanRate = %q", got)
	}
	if got := DecimalRate(123.44e6); got != "123.4 MB/s" {
		t.Errorf("DecimalRate = %q", got)
	}
}

func TestSizeFlags(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	maxBytes := Size(2 * GiB)
	var unset Size
	bs := NewSizeList(4*KiB, 64*KiB)
	fs.Var(&maxBytes, "max-bytes", "budget")
	fs.Var(&unset, "file-size", "file size")
	fs.Var(bs, "block-size", "block sizes")
	usage := fs.FlagUsages()
	for _, want := range []string{"--max-bytes size", "(default 2GiB)", "--block-size sizes", "(default 4KiB,64KiB)"} {
		if !strings.Contains(usage, want) {
			t.Errorf("usage lacks %q:\n%s", want, usage)
		}
	}
	if strings.Contains(usage, "default 0") {
		t.Errorf("a zero size shows a default:\n%s", usage)
	}
	if err := fs.Parse([]string{"--max-bytes", "1.5g", "--block-size", "1m,2m", "--block-size", "8m"}); err != nil {
		t.Fatal(err)
	}
	if maxBytes.Bytes() != 3*GiB/2 {
		t.Errorf("max-bytes = %d", maxBytes)
	}
	if v := bs.Values(); len(v) != 3 || v[0] != MiB || v[2] != 8*MiB {
		t.Errorf("block-size = %v (the first Set replaces the default, later ones append)", v)
	}
	err := fs.Parse([]string{"--max-bytes", "lots"})
	if !errors.Is(err, ErrBadSize) || !strings.Contains(err.Error(), "max-bytes") {
		t.Errorf("bad flag value: %v", err)
	}
}

// FuzzParseSize: whatever parses is non-negative, and its exact form parses
// back to the same number.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4k", "64KiB", "1m", "2G", "1.5k", "1025", "1025B", "", "-1", "1e3", "999999999999T",
		"0x10", "1.4 GiB", "7e", ".5k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSize(s)
		if err != nil {
			if !errors.Is(err, ErrBadSize) {
				t.Fatalf("ParseSize(%q): error %v does not wrap ErrBadSize", s, err)
			}
			return
		}
		if v < 0 {
			t.Fatalf("ParseSize(%q) = %d < 0", s, v)
		}
		if back, err := ParseSize(FormatBytes(v)); err != nil || back != v {
			t.Fatalf("round trip %d -> %q -> %d, %v", v, FormatBytes(v), back, err)
		}
	})
}

// TestParseSizeAllocBound: the longest accepted input costs a bounded
// number of small allocations; a longer one is refused before any
// arithmetic.
func TestParseSizeAllocBound(t *testing.T) {
	worst := "123456789012345678." + strings.Repeat("9", 40) + "KiB"
	if len(worst) > maxSizeLen {
		t.Fatalf("test input %d > %d characters", len(worst), maxSizeLen)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseSize(worst) }); n > 40 {
		t.Errorf("ParseSize(%d characters) made %.0f allocations", len(worst), n)
	}
	long := strings.Repeat("9", 10000)
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseSize(long) }); n > 8 { // the error itself
		t.Errorf("a 10000-character input made %.0f allocations before being refused", n)
	}
}

// The config forms of Duration and Size: YAML with "off", JSON duration
// strings (the store providers' configs).
func TestConfigDurationAndSize(t *testing.T) {
	var c struct {
		D   Duration `yaml:"d"`
		Off Duration `yaml:"off"`
		S   Size     `yaml:"s"`
		N   Size     `yaml:"n"`
	}
	if err := yaml.Unmarshal([]byte("d: 1m30s\noff: off\ns: 64MiB\nn: OFF\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.D.D() != 90*time.Second || c.Off != -1 || c.S != 64<<20 || c.N != -1 {
		t.Fatalf("decoded %+v", c)
	}
	out, err := yaml.Marshal(c)
	if err != nil || string(out) != "d: 1m30s\n\"off\": \"off\"\ns: 64MiB\n\"n\": \"off\"\n" {
		t.Errorf("encoded %q, %v", out, err)
	}
	for _, bad := range []string{"d: 5 parsecs", "s: lots", "d: [1]", "s: {a: 1}"} {
		if err := yaml.Unmarshal([]byte(bad), &c); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	var j struct{ T Duration }
	if err := json.Unmarshal([]byte(`{"T": "250ms"}`), &j); err != nil || j.T.D() != 250*time.Millisecond {
		t.Errorf("json: %v %v", j, err)
	}
	if b, _ := json.Marshal(j); string(b) != `{"T":"250ms"}` {
		t.Errorf("json out %s", b)
	}
	if err := json.Unmarshal([]byte(`{"T": 5}`), &j); err == nil {
		t.Error("a number accepted as a duration")
	}
	if Size(0).String() != "0" || Size(-1).String() != "off" || Size(4096).String() != "4KiB" {
		t.Errorf("String: %s %s %s", Size(0), Size(-1), Size(4096))
	}
}
