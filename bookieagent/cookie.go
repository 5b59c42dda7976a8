package bookieagent

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/bookiedir"
)

// Cookie is a bookie's on-disk identity, read from <dir>/current/VERSION.
//
//	5                                   <- layout version (first line)
//	bookieHost: "10.0.0.1:3181"         <- protobuf text of CookieFormat
//	journalDir: "/j/0,/j/1"             <- comma-joined journal dirs
//	ledgerDirs: "2\t/l/0\t/l/1"         <- "<count>\t<dir>\t<dir>..."
//	instanceId: "…"
//
// Layout versions ≤ 3 are plain lines: version, host, journal dir, ledger
// dirs. The bookie refuses to start when its journal dirs differ from the
// cookie, and ledger dirs may only grow (allowStorageExpansion), so the
// directory counts are fixed once a bookie has data.
type Cookie struct {
	// Path is the VERSION file the cookie was read from.
	Path          string   `json:"path"`
	LayoutVersion int      `json:"layout_version"`
	BookieHost    string   `json:"bookie_host"`
	JournalDirs   []string `json:"journal_dirs"`
	LedgerDirs    []string `json:"ledger_dirs"`
	IndexDirs     []string `json:"index_dirs,omitempty"`
	InstanceID    string   `json:"instance_id,omitempty"`
}

// maxCookieBytes bounds a VERSION file before it is read whole.
const maxCookieBytes = 64 * 1024

// ParseCookie decodes the text of a current/VERSION file. Any malformed
// input returns ErrBadCookie; it never panics.
func ParseCookie(b []byte) (Cookie, error) {
	if len(b) > maxCookieBytes {
		return Cookie{}, fmt.Errorf("%w: %d bytes", ErrBadCookie, len(b))
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 0, 1024), maxCookieBytes)
	if !sc.Scan() {
		return Cookie{}, fmt.Errorf("%w: empty", ErrBadCookie)
	}
	v, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || v < 1 || v > 1000 {
		return Cookie{}, fmt.Errorf("%w: layout version %q", ErrBadCookie, sc.Text())
	}
	c := Cookie{LayoutVersion: v}
	if v <= 3 {
		var lines []string
		for sc.Scan() {
			lines = append(lines, strings.TrimSpace(sc.Text()))
		}
		if len(lines) < 3 {
			return Cookie{}, fmt.Errorf("%w: layout %d needs host, journal and ledger lines", ErrBadCookie, v)
		}
		c.BookieHost = lines[0]
		c.JournalDirs = splitNonEmpty(lines[1], ",")
		if c.LedgerDirs, err = decodeDirs(lines[2]); err != nil {
			return Cookie{}, err
		}
		return c, nil
	}
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text())
		rest.WriteByte('\n')
	}
	var cf bkproto.CookieFormat
	if err := prototext.Unmarshal([]byte(rest.String()), &cf); err != nil {
		return Cookie{}, fmt.Errorf("%w: %v", ErrBadCookie, err)
	}
	c.BookieHost = cf.GetBookieHost()
	c.InstanceID = cf.GetInstanceId()
	c.JournalDirs = splitNonEmpty(cf.GetJournalDir(), ",")
	if c.LedgerDirs, err = decodeDirs(cf.GetLedgerDirs()); err != nil {
		return Cookie{}, err
	}
	if cf.IndexDirs != nil {
		if c.IndexDirs, err = decodeDirs(cf.GetIndexDirs()); err != nil {
			return Cookie{}, err
		}
	}
	return c, nil
}

// decodeDirs reads BookKeeper's "<count>\t<dir>\t<dir>" encoding.
func decodeDirs(s string) ([]string, error) {
	parts := strings.Split(s, "\t")
	n, err := strconv.Atoi(strings.TrimSpace(parts[0]))
	if err != nil || n < 0 || n != len(parts)-1 {
		return nil, fmt.Errorf("%w: dirs %q", ErrBadCookie, s)
	}
	return parts[1:], nil
}

func splitNonEmpty(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// FindCookies reads the bookie cookies in dir itself (dir/current/VERSION)
// and in its direct sub-directories (dir/*/current/VERSION, the layout the
// agent recommends for several journal or ledger dirs per disk), sorted by
// path; a missing dir has none. Whether a directory holds bookie data at
// all (also without a cookie) is bookiedir.FindBookieData's answer.
func FindCookies(dir string) ([]Cookie, error) {
	paths, err := bookiedir.CookiePaths(dir)
	if err != nil {
		return nil, fmt.Errorf("look for cookies in %s: %w", dir, err)
	}
	var out []Cookie
	for _, p := range paths {
		b, err := readBounded(p, maxCookieBytes)
		if err != nil {
			return nil, fmt.Errorf("read cookie: %w", err)
		}
		c, err := ParseCookie(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		c.Path = p
		out = append(out, c)
	}
	return out, nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes exceeds %d", path, st.Size(), limit)
	}
	b := make([]byte, st.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && n != len(b) {
		return nil, err
	}
	return b[:n], nil
}
