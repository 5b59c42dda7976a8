package bookieagent

import (
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
)

// What the Apache Pulsar Helm chart (apache/pulsar-helm-chart,
// charts/pulsar, templates bookkeeper-configmap.yaml, _bookkeeper.tpl,
// bookkeeper-statefulset.yaml, autorecovery-configmap.yaml; read at commit
// 3288460) does with bookie settings, which FormatHelm follows:
//
//   - The bookkeeper ConfigMap holds the chart's own keys (metadata
//     service, http server, autoRecoveryDaemonEnabled, journalMaxBackups,
//     journalDirectories and PULSAR_PREFIX_journalDirectories,
//     ledgerDirectories, indexDirectories) followed by
//     bookkeeper.configData; the pod gets it as environment (envFrom).
//     A configData key equal to one of the chart's is a duplicate key.
//   - Directories come from bookkeeper.volumes: one volume mounted at
//     /pulsar/data/bookkeeper/journal (and .../ledgers), or with
//     useMultiVolumes one PersistentVolumeClaim per multiVolumes entry,
//     mounted at its mountPath, and the dirs set to the mount paths.
//   - Pulsar's bin/apply-config-from-env.py then writes the environment
//     into conf/bookkeeper.conf: a plain key only when the file has it (set
//     or commented out), PULSAR_PREFIX_<key> always and last, so it wins
//     over a plain key.
//   - Before that, bin/update-rocksdb-conf-from-env.py (when the image has
//     it) writes dbStorage_rocksDB_* variables (with or without the prefix)
//     into conf/entry_location_rocksdb.conf: writeBufferSizeMB →
//     write_buffer_size (× MiB), blockCacheSize → block_cache, ...
//   - AutoRecovery pods have their own ConfigMap: the chart's common keys
//     followed by autorecovery.configData.
const (
	ChartJournalMount = "/pulsar/data/bookkeeper/journal"
	ChartLedgersMount = "/pulsar/data/bookkeeper/ledgers"
	chartDataRoot     = "/pulsar/data/bookkeeper"
	// PulsarPrefix is the environment prefix apply-config-from-env.py
	// always applies.
	PulsarPrefix = "PULSAR_PREFIX_"
)

// ChartManagedKeys are the keys the chart's bookkeeper ConfigMap template
// sets itself (not counting TLS); FormatHelm never puts them, or their
// PULSAR_PREFIX_ forms, in bookkeeper.configData.
var ChartManagedKeys = []string{
	"zkServers", "zkLedgersRootPath", "metadataServiceUri", "zkTimeout", "httpServerEnabled", "httpServerPort",
	"useHostNameAsBookieID", "autoRecoveryDaemonEnabled", "journalMaxBackups", "journalDirectories",
	"ledgerDirectories", "indexDirectories", "extraServerComponents",
}

// rocksEnv maps update-rocksdb-conf-from-env.py's variables to the
// entry_location_rocksdb.conf keys it writes, with the factor it applies.
var rocksEnv = map[string]struct {
	key    string
	factor int64
}{
	"dbStorage_rocksDB_writeBufferSizeMB": {"write_buffer_size", MiB},
	"dbStorage_rocksDB_blockCacheSize":    {"block_cache", 1},
}

// HelmValues is the part of the chart's values FormatHelm writes.
type HelmValues struct {
	Bookkeeper   HelmBookkeeper   `json:"bookkeeper"`
	Autorecovery HelmAutorecovery `json:"autorecovery"`
}

// HelmBookkeeper is bookkeeper.volumes and bookkeeper.configData.
type HelmBookkeeper struct {
	Volumes    HelmVolumes       `json:"volumes"`
	ConfigData map[string]string `json:"configData"`
}

// HelmAutorecovery is autorecovery.configData.
type HelmAutorecovery struct {
	ConfigData map[string]string `json:"configData"`
}

// HelmVolumes is bookkeeper.volumes.{journal,ledgers}.
type HelmVolumes struct {
	Journal HelmVolume `json:"journal"`
	Ledgers HelmVolume `json:"ledgers"`
}

// HelmVolume is one role's volumes.
type HelmVolume struct {
	UseMultiVolumes bool              `json:"useMultiVolumes"`
	MultiVolumes    []HelmMultiVolume `json:"multiVolumes,omitempty"`
}

// HelmMultiVolume is one entry of multiVolumes.
type HelmMultiVolume struct {
	Name      string `json:"name"`
	Size      string `json:"size"`
	MountPath string `json:"mountPath"`
}

// helmVolumes lays one role's directories out as the chart's volumes: the
// effective layout (a live bookie's cookie, else the recommendation) in
// the bookie pod's paths.
func helmVolumes(disks []DiskDirs, role, mount string, defSize string) (HelmVolume, []string) {
	var notes []string
	var cur []string
	for _, d := range disks {
		if len(d.Current) > 0 {
			cur = d.Current
			break
		}
	}
	if cur != nil {
		// The cookie holds the bookie's own (pod) paths.
		if len(cur) == 1 {
			if cur[0] != mount {
				notes = append(notes, fmt.Sprintf("the live bookie's %s dir is %s, not the chart's %s", role, cur[0], mount))
			}
			return HelmVolume{}, notes
		}
		v := HelmVolume{UseMultiVolumes: true}
		for _, p := range cur {
			v.MultiVolumes = append(v.MultiVolumes, HelmMultiVolume{Name: path.Base(p), Size: defSize, MountPath: p})
		}
		notes = append(notes, fmt.Sprintf("the live bookie's %d %s dirs as its cookie has them; set each size to its PVC's", len(cur), role))
		return v, notes
	}
	n := 0
	for _, d := range disks {
		n += len(d.Recommended)
	}
	if n <= 1 {
		return HelmVolume{}, nil
	}
	v := HelmVolume{UseMultiVolumes: true}
	i := 0
	for _, d := range disks {
		size := defSize
		if d.TotalBytes > 0 {
			size = fmt.Sprintf("%dGi", max(1, int64(d.TotalBytes)/int64(len(d.Recommended))/GiB))
		}
		for range d.Recommended {
			name := fmt.Sprintf("%s%d", role, i)
			v.MultiVolumes = append(v.MultiVolumes, HelmMultiVolume{Name: name, Size: size, MountPath: path.Join(chartDataRoot, name)})
			i++
		}
		if len(d.Recommended) > 1 {
			notes = append(notes, fmt.Sprintf("%d %s volumes on the disk of %s: give them PersistentVolumes on that one disk (local volumes, or a local-path provisioner there); each PVC is a directory the bookie sees", len(d.Recommended), role, d.Disk))
		}
	}
	return v, notes
}

// HelmValuesOf returns the chart values for r: the effective directory
// layout as volumes, every other bookie setting as PULSAR_PREFIX_<key> in
// bookkeeper.configData (applied last by apply-config-from-env.py, so a
// plain copy of the key elsewhere cannot override it), AutoRecovery's in
// autorecovery.configData, and the RocksDB settings the image's
// update-rocksdb-conf-from-env.py maps. Settings without a value
// (NeedsInput) are left out.
func HelmValuesOf(r *Recommendation) (HelmValues, []string) {
	var v HelmValues
	var notes []string
	var n []string
	v.Bookkeeper.Volumes.Journal, n = helmVolumes(r.Layout.Journal, "journal", ChartJournalMount, "10Gi")
	notes = append(notes, n...)
	v.Bookkeeper.Volumes.Ledgers, n = helmVolumes(r.Layout.Ledgers, "ledgers", ChartLedgersMount, "50Gi")
	notes = append(notes, n...)
	v.Bookkeeper.ConfigData = map[string]string{}
	v.Autorecovery.ConfigData = map[string]string{}
	for _, s := range r.Settings {
		if s.File != FileBookKeeper || s.NeedsInput != "" || slices.Contains(ChartManagedKeys, s.Key) {
			continue
		}
		if s.Scope == ScopeAutoRecovery {
			v.Autorecovery.ConfigData[PulsarPrefix+s.Key] = s.Effective()
			continue
		}
		v.Bookkeeper.ConfigData[PulsarPrefix+s.Key] = s.Effective()
	}
	return v, notes
}

func renderHelm(w io.Writer, r *Recommendation) error {
	e := &errWriter{w: w}
	v, notes := HelmValuesOf(r)
	e.printf("# Helm values for the Apache Pulsar chart (charts/pulsar). How the chart applies them:\n")
	e.printf("# - bookkeeper.volumes: the chart mounts one volume per directory and sets journalDirectories /\n")
	e.printf("#   ledgerDirectories itself (also PULSAR_PREFIX_journalDirectories): never put those keys in configData.\n")
	e.printf("# - bookkeeper.configData becomes the bookie pod's environment; bin/apply-config-from-env.py writes\n")
	e.printf("#   PULSAR_PREFIX_<key> into conf/bookkeeper.conf last, so these values win over plain copies of the\n")
	e.printf("#   keys (e.g. the chart's own gcWaitTime/diskUsage* defaults).\n")
	e.printf("# - PULSAR_PREFIX_dbStorage_rocksDB_* are also written into conf/entry_location_rocksdb.conf by the\n")
	e.printf("#   image's bin/update-rocksdb-conf-from-env.py (write_buffer_size, block_cache); RocksDB keys it does\n")
	e.printf("#   not map (max_write_buffer_number) need `bookieagent recommend --format rocksdb` mounted as that file.\n")
	e.printf("# - autorecovery.configData configures the AutoRecovery pods (rereplicationEntryBatchSize).\n")
	e.printf("# Directory layouts change only with new or re-formatted bookies (new PVCs): see the notes below.\n")
	header(e, r, "# ")
	for _, n := range notes {
		e.printf("# NOTE: %s\n", n)
	}
	e.printf("bookkeeper:\n  volumes:\n")
	vol := func(role string, hv HelmVolume, key string) {
		e.printf("    %s:\n", role)
		if s, ok := r.Setting(key); ok {
			e.printf("      # %s — NEW OR RE-FORMATTED BOOKIES ONLY (the cookie fixes it): %s\n", key, s.Rule)
			for _, ev := range s.Evidence {
				e.printf("      # evidence: %s\n", ev)
			}
			if s.Current != "" && DirCount(s.Current) != DirCount(s.Value) {
				e.printf("      # This bookie keeps its current layout; for new or re-formatted bookies: %d dir(s)\n", DirCount(s.Value))
			}
		}
		e.printf("      useMultiVolumes: %t\n", hv.UseMultiVolumes)
		if len(hv.MultiVolumes) > 0 {
			e.printf("      multiVolumes:\n")
			for _, m := range hv.MultiVolumes {
				e.printf("        - name: %s\n          size: %s\n          mountPath: %s\n", m.Name, m.Size, m.MountPath)
			}
		}
	}
	vol("journal", v.Bookkeeper.Volumes.Journal, "journalDirectories")
	vol("ledgers", v.Bookkeeper.Volumes.Ledgers, "ledgerDirectories")
	e.printf("  configData:\n")
	cd := func(scope string) {
		for _, s := range r.Settings {
			if s.File != FileBookKeeper || s.Scope != scope || slices.Contains(ChartManagedKeys, s.Key) {
				continue
			}
			settingComments(e, s, "    # ")
			if s.NeedsInput != "" {
				e.printf("    # %s%s: (needs %s)\n", PulsarPrefix, s.Key, s.NeedsInput)
				continue
			}
			if m, ok := rocksEnv[s.Key]; ok {
				e.printf("    # → entry_location_rocksdb.conf %s=%d (update-rocksdb-conf-from-env.py)\n", m.key, parseIntOr(s.Effective(), 0)*m.factor)
			}
			e.printf("    %s%s: %s\n", PulsarPrefix, s.Key, strconv.Quote(s.Effective()))
		}
	}
	cd(ScopeBookie)
	e.printf("autorecovery:\n  configData:\n")
	cd(ScopeAutoRecovery)
	var unmapped []string
	for _, s := range r.Settings {
		if s.File == FileRocksDB && s.Key != "write_buffer_size" && s.Key != "block_cache" {
			unmapped = append(unmapped, fmt.Sprintf("%s=%s", s.Key, s.Value))
		}
	}
	if len(unmapped) > 0 {
		e.printf("# entry_location_rocksdb.conf keys with no environment mapping (keep or mount the file): %s\n", strings.Join(unmapped, ", "))
	}
	return e.err
}

func parseIntOr(s string, def int64) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return def
	}
	return v
}
