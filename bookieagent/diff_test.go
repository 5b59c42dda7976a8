package bookieagent

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

const sampleConf = `# Pulsar-style bookkeeper.conf
bookiePort=3181
journalDirectory=data/bookkeeper/journal
# journalDirectories=/tmp/bk-journal
ledgerDirectories=/pulsar/data/bookkeeper/ledgers
journalWriteBufferSizeKB = 64
journalMaxGroupWaitMSec: 1
writeBufferSizeBytes 65536
gcWaitTime=900000
minorCompactionThreshold=0.20
majorCompactionThreshold=0.5
isThrottleByBytes=FALSE
dbStorage_writeCacheMaxSizeMb=
compactionRateByBytes=\
  1000000
! a bang comment
`

func TestParseConf(t *testing.T) {
	c, err := ParseConf("bk.conf", strings.NewReader(sampleConf))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"journalWriteBufferSizeKB": "64", "journalMaxGroupWaitMSec": "1", "writeBufferSizeBytes": "65536",
		"compactionRateByBytes": "1000000", "dbStorage_writeCacheMaxSizeMb": "", "journalDirectory": "data/bookkeeper/journal"} {
		if v, ok := c.Get(k); !ok || v.Value != want {
			t.Errorf("%s = %+v, want %q", k, v, want)
		}
	}
	if v, _ := c.Get("compactionRateByBytes"); v.Line != 14 {
		t.Errorf("continued line reported at %d, want 14", v.Line)
	}
	if _, ok := c.Get("journalDirectories"); ok || len(c.Unknown) != 0 {
		t.Errorf("commented key read, or unknown keys %v", c.Unknown)
	}
	for name, bad := range map[string]string{
		"repeated key": "gcWaitTime=1\ngcWaitTime=2\n",
		"no key":       "=5\n",
		"odd key":      "journal$Dir=/x\n",
		"dangling":     "gcWaitTime=\\\n",
	} {
		_, err := ParseConf("bad.conf", strings.NewReader(bad))
		if !errors.Is(err, ErrBadConf) || !strings.Contains(err.Error(), "bad.conf:") {
			t.Errorf("%s: %v, want ErrBadConf with the line", name, err)
		}
	}
	c, err = ParseConf("typo.conf", strings.NewReader("journalDirectorys=/j\nmadeUpKey=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Unknown) != 2 || !strings.Contains(c.Unknown[0], "did you mean journalDirectory?") || strings.Contains(c.Unknown[1], "did you mean") {
		t.Errorf("unknown keys %v", c.Unknown)
	}
	if _, err := ParseConf("big", strings.NewReader(strings.Repeat("a=b\n", maxConfBytes/4+1))); !errors.Is(err, ErrBadConf) {
		t.Errorf("oversized file: %v", err)
	}
}

func TestParseRocksConf(t *testing.T) {
	c, err := ParseRocksConf("r.conf", strings.NewReader("[DBOptions]\n  info_log_level=INFO_LEVEL\n\n[CFOptions \"default\"]\n  write_buffer_size=67108864\n# comment\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Sections[`CFOptions "default"`]["write_buffer_size"]; v.Value != "67108864" || v.Line != 5 {
		t.Errorf("write_buffer_size %+v", v)
	}
	for name, bad := range map[string]string{"outside": "a=b\n", "no value": "[x]\nfoo\n", "unterminated": "[x\n", "repeated": "[x]\na=1\na=2\n"} {
		if _, err := ParseRocksConf("r.conf", strings.NewReader(bad)); !errors.Is(err, ErrBadConf) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestDiff: current values come from the file, else BookKeeper's
// defaults; directory counts are grouped apart; a value that does not
// parse is an error with its line.
func TestDiff(t *testing.T) {
	rec, err := Recommend(loadProfile(t, "nvme-64core-4x7tb"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConf("bk.conf", strings.NewReader(sampleConf))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Diff(c, nil, rec, 8*GiB)
	if err != nil {
		t.Fatal(err)
	}
	line := func(ls []DiffLine, key string) DiffLine {
		for _, l := range ls {
			if l.Key == key {
				return l
			}
		}
		t.Fatalf("no line %s", key)
		return DiffLine{}
	}
	if l := line(d.OnRestart, "minorCompactionThreshold"); l.Changed || l.CurrentSource != "bk.conf:10" {
		t.Errorf("0.20 vs 0.2: %+v", l)
	}
	if l := line(d.OnRestart, "isThrottleByBytes"); !l.Changed || l.Current != "FALSE" {
		t.Errorf("isThrottleByBytes: %+v", l)
	}
	if l := line(d.OnRestart, "readBufferSizeBytes"); l.Current != "512" || !strings.Contains(l.CurrentSource, "BookKeeper default") || !l.Changed ||
		!strings.Contains(l.Note, "512-byte preads, so a 1 MiB entry takes 2048") {
		t.Errorf("readBufferSizeBytes from the default: %+v", l)
	}
	for cur, warn := range map[string]bool{"512": true, "1024": true, "4095": true, "4096": false, "65536": false, "junk": false, "": false} {
		if got := smallReadBufferNote(cur) != ""; got != warn {
			t.Errorf("readBufferSizeBytes %q: note %v, want %v", cur, got, warn)
		}
	}
	if l := line(d.OnRestart, "dbStorage_writeCacheMaxSizeMb"); l.Current != "2048" || !strings.Contains(l.CurrentSource, "25%") {
		t.Errorf("write cache default: %+v", l)
	}
	if l := line(d.OnRestart, "write_buffer_size"); l.Current != "?" {
		t.Errorf("rocksdb without --rocksdb-conf: %+v", l)
	}
	if l := line(d.NewBookiesOnly, "journalDirectories"); !l.Changed || !strings.HasPrefix(l.Current, "1 dir(s): data/bookkeeper/journal") || !strings.HasPrefix(l.Recommended, "4 dir(s)") {
		t.Errorf("journal dirs: %+v", l)
	}
	for _, l := range d.OnRestart {
		if l.Key == "journalDirectories" || l.Key == "ledgerDirectories" {
			t.Errorf("%s in the restart group", l.Key)
		}
	}
	var b strings.Builder
	if err := RenderDiff(&b, d, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Applies on restart:", "New or re-formatted bookies only", "isThrottleByBytes", "CHANGE", "evidence: ", "note: 512 bytes is below Pulsar's 4096"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	bad, _ := ParseConf("bad.conf", strings.NewReader("gcWaitTime=fifteen minutes\n"))
	if _, err := Diff(bad, nil, rec, 0); !errors.Is(err, ErrBadConf) || !strings.Contains(err.Error(), "bad.conf:1") {
		t.Errorf("unparseable value: %v", err)
	}
}

// FuzzParseConf: any input is parsed or refused with ErrBadConf, never a
// panic; every key parsed has a line within the input.
func FuzzParseConf(f *testing.F) {
	for _, s := range []string{sampleConf, "a=b\n", "=\n", "k\\\n", "a:b c\n", "x=1\nx=2\n", "\x00=\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConf("f", strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, ErrBadConf) {
				t.Fatalf("error %v does not wrap ErrBadConf", err)
			}
			return
		}
		lines := strings.Count(s, "\n") + 1
		for k, v := range c.Keys {
			if k == "" || v.Line < 1 || v.Line > lines {
				t.Fatalf("key %q at line %d of %d", k, v.Line, lines)
			}
		}
	})
}

func FuzzParseRocksConf(f *testing.F) {
	for _, s := range []string{"[a]\nb=c\n", "[", "x=y", "[CFOptions \"default\"]\nwrite_buffer_size=1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseRocksConf("f", strings.NewReader(s)); err != nil && !errors.Is(err, ErrBadConf) {
			t.Fatalf("error %v does not wrap ErrBadConf", err)
		}
	})
}

// TestConfKeysAreKeys: every known key is a key (the list once held 17
// lines of Java source, "static final String … =", which no conf can set).
func TestConfKeysAreKeys(t *testing.T) {
	key := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.]*$`)
	for _, list := range [][]string{bookkeeperKeys, pulsarConfKeys} {
		for _, k := range list {
			if !key.MatchString(k) {
				t.Errorf("%q is not a configuration key", k)
			}
		}
	}
}
