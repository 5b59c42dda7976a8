package repocheck

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the module root (two levels up from this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from %s: %v", root, err)
	}
	return root
}

var (
	// mdRef is a path to a Markdown document (a link target, a
	// backquoted name, a bare mention).
	mdRef = regexp.MustCompile(`[\w./-]*[\w-]\.md\b`)
	// outside are citations a reader of the repository cannot follow:
	// issue and bug numbers of a tracker, and the names of documents kept
	// outside the repository.
	outside = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\bissues?\s+#?\d+`),
		regexp.MustCompile(`(?i)\bbugs?\s+#?\d+`),
		regexp.MustCompile(`\bDESIGN\b`),
		regexp.MustCompile(`(?i)\bdisk-tuning\b`),
		regexp.MustCompile(`\bspec-[a-z][\w-]*`),
		regexp.MustCompile(`shared[/]docs\b`),
	}
	// invariant is a reference to a numbered invariant; in Go code it
	// must say where the invariant is (docs/design.md).
	invariant = regexp.MustCompile(`(?i)\binvariants?\s+\d`)
)

// scanned reports whether the check reads path (relative to the root).
func scanned(rel string, d fs.DirEntry) (read, skipDir bool) {
	if d.IsDir() {
		switch d.Name() {
		case ".git", ".cache", "node_modules", "bin":
			return false, true
		}
		return false, false
	}
	if d.Type()&fs.ModeSymlink != 0 {
		return false, false
	}
	ext := filepath.Ext(rel)
	if filepath.ToSlash(filepath.Dir(rel)) == "internal/repocheck" {
		return false, false // its tables hold the citations it flags
	}
	return ext == ".go" || ext == ".md" || ext == ".proto", false
}

// TestCitationsStayInRepository fails on a reference, in any .go, .md or
// .proto file of the repository, to a Markdown file the repository does
// not have (relative to the citing file or to the root), to an issue or bug
// number, or to a document kept outside the repository; and on an
// invariant cited from Go code without naming docs/design.md. Of Go files
// it reads the comments, and the string literals for paths only.
func TestCitationsStayInRepository(t *testing.T) {
	root := repoRoot(t)
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		read, skip := scanned(rel, d)
		if skip {
			return filepath.SkipDir
		}
		if !read {
			return nil
		}
		n++
		for _, p := range checkFile(root, rel) {
			t.Error(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read only %d .go and .md files under %s: the walk is broken", n, root)
	}
}

// checkFile returns the problems of one file, each "file:line: what". Of
// a Go file it reads the comments and string literals (a selector such as
// l.md is code, not a citation); of others every line.
func checkFile(root, rel string) []string {
	src, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return []string{rel + ": " + err.Error()}
	}
	var out []string
	report := func(line int, text string, literal bool) {
		for _, p := range checkLine(root, rel, text, literal) {
			out = append(out, rel+":"+strconv.Itoa(line)+": "+p)
		}
	}
	if filepath.Ext(rel) != ".go" {
		for i, l := range strings.Split(string(src), "\n") {
			report(i+1, l, false)
		}
		return out
	}
	fset := token.NewFileSet()
	var sc scanner.Scanner
	sc.Init(fset.AddFile(rel, -1, len(src)), src, func(pos token.Position, msg string) {
		out = append(out, pos.String()+": "+msg)
	}, scanner.ScanComments)
	for {
		pos, tok, lit := sc.Scan()
		if tok == token.EOF {
			return out
		}
		if tok != token.COMMENT && tok != token.STRING {
			continue
		}
		first := fset.Position(pos).Line
		for i, l := range strings.Split(lit, "\n") {
			report(first+i, l, tok == token.STRING)
		}
	}
}

// checkLine returns the problems of one line of prose. In a Go string
// literal (literal) only paths are checked: words such as "issue 3" may
// be data there.
func checkLine(root, rel, text string, literal bool) []string {
	var out []string
	for _, loc := range mdRef.FindAllStringIndex(text, -1) {
		ref := text[loc[0]:loc[1]]
		if isURL(text[:loc[0]]) || exists(root, rel, ref) {
			continue
		}
		out = append(out, "cites "+ref+", which is not in the repository")
	}
	for _, re := range outside {
		if literal {
			break
		}
		if m := re.FindString(text); m != "" {
			out = append(out, "cites "+strings.TrimSpace(m)+" from outside the repository (say it here, or put it in docs/ and cite that)")
		}
	}
	if strings.HasSuffix(rel, ".go") {
		for _, loc := range invariant.FindAllStringIndex(text, -1) {
			if !strings.HasSuffix(strings.TrimSpace(text[:loc[0]]), "design.md") {
				out = append(out, `cites "`+text[loc[0]:loc[1]]+`…" without docs/design.md`)
			}
		}
	}
	return out
}

// isURL reports whether the text before a reference ends inside a URL.
func isURL(before string) bool {
	i := strings.LastIndexAny(before, " \t(<\"'`[")
	return strings.HasSuffix(before[i+1:], ":") || strings.Contains(before[i+1:], "://")
}

// exists resolves ref relative to the citing file's folder, then to the
// root.
func exists(root, rel, ref string) bool {
	for _, base := range []string{filepath.Join(root, filepath.Dir(rel)), root} {
		if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(ref))); err == nil {
			return true
		}
	}
	return false
}

// TestCheckLine pins what the check flags and what it lets through.
func TestCheckLine(t *testing.T) {
	root := repoRoot(t)
	// The names the check refuses are assembled, so that this test, which
	// must hold them, does not itself cite documents outside the repository.
	design, spec, shared := "DES"+"IGN", "sp"+"ec-", "shared"+"/docs/"
	// In a string literal only paths count.
	if p := checkLine(root, "x.go", `no "disk-tuning" in rule texts, see issue 10`, true); len(p) != 0 {
		t.Errorf("string literal flagged: %v", p)
	}
	if p := checkLine(root, "x.go", "see no-such-notes.md", true); len(p) != 1 {
		t.Errorf("a missing .md in a string literal: %v", p)
	}
	for _, c := range []struct {
		rel, text string
		bad       bool
	}{
		{"offloader/doc.go", "// see docs/design.md invariant 4", false},
		{"offloader/doc.go", "// (docs/design.md invariants 2 and 3)", false},
		{"offloader/doc.go", "// before any upload (invariant 4)", true},
		{"offloader/doc.go", "// see " + design + ".md, the package map", true},
		{"offloader/doc.go", "// (" + design + " invariant 6)", true},
		{"docs/offload.md", "[the format](offload-format.md)", false},
		{"docs/offload.md", "[gone](no-such-page.md)", true},
		{"docs/offload.md", "see `README.md`", false},
		{"README.md", "see [design](docs/design.md)", false},
		{"docs/x.md", "the chart (https://example.org/charts/README.md)", false},
		{"cmd/x/x.go", "// refused, not replaced by 5 s (issue 11, bug 8)", true},
		{"cmd/x/x.go", "// bug 7 of this tracker", true},
		{"test/cosfake/doc.go", "// " + spec + "cos.md §1", true},
		{"bookieagent/doc.go", "// the table in disk-tuning §3", true},
		{"internal/bkproto/doc.go", "// " + shared + spec + "bookkeeper.md", true},
		{"docs/offload.md", "a crash (invariant 4) leaves", false},
	} {
		if got := len(checkLine(root, c.rel, c.text, false)) > 0; got != c.bad {
			t.Errorf("%s: %q: flagged %v, want %v (%v)", c.rel, c.text, got, c.bad, checkLine(root, c.rel, c.text, false))
		}
	}
}
