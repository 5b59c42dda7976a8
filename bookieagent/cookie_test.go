package bookieagent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A cookie as BookKeeper 4.17 writes it: layout version, then the protobuf
// text of CookieFormat (TextFormat escapes the tabs of ledgerDirs).
const cookieV5 = "5\nbookieHost: \"10.0.0.7:3181\"\njournalDir: \"/pulsar/data/bookkeeper/journal/0,/pulsar/data/bookkeeper/journal/1\"\n" +
	"ledgerDirs: \"2\\t/pulsar/data/bookkeeper/ledgers/0\\t/pulsar/data/bookkeeper/ledgers/1\"\ninstanceId: \"4d5f1c2e-9a3b-4c1d-8e7f-0a1b2c3d4e5f\"\n"

func TestParseCookie(t *testing.T) {
	c, err := ParseCookie([]byte(cookieV5))
	if err != nil {
		t.Fatal(err)
	}
	want := Cookie{LayoutVersion: 5, BookieHost: "10.0.0.7:3181",
		JournalDirs: []string{"/pulsar/data/bookkeeper/journal/0", "/pulsar/data/bookkeeper/journal/1"},
		LedgerDirs:  []string{"/pulsar/data/bookkeeper/ledgers/0", "/pulsar/data/bookkeeper/ledgers/1"},
		InstanceID:  "4d5f1c2e-9a3b-4c1d-8e7f-0a1b2c3d4e5f"}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
	v3, err := ParseCookie([]byte("3\nhost:3181\n/j\n1\t/l\n"))
	if err != nil || v3.BookieHost != "host:3181" || !reflect.DeepEqual(v3.JournalDirs, []string{"/j"}) || !reflect.DeepEqual(v3.LedgerDirs, []string{"/l"}) {
		t.Errorf("v3: %+v, %v", v3, err)
	}
	for _, bad := range []string{"", "x\n", "5\nbookieHost: 3\n", "5\nledgerDirs: \"3\\t/a\"\njournalDir: \"/j\"\nbookieHost: \"h\"\n", "3\nh\n", "0\n"} {
		if _, err := ParseCookie([]byte(bad)); !errors.Is(err, ErrBadCookie) {
			t.Errorf("%q: %v, want ErrBadCookie", bad, err)
		}
	}
}

func TestFindCookies(t *testing.T) {
	dir := t.TempDir()
	if cs, err := FindCookies(dir); err != nil || len(cs) != 0 {
		t.Fatalf("empty dir: %v, %v", cs, err)
	}
	for _, sub := range []string{"0", "1"} {
		if err := os.MkdirAll(filepath.Join(dir, sub, "current"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sub, "current", "VERSION"), []byte(cookieV5), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := FindCookies(dir)
	if err != nil || len(cs) != 2 || cs[0].Path != filepath.Join(dir, "0", "current", "VERSION") || len(cs[1].JournalDirs) != 2 {
		t.Fatalf("cookies = %+v, %v", cs, err)
	}
	// A corrupt cookie is an error, not "no cookie".
	d3 := t.TempDir()
	os.MkdirAll(filepath.Join(d3, "current"), 0o755)
	os.WriteFile(filepath.Join(d3, "current", "VERSION"), []byte("garbage"), 0o644)
	if _, err := FindCookies(d3); !errors.Is(err, ErrBadCookie) {
		t.Errorf("corrupt cookie: %v", err)
	}
}

func FuzzParseCookie(f *testing.F) {
	f.Add([]byte(cookieV5))
	f.Add([]byte("3\nhost:3181\n/j\n1\t/l\n"))
	f.Add([]byte("4\nledgerDirs: \"0\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCookie(b)
		if err == nil && c.LayoutVersion < 1 {
			t.Fatalf("accepted layout %d", c.LayoutVersion)
		}
	})
}
