package bookieagent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
)

// collector turns the Sampler's state into metrics at scrape time (const
// metrics, node_exporter style), so a scrape never touches the disks.
type collector struct {
	s *Sampler

	size, avail, used, usage, growth *prometheus.Desc
	toWarn, toRO, headroom, warnHead *prometheus.Desc
	threshold, dirInfo, errored      *prometheus.Desc
	bookieToRO, ledgerHeadroom       *prometheus.Desc
	bookieToWarn, bookieRO, writable *prometheus.Desc
	samples, sampleErrs, lastSample  *prometheus.Desc
	reads, writes, readB, writeB     *prometheus.Desc
	readT, writeT, ioT, ioTW         *prometheus.Desc
}

// NewCollector returns a prometheus.Collector exposing s's capacity and
// I/O figures as tierkeeper_bookieagent_*. Register it on an injected
// registry.
//
// Per mount (labels mountpoint, device, fstype): size/avail/used bytes,
// usage ratio (1 − avail/size), growth bytes/s and seconds to the warn and
// read-only thresholds (only when usage is growing), headroom bytes. Per
// device: /proc/diskstats counters as *_total. Per bookie: seconds to the
// warn and read-only thresholds (minimum over ledger dirs), read-only
// state and the bytes to free before it turns writable again.
func NewCollector(s *Sampler) prometheus.Collector {
	m := []string{"mountpoint", "device", "fstype"}
	d := []string{"device"}
	desc := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(metrics.Name("bookieagent", name), help, labels, nil)
	}
	return &collector{
		s:              s,
		size:           desc("mount_size_bytes", "Filesystem size (statfs f_blocks × f_bsize).", m),
		avail:          desc("mount_avail_bytes", "Bytes available to unprivileged users (statfs f_bavail × f_bsize), what BookKeeper counts as usable.", m),
		used:           desc("mount_used_bytes", "Size minus available bytes (reserved blocks count as used, as in BookKeeper).", m),
		usage:          desc("mount_usage_ratio", "1 − avail/size, BookKeeper's disk usage figure.", m),
		growth:         desc("mount_growth_bytes_per_second", "Least-squares growth of used bytes over the sampling window; absent with fewer than two samples.", m),
		toWarn:         desc("mount_seconds_to_warn", "Seconds until usage reaches diskUsageWarnThreshold at the fitted growth; absent when not growing.", m),
		toRO:           desc("mount_seconds_to_readonly", "Seconds until usage reaches diskUsageThreshold at the fitted growth; absent when not growing.", m),
		headroom:       desc("mount_readonly_headroom_bytes", "avail − (1 − diskUsageThreshold) × size: bytes left before the dirs on this mount stop taking writes.", m),
		warnHead:       desc("mount_warn_headroom_bytes", "avail − (1 − diskUsageWarnThreshold) × size.", m),
		errored:        desc("mount_sample_error", "1 when the last statfs of this mount failed.", []string{"mountpoint"}),
		threshold:      desc("disk_usage_threshold_ratio", "BookKeeper's thresholds the agent reports against (level=readonly: diskUsageThreshold, level=warn: diskUsageWarnThreshold, level=lwm: diskUsageLwmThreshold).", []string{"level"}),
		dirInfo:        desc("dir_info", "A configured bookie directory and the mount holding it.", []string{"dir", "role", "mountpoint"}),
		bookieToRO:     desc("bookie_seconds_to_readonly", "Seconds until the first ledger dir passes diskUsageThreshold (the minimum over ledger dirs: DbLedgerStorage pins each ledger to dir ledgerId mod N); absent when none is growing.", nil),
		bookieToWarn:   desc("bookie_seconds_to_warn", "Seconds until the first ledger dir passes diskUsageWarnThreshold (minimum over ledger dirs); absent when none is growing.", nil),
		bookieRO:       desc("bookie_readonly", "1 when every ledger dir is past diskUsageThreshold (BookKeeper turns the bookie read-only).", nil),
		writable:       desc("bookie_writable_again_bytes", "While read-only: bytes to free before the usage over all ledger filesystems falls below diskUsageLwmThreshold and the bookie turns writable again.", nil),
		ledgerHeadroom: desc("bookie_ledger_headroom_bytes", "Bytes the ledger mounts can still take before diskUsageThreshold.", nil),
		samples:        desc("samples_total", "Capacity samples taken.", nil),
		sampleErrs:     desc("sample_errors_total", "Samples in which at least one statfs or diskstats read failed.", nil),
		lastSample:     desc("last_sample_timestamp_seconds", "Unix time of the last sample.", nil),
		reads:          desc("disk_reads_completed_total", "Reads completed (/proc/diskstats).", d),
		writes:         desc("disk_writes_completed_total", "Writes completed (/proc/diskstats).", d),
		readB:          desc("disk_read_bytes_total", "Bytes read (/proc/diskstats sectors × 512).", d),
		writeB:         desc("disk_written_bytes_total", "Bytes written (/proc/diskstats sectors × 512).", d),
		readT:          desc("disk_read_time_seconds_total", "Time spent on reads.", d),
		writeT:         desc("disk_write_time_seconds_total", "Time spent on writes.", d),
		ioT:            desc("disk_io_time_seconds_total", "Time the device had I/O in flight (rate = utilisation).", d),
		ioTW:           desc("disk_io_time_weighted_seconds_total", "Weighted time doing I/O (rate = average queue).", d),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.size, c.avail, c.used, c.usage, c.growth, c.toWarn, c.toRO, c.headroom, c.warnHead,
		c.errored, c.threshold, c.dirInfo, c.bookieToRO, c.bookieToWarn, c.bookieRO, c.writable, c.ledgerHeadroom, c.samples, c.sampleErrs, c.lastSample,
		c.reads, c.writes, c.readB, c.writeB, c.readT, c.writeT, c.ioT, c.ioTW} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	r := c.s.Report()
	g := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	cnt := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	g(c.threshold, r.Threshold, "readonly")
	g(c.threshold, r.WarnThreshold, "warn")
	g(c.threshold, r.LWMThreshold, "lwm")
	seenDev := map[string]bool{}
	for _, m := range r.Mounts {
		for _, d := range m.Dirs {
			g(c.dirInfo, 1, d.Dir, string(d.Role), m.MountPoint)
		}
		errV := 0.0
		if m.Error != "" {
			errV = 1
		}
		g(c.errored, errV, m.MountPoint)
		if m.Samples == 0 {
			continue
		}
		l := []string{m.MountPoint, m.Device, m.FSType}
		g(c.size, float64(m.SizeBytes), l...)
		g(c.avail, float64(m.AvailBytes), l...)
		g(c.used, float64(m.UsedBytes), l...)
		g(c.usage, m.Usage, l...)
		g(c.headroom, m.HeadroomBytes, l...)
		g(c.warnHead, m.WarnHeadroomBytes, l...)
		if m.GrowthBytesPerSec != nil {
			g(c.growth, *m.GrowthBytesPerSec, l...)
		}
		if m.SecondsToWarn != nil {
			g(c.toWarn, *m.SecondsToWarn, l...)
		}
		if m.SecondsToReadOnly != nil {
			g(c.toRO, *m.SecondsToReadOnly, l...)
		}
		if io := m.IO; io != nil && !seenDev[io.Device] {
			seenDev[io.Device] = true
			cnt(c.reads, float64(io.ReadsCompleted), io.Device)
			cnt(c.writes, float64(io.WritesCompleted), io.Device)
			cnt(c.readB, float64(io.ReadBytes), io.Device)
			cnt(c.writeB, float64(io.WrittenBytes), io.Device)
			cnt(c.readT, io.ReadTimeSeconds, io.Device)
			cnt(c.writeT, io.WriteTimeSeconds, io.Device)
			cnt(c.ioT, io.IOTimeSeconds, io.Device)
			cnt(c.ioTW, io.IOTimeWeightedSecond, io.Device)
		}
	}
	g(c.ledgerHeadroom, r.LedgerHeadroomBytes)
	if r.SecondsToReadOnly != nil {
		g(c.bookieToRO, *r.SecondsToReadOnly)
	}
	if r.SecondsToWarn != nil {
		g(c.bookieToWarn, *r.SecondsToWarn)
	}
	ro := 0.0
	if r.ReadOnly {
		ro = 1
	}
	g(c.bookieRO, ro)
	g(c.writable, r.WritableAgainBytes)
	n, e, last := c.s.Stats()
	cnt(c.samples, float64(n))
	cnt(c.sampleErrs, float64(e))
	if !last.IsZero() {
		g(c.lastSample, float64(last.UnixNano())/1e9)
	}
}
