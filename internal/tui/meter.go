package tui

import (
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/tokens"
)

// meter is the context meter: tokens used of the window, and how far the
// auto-compaction threshold is. used is Session.Used, the number the
// trigger compares with the threshold (SPEC K1), so what the meter says
// and what cairn does never disagree; its percentage is the one /context
// prints (Window.PercentUsed).
type meter struct {
	used   int64
	known  bool
	window tokens.Window
}

// view renders the meter in at most width cells: a bar, the tokens used
// of the effective window, and the distance to auto-compaction.
func (m meter) view(st styles, width int) string {
	if !m.known || m.window.Size == 0 {
		return ""
	}
	eff := m.window.Effective()
	at := m.window.AutoCompactAt()
	pct := m.window.PercentUsed(m.used)
	left := at - m.used
	var until string
	switch {
	case left <= 0:
		until = "auto-compact at next request"
	default:
		until = fmt.Sprintf("%s to auto-compact", short(left))
	}
	const barWidth = 10
	filled := min(barWidth, int(pct*barWidth/100+0.5))
	bar := strings.Repeat("█", filled) + strings.Repeat("░", barWidth-filled)
	text := fmt.Sprintf("%s %s/%s (%s) · %s", bar, short(m.used), short(eff), tokens.Percent(pct), until)
	if lipglossWidth(text) > width {
		text = fmt.Sprintf("%s/%s · %s", short(m.used), short(eff), until)
	}
	style := st.dim
	switch {
	case m.used >= at:
		style = st.errText
	case m.used >= m.window.WarnAt():
		style = st.warn
	}
	return style.Render(truncate(text, width))
}
