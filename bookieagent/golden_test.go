package bookieagent

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
