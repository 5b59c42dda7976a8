package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestBarAndETA(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		want        string
	}{
		{0, 100, "[          ]   0%"},
		{50, 100, "[=====     ]  50%"},
		{150, 100, "[==========] 100%"},
		{5, 0, "[          ]   0%"},
	} {
		if got := Bar(c.done, c.total, 10); got != c.want {
			t.Errorf("Bar(%d, %d) = %q, want %q", c.done, c.total, got, c.want)
		}
	}
	for _, c := range []struct {
		left, rate float64
		want       string
	}{
		{90, 5, "18s"}, {0, 0, "0s"}, {-1, 3, "0s"}, {10, 0, "?"}, {920, 10, "1m32s"},
	} {
		if got := ETA(c.left, c.rate); got != c.want {
			t.Errorf("ETA(%v, %v) = %q, want %q", c.left, c.rate, got, c.want)
		}
	}
	if got := Rate(10, 2*time.Second); got != 5 {
		t.Errorf("Rate = %v", got)
	}
}

// Fit keeps every line under the width and the text under the height.
func TestFit(t *testing.T) {
	var in strings.Builder
	for i := range 60 {
		fmt.Fprintf(&in, "%02d %s\n", i, strings.Repeat("wide═", 30))
	}
	out := Fit(in.String(), 80, 45)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 44 || !strings.HasPrefix(lines[43], "… 17 more lines") {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 79 {
			t.Fatalf("line of %d runes on 80 columns: %q", n, l)
		}
	}
	if !strings.HasSuffix(lines[0], "…") {
		t.Errorf("a cut line ends in …: %q", lines[0])
	}
	if got := Fit("short\n", 80, 45); got != "short\n" {
		t.Errorf("Fit(short) = %q", got)
	}
	if got := Fit("a\nb\n", 0, 0); got != "a\nb\n" {
		t.Errorf("no size: %q", got)
	}
}

// A Screen moves back over exactly what it drew, and draws nothing wider
// than the terminal.
func TestScreenRedrawsInPlace(t *testing.T) {
	var buf bytes.Buffer
	s := NewSizedScreen(&buf, func() (int, int) { return 20, 10 })
	s.Draw("first line that is much too long\nsecond\n")
	if got := buf.String(); got != "first line that is…\nsecond\n" {
		t.Fatalf("first draw %q", got)
	}
	buf.Reset()
	s.Draw("a\nb\nc\n")
	if got := buf.String(); got != "\033[2A\033[Ja\nb\nc\n" {
		t.Fatalf("second draw %q", got)
	}
	buf.Reset()
	s.Draw("x\n")
	if got := buf.String(); got != "\033[3A\033[Jx\n" {
		t.Fatalf("third draw %q", got)
	}
}

func TestLine(t *testing.T) {
	var buf bytes.Buffer
	l := NewSizedLine(&buf, func() (int, int) { return 10, 5 })
	if !l.Due(time.Now()) {
		t.Fatal("first redraw not due")
	}
	l.Draw("0123456789abc")
	if l.Due(time.Now()) {
		t.Error("redraw due right after one")
	}
	l.Println("kept", false)
	l.Clear() // nothing drawn since the Println
	if got := buf.String(); got != "\r\033[K01234567…\r\033[Kkept\n" {
		t.Fatalf("got %q", got)
	}
	// Off a terminal nothing is drawn, Println prints only when asked.
	buf.Reset()
	off := NewLine(&buf, true)
	if off.On() {
		t.Fatal("a buffer is not a terminal")
	}
	off.Draw("x")
	off.Clear()
	off.Println("y", false)
	off.Println("z", true)
	if got := buf.String(); got != "z\n" {
		t.Fatalf("off a terminal: %q", got)
	}
	var nilLine *Line
	nilLine.Draw("x")
	nilLine.Clear()
	if nilLine.On() || nilLine.Due(time.Now()) {
		t.Error("a nil Line is on")
	}
	if w := TerminalWidth(&buf); w != 0 {
		t.Errorf("TerminalWidth(buffer) = %d", w)
	}
}
