// Command testsummary reads `go test -json` on stdin, prints the output of
// failing tests and packages, and ends with a line "N passed, N failed"
// (N skipped is added when any were skipped). It exits 1 when anything failed.
//
// A test that started but never ended (the package timed out, crashed or
// called os.Exit) counts as failed; a package that failed without a failed
// test (build or vet error, panic in TestMain, non-zero exit after the tests)
// counts as one failure.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	ImportPath string // build-output and build-fail events
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
}

func main() {
	if summarize(os.Stdin, os.Stdout, os.Getenv("TESTSUMMARY_VERBOSE") != "") > 0 {
		os.Exit(1)
	}
}

// summarize reads the event stream from r, writes the report to w and
// returns the number of failures. verbose echoes every output line.
func summarize(r io.Reader, w io.Writer, verbose bool) (failed int) {
	out := map[string][]string{}      // key: package/test
	open := set{}                     // packages started, no result yet
	running := map[string]set{}       // package → tests started, not ended
	buildOut := map[string][]string{} // ImportPath → compiler/vet output
	var passed, skipped int
	var failedNames []string
	pkgFailed := map[string]bool{}
	pkgHasTestFail := map[string]bool{}
	// unfinished counts the tests of pkg that started but never ended (the
	// package timed out, crashed or called os.Exit; a timeout's panic is in
	// their output) as failed.
	unfinished := func(pkg string) {
		for _, t := range running[pkg].sorted() {
			failed++
			pkgHasTestFail[pkg] = true
			failedNames = append(failedNames, pkg+"."+t+" (did not finish)")
			tk := pkg + " " + t
			if !verbose {
				fmt.Fprint(w, strings.Join(out[tk], ""))
			}
			delete(out, tk)
		}
		delete(running, pkg)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			// Not JSON (e.g. text printed by go test itself).
			fmt.Fprintln(w, string(line))
			continue
		}
		key := ev.Package + " " + ev.Test
		switch ev.Action {
		case "build-output":
			buildOut[ev.ImportPath] = append(buildOut[ev.ImportPath], ev.Output)
		case "build-fail":
			fmt.Fprint(w, strings.Join(buildOut[ev.ImportPath], ""))
			delete(buildOut, ev.ImportPath)
		case "start":
			open[ev.Package] = true
		case "run":
			if running[ev.Package] == nil {
				running[ev.Package] = set{}
			}
			running[ev.Package][ev.Test] = true
		case "output":
			out[key] = append(out[key], ev.Output)
			if verbose {
				fmt.Fprint(w, ev.Output)
			}
		case "pass":
			if ev.Test != "" {
				passed++
				delete(running[ev.Package], ev.Test)
			} else {
				delete(open, ev.Package)
				fmt.Fprintf(w, "ok   %s (%.1fs)\n", ev.Package, ev.Elapsed)
			}
			delete(out, key)
		case "skip":
			if ev.Test != "" {
				skipped++
				delete(running[ev.Package], ev.Test)
			} else {
				delete(open, ev.Package)
				fmt.Fprintf(w, "---  %s (no tests)\n", ev.Package)
			}
			delete(out, key)
		case "fail":
			if ev.Test != "" {
				failed++
				delete(running[ev.Package], ev.Test)
				pkgHasTestFail[ev.Package] = true
				failedNames = append(failedNames, ev.Package+"."+ev.Test)
				if !verbose {
					fmt.Fprint(w, strings.Join(out[key], ""))
				}
			} else {
				delete(open, ev.Package)
				unfinished(ev.Package)
				pkgFailed[ev.Package] = true
				fmt.Fprintf(w, "FAIL %s (%.1fs)\n", ev.Package, ev.Elapsed)
				if !verbose && !pkgHasTestFail[ev.Package] {
					// Build failure, panic in TestMain, exit status: show the package output.
					fmt.Fprint(w, strings.Join(out[key], ""))
				}
			}
			delete(out, key)
		}
	}
	// A stream cut short (go test killed) leaves packages without a result.
	for _, p := range open.sorted() {
		unfinished(p)
		pkgFailed[p] = true
		fmt.Fprintf(w, "FAIL %s (no result)\n", p)
	}
	if err := sc.Err(); err != nil {
		failed++
		failedNames = append(failedNames, "(reading go test -json: "+err.Error()+")")
	}
	for p := range pkgFailed {
		if !pkgHasTestFail[p] {
			failed++
			failedNames = append(failedNames, p+" (package)")
		}
	}
	sort.Strings(failedNames)
	for _, n := range failedNames {
		fmt.Fprintln(w, "FAILED:", n)
	}
	if skipped > 0 {
		fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	} else {
		fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	}
	return failed
}

type set map[string]bool

func (s set) sorted() []string {
	var ks []string
	for k := range s {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
