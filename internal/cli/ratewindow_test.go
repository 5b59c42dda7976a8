package cli

import (
	"io"
	"strings"
	"testing"
	"time"
)

// The rate is over about the last span: older samples drop out, and the
// first sample gives no rate.
func TestRateWindow(t *testing.T) {
	w := RateWindow{Span: 30 * time.Second}
	t0 := time.Now()
	if r, over := w.Add(t0, 5); r != 0 || over != 0 {
		t.Errorf("first sample: rate %v over %s, want 0 over 0s", r, over)
	}
	for i, v := range []int64{100, 200, 300} {
		w.Add(t0.Add(time.Duration(i+1)*20*time.Second), v)
	}
	if r, over := w.Add(t0.Add(80*time.Second), 1000); over != 40*time.Second || r != 800.0/40 {
		t.Errorf("rate %v over %s, want 20/s over 40s (since the sample at 40 s)", r, over)
	}
}

func TestPrintJSON(t *testing.T) {
	var b, u strings.Builder
	v := map[string]any{"a": "<x>", "n": 1}
	if err := Print(&b, true, v, nil); err != nil || b.String() != "{\n  \"a\": \"\\u003cx\\u003e\",\n  \"n\": 1\n}\n" {
		t.Errorf("JSON %q %v", b.String(), err)
	}
	if err := WriteJSONUnescaped(&u, v); err != nil || !strings.Contains(u.String(), `"<x>"`) {
		t.Errorf("unescaped JSON %q %v", u.String(), err)
	}
	b.Reset()
	if err := Print(&b, false, v, func(w io.Writer) error { _, err := io.WriteString(w, "text\n"); return err }); err != nil || b.String() != "text\n" {
		t.Errorf("text %q %v", b.String(), err)
	}
}
