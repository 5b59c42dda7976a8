package bookieagent

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/allocs"
)

// FuzzRecommendInput feeds DecodeInput and Recommend what `recommend
// --input FILE` reads: the recorded profiles (separate rounds and counts in
// turns) and their mutations. Neither may panic, an input Recommend takes
// renders in every format, and what a decode and a recommendation allocate
// stays within a bound of the input's size: an input saved on one node and
// replayed on another is a file anyone can hand the agent.
func FuzzRecommendInput(f *testing.F) {
	profiles, _ := filepath.Glob(filepath.Join("testdata", "profiles", "*.json"))
	for _, p := range profiles {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"journal_disks":[{"dir":"/j","results":[{"workload":"journal","writers":1000000,"block_size":1,"bytes_per_sec":1,"ops":1,"alternation":{"counts":[1,2],"batch":1,"batches":1}}]}],"ledger_disks":[{"dir":"/l"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			in  Input
			err error
			rec *Recommendation
		)
		start := time.Now()
		n := allocs.Bytes(1, func() {
			in, err = DecodeInput(bytes.NewReader(data))
			if err == nil {
				rec, err = Recommend(in)
			}
		})
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("%d bytes of input took %v to decode and recommend", len(data), took)
		}
		// The recorded profiles (15–96 KiB) decode and recommend in 5–10×
		// their size (119–489 KiB); the evidence quotes every round.
		if bound := uint64(256<<10) + 32*uint64(len(data)); n > bound {
			t.Fatalf("%d bytes of input allocated %d bytes (bound %d)", len(data), n, bound)
		}
		if err != nil {
			return
		}
		for _, format := range []Format{FormatConf, FormatRocksDB, FormatHelm, FormatJSON} {
			var out bytes.Buffer
			if err := Render(&out, rec, format); err != nil {
				t.Fatalf("a recommendation Recommend returned does not render as %s: %v", format, err)
			}
		}
	})
}
