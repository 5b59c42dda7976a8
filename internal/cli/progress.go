package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// TerminalSize returns the columns and rows of w when it is a terminal
// (ok false otherwise). It is the one place the commands ask a terminal
// for its size; they ask again at every redraw, so a resize takes effect.
func TerminalSize(w io.Writer) (cols, rows int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return 0, 0, false
	}
	cols, rows, err := term.GetSize(int(f.Fd()))
	if err != nil || cols <= 0 {
		return 0, 0, false
	}
	return cols, rows, true
}

// TerminalWidth returns the columns of w, 0 when w is not a terminal.
func TerminalWidth(w io.Writer) int {
	cols, _, _ := TerminalSize(w)
	return cols
}

// Bar renders a progress bar of width cells and the percentage:
// "[======      ]  50%". An unknown total (≤ 0) shows an empty bar.
func Bar(done, total int64, width int) string {
	frac := 0.0
	if total > 0 {
		frac = max(0, min(float64(done)/float64(total), 1))
	}
	fill := int(frac * float64(width))
	return fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), frac*100)
}

// Rate is n per second over elapsed (0 before any time has passed).
func Rate(n float64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return n / elapsed.Seconds()
}

// ETA says how long what is left takes at rate, rounded to the second
// ("18s", "1m32s"): "0s" when nothing is left, "?" when the rate is not
// known yet.
func ETA(left, rate float64) string {
	switch {
	case left <= 0:
		return "0s"
	case rate <= 0:
		return "?"
	}
	return Left(time.Duration(left / rate * float64(time.Second)))
}

// Left formats a remaining time the way ETA does.
func Left(d time.Duration) string {
	return max(0, d).Round(time.Second).String()
}

// Fit cuts every line of text to fewer than cols characters (runes) and
// the text to rows-2 lines with a note of how many were left out, so that
// nothing wraps and an in-place redraw can move back to its first line.
// cols or rows ≤ 0 leave that dimension alone.
func Fit(text string, cols, rows int) string {
	nl := strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if rows >= 3 && len(lines) >= rows {
		more := len(lines) - (rows - 2)
		lines = append(lines[:rows-2], fmt.Sprintf("… %d more lines (a taller terminal shows them)", more))
		nl = true
	}
	if cols > 1 {
		for i, l := range lines {
			lines[i] = cut(l, cols-1)
		}
	}
	out := strings.Join(lines, "\n")
	if nl {
		out += "\n"
	}
	return out
}

// CutLeft shortens s to n runes by dropping its start (the end of a topic
// name tells partitions apart), marked with "…". n ≤ 1 leaves s alone.
func CutLeft(s string, n int) string {
	if n <= 1 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-(n-1):])
}

// cut shortens s to n runes, the last one "…" when something was cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// MinRedraw is the least time between two redraws of a Line that are not
// forced: at most 5 a second.
const MinRedraw = 200 * time.Millisecond

// Line is a status line redrawn in place on a terminal ("\r", erase, the
// text cut to the terminal's width). Off a terminal, or when the caller
// turns it off (JSON output, --quiet), it draws nothing; every method is
// safe on a Line that is off and on a nil *Line.
type Line struct {
	w    io.Writer
	on   bool
	size func() (cols, rows int)

	mu    sync.Mutex
	last  time.Time
	drawn bool
}

// NewLine returns a Line on w, drawing only when enabled and w is a
// terminal.
func NewLine(w io.Writer, enabled bool) *Line {
	l := &Line{w: w, size: func() (int, int) { c, r, _ := TerminalSize(w); return c, r }}
	_, _, tty := TerminalSize(w)
	l.on = enabled && tty
	return l
}

// NewSizedLine returns a Line that always draws on w, as on a terminal of
// the size size returns (for tests, and writers that know their size).
func NewSizedLine(w io.Writer, size func() (cols, rows int)) *Line {
	return &Line{w: w, on: true, size: size}
}

// On reports whether the line draws.
func (l *Line) On() bool { return l != nil && l.on }

// Due reports whether a redraw not forced is due at now (MinRedraw since
// the last one); callers skip building the text when it is not.
func (l *Line) Due(now time.Time) bool {
	if !l.On() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return now.Sub(l.last) >= MinRedraw
}

// Draw replaces the line with s.
func (l *Line) Draw(s string) {
	if !l.On() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cols, _ := l.size()
	if cols > 1 {
		s = cut(s, cols-1)
	}
	fmt.Fprintf(l.w, "\r\033[K%s", s)
	l.last, l.drawn = time.Now(), true
}

// Clear erases the line (when one is drawn).
func (l *Line) Clear() {
	if !l.On() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
}

func (l *Line) clear() {
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
		l.drawn = false
	}
}

// Println erases the status line and prints s as a line of its own: text
// that stays on the screen above the next status line. Off a terminal it
// prints s only when printOff is set.
func (l *Line) Println(s string, printOff bool) {
	if !l.On() {
		if l != nil && printOff {
			fmt.Fprintln(l.w, s)
		}
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	fmt.Fprintln(l.w, s)
}

// Screen is a block of lines redrawn in place on a terminal: each Draw
// moves back up over the previous one and erases it, and cuts the new text
// to the terminal's size (Fit), so no line wraps and the cursor always
// returns to the first line.
type Screen struct {
	w     io.Writer
	size  func() (cols, rows int)
	drawn int
}

// NewScreen returns a Screen on the terminal w.
func NewScreen(w io.Writer) *Screen {
	return NewSizedScreen(w, func() (int, int) { c, r, _ := TerminalSize(w); return c, r })
}

// NewSizedScreen returns a Screen on w as on a terminal of the size size
// returns (for tests).
func NewSizedScreen(w io.Writer, size func() (cols, rows int)) *Screen {
	return &Screen{w: w, size: size}
}

// Draw replaces the previous text with text.
func (s *Screen) Draw(text string) {
	cols, rows := s.size()
	text = Fit(text, cols, rows)
	if s.drawn > 0 {
		fmt.Fprintf(s.w, "\033[%dA\033[J", s.drawn)
	}
	fmt.Fprint(s.w, text)
	s.drawn = strings.Count(text, "\n")
}
