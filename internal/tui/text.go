package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

func stripANSI(s string) string { return ansi.Strip(s) }

// truncate cuts s to width cells, ending in "…" when cut.
func truncate(s string, width int) string {
	if width <= 0 {
		return ""
	}
	return ansi.Truncate(s, width, "…")
}

// wrap breaks plain or styled text into lines no wider than width.
func wrap(s string, width int) []string {
	width = max(width, 1)
	return strings.Split(ansi.Wrap(s, width, " "), "\n")
}

// indent prefixes the first line with first and the others with rest,
// wrapping the text to fit width.
func indent(text string, width int, first, rest string) []string {
	w := width - ansi.StringWidth(first)
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, wl := range wrap(l, w) {
			p := rest
			if len(out) == 0 {
				p = first
			}
			out = append(out, p+wl)
		}
	}
	return out
}

// oneLine is the first line of s, cut to width.
func oneLine(s string, width int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return truncate(s, width)
}

// short formats a token count compactly: 950, 12.3k, 1.2M.
func short(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1_000_000)
}

func lipglossWidth(s string) int { return ansi.StringWidth(s) }
