package bookieagent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/tierkeeper/tierkeeper/internal/suggest"
)

// ErrBadConf is returned for a bookkeeper.conf or RocksDB options file
// that cannot be read as one: malformed lines, repeated or unknown keys,
// values that do not parse.
var ErrBadConf = errors.New("bad configuration file")

// maxConfBytes bounds a configuration file before it is parsed.
const maxConfBytes = 4 << 20

// ConfValue is one key of a configuration file.
type ConfValue struct {
	Value string
	Line  int
}

// Conf is a parsed bookkeeper.conf (a Java properties file, as Apache
// Commons Configuration reads it for BookKeeper).
type Conf struct {
	Path string
	Keys map[string]ConfValue
	// Unknown lists keys that are neither BookKeeper 4.17's nor in Pulsar's
	// shipped bookkeeper.conf, each with a suggestion when one is close.
	Unknown []string
}

// Get returns a key's value and whether the file sets it.
func (c *Conf) Get(key string) (ConfValue, bool) {
	v, ok := c.Keys[key]
	return v, ok
}

// ParseConf reads a bookkeeper.conf: "key=value", "key: value" or "key
// value" lines, "#" and "!" comments, a trailing backslash continuing a
// line. A repeated key is an error (Commons Configuration would turn it into
// a list, which for most keys BookKeeper does not expect), so are a line
// with no key, a key with characters no BookKeeper key has, and input over
// 4 MiB. Unknown keys are collected in Unknown; the caller decides whether
// they are errors.
func ParseConf(path string, r io.Reader) (*Conf, error) {
	c := &Conf{Path: path, Keys: map[string]ConfValue{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxConfBytes+1))
	sc.Buffer(make([]byte, 0, 64*1024), maxConfBytes)
	var errs []error
	n, read := 0, 0
	var cont strings.Builder
	contStart := 0
	for sc.Scan() {
		n++
		raw := sc.Text()
		read += len(raw) + 1
		if read > maxConfBytes {
			return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrBadConf, path, maxConfBytes)
		}
		line := strings.TrimLeftFunc(raw, unicode.IsSpace)
		if cont.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			if cont.Len() == 0 {
				contStart = n
			}
			cont.WriteString(strings.TrimSuffix(line, `\`))
			continue
		}
		at := n
		if cont.Len() > 0 {
			cont.WriteString(line)
			line, at = cont.String(), contStart
			cont.Reset()
		}
		key, val, err := splitProperty(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", path, at, err))
			continue
		}
		if old, dup := c.Keys[key]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: %s is already set on line %d (a repeated key becomes a list in BookKeeper's configuration library)", path, at, key, old.Line))
			continue
		}
		c.Keys[key] = ConfValue{Value: val, Line: at}
		if !knownKey(key) {
			u := fmt.Sprintf("%s (line %d)", key, at)
			if s := suggestKey(key); s != "" {
				u += fmt.Sprintf(", did you mean %s?", s)
			}
			c.Unknown = append(c.Unknown, u)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrBadConf, path, err)
	}
	if cont.Len() > 0 {
		errs = append(errs, fmt.Errorf("%s:%d: the file ends inside a continued line", path, contStart))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrBadConf, errors.Join(errs...))
	}
	return c, nil
}

// splitProperty splits a properties line at the first unescaped '=', ':'
// or whitespace.
func splitProperty(line string) (string, string, error) {
	i := strings.IndexFunc(line, func(r rune) bool { return r == '=' || r == ':' || unicode.IsSpace(r) })
	key, rest := line, ""
	if i >= 0 {
		key, rest = line[:i], line[i:]
	}
	rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = rest[1:]
	}
	if key == "" {
		return "", "", fmt.Errorf("no key in %q", truncate(line, 60))
	}
	for _, r := range key {
		if !(r == '_' || r == '.' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return "", "", fmt.Errorf("key %q has a %q, which no BookKeeper key has", truncate(key, 60), r)
		}
	}
	return key, strings.TrimSpace(rest), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func knownKey(k string) bool {
	return slices.Contains(bookkeeperKeys, k) || slices.Contains(pulsarConfKeys, k)
}

// suggestKey returns the known key closest to k (case-insensitively, at
// most 3 edits), or "".
func suggestKey(k string) string {
	lower := func(ks []string) []string {
		out := make([]string, len(ks))
		for i, c := range ks {
			out[i] = strings.ToLower(c)
		}
		return out
	}
	pk, bk := lower(pulsarConfKeys), lower(bookkeeperKeys)
	best, d := suggest.Closest(strings.ToLower(k), pk, bk)
	if d < 0 || d > 3 {
		return ""
	}
	if i := slices.Index(pk, best); i >= 0 {
		return pulsarConfKeys[i]
	}
	return bookkeeperKeys[slices.Index(bk, best)]
}

// RocksConf is a parsed RocksDB options file (entry_location_rocksdb.conf):
// section → key → value.
type RocksConf struct {
	Path     string
	Sections map[string]map[string]ConfValue
}

// ParseRocksConf reads an INI-style RocksDB options file. A key outside a
// section, a line that is neither a section, a comment nor key=value, and a
// key repeated in its section are errors.
func ParseRocksConf(path string, r io.Reader) (*RocksConf, error) {
	c := &RocksConf{Path: path, Sections: map[string]map[string]ConfValue{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxConfBytes+1))
	sc.Buffer(make([]byte, 0, 64*1024), maxConfBytes)
	var errs []error
	section := ""
	n, read := 0, 0
	for sc.Scan() {
		n++
		read += len(sc.Text()) + 1
		if read > maxConfBytes {
			return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrBadConf, path, maxConfBytes)
		}
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				errs = append(errs, fmt.Errorf("%s:%d: unterminated section %q", path, n, truncate(line, 60)))
				continue
			}
			section = strings.TrimSpace(line[1 : len(line)-1])
			if c.Sections[section] == nil {
				c.Sections[section] = map[string]ConfValue{}
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok || k == "":
			errs = append(errs, fmt.Errorf("%s:%d: not key=value: %q", path, n, truncate(line, 60)))
		case section == "":
			errs = append(errs, fmt.Errorf("%s:%d: %s is outside a section", path, n, k))
		default:
			if old, dup := c.Sections[section][k]; dup {
				errs = append(errs, fmt.Errorf("%s:%d: %s is already set in [%s] on line %d", path, n, k, section, old.Line))
				continue
			}
			c.Sections[section][k] = ConfValue{Value: v, Line: n}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrBadConf, path, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrBadConf, errors.Join(errs...))
	}
	return c, nil
}
