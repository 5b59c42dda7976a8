package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"gcWaitTme", "gcWaitTime", 1}, {"abc", "abc", 0}} {
		if got := Distance(c.a, c.b); got != c.d || Distance(c.b, c.a) != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
	if w, d := Closest("journalDirectorys", []string{"ledgerDirectories"}, []string{"journalDirectories", "journalDirectory"}); w != "journalDirectory" || d != 1 {
		t.Errorf("Closest = %q %d", w, d)
	}
	if w, d := Closest("x"); w != "" || d != -1 {
		t.Errorf("no candidates: %q %d", w, d)
	}
}
