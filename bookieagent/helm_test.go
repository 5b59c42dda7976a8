package bookieagent

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// chartBookieConfigMap renders the data of the chart's bookkeeper ConfigMap
// from the values, as templates/bookkeeper-configmap.yaml does (zookeeper
// metadata, no TLS, autorecovery component on): the common keys, the
// directory keys from bookkeeper.volumes, then bookkeeper.configData. A key
// present twice is an error, as the rendered YAML would hold it twice.
func chartBookieConfigMap(v HelmValues) (map[string]string, error) {
	cm := configMap{}
	set := cm.set
	chartCommon(set)
	set("autoRecoveryDaemonEnabled", "false")
	set("journalMaxBackups", "0")
	dirs := func(hv HelmVolume, def string) string {
		if !hv.UseMultiVolumes {
			return def
		}
		var p []string
		for _, m := range hv.MultiVolumes {
			p = append(p, m.MountPath)
		}
		return strings.Join(p, ",")
	}
	set("journalDirectories", dirs(v.Bookkeeper.Volumes.Journal, ChartJournalMount))
	set("PULSAR_PREFIX_journalDirectories", dirs(v.Bookkeeper.Volumes.Journal, ChartJournalMount))
	set("ledgerDirectories", dirs(v.Bookkeeper.Volumes.Ledgers, ChartLedgersMount))
	for k, val := range v.Bookkeeper.ConfigData {
		set(k, val)
	}
	return cm.done()
}

// configMap collects ConfigMap data and the keys set twice.
type configMap struct {
	data map[string]string
	dup  []string
}

func (c *configMap) set(k, v string) {
	if c.data == nil {
		c.data = map[string]string{}
	}
	if _, ok := c.data[k]; ok {
		c.dup = append(c.dup, k)
	}
	c.data[k] = v
}

func (c *configMap) done() (map[string]string, error) {
	if len(c.dup) > 0 {
		return nil, fmt.Errorf("duplicate ConfigMap keys %v", c.dup)
	}
	return c.data, nil
}

// chartCommon is _bookkeeper.tpl's pulsar.bookkeeper.config.common.
func chartCommon(set func(k, v string)) {
	set("zkServers", "")
	set("zkLedgersRootPath", "")
	set("metadataServiceUri", "zk+hierarchical://zk:2181/ledgers")
	set("httpServerEnabled", "true")
	set("httpServerPort", "8000")
	set("useHostNameAsBookieID", "true")
}

func chartAutorecoveryConfigMap(v HelmValues) (map[string]string, error) {
	cm := configMap{}
	chartCommon(cm.set)
	for k, val := range v.Autorecovery.ConfigData {
		cm.set(k, val)
	}
	return cm.done()
}

// applyConfigFromEnv is what Pulsar's bin/apply-config-from-env.py does to
// conf/bookkeeper.conf (whose keys, set or commented out, are
// pulsarConfKeys): every variable, prefix stripped, whose key the file has
// is applied in sorted order; then every PULSAR_PREFIX_ variable is added
// or applied again, so it wins.
func applyConfigFromEnv(env map[string]string) map[string]string {
	conf := map[string]string{}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key := strings.TrimPrefix(k, PulsarPrefix)
		if slices.Contains(pulsarConfKeys, key) {
			conf[key] = strings.TrimSpace(env[k])
		}
	}
	for _, k := range keys {
		if key, ok := strings.CutPrefix(k, PulsarPrefix); ok {
			conf[key] = env[k]
		}
	}
	return conf
}

// updateRocksFromEnv is bin/update-rocksdb-conf-from-env.py's mapping for
// the keys the agent emits.
func updateRocksFromEnv(env map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		m, ok := rocksEnv[strings.TrimPrefix(k, PulsarPrefix)]
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		out[m.key] = strconv.FormatInt(n*m.factor, 10)
	}
	return out
}

// TestHelmThroughTheChart renders every profile's Helm values, decodes them
// strictly, renders the ConfigMaps the chart would build from them and runs
// Pulsar's config scripts on the pod's environment: the bookkeeper.conf and
// entry_location_rocksdb.conf the bookie would read must hold every
// recommended value, the directories must be the pod's mount paths in the
// effective layout, and no key may be set twice. (This used to go wrong: the chart's
// PULSAR_PREFIX_journalDirectories discarded the agent's journalDirectories,
// the paths were the agent's, and rereplicationEntryBatchSize went to the
// bookies instead of AutoRecovery.)
func TestHelmThroughTheChart(t *testing.T) {
	profiles, _ := filepath.Glob(filepath.Join("testdata", "profiles", "*.json"))
	for _, p := range profiles {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		t.Run(name, func(t *testing.T) {
			r, err := Recommend(loadProfile(t, name))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := Render(&b, r, FormatHelm); err != nil {
				t.Fatal(err)
			}
			var v HelmValues
			if err := yaml.UnmarshalStrict([]byte(b.String()), &v); err != nil {
				t.Fatalf("helm output does not decode strictly: %v\n%s", err, b.String())
			}
			cm, err := chartBookieConfigMap(v)
			if err != nil {
				t.Fatal(err)
			}
			conf := applyConfigFromEnv(cm)
			rocks := updateRocksFromEnv(cm)
			ar, err := chartAutorecoveryConfigMap(v)
			if err != nil {
				t.Fatal(err)
			}
			arConf := applyConfigFromEnv(ar)
			for _, s := range r.Settings {
				switch {
				case s.File == FileRocksDB:
					if got, ok := rocks[s.Key]; ok && got != s.Value {
						t.Errorf("entry_location_rocksdb.conf %s = %s, want %s", s.Key, got, s.Value)
					}
				case s.Key == "journalDirectories" || s.Key == "ledgerDirectories":
					want := len(strings.Split(s.Effective(), ","))
					dirs := strings.Split(conf[s.Key], ",")
					if len(dirs) != want {
						t.Errorf("%s: bookie reads %d dirs %v, want %d", s.Key, len(dirs), dirs, want)
					}
					for _, d := range dirs {
						if !strings.HasPrefix(d, "/pulsar/data/bookkeeper/") && s.Current == "" {
							t.Errorf("%s: %s is not a path in the bookie pod", s.Key, d)
						}
					}
				case s.NeedsInput != "":
					if _, ok := conf[s.Key]; ok {
						t.Errorf("%s set although it has no value", s.Key)
					}
				case s.Scope == ScopeAutoRecovery:
					if arConf[s.Key] != s.Effective() {
						t.Errorf("autorecovery %s = %q, want %q", s.Key, arConf[s.Key], s.Effective())
					}
					if _, ok := conf[s.Key]; ok {
						t.Errorf("%s is AutoRecovery's, but set on the bookies", s.Key)
					}
				default:
					if conf[s.Key] != s.Effective() {
						t.Errorf("bookkeeper.conf %s = %q, want %q", s.Key, conf[s.Key], s.Effective())
					}
				}
			}
			if s, _ := r.Setting("write_buffer_size"); rocks["write_buffer_size"] != s.Value {
				t.Errorf("write_buffer_size not carried into entry_location_rocksdb.conf: %v", rocks)
			}
			// A user's plain copy of a key (the chart's default values set
			// gcWaitTime, diskUsage*, …) does not override the agent's.
			user := map[string]string{"gcWaitTime": "300000", "compactionRateByBytes": "1"}
			for k, val := range cm {
				user[k] = val
			}
			if c := applyConfigFromEnv(user); c["gcWaitTime"] != conf["gcWaitTime"] || c["compactionRateByBytes"] != conf["compactionRateByBytes"] {
				t.Errorf("a plain key in configData overrides the agent's PULSAR_PREFIX_ value: %s, %s", c["gcWaitTime"], c["compactionRateByBytes"])
			}
		})
	}
}

// TestHelmMultiVolumes: several directories become one multiVolumes entry
// each, at the pod's mount paths, sized from the disk; a live bookie keeps
// its cookie's layout.
func TestHelmMultiVolumes(t *testing.T) {
	r := &Recommendation{Layout: Layout{
		Journal: []DiskDirs{{Disk: "/mnt/j", TotalBytes: uint64(400 * GiB), Recommended: []string{"/mnt/j/0", "/mnt/j/1", "/mnt/j/2", "/mnt/j/3"}}},
		Ledgers: []DiskDirs{{Disk: "/mnt/l0", Recommended: []string{"/mnt/l0"}}, {Disk: "/mnt/l1", Recommended: []string{"/mnt/l1"}}},
	}}
	v, notes := HelmValuesOf(r)
	j := v.Bookkeeper.Volumes.Journal
	if !j.UseMultiVolumes || len(j.MultiVolumes) != 4 || j.MultiVolumes[3] != (HelmMultiVolume{Name: "journal3", Size: "100Gi", MountPath: "/pulsar/data/bookkeeper/journal3"}) {
		t.Errorf("journal volumes %+v", j)
	}
	l := v.Bookkeeper.Volumes.Ledgers
	if !l.UseMultiVolumes || len(l.MultiVolumes) != 2 || l.MultiVolumes[1].MountPath != "/pulsar/data/bookkeeper/ledgers1" {
		t.Errorf("ledger volumes %+v", l)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "4 journal volumes on the disk of /mnt/j") {
		t.Errorf("notes %v", notes)
	}
	r.Layout.Journal[0].Current = []string{"/pulsar/data/bookkeeper/journal"}
	v, _ = HelmValuesOf(r)
	if v.Bookkeeper.Volumes.Journal.UseMultiVolumes {
		t.Errorf("a live bookie with one journal dir got multi volumes: %+v", v.Bookkeeper.Volumes.Journal)
	}
}
