package bookieagent

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

func loadProfile(t *testing.T, name string) Input {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "profiles", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var in Input
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return in
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden (go test -run Golden -update rewrites it); got:\n%s", path, got)
	}
}

// TestGolden renders every recorded profile in every format and compares
// with testdata/golden.
func TestGolden(t *testing.T) {
	profiles, _ := filepath.Glob(filepath.Join("testdata", "profiles", "*.json"))
	if len(profiles) < 5 {
		t.Fatalf("expected ≥ 5 profiles, found %d", len(profiles))
	}
	exts := map[Format]string{FormatConf: ".conf", FormatRocksDB: ".rocksdb.conf", FormatHelm: ".helm.yaml", FormatJSON: ".json"}
	for _, p := range profiles {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		t.Run(name, func(t *testing.T) {
			in := loadProfile(t, name)
			rec, err := Recommend(in)
			if err != nil {
				t.Fatal(err)
			}
			for f, ext := range exts {
				var buf bytes.Buffer
				if err := Render(&buf, rec, f); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", "golden", name+ext), buf.Bytes())
			}
		})
	}
}

// TestGoldenNodeProfiles pins the key values of the three node profiles
// (64-core NVMe node with 4 × 7 TB, 16 TB HDD node, 2-CPU VM) to the
// reasoning behind them, so a rule change that moves one has to say why.
func TestGoldenNodeProfiles(t *testing.T) {
	type want map[string]string
	for name, w := range map[string]want{
		// 4 journals: 1700 MB/s, 8 do not beat them by 10%. 1 ledger dir
		// per disk: 1700 MB/s of journals over 4 disks is 425 MB/s each,
		// under one flush thread. 1 MiB writes beat 64 KiB by 33% in every
		// round. Compaction: 2000 MB/s × 10% ÷ 2 (read + rewrite) = 95 MiB/s.
		// RocksDB 128 MiB memtables: 4 × 709 MB fit in 25% of 256 GiB.
		"nvme-64core-4x7tb": {"journalDirectories": "4", "ledgerDirectories": "4", "writeBufferSizeBytes": "1048576",
			"journalBufferedWritesThreshold": "1048576", "journalWriteBufferSizeKB": "64", "compactionRateByBytes": "99614720",
			"dbStorage_rocksDB_writeBufferSizeMB": "128", "minorCompactionInterval": "3600", "majorCompactionInterval": "86400",
			"minorCompactionMaxTimeMillis": "900000", "majorCompactionMaxTimeMillis": "3600000"},
		// 2 journals (4 are over the 12.6 ms p99 budget); 1 ledger dir (2
		// writers are slower on a spinning disk); 210 MB/s × 5% = 10 MiB/s;
		// HDD: Pulsar's 64 MiB memtables; direct 8 GiB given: caches 50%.
		"hdd-16tb": {"journalDirectories": "2", "ledgerDirectories": "1", "writeBufferSizeBytes": "1048576", "compactionRateByBytes": "10485760",
			"dbStorage_rocksDB_writeBufferSizeMB": "64", "dbStorage_writeCacheMaxSizeMb": "2048", "dbStorage_readAheadCacheMaxSizeMb": "2048"},
		// The VM's rounds spread 50%: N=4 ÷ N=1 is 1.95× in every round
		// (95% CI 1.84–2.06×, within the p99 budget), but a count moves
		// one step at a time and N=2 ÷ N=1 = 1.37× (1.02–1.83) does not
		// separate: 1 journal, no jump past the middle count; its ledger rounds do not separate and its 0.1 s
		// tier-3 points ran once: ledger dirs, write sizes and
		// journalWriteBufferSizeKB stay. The ledger disk gets 62.5% beside
		// the journal: 200 MB/s × 5% = 9 MiB/s. Direct memory derived from
		// the 4 GiB limit: 1.5 GiB.
		"vm-2cpu": {"journalDirectories": "1", "ledgerDirectories": "1", "journalWriteBufferSizeKB": "64", "writeBufferSizeBytes": "65536",
			"journalBufferedWritesThreshold": "524288", "compactionRateByBytes": "9437184", "dbStorage_writeCacheMaxSizeMb": "384"},
		// The same VM measured with the counts in turns (a default
		// recommend of 2026-12-06): 1/2/4 journals in 8 batches, 4 ÷ 2 =
		// 1.32× (95% CI 1.27–1.36) → 4; 1/2 entry-log writers, 2 ÷ 1 =
		// 1.79× (1.54–2.09), capped by neither a flush thread nor the
		// journals (854 MB/s) → 2; 1 MiB writes do not separate from
		// 64 KiB (three rounds, one in the host cache's burst) → 64 KiB.
		"vm-2cpu-turns": {"journalDirectories": "4", "ledgerDirectories": "2", "writeBufferSizeBytes": "65536"},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := Recommend(loadProfile(t, name))
			if err != nil {
				t.Fatal(err)
			}
			for key, v := range w {
				s, ok := r.Setting(key)
				if !ok {
					t.Fatalf("no %s", key)
				}
				got := s.Value
				if strings.HasSuffix(key, "Directories") {
					got = strconv.Itoa(len(strings.Split(s.Value, ",")))
				}
				if got != v {
					t.Errorf("%s = %s, want %s; evidence: %v", key, got, v, s.Evidence)
				}
			}
			if name == "vm-2cpu" && (r.Memory.DirectBytes != 1536*MiB || r.Memory.JVMOptions == "") {
				t.Errorf("memory plan %+v: want 1536 MiB direct derived from the limit, with the JVM options", r.Memory)
			}
		})
	}
}
