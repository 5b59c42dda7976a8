package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// testdata/fakemod.jsonl is real `go test -json` output (Go 1.26) of the
// module in testdata/fakemod, one package per way of failing. Regenerate:
//
//	cd testdata/fakemod && go test -json -count=1 -p 1 -timeout 2s ./... > ../fakemod.jsonl
func readStream(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/fakemod.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSummarizeEveryFailureCounts(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var w bytes.Buffer
		failed := summarize(bytes.NewReader(readStream(t)), &w, verbose)
		got := w.String()
		if failed != 8 || !strings.HasSuffix(got, "\n4 passed, 8 failed, 1 skipped\n") {
			t.Errorf("verbose=%v: failed=%d, report ends %q", verbose, failed, got[max(0, len(got)-200):])
		}
		for _, want := range []string{
			"FAILED: tsfake/buildfail (package)",                        // compile error
			"FAILED: tsfake/vetfail (package)",                          // vet error in go test
			"FAILED: tsfake/mainpanic (package)",                        // panic in TestMain
			"FAILED: tsfake/exitafter (package)",                        // os.Exit(3) after m.Run
			"FAILED: tsfake/testpanic.TestP/sub",                        // panic in a subtest
			"FAILED: tsfake/testpanic.TestP",                            // ... fails its parent
			"FAILED: tsfake/timeout.TestSlow (did not finish)",          // -timeout hit
			"FAILED: tsfake/osexit.TestExit (did not finish)",           // os.Exit(1) in a test
			"undefined: undefinedThing",                                 // build output is shown
			`fmt.Printf format %d has arg "not a number" of wrong type`, // vet output is shown
			"panic: boom in TestMain",
			"panic: test timed out after 2s", // the timed-out test's output is shown
			"about to exit",
			"ok   tsfake/okpkg",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("verbose=%v: report lacks %q:\n%s", verbose, want, got)
			}
		}
		if strings.Contains(got, "FAILED: tsfake/okpkg") || strings.Contains(got, "FAILED: tsfake/timeout (package)") {
			t.Errorf("verbose=%v: wrong failure listed:\n%s", verbose, got)
		}
	}
}

// filter keeps the events of the packages named.
func filter(stream []byte, pkgs ...string) []byte {
	var out bytes.Buffer
	for _, l := range bytes.SplitAfter(stream, []byte("\n")) {
		for _, p := range pkgs {
			if bytes.Contains(l, []byte(`"Package":"`+p+`"`)) {
				out.Write(l)
			}
		}
	}
	return out.Bytes()
}

func TestSummarizeAllPassed(t *testing.T) {
	var w bytes.Buffer
	failed := summarize(bytes.NewReader(filter(readStream(t), "tsfake/okpkg", "tsfake/notests")), &w, false)
	if failed != 0 || !strings.HasSuffix(w.String(), "\n1 passed, 0 failed, 1 skipped\n") {
		t.Fatalf("failed=%d, report:\n%s", failed, w.String())
	}
}

// A stream that stops mid-package (go test killed) fails the package's
// running tests, and a package without any result fails as a package.
func TestSummarizeCutShort(t *testing.T) {
	s := filter(readStream(t), "tsfake/timeout", "tsfake/okpkg")
	i := bytes.Index(s, []byte(`"Action":"fail","Package":"tsfake/timeout"`))
	if i < 0 {
		t.Fatal("no package fail event in the fixture")
	}
	s = s[:bytes.LastIndexByte(s[:i], '\n')+1]
	s = append(s, `{"Action":"start","Package":"tsfake/never"}`+"\n"...)
	var w bytes.Buffer
	failed := summarize(bytes.NewReader(s), &w, false)
	got := w.String()
	for _, want := range []string{
		"FAILED: tsfake/timeout.TestSlow (did not finish)",
		"FAILED: tsfake/never (package)",
		"\n1 passed, 2 failed, 1 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if failed != 2 {
		t.Errorf("failed = %d, want 2", failed)
	}
}
