package scrub

import (
	"slices"
	"strings"
	"time"
)

// Report sums a scrub of many managed ledgers.
type Report struct {
	DryRun bool `json:"dryRun"`
	Deep   bool `json:"deep"`
	// Bucket is the bucket checked.
	Bucket string `json:"bucket"`
	// Topics and Ledgers are the managed ledgers read and the committed
	// ledgers checked; Objects the objects looked at (two per ledger
	// checked in this bucket).
	Topics  int `json:"topics"`
	Ledgers int `json:"ledgers"`
	Objects int `json:"objects"`
	// Requests are the store requests of the checks.
	Requests int `json:"requests"`
	// Verdicts counts the ledgers by verdict.
	Verdicts map[Verdict]int `json:"verdicts"`
	// Repaired: contexts cleared; Reoffloaded: offloaded again at once;
	// Trimmed: interrupted BookKeeper deletions finished.
	Repaired    int `json:"repaired"`
	Reoffloaded int `json:"reoffloaded"`
	Trimmed     int `json:"trimmed"`
	// Findings are the ledgers that are not ok (every ledger with
	// Verbose), sorted by managed ledger and ledger id.
	Findings []Finding `json:"findings"`
	// Errors are managed ledgers that could not be read, and failed
	// repairs or trims.
	Errors  []string  `json:"errors"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// LedgersPerSecond and ObjectsPerSecond are the rates achieved.
	LedgersPerSecond float64 `json:"ledgersPerSecond"`
	ObjectsPerSecond float64 `json:"objectsPerSecond"`
	// RequestsPerLedger is Requests / Ledgers.
	RequestsPerLedger float64 `json:"requestsPerLedger"`
}

// NewReport starts a report.
func NewReport(bucket string, dryRun, deep bool, now time.Time) *Report {
	return &Report{DryRun: dryRun, Deep: deep, Bucket: bucket, Verdicts: map[Verdict]int{}, Findings: []Finding{}, Errors: []string{}, Started: now}
}

// Add counts findings (keeping every one with all, else those not ok).
func (r *Report) Add(fs []Finding, all bool) {
	for _, f := range fs {
		r.Ledgers++
		r.Requests += f.Requests
		if f.Verdict != VerdictForeign {
			r.Objects += 2
		}
		r.Verdicts[f.Verdict]++
		if f.Repaired {
			r.Repaired++
		}
		if all || f.Verdict != VerdictOK {
			r.Findings = append(r.Findings, f)
		}
	}
}

// Finish sorts the findings and computes the rates.
func (r *Report) Finish(now time.Time) {
	sortFindings(r.Findings)
	d := now.Sub(r.Started).Seconds()
	r.Seconds = d
	if d > 0 {
		r.LedgersPerSecond, r.ObjectsPerSecond = float64(r.Ledgers)/d, float64(r.Objects)/d
	}
	if r.Ledgers > 0 {
		r.RequestsPerLedger = float64(r.Requests) / float64(r.Ledgers)
	}
}

// Problems counts the ledgers that are lost, mismatched or unknown, or
// still need a repair or trim.
func (r *Report) Problems() int {
	n := r.Verdicts[VerdictLost] + r.Verdicts[VerdictMismatch] + r.Verdicts[VerdictUnknown]
	for _, f := range r.Findings {
		if f.NeedsWrite() && !f.Repaired && f.Action != "trimmed" {
			n++
		}
	}
	return n + len(r.Errors)
}

func sortFindings(fs []Finding) {
	slices.SortFunc(fs, func(a, b Finding) int {
		if c := strings.Compare(a.ML, b.ML); c != 0 {
			return c
		}
		return int(a.LedgerID - b.LedgerID)
	})
}
