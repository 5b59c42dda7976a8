package bookieagent

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// bkDefaults are BookKeeper 4.17.2's code defaults (ServerConfiguration,
// AbstractConfiguration) of the keys the agent recommends: what a bookie
// uses when its bookkeeper.conf does not set the key.
var bkDefaults = map[string]string{
	"journalDirectories":                  "/tmp/bk-txn",
	"journalWriteBufferSizeKB":            "64",
	"journalBufferedWritesThreshold":      "524288",
	"journalMaxGroupWaitMSec":             "2",
	"journalAlignmentSize":                "512",
	"writeBufferSizeBytes":                "65536",
	"readBufferSizeBytes":                 "512",
	"flushEntrylogBytes":                  "0",
	"isThrottleByBytes":                   "false",
	"compactionRateByBytes":               "1000000",
	"gcWaitTime":                          "600000",
	"minorCompactionInterval":             "3600",
	"minorCompactionThreshold":            "0.2",
	"majorCompactionInterval":             "86400",
	"minorCompactionMaxTimeMillis":        "-1",
	"majorCompactionMaxTimeMillis":        "-1",
	"majorCompactionThreshold":            "0.8",
	"rereplicationEntryBatchSize":         "10",
	"dbStorage_rocksDB_writeBufferSizeMB": "64",
}

// Default returns BookKeeper 4.17.2's code default of a key the agent
// recommends, and whether it has one.
func Default(key string) (string, bool) {
	v, ok := bkDefaults[key]
	return v, ok
}

// DiffLine is one setting: what the bookie uses now and what the agent
// recommends.
type DiffLine struct {
	File    string `json:"file"`
	Section string `json:"section,omitempty"`
	Key     string `json:"key"`
	Current string `json:"current"`
	// CurrentSource says where Current comes from: "bookkeeper.conf:12",
	// "BookKeeper default", "25% of direct memory", "not given".
	CurrentSource string   `json:"current_source"`
	Recommended   string   `json:"recommended"`
	Changed       bool     `json:"changed"`
	NeedsInput    string   `json:"needs_input,omitempty"`
	Note          string   `json:"note,omitempty"`
	Rule          string   `json:"rule"`
	Evidence      []string `json:"evidence"`
}

// DiffReport is `bookieagent diff`'s result.
type DiffReport struct {
	Conf      string `json:"conf"`
	RocksConf string `json:"rocksdb_conf,omitempty"`
	// OnRestart are the settings a restart applies.
	OnRestart []DiffLine `json:"applies_on_restart"`
	// NewBookiesOnly are the directory counts the cookie fixes.
	NewBookiesOnly []DiffLine `json:"new_bookies_only"`
	// Unknown lists the conf's unknown keys (when they were allowed).
	Unknown []string `json:"unknown_keys,omitempty"`
}

// Changes counts the changed lines.
func (d *DiffReport) Changes() int {
	n := 0
	for _, l := range append(append([]DiffLine{}, d.OnRestart...), d.NewBookiesOnly...) {
		if l.Changed {
			n++
		}
	}
	return n
}

// smallReadBufferNote warns about a readBufferSizeBytes under Pulsar's
// 4096 (BookKeeper's own default is 512): the bookie reads an entry larger
// than the buffer in preads of the buffer's size, which multiplies the CPU
// of every read it serves, an offload's included. "" for other values.
func smallReadBufferNote(current string) string {
	n, err := strconv.ParseInt(strings.TrimSpace(current), 10, 64)
	if err != nil || n <= 0 || n >= ReadBufferDefault {
		return ""
	}
	return fmt.Sprintf("%d bytes is below Pulsar's %d: an entry larger than the buffer is read in %d-byte preads, "+
		"so a 1 MiB entry takes %d; serving 1 MiB entries cost three bookies in Pulsar's JVM settings 1.8 CPU-s per GiB "+
		"at 512 bytes against 1.05 at 4096 (make bench-bk), and an offload reads every entry of a ledger once",
		n, ReadBufferDefault, n, (MiB+n-1)/n)
}

// Diff compares a bookie's configuration with a recommendation. rocks may
// be nil (not given); directBytes is the bookie JVM's direct memory (0 =
// unknown), for the cache sizes BookKeeper derives from it. A value of a
// compared key that does not parse as the recommendation's type is
// ErrBadConf, with its line.
func Diff(conf *Conf, rocks *RocksConf, rec *Recommendation, directBytes int64) (*DiffReport, error) {
	d := &DiffReport{Conf: conf.Path, Unknown: conf.Unknown}
	if rocks != nil {
		d.RocksConf = rocks.Path
	}
	for _, s := range rec.Settings {
		l := DiffLine{File: s.File, Section: s.Section, Key: s.Key, Recommended: s.Value, Rule: s.Rule, Evidence: s.Evidence, NeedsInput: s.NeedsInput}
		switch s.File {
		case FileRocksDB:
			if rocks == nil {
				l.Current, l.CurrentSource = "?", "not given (--rocksdb-conf)"
				break
			}
			if v, ok := rocks.Sections[s.Section][s.Key]; ok {
				l.Current, l.CurrentSource = v.Value, fmt.Sprintf("%s:%d", rocks.Path, v.Line)
			} else {
				l.Current, l.CurrentSource = "?", fmt.Sprintf("not in [%s]: RocksDB's own default", s.Section)
			}
		default:
			cur, src := currentOf(conf, s.Key, directBytes)
			l.Current, l.CurrentSource = cur, src
			if s.Key == "dbStorage_rocksDB_writeBufferSizeMB" && rocks != nil {
				l.Note = "ignored by BookKeeper: " + rocks.Path + " exists (write_buffer_size there counts)"
			}
			if s.Key == "readBufferSizeBytes" {
				l.Note = smallReadBufferNote(l.Current)
			}
		}
		if s.NewBookiesOnly {
			n := len(splitNonEmpty(l.Current, ","))
			r := len(splitNonEmpty(s.Value, ","))
			l.Changed = n != r
			l.Current = fmt.Sprintf("%d dir(s): %s", n, l.Current)
			l.Recommended = fmt.Sprintf("%d dir(s): %s", r, s.Value)
			d.NewBookiesOnly = append(d.NewBookiesOnly, l)
			continue
		}
		if s.NeedsInput == "" && l.Current != "?" && !strings.HasPrefix(l.Current, "(") {
			same, err := sameValue(l.Current, s.Value)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %s=%q: %v", ErrBadConf, l.CurrentSource, s.Key, l.Current, err)
			}
			l.Changed = !same
		}
		d.OnRestart = append(d.OnRestart, l)
	}
	return d, nil
}

// currentOf is what the bookie uses for key: the conf's value, else
// BookKeeper's default.
func currentOf(conf *Conf, key string, direct int64) (string, string) {
	v, ok := conf.Get(key)
	if key == "journalDirectories" && (!ok || v.Value == "") {
		// journalDirectories falls back to journalDirectory.
		if jd, has := conf.Get("journalDirectory"); has && jd.Value != "" {
			return jd.Value, fmt.Sprintf("%s:%d (journalDirectory)", conf.Path, jd.Line)
		}
	}
	if ok && v.Value != "" {
		return v.Value, fmt.Sprintf("%s:%d", conf.Path, v.Line)
	}
	switch key {
	case "dbStorage_writeCacheMaxSizeMb", "dbStorage_readAheadCacheMaxSizeMb":
		if direct > 0 {
			return strconv.FormatInt(direct/4/MiB, 10), "BookKeeper default: 25% of direct memory"
		}
		return "(25% of direct memory)", "BookKeeper default"
	}
	if def, ok := bkDefaults[key]; ok {
		return def, "BookKeeper default (not in the file)"
	}
	return "?", "not set"
}

// sameValue compares two values as numbers when the recommendation is one,
// as booleans when it is one, else as text.
func sameValue(cur, rec string) (bool, error) {
	if r, err := strconv.ParseFloat(rec, 64); err == nil {
		c, err := strconv.ParseFloat(strings.TrimSpace(cur), 64)
		if err != nil {
			return false, fmt.Errorf("not a number")
		}
		return math.Abs(c-r) <= 1e-9*math.Max(1, math.Abs(r)), nil
	}
	if r, err := strconv.ParseBool(rec); err == nil {
		c, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(cur)))
		if err != nil {
			return false, fmt.Errorf("not true or false")
		}
		return c == r, nil
	}
	return strings.TrimSpace(cur) == rec, nil
}

// RenderDiff writes d as text (the lines grouped, each with its rule and
// evidence) or, with asJSON, as JSON.
func RenderDiff(w io.Writer, d *DiffReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(d)
	}
	e := &errWriter{w: w}
	src := d.Conf
	if d.RocksConf != "" {
		src += " and " + d.RocksConf
	}
	e.printf("%s vs the recommendation: %d change(s)\n", src, d.Changes())
	for _, u := range d.Unknown {
		e.printf("WARNING: unknown key %s\n", u)
	}
	group := func(title string, ls []DiffLine) {
		e.printf("\n%s\n", title)
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, l := range ls {
			mark := "="
			switch {
			case l.NeedsInput != "":
				mark = "needs " + l.NeedsInput
			case l.Current == "?":
				mark = "?"
			case l.Changed:
				mark = "CHANGE"
			}
			rec := l.Recommended
			if l.NeedsInput != "" {
				rec = "-"
			}
			key := l.Key
			if l.File == FileRocksDB {
				key = fmt.Sprintf("%s [%s]", l.Key, l.Section)
			}
			fmt.Fprintf(tw, "  %s\t%s\t→ %s\t%s\t(%s)\n", key, l.Current, rec, mark, l.CurrentSource)
		}
		tw.Flush()
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		for i, l := range ls {
			e.printf("%s\n", lines[i])
			if l.Note != "" {
				e.printf("      note: %s\n", l.Note)
			}
			e.printf("      rule: %s\n", l.Rule)
			for _, ev := range l.Evidence {
				e.printf("      evidence: %s\n", ev)
			}
		}
	}
	group("Applies on restart:", d.OnRestart)
	group("New or re-formatted bookies only (the cookie fixes directory counts; ledgerId mod N places existing data):", d.NewBookiesOnly)
	return e.err
}
