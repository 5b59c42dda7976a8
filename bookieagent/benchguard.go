package bookieagent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/httpjson"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// DefaultDiskMargin is how far below the lowest of BookKeeper's disk-usage
// thresholds a benchmark stops writing: 2 points of the filesystem's size
// (on a 7 TB disk 140 GB, on a 100 GiB volume 2 GiB) leave the bookie room
// for what it writes while a run is under way (each run is bounded before
// it starts, from a fresh statfs).
const DefaultDiskMargin = 0.02

// ErrDiskNearFull is returned when a directory's filesystem is already so
// full that the benchmark could not write a single run without taking it
// past the bookie's disk-usage ceiling (DiskGuard).
var ErrDiskNearFull = errors.New("disk too full to benchmark beside the bookie")

// DiskGuard keeps a benchmark from endangering the bookie that uses (or
// will use) a disk: no run may take a journal or ledger directory's
// filesystem past Ceiling, the lowest of BookKeeper's thresholds minus
// Margin. BookKeeper's LedgerDirsMonitor marks a ledger dir full above
// diskUsageThreshold (all full: the bookie turns read-only) and writable
// again only below diskUsageLwmThreshold; GarbageCollectorThread suspends
// major compaction above diskUsageWarnThreshold. Usage is BookKeeper's
// figure, 1 − usable ÷ total (statfs f_bavail ÷ f_blocks), so root-reserved
// blocks count as used. Journal dirs are held to the same ceiling: no
// threshold covers them, but a full journal disk stops every add.
type DiskGuard struct {
	Threshold, WarnThreshold, LwmThreshold float64
	// Margin is subtracted from the lowest threshold (DefaultDiskMargin).
	Margin float64
	// Source says where the thresholds came from.
	Source string
}

// DefaultDiskGuard is BookKeeper 4.17's defaults (ServerConfiguration:
// diskUsageThreshold 0.95, diskUsageWarnThreshold 0.90,
// diskUsageLwmThreshold = diskUsageThreshold) with DefaultDiskMargin.
func DefaultDiskGuard() DiskGuard {
	return DiskGuard{Threshold: DefaultDiskUsageThreshold, WarnThreshold: DefaultDiskUsageWarnThreshold,
		LwmThreshold: DefaultDiskUsageThreshold, Margin: DefaultDiskMargin,
		Source: "BookKeeper's defaults (give the bookie's --conf or --bookie-http for its own)"}
}

// Ceiling is the highest usage a benchmark may leave a filesystem at.
func (g DiskGuard) Ceiling() float64 {
	return min(g.Threshold, g.WarnThreshold, g.LwmThreshold) - g.Margin
}

// String names the ceiling and where it comes from, for evidence.
func (g DiskGuard) String() string {
	return fmt.Sprintf("min(diskUsageThreshold %.2f, diskUsageWarnThreshold %.2f, diskUsageLwmThreshold %.2f) − margin %.2f = %.2f (%s)",
		g.Threshold, g.WarnThreshold, g.LwmThreshold, g.Margin, g.Ceiling(), g.Source)
}

func (g DiskGuard) validate() error {
	if err := CheckThresholds(g.Threshold, g.WarnThreshold, 0); err != nil {
		return err
	}
	if g.LwmThreshold <= 0 || g.LwmThreshold > g.Threshold {
		return fmt.Errorf("%w: diskUsageLwmThreshold %v: must be > 0 and ≤ diskUsageThreshold %v", ErrBadThreshold, g.LwmThreshold, g.Threshold)
	}
	if g.Margin < 0 || g.Ceiling() <= 0 {
		return fmt.Errorf("%w: margin %v leaves no room below %v", ErrBadThreshold, g.Margin, min(g.Threshold, g.WarnThreshold, g.LwmThreshold))
	}
	return nil
}

// DiskGuardFromConf reads the thresholds a bookie runs with from its
// bookkeeper.conf; a key the file does not set takes BookKeeper's default
// (diskUsageLwmThreshold: the file's diskUsageThreshold).
func DiskGuardFromConf(c *Conf, margin float64) (DiskGuard, error) {
	return diskGuardFrom(func(k string) (string, bool) {
		v, ok := c.Get(k)
		return v.Value, ok
	}, margin, c.Path)
}

func diskGuardFrom(get func(string) (string, bool), margin float64, source string) (DiskGuard, error) {
	g := DefaultDiskGuard()
	g.Margin, g.Source = margin, source
	var set []string
	read := func(key string, dst *float64) error {
		s, ok := get(key)
		if !ok || strings.TrimSpace(s) == "" {
			return nil
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return fmt.Errorf("%w: %s %q in %s: not a number", ErrBadThreshold, key, s, source)
		}
		*dst = v
		set = append(set, key)
		return nil
	}
	if err := read("diskUsageThreshold", &g.Threshold); err != nil {
		return DiskGuard{}, err
	}
	g.LwmThreshold = g.Threshold
	if err := read("diskUsageWarnThreshold", &g.WarnThreshold); err != nil {
		return DiskGuard{}, err
	}
	if err := read("diskUsageLwmThreshold", &g.LwmThreshold); err != nil {
		return DiskGuard{}, err
	}
	if len(set) == 0 {
		g.Source += ": no disk-usage keys set, BookKeeper's defaults apply"
	}
	if err := g.validate(); err != nil {
		return DiskGuard{}, fmt.Errorf("%s: %w", source, err)
	}
	return g, nil
}

// ServerConfigPath is BookKeeper's HTTP admin endpoint of the running
// configuration: a JSON object of every key the bookie was configured with
// (ConfigurationService, AbstractConfiguration.asJson).
const ServerConfigPath = "/api/v1/config/server_config"

// maxServerConfigBytes bounds the bookie's configuration JSON.
const maxServerConfigBytes = 8 << 20

// FetchServerConfig reads the configuration a running bookie uses from its
// HTTP admin server (ServerConfigPath under base), bounded by timeout.
// Values are returned as ServerConfigKeys gives them.
func FetchServerConfig(ctx context.Context, client *http.Client, base string, timeout time.Duration) (map[string]string, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/") + ServerConfigPath)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("bookie HTTP address %q: want http://host:port", httpjson.RedactURL(base))
	}
	var raw map[string]any
	_, err = httpjson.Get(ctx, u.String(), &raw, httpjson.Options{
		Client: client, Timeout: timeout, MaxBytes: maxServerConfigBytes, What: "a bookie's configuration (a JSON object)"})
	var se *httpjson.StatusError
	if errors.As(err, &se) {
		return nil, fmt.Errorf("%w (is the bookie's httpServerEnabled set?)", err)
	}
	if err != nil {
		return nil, err
	}
	return ServerConfigKeys(raw), nil
}

// ServerConfigKeys turns the decoded server_config object into key → value
// strings as bookkeeper.conf spells them: numbers without exponents, lists
// joined by ",", null as "".
func ServerConfigKeys(raw map[string]any) map[string]string {
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[k] = jsonValueString(v)
	}
	return out
}

func jsonValueString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = jsonValueString(e)
		}
		return strings.Join(parts, ",")
	case nil:
		return ""
	default:
		return fmt.Sprint(x)
	}
}

// DiskGuardFromServerConfig is DiskGuardFromConf for a running bookie's
// configuration (FetchServerConfig); source names where it was read.
func DiskGuardFromServerConfig(cfg map[string]string, margin float64, source string) (DiskGuard, error) {
	return diskGuardFrom(func(k string) (string, bool) {
		v, ok := cfg[k]
		return v, ok
	}, margin, source)
}

// GuardRecord is what the disk guard did during a benchmark, kept in the
// saved input (BenchPlan.Guard) and turned into warnings.
type GuardRecord struct {
	// Ceiling is the highest usage a run could leave, Rule how it follows
	// from the thresholds.
	Ceiling float64     `json:"ceiling"`
	Rule    string      `json:"rule"`
	Disks   []GuardDisk `json:"disks"`
}

// GuardDisk is one directory's filesystem under the guard.
type GuardDisk struct {
	Role Role   `json:"role"`
	Dir  string `json:"dir"`
	// UsageAtStart is BookKeeper's usage figure when the benchmark started,
	// PeakAllowed the most any run might have taken it to.
	UsageAtStart float64 `json:"usage_at_start"`
	SizeBytes    uint64  `json:"size_bytes"`
	// RoomAtStart is what could be written before the ceiling at the start.
	RoomAtStart int64 `json:"room_at_start"`
	// Shrunk and Skipped count runs bounded below their planned size, or
	// left out, to stay under the ceiling.
	Shrunk  int `json:"shrunk,omitempty"`
	Skipped int `json:"skipped,omitempty"`
}

// fsRoom is a filesystem's usage and what a run may still write on it.
type fsRoom struct {
	usage float64
	size  uint64
	room  int64
}

// room statfs-es dir now and returns what can be written before the guard's
// ceiling.
func (g DiskGuard) room(ctx context.Context, statfs StatfsFunc, dir string) (fsRoom, error) {
	u, err := statfs(ctx, dir)
	if err != nil {
		return fsRoom{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	if u.Size == 0 {
		return fsRoom{}, fmt.Errorf("statfs %s: size 0", dir)
	}
	usage := 1 - float64(u.Avail)/float64(u.Size)
	room := int64(u.Avail) - int64((1-g.Ceiling())*float64(u.Size))
	return fsRoom{usage: usage, size: u.Size, room: max(0, room)}, nil
}

// fsKey identifies dir's filesystem (st_dev), so runs on two directories of
// one filesystem share its room.
func fsKey(dir string) uint64 {
	st, err := os.Stat(dir)
	if err != nil {
		return 0
	}
	return devOf(st.Sys())
}

// describeRoom renders a filesystem's state for messages.
func (r fsRoom) describe(g DiskGuard) string {
	return fmt.Sprintf("usage %.1f%% of %s, %s writable before %.0f%% (%s)", 100*r.usage, units.HumanBytes(float64(r.size)),
		units.HumanBytes(float64(r.room)), 100*g.Ceiling(), g.String())
}

// checkRoom statfs-es every directory at the start, records the guard's
// view and refuses a filesystem that cannot take a single run
// (ErrDiskNearFull).
func (p *PreparedBench) checkRoom(ctx context.Context) error {
	g := *p.o.Guard
	p.Guard = GuardRecord{Ceiling: g.Ceiling(), Rule: g.String()}
	var errs []error
	for _, d := range p.Disks {
		r, err := g.room(ctx, p.o.Statfs, d.Disk.Dir)
		if err != nil {
			return fmt.Errorf("%s dir %s: %w", d.Role, d.Disk.Dir, err)
		}
		p.Guard.Disks = append(p.Guard.Disks, GuardDisk{Role: d.Role, Dir: d.Disk.Dir, UsageAtStart: r.usage, SizeBytes: r.size, RoomAtStart: r.room})
		if r.room < minRunBytes {
			errs = append(errs, fmt.Errorf("%s dir %s: %w: %s; a run needs at least %s: free space first, or benchmark another disk",
				d.Role, d.Disk.Dir, ErrDiskNearFull, r.describe(g), units.FormatBytes(minRunBytes)))
		}
	}
	return errors.Join(errs...)
}

// guardShare bounds one run's bytes by the room left on the filesystems it
// writes, from a fresh statfs (a live bookie keeps writing meanwhile). A
// mixed run writes half its share on the journal disk and its share on the
// ledger disk; two directories on one filesystem share its room. It
// reports skip when the room cannot hold a useful run.
func (p *PreparedBench) guardShare(ctx context.Context, pt benchPoint, share int64) (int64, bool, string, error) {
	g := *p.o.Guard
	type use struct {
		disk   int
		weight float64
	}
	uses := []use{{pt.disk, 1}}
	if pt.kind == kindMixed {
		uses = []use{{pt.disk, 0.5}, {pt.disk2, 1}}
	}
	weight := map[uint64]float64{}
	room := map[uint64]fsRoom{}
	for _, u := range uses {
		dir := p.Disks[u.disk].Disk.Dir
		k := fsKey(dir)
		weight[k] += u.weight
		if _, ok := room[k]; ok {
			continue
		}
		r, err := g.room(ctx, p.o.Statfs, dir)
		if err != nil {
			return 0, false, "", fmt.Errorf("%s dir %s: %w", p.Disks[u.disk].Role, dir, err)
		}
		room[k] = r
	}
	limit, tight := share, -1
	for _, u := range uses {
		k := fsKey(p.Disks[u.disk].Disk.Dir)
		if l := int64(float64(room[k].room) / weight[k]); l < limit {
			limit, tight = l, u.disk
		}
	}
	if tight < 0 {
		return share, false, "", nil
	}
	need := int64(minRunBytes)
	if pt.kind == kindRandRead {
		need = randReadFile
	}
	d := p.Disks[tight]
	why := fmt.Sprintf("%s dir %s: %s", d.Role, d.Disk.Dir, room[fsKey(d.Disk.Dir)].describe(g))
	if limit < need || (pt.kind == kindRandRead && limit < share) {
		p.Guard.Disks[tight].Skipped++
		return 0, true, why, nil
	}
	p.Guard.Disks[tight].Shrunk++
	return limit, false, why, nil
}

// guardWarnings summarises what the guard did, one line per directory it
// held back.
func (gr GuardRecord) warnings() []string {
	var w []string
	for _, d := range gr.Disks {
		if d.Shrunk == 0 && d.Skipped == 0 {
			continue
		}
		w = append(w, fmt.Sprintf("%s dir %s: usage %.1f%% at the start; %d benchmark runs made smaller and %d left out so the filesystem stays at or below %.0f%% (%s)",
			d.Role, d.Dir, 100*d.UsageAtStart, d.Shrunk, d.Skipped, 100*gr.Ceiling, gr.Rule))
	}
	return w
}
