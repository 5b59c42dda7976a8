// Package agentapi holds the JSON types the bookie agent serves at
// /report: a node's capacity per mount and per ledger directory, with the
// growth fit and the time left before BookKeeper turns the bookie
// read-only. It imports nothing of the agent, so the offloader (pressure)
// and the cluster view decode the agent's answers without linking the
// benchmark and rule code.
package agentapi

import "time"

// Role says what a configured directory holds.
type Role string

// Directory roles.
const (
	RoleJournal Role = "journal"
	RoleLedger  Role = "ledger"
)

// DirRole is one configured bookie directory.
type DirRole struct {
	Dir  string `json:"dir"`
	Role Role   `json:"role"`
}

// IOCounters are a device's cumulative /proc/diskstats counters.
type IOCounters struct {
	Device               string  `json:"device"`
	ReadsCompleted       uint64  `json:"reads_completed_total"`
	WritesCompleted      uint64  `json:"writes_completed_total"`
	ReadBytes            uint64  `json:"read_bytes_total"`
	WrittenBytes         uint64  `json:"written_bytes_total"`
	ReadTimeSeconds      float64 `json:"read_time_seconds_total"`
	WriteTimeSeconds     float64 `json:"write_time_seconds_total"`
	IOTimeSeconds        float64 `json:"io_time_seconds_total"`
	IOTimeWeightedSecond float64 `json:"io_time_weighted_seconds_total"`
}

// MountReport is the capacity of one mount. Usage is 1 − avail/size, as
// BookKeeper computes it; times are nil when usage is not growing or too
// few samples exist.
type MountReport struct {
	MountPoint string    `json:"mount_point"`
	Device     string    `json:"device,omitempty"`
	FSType     string    `json:"fs_type,omitempty"`
	Dirs       []DirRole `json:"dirs"`
	SizeBytes  uint64    `json:"size_bytes"`
	// UsedBytes is size − avail (reserved blocks count as used, as in BK).
	UsedBytes  uint64  `json:"used_bytes"`
	AvailBytes uint64  `json:"avail_bytes"`
	Usage      float64 `json:"usage"`
	AboveWarn  bool    `json:"above_warn"`
	// AboveThreshold means BookKeeper treats the dirs here as full.
	AboveThreshold bool `json:"above_threshold"`
	// HeadroomBytes is avail − (1 − threshold) × size: what can still be
	// written before the read-only threshold (negative when past it).
	HeadroomBytes     float64  `json:"headroom_bytes"`
	WarnHeadroomBytes float64  `json:"warn_headroom_bytes"`
	GrowthBytesPerSec *float64 `json:"growth_bytes_per_sec"`
	SecondsToWarn     *float64 `json:"seconds_to_warn"`
	SecondsToReadOnly *float64 `json:"seconds_to_readonly"`
	// Samples and WindowSeconds describe the data behind the fit.
	Samples       int         `json:"samples"`
	WindowSeconds float64     `json:"window_seconds"`
	IO            *IOCounters `json:"io,omitempty"`
	Error         string      `json:"error,omitempty"`
}

// Report is the node's capacity report.
type Report struct {
	GeneratedAt   time.Time `json:"generated_at"`
	Threshold     float64   `json:"disk_usage_threshold"`
	WarnThreshold float64   `json:"disk_usage_warn_threshold"`
	// LWMThreshold is diskUsageLwmThreshold.
	LWMThreshold float64       `json:"disk_usage_lwm_threshold"`
	Mounts       []MountReport `json:"mounts"`
	// LedgerDirs is the capacity of every ledger directory (its mount's
	// figures; dirs on one mount share them).
	LedgerDirs []DirCapacity `json:"ledger_dirs"`
	// LedgerHeadroomBytes sums HeadroomBytes over mounts holding ledger
	// dirs; LedgerGrowthBytesPerSec sums their growth.
	LedgerUsedBytes         uint64   `json:"ledger_used_bytes"`
	LedgerHeadroomBytes     float64  `json:"ledger_headroom_bytes"`
	LedgerWarnHeadroomBytes float64  `json:"ledger_warn_headroom_bytes"`
	LedgerGrowthBytesPerSec *float64 `json:"ledger_growth_bytes_per_sec"`
	// SecondsToWarn and SecondsToReadOnly are the bookie's: the minimum
	// over its ledger directories. DbLedgerStorage keeps each ledger in
	// dir ledgerId mod N, so writes cannot move to dirs with room: the
	// first dir to fill stops its share of the ledgers (and the bookie is
	// read-only once all are past diskUsageThreshold). Nil when no ledger
	// dir is growing.
	SecondsToWarn     *float64 `json:"seconds_to_warn"`
	SecondsToReadOnly *float64 `json:"seconds_to_readonly"`
	// ReadOnly is true when every ledger dir is past diskUsageThreshold:
	// BookKeeper then turns the bookie read-only (readOnlyModeEnabled).
	ReadOnly bool `json:"read_only"`
	// WritableAgainBytes is, while ReadOnly, what must be freed before the
	// bookie turns writable again: the usage over all ledger filesystems
	// together (sum of available ÷ sum of sizes) must fall below
	// diskUsageLwmThreshold (LedgerDirsMonitor).
	WritableAgainBytes float64 `json:"writable_again_bytes,omitempty"`
	// SecondsToWritable is, while ReadOnly and the ledger usage shrinks,
	// when that happens.
	SecondsToWritable *float64  `json:"seconds_to_writable,omitempty"`
	LastSample        time.Time `json:"last_sample"`
	SampleErrors      []string  `json:"sample_errors,omitempty"`
}

// DirCapacity is one ledger directory's capacity.
type DirCapacity struct {
	Dir               string   `json:"dir"`
	MountPoint        string   `json:"mount_point"`
	Usage             float64  `json:"usage"`
	SecondsToWarn     *float64 `json:"seconds_to_warn"`
	SecondsToReadOnly *float64 `json:"seconds_to_readonly"`
	AboveThreshold    bool     `json:"above_threshold"`
}

// Mount states (MountReport.State).
const (
	MountOK    = "ok"
	MountError = "error"
	// MountFull: a ledger dir here is past diskUsageThreshold.
	MountFull = "FULL"
	// MountWarn: a ledger dir here is past diskUsageWarnThreshold.
	MountWarn = "warn"
	// MountHigh: past the warn threshold, but the mount holds no ledger
	// dir (BookKeeper's thresholds apply to ledger and index dirs only).
	MountHigh = "high"
)

// State is the mount's state against BookKeeper's thresholds: MountOK,
// MountError (not read), MountFull, MountWarn or MountHigh.
func (m MountReport) State() string {
	ledger := false
	for _, d := range m.Dirs {
		ledger = ledger || d.Role == RoleLedger
	}
	switch {
	case m.Error != "":
		return MountError
	case m.AboveThreshold && ledger:
		return MountFull
	case m.AboveWarn && ledger:
		return MountWarn
	case m.AboveWarn:
		return MountHigh
	}
	return MountOK
}
