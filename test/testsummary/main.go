// Command testsummary reads `go test -json` on stdin, prints the output of
// failing tests and packages, and ends with a line "N passed, N failed"
// (N skipped is added when any were skipped). It exits 1 when anything failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	verbose := os.Getenv("TESTSUMMARY_VERBOSE") != ""
	out := map[string][]string{} // key: package/test
	var passed, failed, skipped int
	var failedNames []string
	pkgFailed := map[string]bool{}
	pkgHasTestFail := map[string]bool{}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			// Not JSON (build errors are printed as text by go test).
			fmt.Println(string(line))
			continue
		}
		key := ev.Package + " " + ev.Test
		switch ev.Action {
		case "output":
			out[key] = append(out[key], ev.Output)
			if verbose {
				fmt.Print(ev.Output)
			}
		case "pass":
			if ev.Test != "" {
				passed++
			} else {
				fmt.Printf("ok   %s (%.1fs)\n", ev.Package, ev.Elapsed)
			}
			delete(out, key)
		case "skip":
			if ev.Test != "" {
				skipped++
			} else {
				fmt.Printf("---  %s (no tests)\n", ev.Package)
			}
			delete(out, key)
		case "fail":
			if ev.Test != "" {
				failed++
				pkgHasTestFail[ev.Package] = true
				failedNames = append(failedNames, ev.Package+"."+ev.Test)
				if !verbose {
					fmt.Print(strings.Join(out[key], ""))
				}
			} else {
				pkgFailed[ev.Package] = true
				fmt.Printf("FAIL %s (%.1fs)\n", ev.Package, ev.Elapsed)
				if !verbose && !pkgHasTestFail[ev.Package] {
					// Build failure, panic in TestMain, timeout: show the package output.
					fmt.Print(strings.Join(out[key], ""))
				}
			}
			delete(out, key)
		}
	}
	for p := range pkgFailed {
		if !pkgHasTestFail[p] {
			failed++
			failedNames = append(failedNames, p+" (package)")
		}
	}
	sort.Strings(failedNames)
	for _, n := range failedNames {
		fmt.Println("FAILED:", n)
	}
	if skipped > 0 {
		fmt.Printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	} else {
		fmt.Printf("%d passed, %d failed\n", passed, failed)
	}
	if failed > 0 {
		os.Exit(1)
	}
}
